"""The dense engine applies an affine calibrator in place, and every number stays what it was, bit for bit.

:meth:`AffineMap.apply_into` must round exactly as ``z * slope + intercept`` (a product,
then a sum).  The engine (:func:`lidframe.core.lid.lid_from_scores`) runs that map in a
reused buffer, takes each row's largest LLR from its largest score instead of another
pass, and counts ranks as bytes; its LIDs, open-set statistics and ranks are compared
here with a dense float64 path written out below with the expression the engine used
before (whole matrices, ``z * slope + intercept`` with its temporaries, ``max`` over every
row) and with ranks counted directly.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lidframe import ScoreSet
from lidframe.calibrators.identity import Identity
from lidframe.calibrators.logistic import Logistic
from lidframe.calibrators.maps import AffineMap
from lidframe.core.lid import lid_from_scores
from tests.strategies import priors_of_every_kind

LN2 = math.log(2.0)

# every kind of float64 a tile holds: signed zeros, tiny and huge magnitudes, infinities, NaN
any_float = st.one_of(
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 5e-324, -5e-324, 1e308, -1e308, math.inf, -math.inf, math.nan]),
    st.floats(allow_nan=True, allow_infinity=True, width=64),
)
finite_float = st.floats(allow_nan=False, allow_infinity=False, width=64)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and np.array_equal(a.view(np.uint64), b.view(np.uint64))


@settings(max_examples=300, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 9)), elements=any_float),
    any_float,
    any_float,
    st.booleans(),
)
def test_apply_into_rounds_as_the_expression(z, slope, intercept, in_place):
    form = AffineMap(slope, intercept)
    with np.errstate(all="ignore"):
        want = z * form.slope + form.intercept  # the expression the engine used, two temporaries
        out = z.copy() if in_place else np.full_like(z, 7.0)
        got = form.apply_into(z.copy() if not in_place else out, out=out)
    assert got is out
    assert same_bits(got, want)
    # and what __call__ gives (numpy arrays)
    with np.errstate(all="ignore"):
        assert same_bits(form(z), want)


def test_apply_into_keeps_signed_zeros_and_large_values():
    z = np.array([[-0.0, 0.0, 1e308, -1e308, 5e-324, 3.0]])
    for slope, intercept in [(1.0, 0.0), (1.0, -0.0), (-0.0, -0.0), (2.0, 1e308), (1e-320, -0.0)]:
        with np.errstate(all="ignore"):
            want = z * slope + intercept
            got = AffineMap(slope, intercept).apply_into(z.copy(), out=np.empty_like(z))
        assert same_bits(got, want), (slope, intercept)
    # -0.0 * 1 + 0.0 is +0.0, as in the expression: the sum is not skipped for a zero intercept
    assert math.copysign(1.0, AffineMap(1.0, 0.0).apply_into(np.array([-0.0]), out=np.empty(1))[0]) == 1.0


# ---------------------------------------------------------------- the dense reference, as the engine computed it


def dense_reference(scores, true_index, slope, intercept, log_prior, *, ddof=1, znorm=True):
    """(lid, log_evidence, log_top) over whole matrices, with the engine's former expression and passes."""
    n = scores.shape[1]
    if znorm:
        mean = scores.mean(axis=1, keepdims=True)
        z = scores - mean
        std = np.sqrt(np.einsum("ij,ij->i", z, z) / (n - ddof))
        z = z / std[:, None]
    else:
        z = scores
    llr = z * slope + intercept  # the old expression: a temporary for the product, one for the sum
    rows = np.arange(scores.shape[0])
    closed = true_index >= 0
    llr_true = np.where(closed, llr[rows, np.where(closed, true_index, 0)], np.nan)
    first_peak = llr.max(axis=1)  # a pass over every row
    constant = first_peak == llr.min(axis=1)  # every LLR of the row equal
    uniform = bool(np.all(log_prior == log_prior[0]))
    shifted = llr if uniform else llr + log_prior
    peak = first_peak if uniform else shifted.max(axis=1)
    if not np.isfinite(peak).all():
        return None  # the engine refuses such a row
    row_sum = np.ascontiguousarray(np.exp(shifted - peak[:, None])).sum(axis=1)  # summed row by row in memory
    log_sum = np.log(row_sum)
    log_norm = log_sum - math.log(n) if uniform else log_sum
    lid = ((llr_true - peak) - log_norm) / LN2
    lid[constant & closed] = 0.0
    log_evidence = peak + log_norm
    log_top = -log_sum
    log_evidence[constant] = first_peak[constant]
    log_top[constant] = -math.log(n) if uniform else float(np.max(log_prior))
    return lid, log_evidence, log_top


def counted_ranks(scores, true_index):
    closed = true_index >= 0
    ranks = np.zeros(scores.shape[0], dtype=np.int64)
    for i in np.flatnonzero(closed):
        ranks[i] = 1 + sum(1 for value in scores[i] if value > scores[i, true_index[i]])
    return ranks


def run_engine(scores, true_index, calibrator, log_prior, **kwargs):
    t = scores.shape[0]
    stats = (np.full(t, np.nan), np.full(t, np.nan))
    ranks = np.full(t, -7, dtype=np.int64)
    lid = lid_from_scores(scores, true_index, calibrator, log_prior, stats_out=stats, rank_out=ranks, **kwargs)
    return lid, stats[0], stats[1], ranks


@st.composite
def engine_cases(draw):
    n_trials = draw(st.integers(1, 30))
    n_enrolled = draw(st.integers(2, 9))
    scale = 10.0 ** draw(st.integers(-150, 150))
    scores = draw(arrays(np.float64, (n_trials, n_enrolled), elements=st.floats(-1e3, 1e3, allow_subnormal=False)))
    zeros = draw(arrays(np.int8, (n_trials, n_enrolled), elements=st.integers(0, 4)))
    scores = scores * scale
    scores[zeros == 1] = 0.0
    scores[zeros == 2] = -0.0
    scores[:, 0] = np.abs(scores).max(axis=1) + scale  # no row is constant: its first score stands out
    true_index = np.array(draw(st.lists(st.integers(-1, n_enrolled - 1), min_size=n_trials, max_size=n_trials)))
    _, log_prior = draw(priors_of_every_kind(n_enrolled))
    slope = draw(st.one_of(st.sampled_from([1.0, 0.0, -0.0, -1.5, 1e-300, 1e300]), st.floats(-50, 50)))
    intercept = draw(st.one_of(st.sampled_from([0.0, -0.0, 1e300, -1e300]), finite_float))
    return scores, true_index, log_prior, slope, intercept, draw(st.integers(1, 8)), draw(st.integers(1, 3))


@settings(max_examples=200, deadline=None)
@given(engine_cases(), st.sampled_from([0, 1]))
def test_the_engine_gives_the_dense_reference_bit_for_bit(case, ddof):
    scores, true_index, log_prior, slope, intercept, tile_rows, threads = case
    with np.errstate(all="ignore"):
        want = dense_reference(scores, true_index, slope, intercept, log_prior, ddof=ddof)
    if want is None:
        with pytest.raises(Exception, match="not finite"):
            run_engine(scores, true_index, AffineMap(slope, intercept), log_prior, znorm_ddof=ddof, tile_rows=tile_rows)
        return
    got = run_engine(
        scores,
        true_index,
        AffineMap(slope, intercept),
        log_prior,
        znorm_ddof=ddof,
        tile_rows=tile_rows,
        threads=threads,
    )
    for name, a, b in zip(("lid", "log_evidence", "log_top"), got[:3], want, strict=True):
        assert same_bits(a, b), (name, a, b)
    np.testing.assert_array_equal(got[3], counted_ranks(scores, true_index))


@pytest.mark.parametrize(
    ("row", "slope", "intercept"),
    [
        ([0.0, 1.0, 2.0], 1.0, -1.0),  # the largest LLR is 0: found by max, not from the largest score
        ([0.0, 1.0, 2.0], 1.0, -0.0),
        ([-0.0, 0.0, 3.0], 2.0, -2.0),
        ([1e300, -1e300, 0.0], 1.0, -0.0),  # the std overflows: every z is +-0, every LLR the intercept
        ([1e300, -1e300, 0.0], 3.0, 5.0),
        ([0.0, 1.0, 2.0], 1e-320, -0.0),  # subnormal LLRs
        # z * 5e-324 rounds to +0 for the eight z ~ 0.36 and to -0 for the last (z < 0): the row's largest LLR
        # is a zero whose sign numpy's max takes from the last of the tied zeros (-0.0), where the largest
        # score taken through the map gives +0.0; the true speaker's LID is then +0.0, not -0.0
        ([-10.0] + [1.0] * 8 + [-0.3], 5e-324, -0.0),
    ],
)
def test_rows_whose_largest_llr_is_zero_or_from_an_overflow(row, slope, intercept):
    scores = np.array([row, np.arange(len(row), dtype=np.float64)])
    true_index = np.array([len(row) - 1, 0])
    n = len(row)
    uniform = np.full(n, -math.log(n))
    skewed = np.log(np.arange(1.0, n + 1) / np.arange(1.0, n + 1).sum())
    for log_prior in (uniform, skewed):
        with np.errstate(all="ignore"):
            want = dense_reference(scores, true_index, slope, intercept, log_prior)
            got = run_engine(scores, true_index, AffineMap(slope, intercept), log_prior)
        for a, b in zip(got[:3], want, strict=True):
            assert same_bits(a, b), (a, b)


def test_the_tied_zero_case_is_what_it_says():
    # the case above, checked: numpy's max over the row's LLRs is -0.0 and the LID +0.0
    row = np.array([[-10.0] + [1.0] * 8 + [-0.3]])
    want = dense_reference(row, np.array([9]), 5e-324, -0.0, np.full(10, -math.log(10)))
    z = (row - row.mean()) / row.std(ddof=1)
    llr = z * 5e-324 + -0.0
    assert llr.max() == 0 and math.copysign(1.0, llr.max()) == -1.0
    assert (np.abs(z[0, 1:9]) < 0.5).all() and math.copysign(1.0, llr[0, 9]) == -1.0
    assert want[0][0] == 0 and math.copysign(1.0, want[0][0]) == 1.0


@pytest.mark.parametrize("n_enrolled", [300, 70_000])
def test_ranks_past_the_byte_and_the_short_counter(n_enrolled):
    # the flags are counted as bytes in a uint16 (N < 2^16) or an int64: a count above 255 or 65,535 must not wrap
    rng = np.random.default_rng(1)
    scores = rng.standard_normal((3, n_enrolled))
    true_index = np.array([0, 1, -1])
    scores[0, 0] = -10.0  # below every other score: rank N
    scores[1, 1] = 10.0  # above every other: rank 1
    _, _, _, ranks = run_engine(scores, true_index, AffineMap(1.0), np.full(n_enrolled, -math.log(n_enrolled)))
    np.testing.assert_array_equal(ranks, [n_enrolled, 1, 0])


def _scoresets(seed, n_trials=60, n_enrolled=12):
    rng = np.random.default_rng(seed)
    ids = np.array([f"s{j}" for j in range(n_enrolled)])
    speaker = rng.integers(0, n_enrolled, n_trials)
    scores = rng.standard_normal((n_trials, n_enrolled))
    scores[np.arange(n_trials), speaker] += 2.0
    return ScoreSet(scores, ids, ids[speaker]), speaker


def test_fitted_calibrators_take_the_in_place_path_with_the_same_bits():
    from lidframe.core.evaluation import fit_calibrator

    dev, _ = _scoresets(2)
    ev, speaker = _scoresets(3)
    uniform = np.full(ev.n_enrolled, -math.log(ev.n_enrolled))
    for name, znorm in (("logistic", True), ("temperature", True), ("identity", False)):
        fitted = fit_calibrator(dev, name)
        form = fitted.llr_map()
        want = dense_reference(ev.scores, speaker, form.slope, form.intercept, uniform, znorm=znorm)
        got = run_engine(ev.scores, speaker, fitted, uniform, tile_rows=7, threads=2)
        for a, b in zip(got[:3], want, strict=True):
            assert same_bits(a, b), name


class _Doubled(Logistic):
    """A plugin that keeps the logistic fit but writes its own llr(): the engine must call it, not llr_map()."""

    def llr(self, scores):
        return 2.0 * super().llr(scores)


class _RawDoubled(Identity):
    def llr(self, scores):
        return np.asarray(scores, dtype=np.float64) * 2.0


def test_a_calibrator_that_writes_its_own_llr_is_called():
    dev, _ = _scoresets(4)
    ev, speaker = _scoresets(5)
    uniform = np.full(ev.n_enrolled, -math.log(ev.n_enrolled))
    doubled = _Doubled().fit(*_pairs(dev))
    form = doubled.llr_map()
    with np.errstate(all="ignore"):
        z_llr = dense_reference(ev.scores, speaker, form.slope, form.intercept, uniform)
    got = run_engine(ev.scores, speaker, doubled, uniform)
    assert not same_bits(got[0], z_llr[0])  # not the map's LLRs ...
    # ... but twice them, through the generic path (its llr() on each tile's z-scores)
    scores = ev.scores
    z = (scores - scores.mean(axis=1, keepdims=True)) / scores.std(axis=1, ddof=1, keepdims=True)
    llr = 2.0 * (z * form.slope + form.intercept)
    log_post = llr - np.logaddexp.reduce(llr, axis=1, keepdims=True)
    want = (log_post[np.arange(len(speaker)), speaker] + math.log(ev.n_enrolled)) / LN2
    np.testing.assert_allclose(got[0], want, rtol=0, atol=1e-9)
    raw = run_engine(ev.scores, speaker, _RawDoubled(), uniform)
    assert same_bits(raw[0], dense_reference(ev.scores, speaker, 2.0, 0.0, uniform, znorm=False)[0])


def _pairs(scoreset):
    from lidframe.core.znorm import row_znorm

    z = row_znorm(scoreset.scores)
    labels = np.zeros(z.shape, dtype=int)
    labels[np.arange(z.shape[0]), scoreset.true_index] = 1
    return z.ravel(), labels.ravel()


@settings(max_examples=60, deadline=None)
@given(engine_cases())
def test_scores_stored_by_column_keep_their_bits(case):
    # a (T, N) array stored column by column (a transposed matrix): the z-scores of a tile are laid out as
    # `scores - mean` lays them out, as before, because the row sums of squares follow the layout in their
    # last bits; the reference is the former expression on each tile of the same rows
    scores, true_index, log_prior, slope, intercept, tile_rows, threads = case
    scores = np.asfortranarray(scores)
    with np.errstate(all="ignore"):
        tiles = [
            dense_reference(scores[s : s + tile_rows], true_index[s : s + tile_rows], slope, intercept, log_prior)
            for s in range(0, scores.shape[0], tile_rows)
        ]
    if any(t is None for t in tiles):
        return
    got = run_engine(scores, true_index, AffineMap(slope, intercept), log_prior, tile_rows=tile_rows, threads=threads)
    for k, name in enumerate(("lid", "log_evidence", "log_top")):
        assert same_bits(got[k], np.concatenate([t[k] for t in tiles])), name
