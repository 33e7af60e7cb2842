"""Bad input, family "attacker specs": a numeric option out of its range is one line, exit 2, before any audio is read.

The data dirs list audio files that do not exist: a command that got as far as reading
audio would say so instead of naming the option (and a model is never built).  Each
case's expected words are written out by hand: the option, the range docs/plugins.md
states for it ("Option ranges") and the value given.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.bad_input.conftest import assert_refused

HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="the neural attackers' classes need torch")

#: (spec, words the one line must hold); the neural attackers' cases need torch (their classes import it)
CASES = {
    "ge2e rate 0": ("ge2e?rate=0", ["attacker 'ge2e': rate must be a number in [0.625, 100], got 0.0"]),
    "ge2e rate above 100": (
        "ge2e?rate=1e9",
        ["attacker 'ge2e': rate must be a number in [0.625, 100], got 1000000000.0"],
    ),
    "ge2e hidden_size 0": (
        "ge2e?hidden_size=0",
        ["attacker 'ge2e': hidden_size must be an integer in [1, 8192], got 0"],
    ),
    "ge2e n_mels -1": ("ge2e?n_mels=-1", ["attacker 'ge2e': n_mels must be an integer in [1, 8192], got -1"]),
    "ge2e num_layers 0": ("ge2e?num_layers=0", ["num_layers must be an integer in [1, 64], got 0"]),
    "ge2e min_coverage 0": ("ge2e?min_coverage=0", ["min_coverage must be a number in (0, 1], got 0.0"]),
    "ge2e volume nan": ("ge2e?volume_dbfs=nan", ["volume_dbfs must be a number <= 0, or None, got nan"]),
    "ge2e volume above full scale": ("ge2e?volume_dbfs=3", ["volume_dbfs must be a number <= 0, or None, got 3.0"]),
    "ecapa lin_neurons 0": ("ecapa?lin_neurons=0", ["attacker 'ecapa': lin_neurons must be an integer in [1, 8192]"]),
    "ecapa kernel 0 in a list": (
        "ecapa?kernel_sizes=5,0,3,3,1",
        ["kernel_sizes must be a list of integers in [1, 64], got 0 at position 1 of [5, 0, 3, 3, 1]"],
    ),
    "ecapa input_size not 80": ("ecapa?input_size=40", ["input_size must be an integer equal to 80, got 40"]),
    "ecapa batch_size 0": ("ecapa?batch_size=0", ["batch_size must be an integer >= 1, or None, got 0"]),
    "ecapa max_batch_frames 0": ("ecapa?max_batch_frames=0", ["max_batch_frames must be an integer >= 1, got 0"]),
    "ecapa seed -1": ("ecapa?seed=-1", ["seed must be an integer in [0, 18446744073709551615], got -1"]),
    "xvector seed 2**64": (
        "xvector?seed=18446744073709551616",
        ["seed must be an integer in [0, 18446744073709551615]"],
    ),
    "ecapa lists of two lengths": ("ecapa?channels=512,512", ["must have the same length", "got 2, 5, 5 and 5"]),
    "ecapa res2net_scale not a divisor": (
        "ecapa?res2net_scale=7",
        ["channels[1] = 512 must divide by res2net_scale = 7"],
    ),
    "ecapa an even kernel": ("ecapa?kernel_sizes=4,3,3,3,1", ["block 0 has kernel size 4 and dilation 1", "even"]),
    "ecapa groups not a divisor": ("ecapa?groups=3,1,1,1,1", ["block 0 has 80 input and 512 output", "groups[0] = 3"]),
    "xvector more blocks than channels": ("xvector?tdnn_blocks=6", ["tdnn_channels has 5 entries", "tdnn_blocks = 6"]),
    "random dim 0": ("random?dim=0", ["attacker 'random': dim must be an integer in [1, 8192], got 0"]),
    "random dim too wide": ("random?dim=8193", ["attacker 'random': dim must be an integer in [1, 8192], got 8193"]),
    "random seed -1": ("random?seed=-1", ["attacker 'random': seed must be an integer in [0, 18446744073709551615]"]),
}


def _torch_case(spec: str) -> bool:
    return not spec.startswith("random")


def _data_dirs(root: Path) -> tuple[Path, Path]:
    """Enrolment and trial data dirs whose audio files do not exist (reading any would be another error)."""
    made = []
    for name in ("enrol", "trials"):
        folder = root / name
        folder.mkdir(parents=True)
        (folder / "wav.scp").write_text("".join(f"{name}{s} {root}/missing-{name}{s}.wav\n" for s in range(2)))
        (folder / "utt2spk").write_text("".join(f"{name}{s} spk{s}\n" for s in range(2)))
        made.append(folder)
    return made[0], made[1]


@pytest.mark.parametrize("case", list(CASES))
def test_score_refuses_an_attacker_option_out_of_range_before_reading_audio(case, tmp_path, capsys):
    spec, expect = CASES[case]
    if _torch_case(spec) and not HAS_TORCH:
        pytest.skip("the neural attackers' classes need torch")
    enrol, trials = _data_dirs(tmp_path / "data")
    (tmp_path / "out").mkdir()
    line = assert_refused(
        ["score", "--attacker", spec, "--enrol", enrol, "--trials", trials, "--out", tmp_path / "out" / "s.npz"],
        capsys,
        expect=expect,
        watch=[tmp_path],
    )
    assert "missing-" not in line  # refused before any audio file was looked at
    assert not list((tmp_path / "out").iterdir())


@needs_torch
def test_train_attacker_refuses_an_option_out_of_range_before_reading_audio(tmp_path, capsys):
    data, _ = _data_dirs(tmp_path / "data")
    (tmp_path / "ckpt").mkdir()  # the checkpoint's folder exists (a missing one is refused first)
    assert_refused(
        ["train-attacker", "--arch", "ge2e?rate=0&pretrained=false", "--data", data,
         "--out", tmp_path / "ckpt" / "g.ckpt", "--epochs", "1", "--device", "cpu"],
        capsys,
        expect=["attacker 'ge2e': rate must be a number in [0.625, 100], got 0.0"],
        watch=[tmp_path],
    )  # fmt: skip
    assert not any((tmp_path / "ckpt").iterdir())


@pytest.mark.parametrize(
    ("spec", "expect"),
    [
        ("random?seed=-1", "attacker 'random': seed must be an integer in [0, 18446744073709551615], got -1"),
        pytest.param(
            "ge2e?rate=0", "attacker 'ge2e': rate must be a number in [0.625, 100], got 0.0", marks=needs_torch
        ),
    ],
    ids=["random seed", "ge2e rate"],
)
def test_a_grid_refuses_an_attacker_option_out_of_range_before_any_cell(spec, expect, tmp_path, capsys):
    enrol, trials = _data_dirs(tmp_path / "data")
    grid = tmp_path / "grid.toml"
    grid.write_text(
        f'[grid]\nattackers = ["{spec}"]\n\n[systems.beta]\n'
        f'dev = {{ enrol = "{enrol}", trials = ["{trials}"] }}\neval = {{ enrol = "{enrol}", trials = ["{trials}"] }}\n'
    )
    assert_refused(
        ["grid", grid, "--out", tmp_path / "out"], capsys, expect=["grid.toml", "[grid.attackers[0]]", expect],
        watch=[tmp_path],
    )  # fmt: skip
    assert not (tmp_path / "out").exists()
