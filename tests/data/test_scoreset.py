"""ScoreSet validation, closed-set bookkeeping and the .npz / long .csv layouts."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lidframe import InputError, ScoreSet
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.scoreset import IMPOSTOR, OUTSIDER
from tests.strategies import scoresets


def make(scores=None, enrolled=("a", "b", "c"), speakers=("a", "b"), ids=None):
    if scores is None:
        scores = [[0.9, 0.1, 0.3], [0.2, 0.8, 0.1]]
    return ScoreSet(scores, list(enrolled), list(speakers), ids)


def test_closed_set_bookkeeping():
    s = make(scores=[[1, 2, 3], [3, 1, 2], [2, 3, 1]], speakers=["b", "x", "a"], ids=["t1", "t2", "t3"])
    assert s.scores.dtype == np.float64
    assert s.true_index.tolist() == [1, -1, 0]
    assert s.is_outsider.tolist() == [False, True, False]
    assert s.n_outsider_trials == 1
    assert s.closed_set().trial_ids.tolist() == ["t1", "t3"]
    assert s.mated_mask().sum() == 2 and s.mated_mask()[2, 0]


def test_old_outsider_names_still_read_for_one_release_with_a_warning():
    s = make(scores=[[1, 2, 3], [3, 1, 2], [2, 3, 1]], speakers=["b", "x", "a"], ids=["t1", "t2", "t3"])
    e = EmbeddingSet(np.eye(3), np.eye(3) + 0.5, ["a", "b", "c"], ["x", "b", "y"], ["u1", "u2", "u3"])
    for data, name in ((s, "ScoreSet"), (e, "EmbeddingSet")):
        for old, new in (("is_impostor", "is_outsider"), ("n_impostor_trials", "n_outsider_trials")):
            message = rf"{name}\.{old} is now {name}\.{new}; the old name will be removed in the next release"
            with pytest.warns(FutureWarning, match=message) as caught:
                value = getattr(data, old)
            assert len(caught) == 1 and caught[0].filename == __file__  # points at the user's line
            np.testing.assert_array_equal(value, getattr(data, new))
    with pytest.warns(FutureWarning):
        assert s.n_impostor_trials == 1 and e.n_impostor_trials == 2
    with pytest.warns(FutureWarning):
        assert s.is_impostor.tolist() == [False, True, False]
    assert IMPOSTOR == OUTSIDER == -1  # the old constant: a plain alias


def test_arrays_are_read_only_and_default_trial_ids():
    s = make()
    assert s.trial_ids.tolist() == ["0", "1"]
    with pytest.raises(ValueError):
        s.scores[0, 0] = 5.0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (
            {"scores": [[np.nan, 0.1, 0.3], [0.2, 0.8, 0.1]], "ids": ["u1", "u2"]},
            r"trial 'u1' \(row 0\) against enrolled 'a' \(column 0\) is nan",
        ),
        (
            {"scores": [[0.9, 0.1, 0.3], [0.2, np.inf, 0.1]]},
            r"trial '1' \(row 1\) against enrolled 'b' \(column 1\) is inf",
        ),
        ({"enrolled": ("a", "b", "a")}, "enrolled speaker id 'a' appears more than once"),
        ({"ids": ["u", "u"]}, "trial id 'u' appears more than once"),
        ({"scores": [[0.1], [0.2]], "enrolled": ("a",)}, r"N >= 2\), got N = 1"),
        ({"enrolled": ("a", "b")}, r"enrolled has shape \(2,\) but scores has 3 columns"),
        ({"speakers": ("a",)}, r"trial_speakers has shape \(1,\) but scores has 2 rows"),
        ({"scores": [0.1, 0.2, 0.3]}, "2-D"),
    ],
)
def test_validation_errors_name_the_culprit(kwargs, message):
    with pytest.raises(InputError, match=message):
        make(**kwargs)


@given(scoresets())
def test_npz_and_csv_round_trip_exactly(tmp_path_factory, s):
    folder = tmp_path_factory.mktemp("rt")
    for name in ("s.npz", "s.csv"):
        s.save(folder / name)
        back = ScoreSet.load(folder / name)
        assert back.equals(s), name


def test_csv_reader_pivots_shuffled_long_rows(tmp_path):
    # long layout in arbitrary row order, as the reference code may write it
    rows = [
        ("b", "a", "t2", 0.25),
        ("a", "a", "t1", 0.9),
        ("b", "a", "t1", 0.1),
        ("a", "a", "t2", 0.75),
    ]
    path = tmp_path / "s.csv"
    pd.DataFrame(rows, columns=["enroll_spk", "trial_spk", "trial_id", "score"]).to_csv(path, index=False)
    s = ScoreSet.load(path)
    assert s.enrolled.tolist() == ["b", "a"]  # order of first appearance
    assert s.trial_ids.tolist() == ["t2", "t1"]
    np.testing.assert_array_equal(s.scores, [[0.25, 0.75], [0.1, 0.9]])


def write_csv(tmp_path, text):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, message",
    [
        ("enroll_spk,trial_spk,score\na,a,1\n", "missing column.s. trial_id"),
        ("", "empty file"),
        ("enroll_spk,trial_spk,trial_id,score\n", "no data rows"),
        (
            "enroll_spk,trial_spk,trial_id,score\na,a,t,1\nb,a,t,x\n",
            r"line 3 \(trial 't', enrolled 'b'\) has score 'x'",
        ),
        ("enroll_spk,trial_spk,trial_id,score\na,a,t,1\nb,a,t,nan\n", "line 3.*expected a finite number"),
        (
            "enroll_spk,trial_spk,trial_id,score\na,a,t,1\nb,a,t,2\na,a,t,3\n",
            r"duplicate pair \(enroll_spk 'a', trial_id 't'\) at lines 2 and 4",
        ),
        (
            "enroll_spk,trial_spk,trial_id,score\na,a,t,1\nb,a,t,2\na,b,u,3\n",
            r"missing pair \(enroll_spk 'b', trial_id 'u'\)",
        ),
        (
            "enroll_spk,trial_spk,trial_id,score\na,a,t,1\nb,c,t,2\n",
            "line 3 gives trial 't' speaker 'c', but line 2 gave 'a'",
        ),
        ("enroll_spk,trial_spk,trial_id,score\na,a,t,1\n", r"N >= 2"),
    ],
)
def test_csv_errors_name_file_and_line(tmp_path, text, message):
    path = write_csv(tmp_path, text)
    with pytest.raises(InputError, match=message) as info:
        ScoreSet.load(path)
    assert str(info.value).startswith(str(path))
    assert "\n" not in str(info.value)


def test_npz_errors(tmp_path):
    path = tmp_path / "x.npz"
    np.savez(path, scores=np.zeros((2, 2)), enrolled=np.array(["a", "b"]))
    with pytest.raises(InputError, match="missing key.s. trial_speakers"):
        ScoreSet.load(path)
    np.savez(path, scores=np.ones((2, 3)), enrolled=np.array(["a", "b"]), trial_speakers=np.array(["a", "b"]))
    with pytest.raises(InputError, match=r"x.npz: enrolled has shape \(2,\) but scores has 3 columns"):
        ScoreSet.load(path)
    path.write_bytes(b"not a zip")
    with pytest.raises(InputError, match="x.npz: not a .npz archive"):
        ScoreSet.load(path)
    with pytest.raises(InputError, match="unknown score-set format '.txt'"):
        ScoreSet.load(tmp_path / "x.txt")
    with pytest.raises(InputError, match="no such file"):
        ScoreSet.load(tmp_path / "none.npz")


def test_save_is_atomic_on_failure(tmp_path, monkeypatch):
    s = make()
    target = tmp_path / "s.npz"

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(np, "savez", boom)
    with pytest.raises(RuntimeError):
        s.save(target)
    assert list(tmp_path.iterdir()) == []


def test_short_member_data_is_named_as_truncated_without_an_unrelated_hint(tmp_path):
    """A member whose data stops short of its header used to end with a hint about object ids."""
    from tests.data.npz_craft import stored, write_zip

    arrays = {"scores": np.ones((3, 2)), "enrolled": np.array(["a", "b"]), "trial_speakers": np.array(["a"] * 3)}
    members = [stored(f"{k}.npy", v) for k, v in arrays.items()]
    members[0]["data"] = members[0]["data"][:-8]
    path = write_zip(tmp_path / "short.npz", members)
    with pytest.raises(InputError) as info:
        ScoreSet.load(path)
    message = str(info.value)
    assert message.startswith(f"{path}: member 'scores.npy'") and "truncated" in message
    assert "unicode" not in message and "objects" not in message


def test_loaded_sets_know_their_file(tmp_path):
    s = make(speakers=("a", "b"), ids=["t1", "t2"])
    assert s.source is None
    s.save(tmp_path / "s.npz")
    s.save(tmp_path / "s.csv")
    for name in ("s.npz", "s.csv"):
        loaded = ScoreSet.load(tmp_path / name)
        assert loaded.source == str(tmp_path / name) and loaded.subset([1]).source == loaded.source
        assert loaded.equals(s)


def significant_digits(text: str) -> str:
    """The significant digits of a decimal number's text (``'0.00120'`` -> ``'12'``, ``'1e+16'`` -> ``'1'``)."""
    mantissa = text.lower().partition("e")[0].lstrip("+-").replace(".", "")
    return mantissa.strip("0")


@given(
    hnp.arrays(
        np.float64,
        st.tuples(st.integers(1, 4), st.integers(2, 4)),
        elements=st.floats(allow_nan=False, allow_infinity=False),  # subnormals, -0.0 and the extremes included
    )
)
def test_csv_scores_are_the_shortest_text_that_reads_back_bit_for_bit(tmp_path_factory, scores):
    n_trials, n_enrolled = scores.shape
    s = ScoreSet(scores, [f"e{j}" for j in range(n_enrolled)], [f"e{i % n_enrolled}" for i in range(n_trials)])
    path = tmp_path_factory.mktemp("csv") / "s.csv"
    s.save(path)
    texts = pd.read_csv(path, dtype=str, keep_default_na=False)["score"].tolist()
    for text, x in zip(texts, scores.ravel(), strict=True):
        # the same float64 through Python's own (correctly rounding) reader ...
        assert np.float64(float(text)).view(np.int64) == x.view(np.int64), (text, x)
        # ... and no longer than the shortest digits that do it, as numpy's Dragon4 finds them
        assert len(significant_digits(text)) == len(significant_digits(np.format_float_scientific(x, unique=True)))
    back = ScoreSet.load(path)
    np.testing.assert_array_equal(back.scores.view(np.int64), scores.view(np.int64))


def test_csv_scores_are_written_as_typed(tmp_path):
    s = make(scores=[[0.1, 0.3], [-0.0, 5e-324]], enrolled=("a", "b"), ids=["t1", "t2"])
    s.save(tmp_path / "s.csv")
    assert pd.read_csv(tmp_path / "s.csv", dtype=str)["score"].tolist() == ["0.1", "0.3", "-0.0", "5e-324"]
