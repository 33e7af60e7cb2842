"""Result.summary: a typed record (Summary) that also reads as the summary dict it replaced.

The record's attributes are checked against numpy on the per-trial arrays of the Result;
the mapping view against the attributes (a key is the attribute's name) and against the
order of the dict it replaced; the six keys renamed in this release against the value of
the new key with a warning that names it, and a stored summary with the old keys against its translation;
and positional ``calibrator`` / ``prior`` against the keyword call (a FutureWarning, the
same numbers).
"""

import json
import math
import pickle
import warnings

import attrs
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp

from lidframe import (
    Bootstrap,
    Engine,
    Explicit,
    InputError,
    ScoreSet,
    WatchList,
    evaluate,
    evaluate_fitted,
    fit_calibrator,
    per_speaker,
)
from lidframe.core.engine_result import EngineUsed
from lidframe.core.summary import RENAMED_KEYS, Summary, with_current_keys
from lidframe.core.summary_views import BinaryView
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.fileio import json_clean
from lidframe.data.simulate import simulate_system
from lidframe.metrics.aggregates import alid_decomposition, lid_summary
from lidframe.metrics.binary_view import BINARY_KEYS
from lidframe.stats.bootstrap import Interval
from tests.strategies import scoresets

#: The keys of the summary dict (lidframe before the Summary record), in its order (six renamed since).
HEAD_KEYS = [
    "n_enrolled_trials",
    "n_enrolled",
    "n_outsider_trials",
    "log2_n",
    "alid",
    "pdr",
    "ndr",
    "lid_pos",
    "lid_neg",
    "lid_max",
    "lid_min",
    "lid_q50",
    "lid_q90",
    "lid_q99",
    "cllr_mc",
    "rank1_rate",
    "rank_disclosure_bits",
]
BINARY_VIEW_KEYS = [
    "eer",
    "eer_threshold",
    "cllr",
    "min_cllr",
    "min_dcf",
    "act_dcf",
    "dece_bits",
    "max_abs_llr_log10",
    "zebra_tag",
    "dsys",
    "dsys_method",
    "binary_metrics",
    "binary_method",
    "binary_bins",
    "binary_error_bounds",
    "binary_operating_point",
]
SETTING_KEYS = [
    "calibrator",
    "prior",
    "znorm_ddof",
    "n_dev_enrolled_trials",
    "n_dev_enrolled",
    "n_dev_outsider_trials",
    "lidframe_version",
]


@pytest.fixture(scope="module")
def systems():
    return simulate_system(leakage=0.5, seed=3)


def embedding_sets(seed=0, n_trials=40, n_enrolled=8, dim=12):
    rng = np.random.default_rng(seed)
    profiles = rng.normal(size=(n_enrolled, dim))
    names = [f"s{j}" for j in range(n_enrolled)]

    def one(tag):
        speaker = rng.integers(0, n_enrolled, size=n_trials)
        trials = profiles[speaker] + 0.8 * rng.normal(size=(n_trials, dim))
        speakers = [names[k] for k in speaker]
        speakers[0] = "stranger"  # one outsider trial
        ids = [f"{tag}{i}" for i in range(n_trials)]
        return EmbeddingSet(trials, profiles + 0.3 * rng.normal(size=profiles.shape), names, speakers, ids)

    return one("d"), one("e")


def same(a, b) -> bool:
    """Equal, NaN equal to NaN, through dicts and lists."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    return a == b


def expected_entry(summary: Summary, name: str):
    """What the mapping view should show for attribute *name* (written out independently of the module)."""
    value = getattr(summary, name)
    if name == "intervals":
        return {metric: [interval.low, interval.high] for metric, interval in value.items()}
    if name in ("bootstrap", "engine"):
        return value.to_dict()
    if name == "open_set":  # its groups as dicts of their fields
        groups = ("enrolled", "outsider", "membership_enrolled")
        return {
            field.name: (
                attrs.asdict(getattr(value, field.name))
                if field.name in groups and getattr(value, field.name) is not None
                else getattr(value, field.name)
            )
            for field in attrs.fields(type(value))
        }
    return value


def check_views_agree(summary: Summary) -> None:
    """Every attribute under its key, the binary view's keys from its record, and nothing else."""
    seen = []
    for field in attrs.fields(Summary):
        name = field.name
        if name == "binary":
            continue
        key = name  # a key is the attribute's name
        if getattr(summary, name) is None and name in (
            "intervals",
            "bootstrap",
            "engine",
            "scheduler",
            "n_blocks",
            "open_set",
        ):
            assert key not in summary, key
            continue
        assert same(summary[key], expected_entry(summary, name)), key
        seen.append(key)
    binary = summary.binary
    for key in BINARY_KEYS:
        if binary is None:
            assert summary[key] is None if key in ("zebra_tag", "dsys_method") else math.isnan(summary[key]), key
        else:
            assert same(summary[key], getattr(binary, key)), key
    assert summary["binary_method"] == (None if binary is None else binary.method)
    assert summary["binary_bins"] == (None if binary is None else binary.n_bins)
    assert summary["binary_error_bounds"] == (None if binary is None else binary.error_bounds)
    assert summary["binary_operating_point"] == (None if binary is None else binary.operating_point.to_dict())
    seen += [*BINARY_KEYS, "binary_method", "binary_bins", "binary_error_bounds", "binary_operating_point"]
    assert sorted(summary) == sorted(seen)
    assert len(summary) == len(seen) == len(dict(summary))


def check_attributes_against_the_trials(result) -> None:
    """The record's numbers recomputed with numpy from the Result's per-trial arrays."""
    s = result.summary
    closed = ~result.is_outsider
    lid = result.lid[closed]
    assert s.n_enrolled_trials == int(closed.sum()) and s.n_outsider_trials == int(result.is_outsider.sum())
    assert s.n_enrolled == result.enrolled.size and s.log2_n == pytest.approx(np.log2(result.enrolled.size))
    assert s.alid == pytest.approx(lid.mean(), abs=1e-12)
    assert s.pdr == np.mean(lid > 0) and s.ndr == np.mean(lid <= 0)
    for value, side in ((s.lid_pos, lid[lid > 0]), (s.lid_neg, lid[lid <= 0])):
        assert math.isnan(value) if side.size == 0 else value == pytest.approx(side.mean(), abs=1e-12)
    assert (s.lid_max, s.lid_min) == (lid.max(), lid.min())
    q50, q90, q99 = np.quantile(lid, [0.5, 0.9, 0.99])
    assert (s.lid_q50, s.lid_q90, s.lid_q99) == pytest.approx((q50, q90, q99), abs=1e-12)
    assert s.rank1_rate == np.mean(result.true_rank[closed] == 1)
    assert s.cllr_mc == pytest.approx(-np.mean(np.log2(result.posterior_true[closed])), abs=1e-12)


def test_the_record_holds_what_the_per_trial_arrays_give(systems):
    dev, ev = systems
    result = evaluate(dev, ev, bootstrap=Bootstrap(n_boot=200, seed=1))
    check_attributes_against_the_trials(result)
    s = result.summary
    assert isinstance(s.binary, BinaryView) and s.binary.method == "exact" and s.binary.n_bins is None
    assert set(s.intervals) == {"alid", "pdr", "lid_pos", "lid_neg", "lid_q99", "lid_max", "eer", "cllr"}
    assert all(isinstance(i, Interval) for i in s.intervals.values())
    assert s.intervals["alid"].estimate == pytest.approx(s.alid, abs=1e-12)
    assert s.bootstrap == Bootstrap(n_boot=200, seed=1) and s.engine is None and s.scheduler is None
    assert s.n_dev_enrolled_trials == dev.n_trials - dev.n_outsider_trials and s.n_dev_enrolled == dev.n_enrolled


def test_the_mapping_view_has_the_keys_of_the_summary_dict_in_its_order(systems):
    dev, ev = systems
    plain = evaluate(dev, ev).summary
    assert list(plain) == HEAD_KEYS + BINARY_VIEW_KEYS + SETTING_KEYS
    boot = evaluate(dev, ev, bootstrap=Bootstrap(n_boot=200)).summary
    assert list(boot) == HEAD_KEYS + ["intervals", "bootstrap"] + BINARY_VIEW_KEYS + SETTING_KEYS
    assert boot["bootstrap"] == {
        "n_boot": 200,
        "level": 0.95,
        "unit": "speaker",
        "method": "bca",
        "seed": 0,
        "resample": "dev+eval",
    }
    assert boot["intervals"]["alid"] == [boot.intervals["alid"].low, boot.intervals["alid"].high]
    assert boot["n_enrolled_trials"] == boot.n_enrolled_trials
    assert boot["n_dev_enrolled_trials"] == boot.n_dev_enrolled_trials
    edev, eev = embedding_sets()
    streamed = evaluate(edev, eev, binary_metrics=True, engine=Engine(device="cpu")).summary
    assert list(streamed) == HEAD_KEYS + BINARY_VIEW_KEYS + SETTING_KEYS + ["engine"]
    assert streamed.engine == EngineUsed(kernel="numpy", device="cpu", precision="float64")
    assert streamed["engine"] == {"kernel": "numpy", "device": "cpu", "precision": "float64"}
    assert streamed.binary.method == "binned" and streamed["binary_bins"] == streamed.binary.n_bins > 0
    assert set(streamed["binary_error_bounds"]) == {
        "eer",
        "min_cllr",
        "min_dcf",
        "act_dcf",
        "dece_bits",
        "eer_threshold",
        "dsys",
    }
    for summary in (plain, boot, streamed):
        check_views_agree(summary)


def test_a_skipped_binary_view_is_none_and_shows_as_nan(systems):
    dev, ev = systems
    s = evaluate(dev, ev, binary_metrics=False).summary
    assert s.binary is None and s.binary_metrics == "skipped: binary_metrics=False"
    assert math.isnan(s["eer"]) and math.isnan(s["cllr"]) and s["zebra_tag"] is None and s["binary_method"] is None
    check_views_agree(s)
    assert s.to_dict()["eer"] is None


def test_the_summary_is_read_only(systems):
    s = evaluate(*systems).summary
    with pytest.raises(TypeError):
        s["alid"] = 0.0
    with pytest.raises(TypeError):
        del s["alid"]
    with pytest.raises(AttributeError):
        s.pop("alid")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        s.alid = 0.0
    assert s["alid"] == s.alid and s.get("no such key") is None and "intervals" not in s


def test_to_dict_is_json_and_is_the_mapping_with_nan_as_none(systems):
    dev, ev = systems
    s = evaluate(dev, ev, binary_metrics=False, bootstrap=Bootstrap(n_boot=200)).summary
    record = s.to_dict()
    assert type(record) is dict and list(record) == list(s)
    assert json.loads(json.dumps(record, allow_nan=False)) == record
    for key, value in s.items():
        want = None if isinstance(value, float) and math.isnan(value) else value
        if key == "intervals":
            want = {m: [None if math.isnan(v) else v for v in bounds] for m, bounds in value.items()}
        assert record[key] == want, key
    assert pickle.loads(pickle.dumps(s)).to_dict() == record


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(scoresets(max_trials=12, max_enrolled=6), scoresets(max_trials=12, max_enrolled=6))
def test_the_two_views_agree_on_drawn_score_sets(dev, ev):
    try:
        result = evaluate(dev, ev)
    except InputError as exc:  # a set without a single enrolled trial: nothing to summarise
        assert "no trial's speaker is enrolled" in str(exc)
        return
    check_views_agree(result.summary)
    check_attributes_against_the_trials(result)
    assert result.to_dict().items() >= result.summary.to_dict().items()


#: The six keys renamed in this release, old -> new, written out here (not read from the module).
OLD_TO_NEW = {"n_trials": "n_enrolled_trials", "n_dev_trials": "n_dev_enrolled_trials", "ci": "intervals",
              "ci_settings": "bootstrap", "n_impostor_trials": "n_outsider_trials",
              "n_dev_impostor_trials": "n_dev_outsider_trials"}  # fmt: skip


def test_an_old_key_still_reads_for_one_release_with_a_warning_naming_the_new_key(systems):
    dev, ev = systems
    s = evaluate(dev, ev, bootstrap=Bootstrap(n_boot=200)).summary
    assert {old: new for old, (new, _) in RENAMED_KEYS.items()} == OLD_TO_NEW
    as_json = s.to_dict()
    for old, new in OLD_TO_NEW.items():
        want = json.loads(json.dumps(as_json[new]))  # the value under the new key, as JSON holds it
        reads = {"item": lambda: s[old], "get": lambda: s.get(old), "in": lambda: old in s}
        for how, read in reads.items():
            with pytest.warns(FutureWarning, match=rf"summary\['{old}'\] is now summary\['{new}'\]") as caught:
                got = read()
            renames = [w for w in caught if "is now" in str(w.message)]  # besides the mapping view's own warning
            assert len(renames) == 1 and renames[0].filename == __file__  # points at the user's line
            if how == "in":
                assert got is True
            else:
                assert json_clean(got) == want
        assert old not in list(s) and old not in as_json and len(s) == len(as_json)
    with pytest.warns(FutureWarning, match=r"\(trials whose speaker is enrolled\)"):
        assert s["n_trials"] == int(np.count_nonzero(~ev.is_outsider))
    without = evaluate(dev, ev).summary  # no bootstrap: neither the new nor the old key is there
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", "Summary's mapping view", FutureWarning)  # deprecated as a whole
        sentinel = object()
        assert "ci" not in without and without.get("ci_settings", sentinel) is sentinel
        with pytest.raises(KeyError) as caught:
            without["ci"]
    assert caught.value.args == ("ci",)
    with pytest.raises(KeyError) as caught:  # an unknown key is a plain KeyError of the key
        s["no such key"]
    assert caught.value.args == ("no such key",)


def test_a_summary_stored_with_the_old_keys_reads_with_the_new_ones(systems):
    dev, ev = systems
    record = evaluate(dev, ev, bootstrap=Bootstrap(n_boot=200)).summary.to_dict()
    new_to_old = {new: old for old, new in OLD_TO_NEW.items()}
    stored = {new_to_old.get(key, key): value for key, value in record.items()}  # as lidframe wrote it before
    assert set(OLD_TO_NEW) <= set(stored) and not set(OLD_TO_NEW.values()) & set(stored)
    assert list(with_current_keys(stored)) == list(record) and with_current_keys(stored) == record
    assert with_current_keys(record) == record  # a summary of this release is left as it is
    both = {**stored, "intervals": {"alid": [0.0, 1.0]}}  # where both are there, the new key wins
    assert with_current_keys(both)["intervals"] == {"alid": [0.0, 1.0]}


def test_the_old_outsider_keys_read_the_outsider_counts_with_a_warning(systems):
    dev, ev = systems

    def with_outsiders(scores, n):  # the first n trials relabelled to a speaker who is not enrolled
        speakers = ["stranger"] * n + list(scores.trial_speakers[n:])
        return ScoreSet(scores.scores, scores.enrolled, speakers, scores.trial_ids)

    s = evaluate(with_outsiders(dev, 2), with_outsiders(ev, 3)).summary
    assert (s.n_outsider_trials, s.n_dev_outsider_trials) == (3, 2)
    for old, new, holds, want in (
        ("n_impostor_trials", "n_outsider_trials", "trials whose speaker is not enrolled", 3),
        ("n_dev_impostor_trials", "n_dev_outsider_trials", "dev trials whose speaker is not enrolled", 2),
    ):
        message = rf"summary\['{old}'\] is now summary\['{new}'\] \({holds}\); the old key will be removed"
        with pytest.warns(FutureWarning, match=message) as caught:
            assert s[old] == s.get(old) == want
        renames = [w for w in caught if "is now" in str(w.message)]
        assert len(renames) == 2 and all(w.filename == __file__ for w in caught)
    old_names = {"n_outsider_trials": "n_impostor_trials", "n_dev_outsider_trials": "n_dev_impostor_trials"}
    stored = {old_names.get(key, key): value for key, value in s.to_dict().items()}  # as lidframe wrote it before
    assert (stored["n_impostor_trials"], stored["n_dev_impostor_trials"]) == (3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # translating a stored summary does not warn
        current = with_current_keys(stored)
    assert current == s.to_dict() and list(current) == list(s.to_dict())
    assert "n_impostor_trials" not in current and "n_dev_impostor_trials" not in current


def test_the_lid_fields_are_the_aggregates():
    aggregates = lid_summary(np.array([-1.0, 0.0, 2.0]))
    names = {f.name for f in attrs.fields(Summary)}
    assert set(aggregates) <= names


# ----------------------------------------------------------- keyword-only calibrator and prior
def assert_same_result(a, b):
    np.testing.assert_array_equal(a.lid, b.lid)
    np.testing.assert_array_equal(a.true_rank, b.true_rank)
    assert a.to_dict() == b.to_dict()


def test_positional_calibrator_and_prior_warn_and_give_the_keyword_numbers(systems):
    dev, ev = systems
    with pytest.warns(FutureWarning, match=r"evaluate\(\): pass calibrator=\.\.\. by keyword.*next release"):
        positional = evaluate(dev, ev, "isotonic")
    assert_same_result(positional, evaluate(dev, ev, calibrator="isotonic"))
    with pytest.warns(FutureWarning, match=r"pass calibrator=\.\.\., prior=\.\.\. by keyword"):
        both = evaluate(dev, ev, "isotonic", "uniform", binary_metrics=False)
    assert_same_result(both, evaluate(dev, ev, calibrator="isotonic", prior="uniform", binary_metrics=False))
    fitted = fit_calibrator(dev)
    with pytest.warns(FutureWarning, match=r"evaluate_fitted\(\): pass prior=\.\.\. by keyword"):
        fitted_positional = evaluate_fitted(ev, fitted, "uniform", dev=dev)
    assert_same_result(fitted_positional, evaluate_fitted(ev, fitted, prior="uniform", dev=dev))


def test_keyword_calls_do_not_warn_and_bad_positional_calls_are_type_errors(systems):
    dev, ev = systems
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        evaluate(dev, ev, calibrator="logistic", prior="uniform")
        evaluate_fitted(ev, fit_calibrator(dev), prior="uniform")
    with pytest.raises(TypeError, match="takes 2 positional arguments but 5 were given"):
        evaluate(dev, ev, "logistic", "uniform", 1)
    with pytest.raises(TypeError, match="multiple values for argument 'calibrator'"):
        evaluate(dev, ev, "logistic", calibrator="isotonic")
    with pytest.raises(TypeError, match="takes 2 positional arguments but 4 were given"):
        evaluate_fitted(ev, fit_calibrator(dev), "uniform", 1)


# ------------------------------------------- the summary against a dense float64 reference, under every prior
# The property tests of ALID = PDR LID+ + NDR LID- and of zero leakage, with the prior drawn
# (uniform, a watch list, an explicit prior) and every number computed here without
# lidframe: row z-norm, the LLRs of a given affine map, the log-softmax with the log prior,
# LID = log2(p_true / pi_true) -- exactly 0 for a row of equal LLRs, whose posterior is the
# prior (DESIGN.md, docs/metrics.md) -- and PDR the share of LID > 0 (a LID of 0 is no
# disclosure).  A lidframe that ignored the prior, or counted LID >= 0 in PDR, fails them.

LN2 = math.log(2.0)


class GivenMap:
    """A calibrator with a given affine map llr = slope * x + intercept (fit learns nothing).

    ``input_scale`` "znorm": x is the row z-score; "raw": the raw score.
    """

    def __init__(self, slope: float, intercept: float, input_scale: str = "znorm") -> None:
        self.slope, self.intercept, self.input_scale = slope, intercept, input_scale

    def fit(self, scores, labels, sample_weight=None):
        return self

    def llr(self, scores):
        return self.slope * np.asarray(scores, dtype=np.float64) + self.intercept


@st.composite
def priors_drawn(draw, enrolled):
    """(kind, lidframe prior, its natural-log prior over *enrolled* written out here)."""
    n = len(enrolled)
    kind = draw(st.sampled_from(["uniform", "watchlist", "explicit"]))
    if kind == "uniform":
        return kind, "uniform", np.full(n, -math.log(n))
    if kind == "watchlist":  # K listed speakers weight w: w / (K w + N - K), the others 1 / (K w + N - K)
        listed = draw(st.lists(st.sampled_from(enrolled), min_size=1, max_size=n, unique=True))
        weight = draw(st.floats(0.05, 50.0))
        total = len(listed) * weight + n - len(listed)
        log_prior = np.array([math.log((weight if s in listed else 1.0) / total) for s in enrolled])
        return kind, WatchList(listed, weight), log_prior
    mass = np.array(draw(st.lists(st.floats(0.05, 20.0), min_size=n, max_size=n)))
    share = mass / mass.sum()
    return kind, Explicit(dict(zip(enrolled, share.tolist()))), np.log(share)


def reference_lid(scores, true_index, log_prior, slope, intercept, *, znorm_ddof=None):
    """LID (bits) of each row: z-norm (unless *znorm_ddof* is None), affine LLR, log-softmax with the prior."""
    x = np.asarray(scores, dtype=np.float64)
    if znorm_ddof is not None:
        x = (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, ddof=znorm_ddof, keepdims=True)
    llr = slope * x + intercept
    joint = llr + log_prior[None, :]
    log_post = joint - logsumexp(joint, axis=1, keepdims=True)
    rows = np.arange(len(true_index))
    lid = (log_post[rows, true_index] - log_prior[true_index]) / LN2
    lid[llr.max(axis=1) == llr.min(axis=1)] = 0.0  # no evidence: the posterior is the prior, LID exactly 0
    return lid, llr.max(axis=1) == llr.min(axis=1)


def check_against_reference(result, lid, constant):
    """The per-trial LIDs, the summary's aggregates and ALID = PDR LID+ + NDR LID- against *lid*."""
    closed = ~result.is_outsider
    np.testing.assert_allclose(result.lid[closed], lid, rtol=0, atol=1e-9)
    assert (result.lid[closed][constant] == 0.0).all()
    positive = lid > 0
    pdr, ndr = positive.mean(), 1.0 - positive.mean()
    lid_pos = lid[positive].mean() if positive.any() else math.nan
    lid_neg = lid[~positive].mean() if (~positive).any() else math.nan
    s = result.summary
    ambiguous = (np.abs(lid) < 1e-9) & ~constant  # rounding could put these on either side
    if ambiguous.any():
        assert np.mean(lid > 1e-9) <= s.pdr <= np.mean((lid > -1e-9) & ~constant)
    else:
        assert (s.pdr, s.ndr) == pytest.approx((pdr, ndr), abs=1e-15)
        for got, want in ((s.lid_pos, lid_pos), (s.lid_neg, lid_neg)):
            assert math.isnan(got) if math.isnan(want) else got == pytest.approx(want, abs=1e-9)
        # the decomposition, its sides from the reference (an empty side's term is 0)
        sides = pdr * (0.0 if math.isnan(lid_pos) else lid_pos) + ndr * (0.0 if math.isnan(lid_neg) else lid_neg)
        assert s.alid == pytest.approx(sides, abs=1e-9)
        assert alid_decomposition(s) == pytest.approx(sides, abs=1e-9)
    assert s.alid == pytest.approx(lid.mean(), abs=1e-9)
    assert s.lid_max == pytest.approx(lid.max(), abs=1e-9)


def per_speaker_pdr_check(result, lid, constant, speakers):
    """per_speaker's PDR of each speaker with trials: its share of reference LIDs > 0.

    A speaker with a LID within rounding of 0 on a row that is not constant is left out: the
    reference's 0.0 there is rounding too (LLRs of +-1e-143 under a watch-list prior give the
    reference 0.0 and the engine 9e-17 bit, while the exact LID is > 0), as in
    :func:`check_against_reference`; a constant row's LID is exactly 0.0 in both.
    """
    ambiguous = (np.abs(lid) < 1e-9) & ~constant
    for row in per_speaker(result).rows:
        mine = speakers == row.speaker
        if mine.any() and not ambiguous[mine].any():
            assert row.pdr == pytest.approx(np.mean(lid[mine] > 0), abs=1e-15), row.speaker


@pytest.mark.slow
@settings(max_examples=80, deadline=None)
@given(
    ev=scoresets(max_trials=12, max_enrolled=6),
    slope=st.sampled_from([0.0]) | st.floats(-4.0, 4.0),
    intercept=st.floats(-3.0, 3.0),
    ddof=st.sampled_from([0, 1]),
    data=st.data(),
)
def test_summary_equals_the_dense_reference_under_every_prior(ev, slope, intercept, ddof, data):
    assume(ev.n_outsider_trials < ev.n_trials)
    kind, prior, log_prior = data.draw(priors_drawn(list(ev.enrolled)), label="prior")
    result = evaluate(ev, ev, calibrator=GivenMap(slope, intercept), prior=prior, znorm_ddof=ddof, binary_metrics=False)
    np.testing.assert_allclose(result.log_prior, log_prior, rtol=0, atol=1e-12)
    closed = ~ev.is_outsider
    lid, constant = reference_lid(
        ev.scores[closed], ev.true_index[closed], log_prior, slope, intercept, znorm_ddof=ddof
    )
    check_against_reference(result, lid, constant)
    per_speaker_pdr_check(result, lid, constant, np.asarray(ev.trial_speakers)[closed])


@settings(max_examples=60, deadline=None)
@given(ev=scoresets(max_trials=12, max_enrolled=6), data=st.data())
def test_raw_llr_rows_of_equal_values_disclose_nothing_among_the_others(ev, data):
    # the scores are the LLRs (identity calibrator); some rows drawn constant: their LID is
    # exactly 0, in NDR, whatever the prior, while the other rows disclose
    assume(ev.n_outsider_trials < ev.n_trials)
    flat = np.array(data.draw(st.lists(st.booleans(), min_size=ev.n_trials, max_size=ev.n_trials), label="flat"))
    value = data.draw(st.floats(-5.0, 5.0), label="value")
    scores = np.where(flat[:, None], value, ev.scores)
    ev = ScoreSet(scores, ev.enrolled, ev.trial_speakers, ev.trial_ids)
    kind, prior, log_prior = data.draw(priors_drawn(list(ev.enrolled)), label="prior")
    result = evaluate(ev, ev, calibrator="identity", prior=prior, binary_metrics=False)
    closed = ~ev.is_outsider
    lid, constant = reference_lid(scores[closed], ev.true_index[closed], log_prior, 1.0, 0.0)
    check_against_reference(result, lid, constant)
    per_speaker_pdr_check(result, lid, constant, np.asarray(ev.trial_speakers)[closed])


@settings(max_examples=40, deadline=None)
@given(ev=scoresets(max_trials=12, max_enrolled=6), intercept=st.floats(-30.0, 30.0), data=st.data())
def test_an_attacker_without_evidence_discloses_nothing_under_any_prior(ev, intercept, data):
    # zero leakage: a calibrator that found no evidence (slope 0) leaves every posterior at
    # the prior, so every LID is exactly 0 and counts in NDR
    assume(ev.n_outsider_trials < ev.n_trials)
    kind, prior, _log_prior = data.draw(priors_drawn(list(ev.enrolled)), label="prior")
    result = evaluate(ev, ev, calibrator=GivenMap(0.0, intercept), prior=prior, binary_metrics=False)
    s = result.summary
    lid = result.lid[~result.is_outsider]
    assert (lid == 0.0).all() and not np.signbit(lid).any(), kind
    assert (s.alid, s.pdr, s.ndr, s.lid_neg, s.lid_max, s.lid_min) == (0.0, 0.0, 1.0, 0.0, 0.0, 0.0), kind
    assert math.isnan(s.lid_pos)
    assert all(row.pdr == 0.0 for row in per_speaker(result).rows if row.n_trials)


# ------------------------------------------------- the mapping view's deprecation (0.3.0; removed in 0.4.0)
MAPPING_READS = {
    "summary[key]": lambda s: s["alid"],
    "summary.get(key)": lambda s: s.get("alid"),
    "key in summary": lambda s: "alid" in s,
    "dict(summary)": dict,
    "len(summary)": len,
    "list(summary)": list,
    "summary.items()": lambda s: list(s.items()),
}


@pytest.mark.parametrize("read", list(MAPPING_READS))
def test_every_read_of_the_mapping_view_warns_at_the_callers_line(systems, read):
    s = evaluate(*systems).summary
    with pytest.warns(FutureWarning, match=r"mapping view .* removed in lidframe 0\.4\.0") as caught:
        MAPPING_READS[read](s)
    assert {w.filename for w in caught if "mapping view" in str(w.message)} == {__file__}


def test_the_record_reads_without_a_warning(systems):
    dev, ev = systems
    for s in (evaluate(dev, ev).summary, evaluate(dev, ev, binary_metrics=False).summary):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert bool(s)  # a record is never empty, and `if summary:` is not a mapping read
            binary = s.binary
            for key in HEAD_KEYS:
                assert same(s.value(key), getattr(s, key)), key
            for key in BINARY_KEYS:
                want = (
                    (None if key in ("zebra_tag", "dsys_method") else math.nan)
                    if binary is None
                    else getattr(binary, key)
                )
                assert same(s.value(key), want), key
            assert s.value("calibrator") == s.calibrator and s.value("binary_metrics") == s.binary_metrics
            with pytest.raises(KeyError):
                s.value("open_set")  # a nested record is its attribute
