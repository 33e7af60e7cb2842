"""Per-speaker disclosure in the open set: outsider speakers get their own rows.

Checked against a hand computation of the open-set posterior (identity calibration, so
the scores are the LLRs: p(j | s) = pi_j e^{s_j} / Z, p(nobody | s) = pi_0 / Z,
Z = pi_0 + sum_k pi_k e^{s_k}, pi_j = (1 - pi_0) pi'_j), and against a groupby of the
Result's per-trial arrays for drawn score sets.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lidframe import Bootstrap, Explicit, ScoreSet, Uniform, evaluate, per_speaker
from tests.strategies import scoresets

ENROLLED = ["A", "B", "C", "D"]  # D is enrolled but has no eval trial
#: trial id -> (true speaker, the e^{score} of A, B, C, D); X and Y are not enrolled
TRIALS = {
    "a1": ("A", (3, 1, 1, 1)),
    "a2": ("A", (1, 2, 1, 1)),
    "b1": ("B", (1, 4, 2, 1)),
    "c1": ("C", (1, 1, 6, 2)),
    "c2": ("C", (1, 3, 1, 1)),
    "x1": ("X", (1, 2, 3, 4)),
    "x2": ("X", (9, 1, 1, 1)),  # linked to A, more likely than not
    "y1": ("Y", (1, 1, 1, 1)),
}


def hand_set() -> ScoreSet:
    scores = [[math.log(v) for v in row] for _, row in TRIALS.values()]
    return ScoreSet(scores, ENROLLED, [spk for spk, _ in TRIALS.values()], list(TRIALS))


def hand_rows(prior: dict[str, float], outside: float) -> dict[str, dict]:
    """The open-set per-speaker rows by hand, from TRIALS, the prior given enrolment and pi_0."""
    per: dict[str, list[dict]] = {}
    for spk, row in TRIALS.values():
        mass = {s: (1 - outside) * prior[s] * v for s, v in zip(ENROLLED, row)}
        z = outside + sum(mass.values())
        if spk in ENROLLED:
            lid = math.log2(mass[spk] / z / ((1 - outside) * prior[spk]))
            rank = 1 + sum(v > row[ENROLLED.index(spk)] for v in row)
        else:
            lid, rank = math.log2(1 / z), 0
        membership = math.log2(sum(mass.values()) / z / (1 - outside))
        per.setdefault(spk, []).append(
            {"lid": lid, "rank": rank, "membership": lid if spk not in ENROLLED else membership,
             "top": max(mass.values()) / z}
        )  # fmt: skip
    out = {}
    for spk in [*ENROLLED, "X", "Y"]:
        trials = per.get(spk, [])
        n = len(trials)
        lids = [t["lid"] for t in trials]
        enrolled = spk in ENROLLED
        out[spk] = {
            "n_trials": n,
            "alid": sum(lids) / n if n else math.nan,
            "lid_max": max(lids) if n else math.nan,
            "pdr": sum(x > 0 for x in lids) / n if n else math.nan,
            "rank1_rate": sum(t["rank"] == 1 for t in trials) / n if n and enrolled else math.nan,
            "lid_ceiling": -math.log2((1 - outside) * prior[spk]) if enrolled else -math.log2(outside),
            "outsider": not enrolled,
            "membership_bits": sum(t["membership"] for t in trials) / n if n else math.nan,
            "misattribution_rate": math.nan if enrolled else sum(t["top"] > 0.5 for t in trials) / n,
        }
    return out


def assert_row(row, expected):
    for key, value in expected.items():
        got = row[key]
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(got), (row["speaker"], key)
        elif isinstance(value, bool):
            assert got is value, (row["speaker"], key)
        else:
            assert got == pytest.approx(value, abs=1e-12), (row["speaker"], key)


@pytest.mark.parametrize("outside", [0.2, 0.5])
@pytest.mark.parametrize(
    "prior", [dict.fromkeys(ENROLLED, 0.25), {"A": 0.4, "B": 0.1, "C": 0.3, "D": 0.2}], ids=["uniform", "explicit"]
)
def test_rows_match_the_hand_computation(prior, outside):
    uniform = len(set(prior.values())) == 1
    ev = hand_set()
    spec = Uniform(outside=outside) if uniform else Explicit(prior, outside=outside)
    result = evaluate(ev, ev, calibrator="identity", prior=spec)
    table = per_speaker(result)
    want = hand_rows(prior, outside)
    speakers = [r["speaker"] for r in table.rows]
    # enrolled with trials by ALID, then D (no trial), then the outsider speakers by ALID
    assert speakers[:3] == sorted("ABC", key=lambda s: -want[s]["alid"]) and speakers[3] == "D"
    assert speakers[4:] == sorted("XY", key=lambda s: -want[s]["alid"])
    for row in table.rows:
        assert_row(row, want[row["speaker"]])
        assert set(row) == {
            "speaker", "n_trials", "alid", "lid_max", "pdr", "rank1_rate", "lid_ceiling", "outsider",
            "membership_bits", "misattribution_rate",
        }  # fmt: skip
    assert (table.n_enrolled, table.n_enrolled_trials, table.n_outsider_trials) == (4, 5, 3)
    assert (table.n_speakers_without_trials, table.n_outsider_speakers, table.outside) == (1, 2, outside)
    every = [want[s] for s in want if want[s]["n_trials"]]
    overall = sum(w["n_trials"] * w["alid"] for w in every) / sum(w["n_trials"] for w in every)
    assert table.alid == pytest.approx(overall, abs=1e-12)
    assert table.alid == pytest.approx(result.summary.alid, abs=1e-12)
    assert want["X"]["misattribution_rate"] == 0.5  # x2 is linked to A, x1 is not: the check has teeth
    got = table.to_dict()
    assert got["outside"] == outside and got["n_outsider_speakers"] == 2


def test_the_closed_set_table_is_as_it_was():
    ev = hand_set()
    table = per_speaker(evaluate(ev, ev, calibrator="identity"))
    assert [r["speaker"] for r in table.rows][-1] == "D" and len(table.rows) == 4  # no outsider rows
    assert all(set(r) == {"speaker", "n_trials", "alid", "lid_max", "pdr", "rank1_rate", "lid_ceiling"}
               for r in table.rows)  # fmt: skip
    assert "outside" not in table.to_dict() and "n_outsider_speakers" not in table.to_dict()
    assert table.n_outsider_trials == 3


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=scoresets(max_trials=12, max_enrolled=6), outside=st.sampled_from([0.05, 0.3, 0.9]))
def test_rows_are_a_groupby_of_the_result_arrays(data, outside):
    if data.n_outsider_trials == data.n_trials:
        return
    result = evaluate(data, data, calibrator="identity", prior=Uniform(outside=outside))
    table = per_speaker(result)
    frame = table.to_frame()
    assert len(frame) == data.n_enrolled + len(set(data.trial_speakers[data.is_outsider]))
    assert frame["n_trials"].sum() == data.n_trials  # every trial in one row
    lid, member, top = result.lid, result.membership_bits, result.top_posterior
    speakers = np.asarray(result.trial_speakers)
    for row in table.rows:
        own = speakers == row["speaker"]
        if not own.any():
            assert row["n_trials"] == 0 and not row["outsider"] and math.isnan(row["alid"])
            continue
        assert row["outsider"] is bool(result.is_outsider[own][0])
        assert row["n_trials"] == own.sum()
        assert row["alid"] == pytest.approx(lid[own].mean(), abs=1e-12)
        assert row["lid_max"] == lid[own].max()
        assert row["pdr"] == pytest.approx(np.mean(lid[own] > 0), abs=1e-12)
        assert row["membership_bits"] == pytest.approx(member[own].mean(), abs=1e-12)
        if row["outsider"]:
            assert math.isnan(row["rank1_rate"])
            assert row["lid_ceiling"] == pytest.approx(-math.log2(outside))
            assert row["misattribution_rate"] == pytest.approx(np.mean(top[own] > 0.5), abs=1e-12)
        else:
            assert row["rank1_rate"] == pytest.approx(np.mean(result.true_rank[own] == 1), abs=1e-12)
            assert row["lid_ceiling"] == pytest.approx(math.log2(data.n_enrolled) - math.log2(1 - outside))
            assert math.isnan(row["misattribution_rate"])
        assert row["lid_max"] <= row["lid_ceiling"] + 1e-9
    weights = frame["n_trials"][frame["n_trials"] > 0]
    alids = frame["alid"][frame["n_trials"] > 0]
    assert float((weights * alids).sum() / weights.sum()) == pytest.approx(result.summary.alid, abs=1e-9)
    outsider_rows = frame[frame["outsider"]]
    assert list(outsider_rows["alid"]) == sorted(outsider_rows["alid"], reverse=True)


def test_outsider_rows_get_intervals_from_their_own_trials():
    ev = hand_set()
    result = evaluate(ev, ev, calibrator="identity", prior=Uniform(outside=0.3))
    options = Bootstrap(n_boot=200, method="percentile", seed=5)
    table = per_speaker(result, bootstrap=options)
    assert table.to_dict() == per_speaker(result, bootstrap=options).to_dict()  # seeded
    x = next(r for r in table.rows if r["speaker"] == "X")
    own = result.lid[np.asarray(result.trial_speakers) == "X"]
    assert min(own) - 1e-12 <= x["alid_low"] <= x["alid"] <= x["alid_high"] <= max(own) + 1e-12
    y = next(r for r in table.rows if r["speaker"] == "Y")  # one trial: no interval
    assert math.isnan(y["alid_low"]) and math.isnan(y["alid_high"])


def test_the_dot_plot_shows_the_enrolled_speakers_and_counts_the_outsiders():
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from lidframe.report.analysis_figures import per_speaker_figure

    ev = hand_set()
    table = per_speaker(evaluate(ev, ev, calibrator="identity", prior=Uniform(outside=0.3)))
    fig = per_speaker_figure(table)
    (ax,) = fig.axes
    dots = np.asarray(ax.collections[-1].get_offsets())
    assert len(dots) == 3  # A, B, C: D has no trial, X and Y are outsiders
    assert "2 outsider speakers (membership disclosure) in the table only" in ax.get_title()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    enrolled = table.rows[:3]
    weights = sum(r["n_trials"] for r in enrolled)
    result_alid = sum(r["n_trials"] * r["alid"] for r in enrolled) / weights
    assert f"ALID of the enrolled trials {result_alid:.2f} bit" in labels
    plt.close(fig)
