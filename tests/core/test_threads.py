"""The dense engine's tiles in a pool of threads: the same numbers bit for bit, the same first error.

The thread count is a setting of where the work runs, not of what it computes: every
output of :func:`lidframe.core.lid.lid_from_scores` (LID, pair LLRs, open-set statistics,
true-speaker ranks) must be byte-equal to the single-thread run, whatever the tile size.
The ranks are also checked against :func:`true_speaker_rank` (a separate pass over the
scores), and the LID against a dense float64 log-softmax written here.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import log_softmax

from lidframe import Engine, InputError
from lidframe.calibrators.maps import AffineMap
from lidframe.core.lid import lid_from_llr, lid_from_scores, run_tiles
from lidframe.metrics.identification import true_speaker_rank
from lidframe.runtime.workers import default_threads
from tests.strategies import priors_of_every_kind, score_matrices


@st.composite
def engine_cases(draw):
    scores = draw(score_matrices(max_trials=40, max_enrolled=9))
    n_trials, n_enrolled = scores.shape
    true_index = np.array(draw(st.lists(st.integers(-1, n_enrolled - 1), min_size=n_trials, max_size=n_trials)))
    _, log_prior = draw(priors_of_every_kind(n_enrolled))
    return scores, true_index, log_prior, draw(st.integers(1, 7)), draw(st.integers(2, 5))


def _run(scores, true_index, log_prior, tile_rows, threads):
    n_trials, n_enrolled = scores.shape
    n_closed = int((true_index >= 0).sum())
    pairs = (np.full(n_closed, np.nan), np.full(n_closed * (n_enrolled - 1), np.nan))
    stats = (np.full(n_trials, np.nan), np.full(n_trials, np.nan))
    ranks = np.full(n_trials, -7, dtype=np.int64)
    lid = lid_from_scores(
        scores,
        true_index,
        AffineMap(1.7, -0.4),
        log_prior,
        tile_rows=tile_rows,
        pair_llr_out=pairs,
        stats_out=stats,
        rank_out=ranks,
        threads=threads,
    )
    return lid, pairs, stats, ranks


@settings(max_examples=60, deadline=None)
@given(engine_cases())
def test_threads_give_the_single_thread_numbers_bit_for_bit(case):
    scores, true_index, log_prior, tile_rows, threads = case
    one = _run(scores, true_index, log_prior, tile_rows, 1)
    many = _run(scores, true_index, log_prior, tile_rows, threads)
    lid_one, pairs_one, stats_one, ranks_one = one
    lid_many, pairs_many, stats_many, ranks_many = many
    assert lid_one.tobytes() == lid_many.tobytes()
    for a, b in zip(pairs_one + stats_one, pairs_many + stats_many, strict=True):
        assert a.tobytes() == b.tobytes()
    np.testing.assert_array_equal(ranks_one, ranks_many)
    # every pair slot written (none left NaN), in trial order
    assert not np.isnan(pairs_many[0]).any() and not np.isnan(pairs_many[1]).any()
    # ranks: an independent pass for the enrolled trials, 0 for outsiders
    closed = true_index >= 0
    assert (ranks_many[~closed] == 0).all()
    if closed.any():
        np.testing.assert_array_equal(ranks_many[closed], true_speaker_rank(scores[closed], true_index[closed]))
    # LID: the dense float64 reference
    z = (scores - scores.mean(axis=1, keepdims=True)) / scores.std(axis=1, ddof=1, keepdims=True)
    log_post = log_softmax(1.7 * z - 0.4 + log_prior, axis=1)
    rows = np.flatnonzero(closed)
    want = (log_post[rows, true_index[rows]] - log_prior[true_index[rows]]) / math.log(2.0)
    np.testing.assert_allclose(lid_many[rows], want, rtol=0, atol=1e-9)
    assert np.isnan(lid_many[~closed]).all()


@settings(max_examples=30, deadline=None)
@given(engine_cases())
def test_lid_from_llr_threads_bit_for_bit(case):
    scores, true_index, log_prior, tile_rows, threads = case
    one = lid_from_llr(scores, log_prior, true_index, tile_rows=tile_rows)
    many = lid_from_llr(scores, log_prior, true_index, tile_rows=tile_rows, threads=threads)
    assert one.tobytes() == many.tobytes()


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_the_error_names_the_first_bad_row_whatever_the_thread_count(threads):
    rng = np.random.default_rng(3)
    scores = rng.standard_normal((60, 5))
    scores[41] = 2.0  # a constant row: no z-norm; in a later tile than row 17
    scores[17] = -1.0
    with pytest.raises(InputError) as raised:
        lid_from_scores(
            scores,
            np.zeros(60, dtype=int),
            AffineMap(1.0, 0.0),
            np.full(5, -math.log(5)),
            tile_rows=4,
            row_names=np.array([f"t{i}" for i in range(60)]),
            threads=threads,
        )
    assert "'t17'" in str(raised.value) and "'t41'" not in str(raised.value)


def test_run_tiles_raises_the_first_failing_tile_in_order_and_covers_every_row():
    seen = np.zeros(50, dtype=int)

    def work(start, stop):
        seen[start:stop] += 1

    run_tiles(50, 7, work, threads=3)
    np.testing.assert_array_equal(seen, 1)

    def failing(start, stop):
        if start >= 21:
            raise InputError(f"tile at {start}")

    with pytest.raises(InputError, match="tile at 21$"):
        run_tiles(50, 7, failing, threads=4)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_threads_must_be_a_positive_integer(bad):
    with pytest.raises(InputError, match="threads must be a positive integer"):
        Engine(threads=bad)
    with pytest.raises(InputError, match="threads must be a positive integer"):
        lid_from_llr(np.zeros((2, 2)), np.log([0.5, 0.5]), [0, 1], threads=bad)


def test_default_threads_follows_omp_num_threads(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    cores = default_threads()
    assert cores >= 1
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert default_threads() == 1
    assert Engine().cpu_threads() == 1 and Engine(threads=3).cpu_threads() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")
    assert default_threads() == cores


def _engine_threads_in_worker(_):
    return Engine().cpu_threads()


def test_pool_workers_share_the_cores(monkeypatch):
    from lidframe.runtime.workers import process_pool

    monkeypatch.setenv("OMP_NUM_THREADS", "4")  # as if this machine had 4 cores to give: 2 workers get 2 each
    with process_pool(2) as pool:
        assert set(pool.map(_engine_threads_in_worker, range(4))) == {min(4, default_threads()) // 2 or 1}
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    with process_pool(3) as pool:
        assert set(pool.map(_engine_threads_in_worker, range(3))) == {1}


@pytest.mark.parametrize("n_enrolled", [2, 3, 50])
def test_a_row_that_only_rounds_to_constant_keeps_its_sign_and_an_equal_row_gives_exactly_zero(n_enrolled):
    # under a uniform prior the engine skips the minimum pass: a row is checked for equal LLRs only
    # when its exp-sum is exactly N.  A row whose LLRs differ by 1e-300 also sums to exactly N, but it
    # is not constant: its true speaker, 1e-300 nats below the peak, discloses -1e-300 / ln 2 bits
    uniform = np.full(n_enrolled, -math.log(n_enrolled))
    tiny = np.zeros((2, n_enrolled))
    tiny[0, 1] = -1e-300
    tiny[1] = 5.0
    lid = lid_from_llr(tiny, uniform, [1, 1])
    assert lid[0] == -1e-300 / math.log(2.0)
    assert lid[1] == 0.0 and not math.copysign(1.0, lid[1]) < 0


@st.composite
def embedding_cases(draw):
    n_trials = draw(st.integers(1, 40))
    n_enrolled = draw(st.integers(2, 9))
    dim = draw(st.integers(2, 6))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    true_index = np.array(draw(st.lists(st.integers(-1, n_enrolled - 1), min_size=n_trials, max_size=n_trials)))
    _, log_prior = draw(priors_of_every_kind(n_enrolled))
    return (
        rng.standard_normal((n_trials, dim)),
        rng.standard_normal((n_enrolled, dim)),
        true_index,
        log_prior,
        draw(st.integers(1, 7)),
        draw(st.integers(2, 4)),
        draw(st.sampled_from(["float64", "float32"])),
    )


@settings(max_examples=40, deadline=None)
@given(embedding_cases())
def test_streaming_numpy_threads_give_the_single_thread_numbers_bit_for_bit(case):
    from lidframe.core.streaming import lid_from_embeddings

    trial, enrol, true_index, log_prior, tile_rows, threads, precision = case

    def run(n_threads):
        engine = Engine(device="cpu", kernel="numpy", precision=precision, tile_rows=tile_rows, threads=n_threads)
        return lid_from_embeddings(
            trial, enrol, true_index, AffineMap(2.0, 0.3), log_prior, engine=engine, open_set=True
        )

    one, many = run(1), run(threads)
    assert one.lid_bits.tobytes() == many.lid_bits.tobytes()
    np.testing.assert_array_equal(one.true_rank, many.true_rank)
    assert one.open_stats.log_evidence.tobytes() == many.open_stats.log_evidence.tobytes()
    assert one.open_stats.log_top.tobytes() == many.open_stats.log_top.tobytes()


def test_the_analyses_take_an_engine_record_and_refuse_anything_else():
    from lidframe.analyses.nsweep import nsweep
    from lidframe.analyses.sensitivity import sensitivity
    from lidframe.data.simulate import simulate_system
    from lidframe.privacy.audit import dp_audit, simulated_splits

    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=6, trials_per_speaker=4)
    splits = simulated_splits(n_enrolled=6, trials_per_speaker=4, dim=8)
    calls = [
        lambda engine: nsweep(dev, ev, sizes=[2, 6], repeats=2, engine=engine),
        lambda engine: sensitivity(dev, ev, ["logistic"], engine=engine),
        lambda engine: dp_audit(*splits, [2.0], engine=engine),
    ]
    for call in calls:
        with pytest.raises(InputError, match="^engine must be None or a record of type Engine, got dict$"):
            call({"threads": 2})
        call(Engine(threads=2, tile_rows=3))  # runs
