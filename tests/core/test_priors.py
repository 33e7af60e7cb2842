"""Priors against their closed forms."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe import Explicit, InputError, Uniform, WatchList
from lidframe.core.priors import read_id_list


@given(st.integers(1, 200))
def test_uniform_is_one_over_n(n):
    lp = Uniform().log_prior([f"s{i}" for i in range(n)])
    np.testing.assert_allclose(np.exp(lp), 1.0 / n, rtol=1e-12)


@given(st.integers(2, 50), st.data(), st.floats(0.01, 100.0))
def test_watchlist_closed_form(n, data, weight):
    ids = [f"s{i}" for i in range(n)]
    listed = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=n, unique=True))
    p = np.exp(WatchList(listed, weight).log_prior(ids))
    k = len(listed)
    denom = k * weight + (n - k)
    want = np.array([weight / denom if x in listed else 1.0 / denom for x in ids])
    np.testing.assert_allclose(p, want, rtol=1e-12)
    assert math.isclose(p.sum(), 1.0, rel_tol=1e-12)


def test_watchlist_errors():
    with pytest.raises(InputError, match="not among the 3 enrolled speakers: 'zz'"):
        WatchList(["a", "zz"], 2.0).log_prior(["a", "b", "c"])
    with pytest.raises(InputError, match="positive and finite"):
        WatchList(["a"], 0.0)
    with pytest.raises(InputError, match="appears more than once"):
        WatchList(["a", "a"], 2.0)


def test_explicit_prior_order_normalisation_and_warnings():
    lp = Explicit({"a": 0.5, "b": 0.3, "c": 0.2}).log_prior(["c", "b", "a"])
    np.testing.assert_allclose(np.exp(lp), [0.2, 0.3, 0.5], rtol=1e-12)
    with pytest.warns(UserWarning, match="sums to 2, not 1"):
        lp = Explicit({"a": 1, "b": 1}).log_prior(["a", "b"])
    np.testing.assert_allclose(np.exp(lp), [0.5, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Explicit({"a": 0.25, "b": 0.75}).log_prior(["a", "b"])


@pytest.mark.parametrize(
    "prior",
    [
        Explicit({"a": 0.25, "b": 0.25, "z": 0.5}),
        WatchList(["a", "z"], 2.0),
    ],
    ids=["explicit", "watchlist"],
)
def test_a_prior_naming_a_speaker_who_is_not_enrolled_is_refused_by_one_rule(prior):
    """Explicit priors and watch lists share the rule: every id named must be enrolled (no warning, no drop)."""
    kind = "explicit prior" if isinstance(prior, Explicit) else "watch-list"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError, match=rf"^{kind} ids not among the 2 enrolled speakers: 'z'; a prior names"):
            prior.log_prior(["a", "b"])


def test_explicit_prior_errors():
    with pytest.raises(InputError, match="no probability for enrolled speakers 'c'"):
        Explicit({"a": 0.5, "b": 0.5}).log_prior(["a", "b", "c"])
    with pytest.raises(InputError, match="expected a positive finite probability"):
        Explicit({"a": -1.0})
    with pytest.raises(InputError, match="expected a number"):
        Explicit({"a": "x"})


def test_read_id_list(tmp_path):
    path = tmp_path / "ids.txt"
    path.write_text("# watch list\nspk1\n\n spk2  # suspect\n")
    assert read_id_list(path) == ["spk1", "spk2"]
    path.write_text("# nothing\n")
    with pytest.raises(InputError, match="no speaker ids"):
        read_id_list(path)


@pytest.mark.parametrize("weight", ["abc", None, [2.0], True])
def test_watchlist_weight_that_is_not_a_number_is_an_input_error(weight):
    with pytest.raises(InputError, match="watch-list weight must be a number"):
        WatchList(["a"], weight)


def test_watchlist_weight_given_as_text_still_reads_as_a_number():
    np.testing.assert_allclose(np.exp(WatchList(["a"], "3").log_prior(["a", "b", "c"])), [0.6, 0.2, 0.2], rtol=1e-12)


def test_watchlist_file_errors_name_the_file(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text("a\nb\n")
    with pytest.raises(InputError, match=r"w.txt: watch-list weight must be positive"):
        WatchList.from_params(file=path, weight=-1.0)


@pytest.mark.parametrize(
    "text, message",
    [
        ("a\nb\na\n", r"line 3 repeats id 'a' \(first on line 1\)"),
        ("a b\n", "line 1 holds 'a b'; expected one speaker id per line"),
        ("a,b\n", "line 1 holds 'a,b'"),
    ],
)
def test_read_id_list_errors_name_the_line(tmp_path, text, message):
    path = tmp_path / "ids.txt"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_id_list(path)


@given(st.lists(st.floats(0.001, 10.0), min_size=2, max_size=8), st.data())
def test_read_prior_table_reads_what_was_written_and_names_a_bad_line(tmp_path_factory, values, data):
    from lidframe.core.priors import read_prior_table

    folder = tmp_path_factory.mktemp("prior")
    ids = [f"spk{i}" for i in range(len(values))]
    path = folder / "p.csv"
    path.write_text("enroll_spk,prior\n" + "".join(f"{s},{v!r}\n" for s, v in zip(ids, values)))
    assert read_prior_table(path) == dict(zip(ids, values))
    row = data.draw(st.integers(0, len(values) - 1), label="bad row")
    bad = data.draw(st.sampled_from(["0", "-1", "nan", "inf", "-inf", "x", ""]), label="bad value")
    lines = path.read_text().splitlines()
    lines[row + 1] = f"{ids[row]},{bad}"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=rf"p.csv: line {row + 2} gives speaker 'spk{row}' prior '{bad}'"):
        read_prior_table(path)
