"""Streaming LID on a dask.distributed LocalCluster equals the single-process run.

The reference is the single-process engine (:func:`lid_from_embeddings`, numpy float64),
run here on the whole set, and through it the dense reference that
``tests/core/test_streaming.py`` checks it against.  Per-trial LID within 1e-12, ranks,
the bin grid and the binned pair counts exactly, the LLR range and the Cllr sums to
float64 rounding (BLAS rounding per block; the sums are added in another order).
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lidframe import WatchList, evaluate
from lidframe.calibrators import Beta, Isotonic, Logistic
from lidframe.cli import main
from lidframe.core import cluster
from lidframe.core.cluster import lid_on_cluster
from lidframe.core.engine import Engine
from lidframe.core.streaming import lid_from_embeddings
from lidframe.data.embedset import EmbeddingSet
from lidframe.errors import InputError
from tests.core.test_streaming import cosine, embeddings, fitted, log_priors
from tests.reference import dense_znorm

distributed = pytest.importorskip("distributed")

CPU64 = Engine(device="cpu", kernel="numpy", precision="float64")
LID_TOLERANCE = 1e-12


@pytest.fixture(scope="module")
def client():
    """Two worker processes of one thread each (CI has 2 cores)."""
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None
        ) as local,
        distributed.Client(local) as connected,
    ):
        connected.wait_for_workers(2, timeout=60)
        yield connected


def assert_same_pairs(single, sharded):
    """Every field of two BinnedPairs: grid and counts exactly, range and Cllr sums to float64 rounding.

    A row's products come out of a BLAS call on its block (or tile) of rows, whose size can
    change their last bit: the LLR range may move by an ulp, and a pair within an ulp of a
    bin edge could change bins (as between single-process runs of other ``tile_rows``).
    """
    assert (single is None) == (sharded is None)
    if single is None:
        return
    assert np.array_equal(single.grid.edges, sharded.grid.edges)
    assert np.array_equal(single.mated_counts, sharded.mated_counts)
    assert np.array_equal(single.non_mated_counts, sharded.non_mated_counts)
    assert (single.value_sums, single.cllr_sums) == (sharded.value_sums, sharded.cllr_sums)
    assert single.mated_sums is None and sharded.mated_sums is None
    for a, b in ((single.low, sharded.low), (single.high, sharded.high)):
        assert abs(a - b) <= 1e-13 * max(abs(a), 1.0)
    for name in ("_mated_softplus", "_non_mated_softplus"):
        a, b = getattr(single, name).value, getattr(sharded, name).value
        assert abs(a - b) <= 1e-13 * max(abs(a), 1.0), name
    assert sharded.cllr() == pytest.approx(single.cllr(), rel=1e-13, abs=1e-15)


def assert_same_lid(single, sharded):
    assert sharded.lid_bits.shape == single.lid_bits.shape
    assert np.abs(sharded.lid_bits - single.lid_bits).max() <= LID_TOLERANCE
    assert np.array_equal(sharded.true_rank, single.true_rank)
    assert_same_pairs(single.binned_pairs, sharded.binned_pairs)


CALIBRATORS = {"logistic": Logistic, "isotonic": Isotonic, "beta": Beta}


# distributed's threads touch the global random module while Hypothesis draws: not the test's randomness
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    seed=st.integers(0, 2**16),
    n_trials=st.integers(1, 90),
    n_enrolled=st.integers(2, 40),
    dim=st.integers(2, 12),
    block_rows=st.integers(1, 40),
    prior=st.sampled_from(["uniform", "watchlist"]),
    calibrator=st.sampled_from(sorted(CALIBRATORS)),
    bins=st.sampled_from([None, 1, 64, 4096]),
)
def test_blocks_on_two_workers_equal_the_single_process_run(
    client, seed, n_trials, n_enrolled, dim, block_rows, prior, calibrator, bins
):
    trial, enrol, true_index = embeddings(seed, n_trials, n_enrolled, dim, noise=2.0)
    dev_trial, dev_enrol, dev_true = embeddings(seed + 1, 60, n_enrolled, dim, noise=2.0)
    calibrator = fitted(CALIBRATORS[calibrator](), dense_znorm(cosine(dev_trial, dev_enrol), 1), dev_true)
    log_prior = log_priors(n_enrolled)[prior]
    single = lid_from_embeddings(trial, enrol, true_index, calibrator, log_prior, engine=CPU64, binary_bins=bins)
    run = lid_on_cluster(
        trial,
        enrol,
        true_index,
        calibrator,
        log_prior,
        scheduler=client,
        engine=CPU64,
        binary_bins=bins,
        block_rows=block_rows,
    )
    assert run.n_blocks == -(-n_trials // block_rows) and run.block_rows == block_rows  # ragged last block
    assert run.scheduler == client.scheduler.address and run.n_workers == 2
    assert run.lid.kernel == single.kernel == "numpy"
    assert_same_lid(single, run.lid)


def test_a_trial_row_with_nan_is_named_by_its_global_row_before_any_task(client):
    trial, enrol, true_index = embeddings(3, 30, 10, 4)
    trial[17, 2] = np.nan
    with pytest.raises(InputError, match=r"trial embeddings hold NaN or inf in rows '17'"):
        lid_on_cluster(trial, enrol, true_index, Logistic().fit([0.0, 1.0], [0, 1]), log_priors(10)["uniform"],
                       scheduler=client, block_rows=4)  # fmt: skip


@pytest.mark.slow
def test_a_constant_row_in_a_block_is_named_by_its_trial_id(client):
    trial, enrol, true_index = embeddings(4, 30, 10, 4)
    enrol[:, 0] = 0.0
    enrol[:, 1:] = np.abs(enrol[:, 1:])
    trial[22] = 0.0
    trial[22, 0] = 1.0  # orthogonal to every enrolled profile: all its scores are 0
    ids = np.array([f"t{i}" for i in range(30)])
    with pytest.raises(InputError, match=r"z-norm is undefined for 1 trials whose scores are all equal: 't22'"):
        lid_on_cluster(
            trial,
            enrol,
            true_index,
            Logistic().fit([0.0, 1.0], [0, 1]),
            log_priors(10)["uniform"],
            scheduler=client,
            row_names=ids,
            block_rows=5,
        )


@pytest.mark.slow
def test_importing_lidframe_and_the_cluster_module_does_not_import_distributed():
    code = "import sys, lidframe, lidframe.core.cluster; print('distributed' in sys.modules, 'dask' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_a_score_set_with_a_scheduler_is_an_input_error_before_connecting():
    from lidframe.data.simulate import simulate_system

    dev, ev = simulate_system(leakage=1.0, seed=1)
    with pytest.raises(InputError, match="scheduler= shards an eval embedding set over a cluster; this is a score set"):
        evaluate(dev, ev, scheduler="tcp://127.0.0.1:1")


def write_sets(folder, seed=11, n_trials=120, n_enrolled=25, dim=16):
    """A dev and an eval embedding set (.npz), the eval one with 3 outsider trials."""
    paths = {}
    for role, offset in (("dev", 0), ("eval", 1)):
        trial, enrol, true_index = embeddings(seed + offset, n_trials, n_enrolled, dim, noise=1.5)
        enrolled = np.array([f"spk{j}" for j in range(n_enrolled)])
        speakers = enrolled[true_index].astype(object)
        if role == "eval":
            speakers[[5, 50, 90]] = "stranger"
        embedding_set = EmbeddingSet(trial, enrol, enrolled, speakers.astype(str))
        paths[role] = folder / f"{role}.npz"
        embedding_set.save(paths[role])
    return paths


def test_bad_scheduler_address_exits_2_with_one_line_and_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT_S", 1)
    paths = write_sets(tmp_path)
    out = tmp_path / "out.json"
    code = main(
        [
            "evaluate",
            "--dev",
            str(paths["dev"]),
            "--eval",
            str(paths["eval"]),
            "--scheduler",
            "tcp://127.0.0.1:1",
            "--json",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and "cannot reach the dask scheduler 'tcp://127.0.0.1:1' within 1 s" in err, err
    assert "Traceback" not in err and not out.exists()


def assert_same_summary(single: dict, sharded: dict):
    """Equal summaries: floats within 1e-12 (means of LIDs), everything else exactly."""
    assert sharded.keys() == single.keys()
    for key, value in single.items():
        if isinstance(value, dict) and key == "open_set":  # the open set's groups: the same rule, one level down
            for group, inner in value.items():
                if isinstance(inner, dict):
                    assert_same_summary(inner, sharded[key][group])
                else:
                    assert_same_summary({group: inner}, {group: sharded[key][group]})
        elif isinstance(value, float) and not np.isnan(value):
            assert sharded[key] == pytest.approx(value, rel=LID_TOLERANCE, abs=LID_TOLERANCE), key
        elif isinstance(value, float):
            assert np.isnan(sharded[key]), key
        else:
            assert sharded[key] == value, key


@pytest.mark.parametrize(
    "prior",
    ["uniform", WatchList(["spk1", "spk2"], 10.0), "uniform?outside=0.3", WatchList(["spk1"], 5.0, outside=0.1)],
    ids=["uniform", "watchlist", "open-uniform", "open-watchlist"],
)
def test_evaluate_with_a_scheduler_equals_the_single_process_evaluate(client, tmp_path, prior):
    paths = write_sets(tmp_path)
    single = evaluate(
        paths["dev"], paths["eval"], calibrator="isotonic", prior=prior, binary_metrics=True, engine=CPU64
    )
    sharded = evaluate(
        paths["dev"],
        paths["eval"],
        calibrator="isotonic",
        prior=prior,
        binary_metrics="auto",
        engine=CPU64,
        scheduler=client,
    )
    assert single.summary["binary_method"] == sharded.summary["binary_method"] == "binned"
    sharded_summary = dict(sharded.summary)  # the summary is read-only: its keys popped from a copy
    assert sharded_summary.pop("scheduler") == client.scheduler.address == sharded.summary.scheduler
    assert sharded_summary.pop("n_blocks") >= 2
    assert_same_summary(dict(single.summary), sharded_summary)
    closed = ~single.is_outsider
    assert np.array_equal(np.isnan(single.lid), np.isnan(sharded.lid)) and closed.sum() == 117
    with_lid = ~np.isnan(single.lid)  # every trial in the open set
    assert with_lid.sum() == (120 if single.outside > 0 else 117)
    assert np.abs(single.lid[with_lid] - sharded.lid[with_lid]).max() <= LID_TOLERANCE
    assert np.array_equal(single.true_rank, sharded.true_rank)
    if single.outside > 0:
        assert np.abs(single.membership_bits - sharded.membership_bits).max() <= LID_TOLERANCE
        assert np.abs(single.top_posterior - sharded.top_posterior).max() <= LID_TOLERANCE


def without_cluster_keys(summary: dict) -> dict:
    return {k: v for k, v in summary.items() if k not in ("scheduler", "n_blocks")}


def assert_same_json(single: dict, sharded: dict):
    """JSON summaries: floats within 1e-12, the rest (and nested records) exactly."""
    flat_single, flat_sharded = without_cluster_keys(single), without_cluster_keys(sharded)
    assert_same_summary(flat_single, flat_sharded)


def test_cli_scheduler_equals_the_single_process_json(client, tmp_path, capsys):
    paths = write_sets(tmp_path)
    address = client.scheduler.address
    assert address.startswith("tcp://")
    common = [
        "evaluate",
        "--dev",
        str(paths["dev"]),
        "--eval",
        str(paths["eval"]),
        "--device",
        "cpu",
        "--calibrator",
        "beta",
    ]
    # without binary metrics: the single-process CLI JSON, key by key
    assert main([*common, "--no-binary-metrics", "--json", str(tmp_path / "one.json")]) == 0
    assert main([*common, "--no-binary-metrics", "--json", str(tmp_path / "many.json"), "--scheduler", address]) == 0
    one, many = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("one", "many"))
    assert many["scheduler"] == address and many["n_blocks"] >= 1
    assert_same_json(one, many)
    # with them: binned on the cluster, equal to the single-process binned view
    assert main([*common, "--json", str(tmp_path / "binned.json"), "--scheduler", address]) == 0
    assert "blocks of trials on the dask scheduler" in capsys.readouterr().out
    binned = json.loads((tmp_path / "binned.json").read_text())
    single = evaluate(paths["dev"], paths["eval"], calibrator="beta", binary_metrics=True, engine=CPU64).to_dict()
    assert binned["binary_method"] == "binned"
    # the CLI's JSON adds the legal block (issue 40) to Result.to_dict(): the same on one process and on the
    # cluster (one vs many, above, compares it key by key); the rest is the Python API's record
    assert binned.pop("legal") == many["legal"]
    assert binned.pop("provenance") == many["provenance"]  # the score files' provenance (issue 41), as above
    assert_same_json(single, binned)


def blocks_held(dask_scheduler) -> dict[str, int]:
    """{worker address: finished blocks of the run it holds} (the tasks of :func:`lid_on_cluster` are ``_block_lid-*``)."""
    held: dict[str, int] = {}
    for key, state in dask_scheduler.tasks.items():
        if state.state == "memory" and str(key).startswith("_block_lid"):
            for worker in state.who_has:
                held[worker.address] = held.get(worker.address, 0) + 1
    return held


@pytest.mark.slow
def test_a_worker_killed_mid_run_gives_the_identical_result(client, monkeypatch):
    """A worker holding finished blocks (and maybe running others) is killed before the client has them all.

    The run's ``client.gather`` waits here until the kill, so the run cannot end before it
    on a busy machine (it could before: the kill chased 600 short tasks); the killed
    worker's blocks are lost and must be computed again.
    """
    trial, enrol, true_index = embeddings(21, 2400, 300, 24, noise=2.0)
    dev_trial, dev_enrol, dev_true = embeddings(22, 200, 300, 24, noise=2.0)
    calibrator = fitted(Isotonic(), dense_znorm(cosine(dev_trial, dev_enrol), 1), dev_true)
    log_prior = log_priors(300)["watchlist"]
    single = lid_from_embeddings(trial, enrol, true_index, calibrator, log_prior, engine=CPU64, binary_bins=4096)

    pids_before = client.run(os.getpid)
    killed = threading.Event()
    gather = client.gather

    def gather_after_the_kill(*args, **kwargs):
        killed.wait()
        return gather(*args, **kwargs)

    monkeypatch.setattr(client, "gather", gather_after_the_kill)
    outcome: dict = {}

    def run():
        try:
            outcome["run"] = lid_on_cluster(
                trial,
                enrol,
                true_index,
                calibrator,
                log_prior,
                scheduler=client,
                engine=CPU64,
                binary_bins=4096,
                block_rows=4,  # 600 small tasks
            )
        except BaseException as exc:  # re-raised below
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 300  # a bound for a hung cluster, not a timing assumption
        held = client.run_on_scheduler(blocks_held)
        while sum(held.values()) < 20:
            assert time.monotonic() < deadline, f"20 blocks did not finish in 300 s: {held}"
            time.sleep(0.02)
            held = client.run_on_scheduler(blocks_held)
        victim = max(held, key=held.__getitem__)
        assert thread.is_alive()  # waiting for the kill, in gather
        os.kill(pids_before[victim], signal.SIGKILL)
    finally:
        killed.set()
    thread.join(timeout=300)
    assert not thread.is_alive()
    if "error" in outcome:
        raise outcome["error"]
    client.wait_for_workers(2, timeout=60)  # the nanny restarts it: the fixture stays usable
    assert pids_before[victim] not in client.run(os.getpid).values()  # a worker was lost and replaced
    assert outcome["run"].n_blocks == 600
    assert_same_lid(single, outcome["run"].lid)


class NanAbove:
    """A fitted 'calibrator' whose LLR is the z-score, except NaN at z >= *threshold*."""

    def __init__(self, threshold):
        self.threshold = threshold

    def llr(self, z):
        z = np.asarray(z, dtype=np.float64)
        return np.where(z >= self.threshold, np.nan, z)


@pytest.mark.parametrize("path", ["dense", "streaming", pytest.param("cluster", marks=pytest.mark.slow)])
def test_non_finite_llrs_of_a_trial_in_a_later_block_name_that_trial(client, path):
    trial, enrol, true_index = embeddings(5, 30, 10, 4)
    z = dense_znorm(cosine(trial, enrol), 1)  # the reference z-scores, in float64 here
    bad = int(np.argmax(z.max(axis=1)))  # the one row that holds the largest z of all
    assert bad >= 4  # past the first block and tile of 4 rows: a block-local index would name another row
    calibrator = NanAbove(z.max() - 1e-9 * abs(z.max()))
    assert (z >= calibrator.threshold).sum() == 1
    ids = np.array([f"t{i}" for i in range(30)])
    message = rf"LLRs of trial '{ids[bad]}' are not finite"
    with pytest.raises(InputError, match=message):
        if path == "dense":
            from lidframe.core.lid import lid_from_scores

            lid_from_scores(cosine(trial, enrol), true_index, calibrator, log_priors(10)["uniform"],
                            row_names=ids, tile_rows=4)  # fmt: skip
        elif path == "streaming":
            lid_from_embeddings(trial, enrol, true_index, calibrator, log_priors(10)["uniform"], row_names=ids,
                                engine=Engine(device="cpu", kernel="numpy", precision="float64", tile_rows=4))  # fmt: skip
        else:
            lid_on_cluster(trial, enrol, true_index, calibrator, log_priors(10)["uniform"], scheduler=client,
                           engine=CPU64, row_names=ids, block_rows=4)  # fmt: skip
