"""Open set on every engine: dense, streaming (numpy, torch, Triton in its interpreter), against a dense float64 reference.

The reference is written here, independently of lidframe's engines: it materialises the
cosine matrix, z-norms it, maps it with the calibrator's ``llr`` and takes the log-softmax
over the N enrolled speakers and ∅ (an extra column of log π_∅).
"""

import importlib.util
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import log_softmax

from lidframe import ScoreSet, evaluate, evaluate_fitted
from lidframe.calibrators import Isotonic, Logistic
from lidframe.calibrators.maps import AffineMap
from lidframe.core.engine import Engine
from lidframe.core.evaluation import fit_calibrator
from lidframe.core.priors import Explicit, Uniform, WatchList
from lidframe.data.embedset import EmbeddingSet
from lidframe.errors import InputError
from lidframe.registry import WithOutside, resolve_prior, with_outside
from lidframe.stats.bootstrap import Bootstrap
from tests.reference import dense_znorm

ROOT = Path(__file__).resolve().parents[2]
HAS_TORCH = importlib.util.find_spec("torch") is not None
CPU64 = Engine(device="cpu", kernel="numpy", precision="float64")


def make_sets(seed, n_trials, n_enrolled, n_outsiders, dim=12, noise=1.2):
    """(dev, eval) embedding sets of a cosine attacker; the first *n_outsiders* trials of each are outsiders."""
    rng = np.random.default_rng(seed)
    sets = []
    for _ in range(2):
        enrol = rng.normal(size=(n_enrolled, dim))
        true = rng.integers(0, n_enrolled, n_trials)
        trial = enrol[true] + noise * rng.normal(size=(n_trials, dim))
        trial[:n_outsiders] = rng.normal(size=(n_outsiders, dim)) * (1 + noise)  # voices of nobody enrolled
        enrolled = [f"spk{j}" for j in range(n_enrolled)]
        speakers = [f"out{i}" if i < n_outsiders else enrolled[t] for i, t in enumerate(true)]
        sets.append(EmbeddingSet(trial, enrol, enrolled, speakers))
    return sets[0], sets[1]


def reference(eval_set, calibrator, log_prior, outside, ddof=1):
    """Per-trial (lid, posterior_true, membership, top posterior) of the open set, from the dense (T, N + 1) posterior."""
    trial = eval_set.trial_vectors / np.linalg.norm(eval_set.trial_vectors, axis=1, keepdims=True)
    enrol = eval_set.enrol_vectors / np.linalg.norm(eval_set.enrol_vectors, axis=1, keepdims=True)
    llr = calibrator.llr(dense_znorm(trial @ enrol.T, ddof))
    n = llr.shape[1]
    prior = np.r_[(1 - outside) * np.exp(log_prior), outside]
    log_post = log_softmax(np.c_[llr + np.log(prior[:n]), np.full(llr.shape[0], math.log(outside))], axis=1)
    col = np.where(eval_set.true_index < 0, n, eval_set.true_index)
    rows = np.arange(llr.shape[0])
    lid = (log_post[rows, col] - np.log(prior[col])) / math.log(2)
    p_enrolled = np.exp(log_post[:, :n]).sum(axis=1)
    membership = np.where(col == n, lid, np.log2(p_enrolled / (1 - outside)))
    return lid, np.exp(log_post[rows, col]), membership, np.exp(log_post[:, :n]).max(axis=1)


def engines():
    out = {"dense": None, "numpy64": CPU64, "numpy32": Engine(device="cpu", kernel="numpy", precision="float32")}
    if HAS_TORCH:
        out["torch64"] = Engine(device="cpu", kernel="torch", precision="float64")
        out["torch32"] = Engine(device="cpu", kernel="torch", precision="float32")
    return out


TOLERANCE = {"dense": 1e-10, "numpy64": 1e-10, "torch64": 1e-10, "numpy32": 2e-4, "torch32": 2e-4}


def run(eval_set, fitted, prior, engine):
    """evaluate_fitted on the dense engine (the cosine ScoreSet) or the streaming one (the EmbeddingSet)."""
    if engine is None:
        return evaluate_fitted(eval_set.to_scoreset(), fitted, prior=prior, binary_metrics=False)
    return evaluate_fitted(eval_set, fitted, prior=prior, binary_metrics=False, engine=engine)


@settings(max_examples=12, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n_enrolled=st.integers(3, 30),
    n_outsiders=st.integers(1, 15),
    outside=st.floats(0.01, 0.9),
    prior_kind=st.sampled_from(["uniform", "watchlist", "explicit"]),
    calibrator=st.sampled_from(["logistic", "isotonic"]),
)
def test_every_engine_equals_the_dense_reference(seed, n_enrolled, n_outsiders, outside, prior_kind, calibrator):
    dev, ev = make_sets(seed, 40, n_enrolled, n_outsiders)
    enrolled = list(ev.enrolled)
    base = {
        "uniform": Uniform(outside=outside),
        "watchlist": WatchList(enrolled[:2], 7.0, outside=outside),
        "explicit": Explicit(
            {s: (1.0 + j) / (n_enrolled * (n_enrolled + 1) / 2) for j, s in enumerate(enrolled)}, outside=outside
        ),
    }[prior_kind]
    fitted = fit_calibrator(dev.to_scoreset(), calibrator, outsider_pairs=True)
    log_prior = base.log_prior(ev.enrolled)
    want = reference(ev, fitted, log_prior, outside)
    for name, engine in engines().items():
        result = run(ev, fitted, base, engine)
        got = (result.lid, result.posterior_true, result.membership_bits, result.top_posterior)
        assert np.isfinite(result.lid).all(), name
        for label, value, expected in zip(("lid", "posterior", "membership", "top"), got, want):
            scale = max(1.0, float(np.abs(expected).max()))
            assert np.abs(value - expected).max() <= TOLERANCE[name] * scale, (name, label)
        assert (result.true_rank[ev.is_outsider] == 0).all() and (result.true_rank[~ev.is_outsider] >= 1).all()


@pytest.mark.parametrize("name", list(engines()))
def test_outside_zero_is_the_closed_set_bit_for_bit(name):
    dev, ev = make_sets(3, 50, 12, 9)
    fitted = fit_calibrator(dev.to_scoreset(), "logistic")
    engine = engines()[name]
    closed = run(ev, fitted, "uniform", engine)
    zero = run(ev, fitted, Uniform(outside=0.0), engine)
    assert np.array_equal(closed.lid, zero.lid, equal_nan=True) and np.isnan(zero.lid[ev.is_outsider]).all()
    assert zero.summary.to_dict() == closed.summary.to_dict() and zero.summary.open_set is None
    assert zero.membership_bits is None and zero.outside == 0.0
    # and the enrolled trials' LIDs are those of the set without its outsider trials (the
    # cosine products of another block of rows may differ in their last bit)
    alone = run(ev.subset(~ev.is_outsider), fitted, "uniform", engine)
    assert np.allclose(zero.lid[~ev.is_outsider], alone.lid, rtol=0, atol=1e-12 if "32" not in name else 1e-5)


@pytest.mark.parametrize("name", list(engines()))
@settings(max_examples=6, deadline=None)
@given(outside=st.floats(1e-6, 0.99), intercept=st.sampled_from([0.0, 0.0, 1.3]))
def test_a_row_of_equal_llrs_discloses_exactly_its_llr(name, outside, intercept):
    """LLR = c for every pair: LID = 0 exactly for every trial when c = 0, and the closed form when c != 0."""
    _dev, ev = make_sets(5, 30, 9, 7)
    result = run(ev, AffineMap(0.0, intercept), WatchList(["spk0"], 4.0, outside=outside), engines()[name])
    if intercept == 0.0:
        assert np.array_equal(result.lid, np.zeros(30)) and np.array_equal(result.membership_bits, np.zeros(30))
        assert not np.signbit(result.lid).any() and not np.signbit(result.membership_bits).any()  # +0.0, not -0.0
    else:  # every enrolled speaker's likelihood ratio is e^c against nobody
        log_z = math.log(outside + (1 - outside) * math.exp(intercept))
        want = np.where(ev.is_outsider, -log_z, intercept - log_z) / math.log(2)
        assert np.allclose(result.lid, want, rtol=0, atol=1e-12 if "32" not in name else 1e-6)


def test_open_set_pairs_and_ranks_are_the_enrolled_trials_ones():
    """The binary view (exact and binned) and the closed-set identification metrics ignore π_∅."""
    dev, ev = make_sets(7, 80, 15, 20)
    fitted = fit_calibrator(dev.to_scoreset(), "logistic")
    for binary in (True, "auto"):  # binned (streamed) and exact (scored in full)
        closed = evaluate_fitted(ev, fitted, prior="uniform", binary_metrics=binary, engine=CPU64)
        opened = evaluate_fitted(ev, fitted, prior="uniform?outside=0.3", binary_metrics=binary, engine=CPU64)
        assert opened.summary.binary == closed.summary.binary
        for key in ("cllr_mc", "rank1_rate", "rank_disclosure_bits", "n_enrolled_trials", "n_outsider_trials"):
            assert opened.summary[key] == pytest.approx(closed.summary[key], rel=1e-12, abs=1e-15), key
        assert np.array_equal(opened.true_rank, closed.true_rank)


def test_summary_groups_are_the_aggregates_of_their_trials():
    dev, ev = make_sets(9, 120, 20, 30)
    result = evaluate(dev, ev, prior="uniform?outside=0.25", misattribution_threshold=0.7)
    view, lid = result.summary.open_set, result.lid
    enrolled, outsider = ~result.is_outsider, result.is_outsider
    assert result.summary.alid == pytest.approx(lid.mean(), abs=1e-12)
    assert view.enrolled.alid == pytest.approx(lid[enrolled].mean(), abs=1e-12)
    assert view.outsider.alid == pytest.approx(lid[outsider].mean(), abs=1e-12)
    assert view.outsider.n_trials == 30 and view.enrolled.n_trials == 90
    assert view.outsider.pdr == np.mean(lid[outsider] > 0) and view.enrolled.lid_max == lid[enrolled].max()
    assert view.membership_enrolled.alid == pytest.approx(result.membership_bits[enrolled].mean(), abs=1e-12)
    assert view.misattribution_rate == np.mean(result.top_posterior[outsider] > 0.5)
    assert view.misattribution_rate_at_threshold == np.mean(result.top_posterior[outsider] > 0.7)
    assert view.misattribution_threshold == 0.7 and view.outside == 0.25 and view.outside_source == "given"
    as_dict = result.summary.to_dict()["open_set"]
    assert as_dict["outsider"]["alid"] == pytest.approx(view.outsider.alid) and as_dict["outside"] == 0.25


def test_bootstrap_intervals_of_the_open_set_groups():
    dev, ev = make_sets(11, 150, 20, 40)
    settings_ = Bootstrap(n_boot=200, unit="trial", seed=3)
    result = evaluate(dev, ev.to_scoreset(), prior="uniform?outside=0.2", bootstrap=settings_)
    intervals, view = result.summary.intervals, result.summary.open_set
    wanted = {
        "alid": result.summary.alid,
        "alid_enrolled": view.enrolled.alid,
        "alid_outsider": view.outsider.alid,
        "membership_enrolled": view.membership_enrolled.alid,
        "misattribution_rate": view.misattribution_rate,
        "misattribution_rate_at_threshold": view.misattribution_rate_at_threshold,
        "eer": result.summary.binary.eer,
    }
    for metric, estimate in wanted.items():
        interval = intervals[metric]
        assert interval.estimate == pytest.approx(estimate, abs=1e-12), metric
        assert interval.low <= interval.estimate + 1e-12 and interval.estimate <= interval.high + 1e-12, metric
    # the outsider group's interval is a bootstrap of its own trials: percentile bounds inside their range
    lid_out = result.lid[result.is_outsider]
    assert lid_out.min() <= intervals["alid_outsider"].low <= intervals["alid_outsider"].high <= lid_out.max()


def test_dev_outsider_trials_add_non_mated_pairs_in_the_open_set_only():
    dev, _ev = make_sets(13, 60, 10, 15)
    scores = dev.to_scoreset()
    z = dense_znorm(scores.scores, 1)
    labels = np.zeros(z.shape)
    rows = np.flatnonzero(~scores.is_outsider)
    labels[rows, scores.true_index[rows]] = 1
    every_pair = Logistic().fit(z.ravel(), labels.ravel())
    enrolled_pairs = Logistic().fit(z[rows].ravel(), labels[rows].ravel())
    opened = fit_calibrator(scores, "logistic", outsider_pairs=True)
    closed = fit_calibrator(scores, "logistic")

    def same_fit(a, b):  # the z-scores of the reference z-norm may differ in their last bit
        return a.slope_ == pytest.approx(b.slope_, rel=1e-9) and a.intercept_ == pytest.approx(b.intercept_, rel=1e-9)

    assert same_fit(opened, every_pair) and same_fit(closed, enrolled_pairs)
    assert abs(opened.intercept_ - closed.intercept_) > 1e-3
    # evaluate fits with them exactly when the prior is open
    _, ev = make_sets(13, 60, 10, 15)
    assert same_fit(evaluate(dev, ev, prior="uniform?outside=0.1").calibrator, every_pair)
    assert same_fit(evaluate(dev, ev).calibrator, enrolled_pairs)


def test_outside_auto_is_the_dev_share_of_outsider_trials():
    dev, ev = make_sets(15, 80, 10, 20)
    result = evaluate(dev, ev, prior="uniform?outside=auto")
    assert result.outside == 20 / 80 and result.summary.open_set.outside_source == "auto"
    assert result.summary.prior == "uniform(outside=auto)"
    given_ = evaluate(dev, ev, prior=Uniform(outside=0.25))
    assert np.array_equal(result.lid, given_.lid)
    fitted = fit_calibrator(dev.to_scoreset(), "logistic")
    with pytest.raises(InputError, match="outside='auto'.*dev set"):
        evaluate_fitted(ev, fitted, prior="uniform?outside=auto")


def test_every_prior_takes_outside_in_the_same_words(tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("spk1\n")
    assert resolve_prior("uniform?outside=0.2") == Uniform(outside=0.2)
    assert resolve_prior(f"watchlist?file={ids}&weight=3&outside=0.2") == WatchList(["spk1"], 3.0, outside=0.2)
    assert Uniform().describe() == "uniform" and Uniform(outside=0.2).describe() == "uniform(outside=0.2)"
    assert WatchList(["a"], 2.0, outside=0.1).describe() == "watchlist(1 ids, weight=2, outside=0.1)"
    for bad in ("1", "-0.1", "nan", "x", "inf"):
        with pytest.raises(InputError, match="outside"):
            resolve_prior(f"uniform?outside={bad}")
    # a prior that does not take outside itself (a plugin's) is wrapped, by spec or by with_outside
    plugin = resolve_prior("tests.core.test_openset_engines:HalfPrior?outside=0.3")
    assert isinstance(plugin, WithOutside) and plugin.outside == 0.3
    assert plugin.describe() == "HalfPrior(outside=0.3)"
    assert with_outside(Uniform(), 0.4) == Uniform(outside=0.4) and with_outside(HalfPrior(), 0.0) == HalfPrior()


class HalfPrior:
    """A plugin prior without ``outside``: half the mass on the first enrolled speaker."""

    def log_prior(self, enrolled):
        n = len(enrolled)
        mass = np.r_[0.5, np.full(n - 1, 0.5 / (n - 1))]
        return np.log(mass)

    def __eq__(self, other):
        return type(other) is HalfPrior

    def __hash__(self):
        return 0


def test_a_plugin_prior_with_outside_evaluates_as_the_built_in_would():
    dev, ev = make_sets(17, 60, 8, 12)
    explicit = Explicit({s: (0.5 if j == 0 else 0.5 / 7) for j, s in enumerate(ev.enrolled)}, outside=0.3)
    by_plugin = evaluate(dev, ev, prior="tests.core.test_openset_engines:HalfPrior?outside=0.3")
    by_builtin = evaluate(dev, ev, prior=explicit)
    assert np.allclose(by_plugin.lid, by_builtin.lid, rtol=0, atol=1e-12)


def test_a_score_set_of_outsiders_only_is_still_refused():
    scores = ScoreSet(np.random.default_rng(0).normal(size=(4, 3)), ["a", "b", "c"], ["x", "y", "x", "y"])
    dev, _ = make_sets(1, 30, 3, 5)
    with pytest.raises(InputError, match="no trial's speaker is enrolled"):
        evaluate(dev, scores, prior="uniform?outside=0.5")


def test_a_bad_misattribution_threshold_is_an_input_error():
    dev, ev = make_sets(19, 30, 5, 5)
    for bad in (0.4, 1.0, "x", True):
        with pytest.raises(InputError, match="misattribution_threshold"):
            evaluate(dev, ev, prior="uniform?outside=0.1", misattribution_threshold=bad)


TRITON_SCRIPT = textwrap.dedent(
    """
    import numpy as np
    from lidframe.calibrators import Logistic
    from lidframe.calibrators.maps import AffineMap
    from lidframe.core.engine import Engine
    from lidframe.core.streaming import lid_from_embeddings
    rng = np.random.default_rng(2)
    enrol = rng.normal(size=(40, 16)); true_index = rng.integers(0, 40, 50)
    trial = enrol[true_index] + 1.3 * rng.normal(size=(50, 16)); true_index[:12] = -1
    cal = AffineMap(2.5, -3.0)
    for log_prior in (np.full(40, -np.log(40)), np.log(np.r_[np.full(5, 5.0), np.ones(35)] / 60)):
        kw = dict(open_set=True)
        ref = lid_from_embeddings(trial, enrol, true_index, cal, log_prior,
                                  engine=Engine(device="cpu", kernel="numpy", precision="float64"), **kw)
        out = lid_from_embeddings(trial, enrol, true_index, cal, log_prior,
                                  engine=Engine(device="cpu", kernel="triton", precision="float32"),
                                  triton_blocks={"block_m": 16, "block_n": 16}, **kw)
        assert out.kernel == "triton"
        for a, b in ((out.open_stats.log_evidence, ref.open_stats.log_evidence),
                     (out.open_stats.log_top, ref.open_stats.log_top)):
            assert np.abs(a - b).max() < 1e-4, np.abs(a - b).max()
        keep = true_index >= 0
        assert np.isnan(out.lid_bits[~keep]).all() and (out.true_rank[~keep] == 0).all()
        assert np.abs(out.lid_bits[keep] - ref.lid_bits[keep]).max() < 1e-4
        zero = lid_from_embeddings(trial, enrol, true_index, AffineMap(0.0, 0.0), log_prior,
                                   engine=Engine(device="cpu", kernel="triton", precision="float32"),
                                   triton_blocks={"block_m": 16, "block_n": 16}, **kw)
        assert np.array_equal(zero.open_stats.log_evidence, np.zeros(50))
        assert np.array_equal(zero.open_stats.log_top, np.full(50, log_prior.max()))
    print("ok")
    """
)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs Triton (its CPU interpreter)")
def test_triton_open_set_statistics_in_the_interpreter():
    env = dict(os.environ, TRITON_INTERPRET="1")
    done = subprocess.run([sys.executable, "-c", TRITON_SCRIPT], env=env, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_isotonic_open_set_uses_the_calibrators_own_intercept():
    """An isotonic map is not folded: its LLRs, intercept and all, reach the log evidence as they are."""
    dev, ev = make_sets(21, 60, 12, 10)
    fitted = fit_calibrator(dev.to_scoreset(), Isotonic(), outsider_pairs=True)
    a = run(ev, fitted, Uniform(outside=0.2), CPU64)
    b = run(ev, fitted, Uniform(outside=0.2), None)
    assert np.allclose(a.lid, b.lid, rtol=0, atol=1e-10)


@pytest.mark.parametrize("outside_zero", [False, True], ids=["default-prior", "outside=0"])
def test_outside_zero_gives_the_closed_set_lids_of_the_release_before(outside_zero, monkeypatch):
    """LIDs written by lidframe before the open set (commit a9576b5, tests/fixtures/make_closed_set_lids.py).

    Bit for bit on the machine that wrote them; within 1e-12 bit elsewhere (another BLAS may
    round the cosine products differently).  The engines are what this compares: the logistic
    fit is the one that release made, without the Newton steps that finish it since 2026-12-03
    (they move its slope and intercept by ~1e-8 here, and the LIDs by ~3e-8 bit;
    tests/calibrators/test_logistic.py checks the fit itself).
    """
    import lidframe.calibrators.logistic as logistic
    from tests.fixtures.make_closed_set_lids import closed_set_lids

    monkeypatch.setattr(logistic, "_POLISH_STEPS", 0)

    before = np.load(ROOT / "tests" / "fixtures" / "closed_set_lids.npz")
    priors = {"uniform": "uniform", "watchlist": WatchList(["spk1", "spk2"], 8.0)}
    if outside_zero:
        priors = {"uniform": Uniform(outside=0.0), "watchlist": WatchList(["spk1", "spk2"], 8.0, outside=0.0)}
    now = closed_set_lids(priors)
    assert sorted(now) == sorted(before.files)
    for name, lid in now.items():
        atol = 1e-5 if "32" in name else 1e-12
        assert np.array_equal(np.isnan(lid), np.isnan(before[name])) and np.isnan(lid).sum() == 25, name
        assert np.allclose(lid, before[name], rtol=0, atol=atol, equal_nan=True), name


def test_the_open_set_refuses_a_calibrator_whose_llrs_have_no_level():
    """Temperature's LLRs are a z: right up to a constant per row, which only the closed set cancels."""
    dev, ev = make_sets(23, 60, 8, 12)
    assert np.isfinite(evaluate(dev, ev, calibrator="temperature").summary.alid)
    with pytest.raises(InputError, match="temperature.*up to a constant per row.*open set"):
        evaluate(dev, ev, calibrator="temperature", prior="uniform?outside=0.2")
    from lidframe.analyses.sensitivity import DEFAULT_CALIBRATORS, sensitivity

    opened = sensitivity(dev.to_scoreset(), ev.to_scoreset(), prior="uniform?outside=0.2")
    assert [row.calibrator for row in opened.rows] == [c for c in DEFAULT_CALIBRATORS if c != "temperature"]
    with pytest.raises(InputError, match="temperature"):
        sensitivity(dev.to_scoreset(), ev.to_scoreset(), ["logistic", "temperature"], prior="uniform?outside=0.2")


def test_outside_auto_without_outsider_trials_in_dev_is_an_error_not_the_closed_set():
    dev, ev = make_sets(25, 60, 8, 12)
    closed_dev = dev.subset(~dev.is_outsider)
    with pytest.raises(InputError, match="outside='auto': the dev set has no outsider trial"):
        evaluate(closed_dev, ev, prior="uniform?outside=auto")


class OptionsPrior:
    """A plugin prior whose builder takes any keyword (``**options``) and keeps none of them."""

    def __init__(self, **options):
        self.options = options

    def log_prior(self, enrolled):
        return np.full(len(enrolled), -np.log(len(enrolled)))


def test_a_plugin_prior_that_swallows_outside_is_still_given_it():
    prior = resolve_prior("tests.core.test_openset_engines:OptionsPrior?outside=0.2")
    assert isinstance(prior, WithOutside) and prior.outside == 0.2


def test_an_eval_set_of_outsiders_only_is_refused_with_the_open_set_reason():
    dev, ev = make_sets(27, 40, 6, 8)
    outsiders_only = ev.subset(ev.is_outsider)
    with pytest.raises(InputError, match="an open-set evaluation needs at least one enrolled trial"):
        evaluate(dev, outsiders_only, prior="uniform?outside=0.3")
