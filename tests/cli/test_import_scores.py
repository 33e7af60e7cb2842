"""``lidframe import-scores kaldi``: a Kaldi score file from the command line (issue 41).

The expected score set is built here from the lines written (a dict of scores by pair),
not by the reader; bad input goes through the bad-input suite's one check.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe.cli import main
from lidframe.data.scoreset import ScoreSet
from tests.bad_input.conftest import assert_refused


def _kaldi_files(folder, scores, enrolled, trials, speaker_of):
    """Kaldi 'enroll trial score' lines of every pair, shuffled, and the key of the trials with a speaker."""
    rng = np.random.default_rng(0)
    pairs = [(e, t) for e in enrolled for t in trials]
    lines = [f"{e} {t} {scores[(e, t)]!r}\n" for e, t in (pairs[i] for i in rng.permutation(len(pairs)))]
    (folder / "scores").write_text("".join(lines))
    key = [f"{e} {t} {'target' if speaker_of.get(t) == e else 'nontarget'}\n" for e, t in pairs]
    (folder / "trials").write_text("".join(key))


@settings(max_examples=25, deadline=None)
@given(
    n_enrolled=st.integers(2, 5),  # 1-to-N linkage needs N >= 2
    n_trials=st.integers(1, 7),
    outsiders=st.integers(0, 2),
    seed=st.integers(0, 2**32 - 1),
    suffix=st.sampled_from([".npz", ".csv"]),
)
def test_the_imported_set_holds_every_pairs_score_and_each_trials_speaker(
    tmp_path_factory, n_enrolled, n_trials, outsiders, seed, suffix
):
    folder = tmp_path_factory.mktemp("kaldi")
    rng = np.random.default_rng(seed)
    enrolled = [f"spk{k}" for k in range(n_enrolled)]
    trials = [f"utt{k}" for k in range(n_trials + outsiders)]
    speaker_of = {t: enrolled[rng.integers(n_enrolled)] for t in trials[:n_trials]}  # the rest: outsiders
    scores = {(e, t): float(rng.normal()) for e in enrolled for t in trials}
    _kaldi_files(folder, scores, enrolled, trials, speaker_of)
    out = folder / f"imported{suffix}"
    assert (
        main(["import-scores", "kaldi", str(folder / "scores"), "--key", str(folder / "trials"), "--out", str(out)])
        == 0
    )
    got = ScoreSet.load(out)
    assert got.n_trials == len(trials) and got.n_outsider_trials == outsiders
    for i, trial in enumerate(got.trial_ids):
        assert got.trial_speakers[i] == speaker_of.get(trial, f"?{trial}")
        for j, speaker in enumerate(got.enrolled):
            assert got.scores[i, j] == scores[(speaker, trial)]


def test_utt2spk_names_the_trials_speakers(tmp_path, capsys):
    (tmp_path / "scores").write_text("A t1 0.5\nB t1 -1\nA t2 2\nB t2 0.25\n")
    (tmp_path / "utt2spk").write_text("t1 A\nt2 C\n")  # C: not enrolled, an outsider
    out = tmp_path / "s.npz"
    assert (
        main(
            [
                "import-scores",
                "kaldi",
                str(tmp_path / "scores"),
                "--utt2spk",
                str(tmp_path / "utt2spk"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "read 2 trials against N = 2 enrolled speakers (1 outsider trials)" in capsys.readouterr().out
    got = ScoreSet.load(out)
    assert got.trial_speakers.tolist() == ["A", "C"]
    np.testing.assert_array_equal(got.scores, [[0.5, -1.0], [2.0, 0.25]])


@pytest.mark.parametrize(
    "scores, key, extra, expect",
    [
        ("A t1 high\nB t1 0.1\n", "A t1 target\n", [], ["scores", "line 1", "high"]),
        ("A t1 0.9\nB t1 0.1\nA t2 0.3\n", "A t1 target\n", [], ["missing pair", "'B'", "'t2'"]),
        ("A t1 0.9\n", "A t1 maybe\n", [], ["trials", "entry 1", "maybe", "target or nontarget"]),
        ("A t1 0.9\n", "A t1 target\n", ["--out-as", "x"], ["unrecognized arguments"]),
        ("A t1 0.9\n", None, [], ["scores", "trial speakers unknown", "give the key"]),
    ],
    ids=["a score that is no number", "a pair missing", "a bad key label", "an unknown flag", "no speakers"],
)
def test_a_bad_score_file_is_one_line_and_nothing_is_written(tmp_path, capsys, scores, key, extra, expect):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "scores").write_text(scores)
    argv = ["import-scores", "kaldi", tmp_path / "in" / "scores"]
    if key is not None:
        (tmp_path / "in" / "trials").write_text(key)
        argv += ["--key", tmp_path / "in" / "trials"]
    assert_refused([*argv, "--out", tmp_path / "s.npz", *extra], capsys, expect=expect, watch=[tmp_path])


def test_an_output_on_an_input_or_of_another_kind_is_refused_before_reading(tmp_path, capsys):
    (tmp_path / "scores").write_text("A t1 0.9\n")
    (tmp_path / "trials").write_text("A t1 target\n")
    base = ["import-scores", "kaldi", tmp_path / "scores", "--key", tmp_path / "trials", "--out"]
    assert_refused(
        [*base, tmp_path / "trials"], capsys, expect=["--out", "trials", "expected a .npz or .csv"], watch=[tmp_path]
    )
    (tmp_path / "key.csv").write_text("A t1 target\n")
    assert_refused(
        ["import-scores", "kaldi", tmp_path / "scores", "--key", tmp_path / "key.csv", "--out", tmp_path / "key.csv"],
        capsys,
        expect=["--out", "is an input of this run"],
        watch=[tmp_path],
    )
