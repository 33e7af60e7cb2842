"""Per-speaker EER (lidframe.metrics.speaker_eer, lidframe.analyses.speaker_eer, per_speaker(scores=...)).

Each speaker's pairs are picked out here from the score matrix -- its own trials in its column
(mated) and the other enrolled speakers' trials in its column (non-mated), as a trial list
grouped by enrolment speaker holds them -- z-normed by hand, and their EER taken with the
existing ``eer_rocch``.
"""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe import Bootstrap, InputError, ScoreSet, evaluate, per_speaker
from lidframe.analyses import speaker_eer as speaker_eer_module
from lidframe.cli import main
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.simulate import simulate_system
from lidframe.metrics.detection import eer_rocch
from lidframe.metrics.speaker_eer import speaker_eers


def own_pairs(matrix, truth, j):
    """Speaker j's mated and non-mated scores, picked out row by row (outsider rows, truth < 0, left out)."""
    mated = [row[j] for row, t in zip(matrix, truth, strict=True) if t == j]
    non_mated = [row[j] for row, t in zip(matrix, truth, strict=True) if t >= 0 and t != j]
    return mated, non_mated


def hand_eers(matrix, truth):
    out = []
    for j in range(np.asarray(matrix).shape[1]):
        mated, non_mated = own_pairs(matrix, truth, j)
        out.append(eer_rocch(mated, non_mated) if mated and non_mated else math.nan)
    return np.array(out)


def znormed(scores, ddof=1):
    scores = np.asarray(scores, dtype=float)
    return (scores - scores.mean(axis=1, keepdims=True)) / scores.std(axis=1, ddof=ddof, keepdims=True)


@st.composite
def matrices(draw):
    n_trials, n_enrolled = draw(st.integers(1, 25)), draw(st.integers(1, 6))
    values = st.integers(-4, 4).map(float)  # coarse: ties within and across the classes
    matrix = draw(
        st.lists(st.lists(values, min_size=n_enrolled, max_size=n_enrolled), min_size=n_trials, max_size=n_trials)
    )
    truth = draw(st.lists(st.integers(-1, n_enrolled - 1), min_size=n_trials, max_size=n_trials))
    return matrix, truth


@given(matrices())
def test_speaker_eers_are_eer_rocch_of_each_speakers_own_pairs(case):
    matrix, truth = case
    eer, n_mated, n_non_mated = speaker_eers(matrix, truth)
    np.testing.assert_array_equal(eer, hand_eers(matrix, truth))
    for j in range(len(matrix[0])):
        mated, non_mated = own_pairs(matrix, truth, j)
        assert (n_mated[j], n_non_mated[j]) == (len(mated), len(non_mated))


@pytest.fixture(scope="module")
def system():
    dev, ev = simulate_system(leakage=0.4, seed=12, n_enrolled=14, trials_per_speaker=8, n_outsiders=3)
    return dev, ev, evaluate(dev, ev)


def test_the_table_has_each_speakers_eer_over_its_own_pairs(system):
    _, ev, result = system
    table = per_speaker(result, scores=ev)
    want = dict(zip(ev.enrolled, hand_eers(znormed(ev.scores), ev.true_index), strict=True))  # logistic: monotone
    assert {row.speaker: row.eer for row in table.rows} == pytest.approx(want, abs=1e-12)
    assert table.sorted_by == "alid" and "own pairs" in table.eer_note
    assert [r.alid for r in table.rows] == sorted((r.alid for r in table.rows), reverse=True)


def test_the_speakers_pairs_split_the_pooled_eers_pairs(system):
    _, ev, result = system
    z, truth = znormed(ev.scores), np.asarray(ev.true_index)
    mated, non_mated = [], []
    for j in range(ev.n_enrolled):
        m, n = own_pairs(z, truth, j)
        mated += m
        non_mated += n
    assert len(mated) == result.summary.n_enrolled_trials
    assert len(non_mated) == result.summary.n_enrolled_trials * (ev.n_enrolled - 1)
    assert eer_rocch(mated, non_mated) == pytest.approx(result.summary.binary.eer, abs=1e-12)


def test_sorted_by_eer_puts_the_lowest_eer_first_then_nan_then_speakers_without_trials():
    dev, ev = simulate_system(leakage=0.5, seed=2, n_enrolled=10, trials_per_speaker=5)
    keep = np.asarray(ev.trial_speakers) != ev.enrolled[3]  # speaker 3 enrolled, without a trial
    ev = ScoreSet(
        np.asarray(ev.scores)[keep], ev.enrolled, np.asarray(ev.trial_speakers)[keep], np.asarray(ev.trial_ids)[keep]
    )
    table = per_speaker(evaluate(dev, ev), scores=ev, sort_by="eer")
    assert table.sorted_by == "eer"
    eers = [r.eer for r in table.rows if r.n_trials > 0]
    assert eers == sorted(eers)
    assert table.rows[-1].speaker == ev.enrolled[3] and table.rows[-1].n_trials == 0 and math.isnan(table.rows[-1].eer)
    frame = table.to_frame()
    assert list(frame.columns) == ["speaker", "n_trials", "alid", "lid_max", "pdr", "rank1_rate", "eer", "lid_ceiling"]
    stored = table.to_dict()
    assert stored["sorted_by"] == "eer" and stored["eer_note"] == table.eer_note
    assert stored["rows"][-1]["eer"] is None


def test_without_scores_the_table_and_its_json_are_as_they_were(system):
    _, _, result = system
    stored = per_speaker(result).to_dict()
    assert "sorted_by" not in stored and "eer_note" not in stored
    assert all("eer" not in row for row in stored["rows"])


def test_a_raw_score_calibrator_and_ddof_zero_are_applied_as_the_evaluation_applied_them():
    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=6, trials_per_speaker=6)
    raw = per_speaker(evaluate(dev, ev, calibrator="identity"), scores=ev)
    want = dict(zip(ev.enrolled, hand_eers(ev.scores, ev.true_index), strict=True))
    assert {r.speaker: r.eer for r in raw.rows} == pytest.approx(want, abs=1e-12)
    zero = per_speaker(evaluate(dev, ev, znorm_ddof=0), scores=ev)
    want = dict(zip(ev.enrolled, hand_eers(znormed(ev.scores, ddof=0), ev.true_index), strict=True))
    assert {r.speaker: r.eer for r in zero.rows} == pytest.approx(want, abs=1e-12)


def test_open_set_outsider_rows_have_no_eer_and_enrolled_rows_the_closed_sets(system):
    dev, ev, closed = system
    table = per_speaker(evaluate(dev, ev, prior="uniform?outside=0.2"), scores=ev, sort_by="eer")
    outsiders = [r for r in table.rows if r.outsider]
    assert outsiders and all(math.isnan(r.eer) for r in outsiders)
    closed_eer = {r.speaker: r.eer for r in per_speaker(closed, scores=ev).rows}
    assert {r.speaker: r.eer for r in table.rows if not r.outsider} == pytest.approx(closed_eer, abs=1e-12)


def test_an_embedding_set_is_scored_as_the_evaluation_scored_it(monkeypatch):
    rng = np.random.default_rng(0)
    profiles = rng.normal(size=(6, 10))
    speaker = rng.integers(0, 6, size=60)
    names = [f"s{j}" for j in range(6)]
    trials = profiles[speaker] + rng.normal(size=(60, 10))
    ev = EmbeddingSet(trials, profiles, names, [names[k] for k in speaker], [f"t{i}" for i in range(60)])
    dev = ev.to_scoreset()
    table = per_speaker(evaluate(dev, ev), scores=ev)
    want = per_speaker(evaluate(dev, ev.to_scoreset()), scores=ev.to_scoreset())
    assert {r.speaker: r.eer for r in table.rows} == pytest.approx({r.speaker: r.eer for r in want.rows}, abs=1e-12)
    monkeypatch.setattr(speaker_eer_module, "BINARY_PAIR_LIMIT", 100)  # 360 pairs: too many to score in full
    skipped = per_speaker(evaluate(dev, ev), scores=ev, sort_by="eer")
    assert all(r.eer is None for r in skipped.rows) and skipped.sorted_by == "alid"
    assert "not computed" in skipped.eer_note and "360" in skipped.eer_note


def test_bad_arguments_are_one_line(system):
    _, ev, result = system
    with pytest.raises(InputError, match="sort_by='eer' needs scores="):
        per_speaker(result, sort_by="eer")
    with pytest.raises(InputError, match="sort_by must be one of 'alid', 'eer'"):
        per_speaker(result, scores=ev, sort_by="pdr")
    with pytest.raises(InputError, match="trial ids are not those of the evaluation"):
        per_speaker(result, scores=ev.subset(np.arange(10)))
    with pytest.raises(InputError, match="ScoreSet or EmbeddingSet"):
        per_speaker(result, scores=np.asarray(ev.scores))
    with pytest.raises(InputError, match="true columns"):
        speaker_eers([[0.0, 1.0]], [2])


def test_the_cli_sorts_the_per_speaker_csv_by_eer(tmp_path, capsys):
    dev, ev = simulate_system(leakage=0.5, seed=2, n_enrolled=8, trials_per_speaker=6)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    argv = ["evaluate", "--dev", str(tmp_path / "dev.npz"), "--eval", str(tmp_path / "eval.npz")]
    assert main([*argv, "--per-speaker", str(tmp_path / "spk.csv"), "--per-speaker-sort", "eer"]) == 0
    out = capsys.readouterr().out
    assert f"(chance 1/N {1 / 8:.3f})" in out
    table = pd.read_csv(tmp_path / "spk.csv")
    want = per_speaker(evaluate(dev, ev), scores=ev, sort_by="eer").to_frame()
    assert list(table["speaker"]) == list(want["speaker"])
    assert list(table["eer"]) == sorted(table["eer"])
    np.testing.assert_allclose(table["eer"], want["eer"], rtol=1e-10)
    assert main([*argv, "--per-speaker-sort", "pdr"]) == 2
    assert "--per-speaker-sort" in capsys.readouterr().err


def test_intervals_and_eer_come_together():
    dev, ev = simulate_system(leakage=0.5, seed=9, n_enrolled=6, trials_per_speaker=5)
    table = per_speaker(evaluate(dev, ev), scores=ev, bootstrap=Bootstrap(n_boot=100))
    assert list(table.to_frame().columns)[10:] == ["pdr_high", "rank1_rate", "eer", "lid_ceiling"]
