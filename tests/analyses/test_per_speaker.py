"""Per-speaker disclosure: a hand computation, aggregation properties, intervals, the CLI and the dot plot."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from lidframe import Bootstrap, Engine, Explicit, InputError, PerSpeakerResult, ScoreSet, evaluate, per_speaker
from lidframe.cli import main
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.simulate import simulate_system
from tests.strategies import lid_grid_values, scoresets

# ------------------------------------------------------------------ the hand-computed set
# Identity calibration: the scores are the natural-log LLRs, so with the prior pi the
# attacker's posterior of speaker j is pi_j e^{s_j} / sum_k pi_k e^{s_k}.  Scores are logs
# of small integers, so each posterior is a fraction one can check on paper.
ENROLLED = ["A", "B", "C", "D"]  # D is enrolled but has no eval trial
#: trial id -> (true speaker, the e^{score} of A, B, C, D)
TRIALS = {
    "a1": ("A", (3, 1, 1, 1)),  # uniform: p = 3/6, LID = log2(4 * 1/2) = 1 bit, rank 1
    "a2": ("A", (1, 2, 1, 1)),  # p = 1/5, LID = log2(4/5) < 0, rank 2
    "a3": ("A", (5, 1, 1, 1)),  # p = 5/8, LID = log2(5/2), rank 1
    "b1": ("B", (1, 1, 1, 1)),  # p = 1/4, LID = 0 bit exactly (not positive), rank 1 (ties count for the attacker)
    "b2": ("B", (1, 4, 2, 1)),  # p = 4/8, LID = 1 bit, rank 1
    "c1": ("C", (1, 1, 6, 2)),  # p = 6/10, rank 1
    "c2": ("C", (1, 3, 1, 1)),  # p = 1/6, rank 2
    "c3": ("C", (1, 1, 1, 5)),  # p = 1/8, rank 2
    "c4": ("C", (2, 1, 9, 0.5)),  # p = 9/12.5, rank 1
    "x1": ("X", (1, 2, 3, 4)),  # outsider: X is not enrolled
}


def hand_set() -> ScoreSet:
    scores = [[math.log(v) for v in row] for _, row in TRIALS.values()]
    return ScoreSet(scores, ENROLLED, [spk for spk, _ in TRIALS.values()], list(TRIALS))


def hand_table(prior: dict[str, float]) -> dict[str, dict]:
    """The per-speaker table worked out with plain Python from TRIALS and *prior* (sums to 1)."""
    per: dict[str, list[tuple[float, int]]] = {s: [] for s in ENROLLED}
    for spk, row in TRIALS.values():
        if spk not in ENROLLED:
            continue
        mass = {s: prior[s] * v for s, v in zip(ENROLLED, row)}
        p_true = mass[spk] / sum(mass.values())
        lid = math.log2(p_true / prior[spk])
        rank = 1 + sum(v > row[ENROLLED.index(spk)] for v in row)
        per[spk].append((lid, rank))
    out = {}
    for spk, trials in per.items():
        lids = [lid for lid, _ in trials]
        n = len(trials)
        out[spk] = {
            "n_trials": n,
            "alid": sum(lids) / n if n else math.nan,
            "lid_max": max(lids) if n else math.nan,
            "pdr": sum(lid > 0 for lid in lids) / n if n else math.nan,
            "rank1_rate": sum(rank == 1 for _, rank in trials) / n if n else math.nan,
            "lid_ceiling": -math.log2(prior[spk]),
        }
    return out


def evaluate_hand(prior="uniform"):
    ev = hand_set()
    return evaluate(ev, ev, calibrator="identity", prior=prior)


@pytest.mark.parametrize(
    "prior", [dict.fromkeys(ENROLLED, 0.25), {"A": 0.4, "B": 0.1, "C": 0.3, "D": 0.2}], ids=["uniform", "explicit"]
)
def test_table_matches_the_hand_computation(prior):
    uniform = len(set(prior.values())) == 1
    result = evaluate_hand("uniform" if uniform else Explicit(prior))
    table = per_speaker(result)
    want = hand_table(prior)
    assert isinstance(table, PerSpeakerResult)
    assert [r["speaker"] for r in table.rows[:3]] == sorted("ABC", key=lambda s: -want[s]["alid"])
    assert table.rows[-1]["speaker"] == "D"  # enrolled, no trial: last, n_trials 0, NaN metrics
    for row in table.rows:
        expected = want[row["speaker"]]
        assert set(row) == {"speaker", "n_trials", "alid", "lid_max", "pdr", "rank1_rate", "lid_ceiling"}
        for key, value in expected.items():
            if isinstance(value, float) and math.isnan(value):
                assert math.isnan(row[key]), (row["speaker"], key)
            else:
                assert row[key] == pytest.approx(value, abs=1e-12), (row["speaker"], key)
    counts = (table.n_enrolled, table.n_enrolled_trials, table.n_outsider_trials, table.n_speakers_without_trials)
    assert counts == (4, 9, 1, 1)
    assert table.bootstrap is None
    n_closed = sum(w["n_trials"] for w in want.values())
    assert table.alid == pytest.approx(
        sum(w["n_trials"] * w["alid"] for w in want.values() if w["n_trials"]) / n_closed
    )
    assert table.log2_n == 2.0
    if uniform:  # a few entries spelled out: B's trials disclose 0 and 1 bit, A's ranks are 1, 2, 1
        b = next(r for r in table.rows if r["speaker"] == "B")
        assert (b["alid"], b["pdr"], b["lid_max"], b["rank1_rate"]) == pytest.approx((0.5, 0.5, 1.0, 1.0))
        a = next(r for r in table.rows if r["speaker"] == "A")
        assert a["rank1_rate"] == pytest.approx(2 / 3) and a["lid_ceiling"] == pytest.approx(2.0)


@pytest.mark.parametrize("kernel", ["numpy", pytest.param("torch", marks=pytest.mark.slow)])
def test_result_true_rank_matches_hand_ranks_and_streaming_engine(kernel):
    result = evaluate_hand()
    want = [1, 2, 1, 1, 1, 1, 2, 2, 1, 0]  # TRIALS in order; 0 for the outsider trial x1
    assert result.true_rank.tolist() == want
    assert result.summary["rank1_rate"] == pytest.approx(6 / 9)
    # the streaming engine (an eval embedding set, binary view off) ranks the same way
    rng = np.random.default_rng(4)
    enrol = rng.normal(size=(6, 5))
    trials = np.repeat(enrol, 3, axis=0) + rng.normal(scale=0.8, size=(18, 5))
    speakers = [f"s{j}" for j in np.repeat(np.arange(6), 3)]
    speakers[-1] = "outsider"
    ev = EmbeddingSet(trials, enrol, [f"s{j}" for j in range(6)], speakers)
    dev, _ = simulate_system(leakage=0.5, seed=1, n_enrolled=6)
    if kernel == "torch":
        pytest.importorskip("torch")
    streamed = evaluate(dev, ev, binary_metrics=False, engine=Engine(kernel=kernel, device="cpu", precision="float64"))
    assert streamed.summary["engine"]["kernel"] == kernel
    cos = (trials / np.linalg.norm(trials, axis=1, keepdims=True)) @ (
        enrol / np.linalg.norm(enrol, axis=1, keepdims=True)
    ).T
    ranks = [0 if spk == "outsider" else 1 + int((row > row[int(spk[1:])]).sum()) for row, spk in zip(cos, speakers)]
    assert streamed.true_rank.tolist() == ranks


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=scoresets(max_trials=12, max_enrolled=6))
def test_speaker_rows_add_up_to_the_evaluation(data):
    if data.n_outsider_trials == data.n_trials:
        with pytest.raises(InputError):
            evaluate(data, data, calibrator="identity")
        return
    result = evaluate(data, data, calibrator="identity")
    table = per_speaker(result)
    frame = table.to_frame()
    closed = ~result.is_outsider
    assert sorted(frame["speaker"]) == sorted(data.enrolled)  # every enrolled speaker once, none dropped
    assert (
        frame["n_trials"].sum() == table.n_enrolled_trials == int(closed.sum()) == result.summary["n_enrolled_trials"]
    )
    assert table.n_outsider_trials == data.n_outsider_trials
    has = frame[frame["n_trials"] > 0]
    assert (frame["n_trials"] == 0).sum() == table.n_speakers_without_trials
    assert frame["alid"].isna().sum() == table.n_speakers_without_trials
    assert list(frame["n_trials"] > 0) == sorted(frame["n_trials"] > 0, reverse=True)  # no-trial rows last
    assert list(has["alid"]) == sorted(has["alid"], reverse=True)
    w = has["n_trials"] / has["n_trials"].sum()
    assert float((w * has["alid"]).sum()) == pytest.approx(result.summary["alid"], abs=1e-9)
    assert float((w * has["pdr"]).sum()) == pytest.approx(result.summary["pdr"], abs=1e-12)
    assert float((w * has["rank1_rate"]).sum()) == pytest.approx(result.summary["rank1_rate"], abs=1e-12)
    assert float(has["lid_max"].max()) == pytest.approx(result.summary["lid_max"], abs=1e-12)
    assert ((has["pdr"] >= 0) & (has["pdr"] <= 1) & (has["rank1_rate"] >= 0) & (has["rank1_rate"] <= 1)).all()
    assert (has["alid"] <= has["lid_max"] + 1e-12).all()
    assert (has["lid_max"] <= has["lid_ceiling"] + 1e-9).all()
    # each speaker's numbers against a groupby of the per-trial table
    trials = result.to_frame()[closed]
    grouped = trials.groupby("trial_spk")["lid_bits"].agg(["size", "mean", "max"])
    for row in table.rows[: len(has)]:
        g = grouped.loc[row["speaker"]]
        assert (row["n_trials"], row["alid"], row["lid_max"]) == (g["size"], pytest.approx(g["mean"]), g["max"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lids=st.lists(
        st.lists(st.integers(-300, 300).map(lambda k: k / 100), min_size=1, max_size=12), min_size=2, max_size=4
    ),
    method=st.sampled_from(["bca", "percentile"]),
    seed=st.integers(0, 2**31),
)
def test_intervals_contain_the_estimate_are_seeded_and_use_only_the_speakers_trials(lids, method, seed):
    # a Result whose per-trial LIDs are drawn (one list per speaker): intervals depend on nothing else
    result = _result_with_lids(lids)
    options = Bootstrap(n_boot=200, method=method, seed=seed, unit="speaker")
    table = per_speaker(result, bootstrap=options)
    again = per_speaker(result, bootstrap=options)
    assert table.to_dict() == again.to_dict()  # reproducible with the seed
    assert table.bootstrap == {
        "n_boot": 200,
        "level": 0.95,
        "unit": "trial",
        "method": method,
        "seed": seed,
        "resample": "eval",
    }
    assert table.interval_methods == {"alid": method, "lid_max": "percentile", "pdr": "clopper-pearson"}
    assert table.to_dict()["interval_methods"] == table.interval_methods
    assert table.interval_note.startswith("per-speaker intervals at 95 % from each speaker's own trials")
    assert "Clopper-Pearson" in table.interval_note and "cover less with few trials" in table.interval_note
    last = table.rows[-1]
    assert last["n_trials"] == 0 and all(math.isnan(last[f"{m}_{end}"]) for m in METRICS for end in ("low", "high"))
    for row in table.rows[:-1]:
        own = lids[int(row["speaker"][1:])]
        for metric in METRICS:
            low, high = row[f"{metric}_low"], row[f"{metric}_high"]
            if len(own) < 2 and metric != "pdr":  # no bootstrap of one trial; PDR's interval is exact
                assert math.isnan(low) and math.isnan(high)
                continue
            assert low - 1e-12 <= row[metric] <= high + 1e-12, (metric, row)
        if len(own) >= 2:  # resampling this speaker's trials can never leave their range
            assert min(own) - 1e-12 <= row["alid_low"] and row["alid_high"] <= max(own) + 1e-12
            assert row["lid_max_high"] == pytest.approx(max(own))


METRICS = ("alid", "lid_max", "pdr")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lids=st.lists(st.lists(lid_grid_values, min_size=1, max_size=30), min_size=1, max_size=4),
    level=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
    method=st.sampled_from(["bca", "percentile"]),
)
def test_pdr_interval_is_clopper_pearson_of_the_speakers_trials(lids, level, method):
    # k of n: the speaker's trials with LID > 0 (LID = 0 exactly is no disclosure, and the
    # 0.01-bit grid draws it often), counted here from the drawn LIDs; statsmodels' exact
    # binomial interval of k of n, whatever the bootstrap's method and seed
    result = _result_with_lids(lids)
    table = per_speaker(result, bootstrap=Bootstrap(n_boot=100, level=level, method=method, seed=1))
    for row in table.rows[:-1]:
        own = lids[int(row["speaker"][1:])]
        k, n = sum(lid > 0 for lid in own), len(own)
        assert (row["n_trials"], row["pdr"]) == (n, pytest.approx(k / n))
        want = proportion_confint(k, n, alpha=1 - level, method="beta")
        assert (row["pdr_low"], row["pdr_high"]) == pytest.approx(want, abs=1e-12), (k, n)
        assert row["pdr_low"] < row["pdr_high"]  # never zero width, even when every trial (or none) disclosed


def _bernoulli_speakers(rng, p, n_trials, n_speakers):
    """Per-speaker LIDs of +0.5 bit with probability *p*, else -0.5 bit (k of *n_trials* disclose)."""
    return [list(np.where(rng.random(n_trials) < p, 0.5, -0.5)) for _ in range(n_speakers)]


@pytest.mark.slow
@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_pdr_intervals_hold_their_level_by_simulation(p):
    # 150 speakers each at 10, 20 and 30 trials per speaker whose true PDR is p: the share
    # of the per-speaker PDR intervals (nominal 95 %) that hold p.  Clopper-Pearson's exact
    # coverage here is 0.957 to 0.992 (statsmodels and scipy's binomial pmf, in
    # tests/stats/test_proportion.py); the trial bootstrap it replaced covered 0.59 (p = 0.9
    # at 10 trials: 35 % of those speakers had all ten trials disclose, a zero-width [1, 1]).
    rng = np.random.default_rng(round(p * 100))
    for n_trials in (10, 20, 30):
        lids = _bernoulli_speakers(rng, p, n_trials, 150)
        table = per_speaker(_result_with_lids(lids), bootstrap=Bootstrap(n_boot=100, seed=2))
        rows = [row for row in table.rows if row["n_trials"] > 0]
        assert len(rows) == 150
        coverage = np.mean([row["pdr_low"] <= p <= row["pdr_high"] for row in rows])
        assert coverage >= 0.93, (p, n_trials, coverage)


def _result_with_lids(lids):
    """An evaluated Result whose closed-set LIDs are *lids* (speaker j's list, clipped below log2 N).

    N = len(lids) + 1 speakers are enrolled (the last without trials), identity calibration,
    uniform prior.  A trial of speaker j scores s against j and 0 against the others, so its
    posterior is q = e^s / (e^s + N - 1): s = ln(q (N - 1) / (1 - q)) with q = 2^LID / N.
    *lids* is replaced by the LIDs the evaluation computed (equal up to rounding).
    """
    n = len(lids) + 1
    cap = math.log2(n) - 0.05
    scores, speakers = [], []
    for j, own in enumerate(lids):
        for lid in own:
            q = 2.0 ** min(lid, cap) / n
            row = [0.0] * n
            row[j] = math.log(q * (n - 1) / (1 - q))
            scores.append(row)
            speakers.append(f"s{j}")
    ev = ScoreSet(scores, [f"s{j}" for j in range(n)], speakers)
    result = evaluate(ev, ev, calibrator="identity")
    of = np.asarray(speakers)
    for j, own in enumerate(lids):
        np.testing.assert_allclose(result.lid[of == f"s{j}"], np.minimum(own, cap), atol=1e-9)
    lids[:] = [list(result.lid[of == f"s{j}"]) for j in range(len(lids))]
    return result


def test_interval_is_a_within_speaker_trial_bootstrap():
    # speaker s0: 40 trials around 1 bit; s1: 40 trials around -2 bits.  A percentile
    # interval of s0's ALID from its own trials, against a plain resampling loop here.
    rng = np.random.default_rng(0)
    lids = [list(np.clip(rng.normal(1.0, 0.4, 40), -3, 1.5)), list(rng.normal(-2.0, 0.4, 40))]
    result = _result_with_lids(lids)
    row = next(
        r
        for r in per_speaker(result, bootstrap=Bootstrap(n_boot=4000, method="percentile")).rows
        if r["speaker"] == "s0"
    )
    own = np.array(lids[0])
    means = np.array([rng.choice(own, own.size).mean() for _ in range(4000)])
    low, high = np.quantile(means, [0.025, 0.975])
    sd = own.std() / math.sqrt(own.size)
    assert row["alid_low"] == pytest.approx(low, abs=0.15 * sd) and row["alid_high"] == pytest.approx(
        high, abs=0.15 * sd
    )


def test_bad_arguments():
    with pytest.raises(InputError, match="Result"):
        per_speaker({"lid": [1.0]})
    with pytest.raises(InputError, match="Bootstrap"):
        per_speaker(evaluate_hand(), bootstrap={"n_boot": 100})


# ------------------------------------------------------------------------------- the CLI
def test_cli_writes_the_table_the_api_gives(tmp_path, capsys):
    dev, ev = simulate_system(leakage=0.5, seed=2, n_enrolled=8, trials_per_speaker=6)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    base = ["evaluate", "--dev", str(tmp_path / "dev.npz"), "--eval", str(tmp_path / "eval.npz")]
    assert main([*base, "--per-speaker", str(tmp_path / "spk.csv")]) == 0
    table = pd.read_csv(tmp_path / "spk.csv", keep_default_na=False, na_values=["nan"])
    want = per_speaker(evaluate(dev, ev), scores=ev).to_frame()  # the CLI has the eval set: each speaker's EER too
    assert list(table.columns) == ["speaker", "n_trials", "alid", "lid_max", "pdr", "rank1_rate", "eer", "lid_ceiling"]
    assert list(table["speaker"]) == list(want["speaker"])
    np.testing.assert_allclose(table.drop(columns="speaker"), want.drop(columns="speaker"), rtol=1e-10)
    argv = [*base, "--per-speaker", str(tmp_path / "ci.csv"), "--bootstrap", "--n-boot", "200", "--seed", "3"]
    assert main(argv) == 0
    table = pd.read_csv(tmp_path / "ci.csv")
    options = Bootstrap(n_boot=200, seed=3)  # the CLI's evaluation refits the calibrator: so do the speakers' intervals
    want = per_speaker(evaluate(dev, ev, bootstrap=options), bootstrap=options, scores=ev).to_frame()
    assert {"alid_low", "alid_high", "pdr_low", "pdr_high", "lid_max_low", "lid_max_high"} <= set(table.columns)
    assert list(table.columns) == list(want.columns)
    np.testing.assert_allclose(table.drop(columns="speaker"), want.drop(columns="speaker"), rtol=1e-10)
    capsys.readouterr()


def test_cli_checks_the_per_speaker_path_before_computing(tmp_path, capsys):
    dev, ev = simulate_system(leakage=0.5, seed=2, n_enrolled=6, trials_per_speaker=4)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    base = ["evaluate", "--dev", str(tmp_path / "dev.npz"), "--eval", str(tmp_path / "eval.npz")]
    assert main([*base, "--per-speaker", str(tmp_path / "missing" / "spk.csv")]) == 2
    assert "--per-speaker" in capsys.readouterr().err
    same = str(tmp_path / "out.csv")
    assert main([*base, "--per-trial", same, "--per-speaker", same]) == 2
    assert "--per-speaker" in capsys.readouterr().err and not (tmp_path / "out.csv").exists()


# ------------------------------------------------------------------------------ the plot
@pytest.mark.parametrize("n_enrolled", [10, 200])
def test_dot_plot_is_sorted_with_whiskers_and_named_ends(tmp_path, n_enrolled):
    pytest.importorskip("matplotlib")
    from matplotlib.text import Annotation

    from lidframe.report.analysis_figures import per_speaker_figure, save_per_speaker

    dev, ev = simulate_system(leakage=0.5, seed=0, n_enrolled=n_enrolled, trials_per_speaker=4)
    table = per_speaker(evaluate(dev, ev, binary_metrics=False), bootstrap=Bootstrap(n_boot=100))
    fig = per_speaker_figure(table, n_labelled=5)
    (ax,) = fig.axes
    dots = ax.collections[-1].get_offsets()
    assert len(dots) == n_enrolled
    y_order = np.argsort(-np.asarray(dots)[:, 1])  # top to bottom
    np.testing.assert_allclose(np.asarray(dots)[y_order, 0], [r["alid"] for r in table.rows])
    names = [t.get_text() for t in ax.get_yticklabels()] + [a.get_text() for a in ax.texts if isinstance(a, Annotation)]
    names = [n for n in names if n]
    top, bottom = table.rows[0]["speaker"], table.rows[-1]["speaker"]
    assert any(n.startswith(top) for n in names) and any(n.startswith(bottom) for n in names)
    assert len(names) == (n_enrolled if n_enrolled <= 40 else 10)
    save_per_speaker(table, tmp_path / "spk.svg")
    assert (tmp_path / "spk.svg").read_text().lstrip().startswith("<?xml")
    import matplotlib.pyplot as plt

    plt.close(fig)
    outer, into = plt.subplots()
    assert per_speaker_figure(table, ax=into) is outer  # draws into a given Axes (e.g. a report's)
    plt.close(outer)
