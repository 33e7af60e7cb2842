"""``--threads N`` on every command that runs the LID engine: accepted, passed to the engine's tiles, checked.

What reaches the engine is watched where the tiles are handed out
(:func:`lidframe.core.lid.run_tiles`) and where the streaming engine's numpy path starts
(it runs one thread's tiles itself), so the test follows the flag through the command,
the analysis and the :class:`~lidframe.Engine` it builds.  Left out, the count is the
engine's default, which follows ``OMP_NUM_THREADS``.
"""

from __future__ import annotations

import argparse
import inspect

import numpy as np
import pytest

import lidframe.core.lid as lid_module
import lidframe.core.streaming as streaming_module
from lidframe.cli import main
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.simulate import simulate_system


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """dev.npz / eval.npz score sets (8 enrolled speakers) and an eval embedding set, in one folder."""
    folder = tmp_path_factory.mktemp("threads")
    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=8, trials_per_speaker=6)
    dev.save(folder / "dev.npz")
    ev.save(folder / "eval.npz")
    rng = np.random.default_rng(4)
    for name in ("dev_emb", "eval_emb"):
        enrol = rng.standard_normal((6, 5))
        speaker = rng.integers(0, 6, 40)
        ids = [f"s{j}" for j in range(6)]
        trials = enrol[speaker] + 0.5 * rng.standard_normal((40, 5))
        EmbeddingSet(trials, enrol, ids, [ids[k] for k in speaker]).save(folder / f"{name}.npz")
    return folder


@pytest.fixture
def seen(monkeypatch):
    """The thread counts the engine's tiles were run with, in order."""
    counts: list[int] = []
    original = lid_module.run_tiles

    def watching(n_trials, tile_rows, work, *, threads=1):
        counts.append(threads)
        return original(n_trials, tile_rows, work, threads=threads)

    path = streaming_module._numpy_path

    def watching_path(*args, **kwargs):
        counts.append(inspect.signature(path).bind(*args, **kwargs).arguments.get("threads", 1))
        return path(*args, **kwargs)

    monkeypatch.setattr(lid_module, "run_tiles", watching)
    monkeypatch.setattr(streaming_module, "run_tiles", watching)
    monkeypatch.setattr(streaming_module, "_numpy_path", watching_path)
    return counts


def _commands(d):
    sets = ["--dev", d / "dev.npz", "--eval", d / "eval.npz"]
    return {
        "evaluate": ["evaluate", *sets],
        "evaluate embeddings": [
            "evaluate", "--dev", d / "dev_emb.npz", "--eval", d / "eval_emb.npz", "--device", "cpu",
            "--kernel", "numpy", "--no-binary-metrics",
        ],
        "sensitivity": ["sensitivity", *sets, "--calibrators", "logistic,isotonic"],
        "nsweep": ["nsweep", *sets, "--sizes", "2,8", "--repeats", "2"],
        "dp-audit": ["dp-audit", "--mu", "2", "--n-boot", "100"],
    }  # fmt: skip


COMMANDS = ["evaluate", "evaluate embeddings", "sensitivity", "nsweep", "dp-audit"]


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_passes_threads_to_the_engine(command, folder, seen, capsys, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # the default below: one thread
    argv = [str(a) for a in _commands(folder)[command]]
    assert main([*argv, "--threads", "3"]) in (0, 1)  # dp-audit exits 1 when a bound is violated
    assert seen and set(seen) == {3}, seen
    seen.clear()
    assert main(argv) in (0, 1)
    assert seen and set(seen) == {1}, seen
    capsys.readouterr()


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "--threads must be a positive integer, got 0"),
        ("-2", "--threads must be a positive integer, got -2"),
        ("1.5", "argument --threads: invalid int value: '1.5'"),
    ],
)
def test_a_bad_thread_count_is_one_line_naming_the_flag(command, value, message, folder, seen, capsys):
    argv = [str(a) for a in _commands(folder)[command]]
    code = main([*argv, "--threads", value])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"lidframe: error: {message}"), err
    assert not seen  # refused before any work


def test_the_help_of_threads_is_shared():
    from lidframe.cli.main import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {
        name: next(a.help for a in sub.choices[name]._actions if "--threads" in a.option_strings)
        for name in ("evaluate", "sensitivity", "nsweep", "dp-audit")
    }
    assert len(set(helps.values())) == 1, helps
    assert "OMP_NUM_THREADS" in next(iter(helps.values()))
