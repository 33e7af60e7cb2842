"""The mechanism's overloads type-check with torch installed and as where it is not (mypy).

Where torch is missing, mypy reads ``torch.Tensor`` as ``Any``: an overload typed through it
takes every argument and the array overload "will never be matched" (``make lint`` failed
after ``pip install -e '.[test]'`` without torch).  The overloads take a protocol instead;
these tests run mypy on a use of them with torch read as installed and as missing
(``follow_imports = "skip"`` for torch, what ``make lint`` does), and check what it infers.
"""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

pytest.importorskip("mypy", reason="mypy (the [test] extra) checks the types")
ROOT = Path(__file__).resolve().parents[2]
USE = """
import numpy as np
from lidframe.privacy.mechanism import GaussianSpeakerMechanism, clip_to_norm

reveal_type(clip_to_norm(np.zeros(3), 1.0))
reveal_type(clip_to_norm([[1.0, 2.0]], 1.0))
reveal_type(GaussianSpeakerMechanism(1.0).anonymise(np.zeros((2, 3))))
"""
TORCH_USE = """
import torch
reveal_type(clip_to_norm(torch.zeros(3), 1.0))
reveal_type(GaussianSpeakerMechanism(1.0).anonymise(torch.zeros(3)))
"""


def _mypy(tmp_path: Path, source: str, *, without_torch: bool) -> list[str]:
    """mypy's lines on *source* under pyproject.toml's [tool.mypy] (torch read as missing with *without_torch*)."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    lines = ["[mypy]"]
    for key, value in settings.items():
        if key != "files":
            lines.append(f"{key} = {value}")
    # the mechanism is checked; the rest of lidframe, which it imports, is read as Any (a
    # quicker run: only the module under test and numpy's, scipy's and torch's stubs)
    lines += [
        "[mypy-lidframe.*]",
        "follow_imports = skip",
        "[mypy-lidframe.privacy.mechanism]",
        "follow_imports = normal",
    ]
    if without_torch:
        lines += ["[mypy-torch]", "follow_imports = skip", "[mypy-torch.*]", "follow_imports = skip"]
    (tmp_path / "mypy.ini").write_text("\n".join(lines) + "\n")
    (tmp_path / "use.py").write_text(textwrap.dedent(source))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(tmp_path / "mypy.ini"),
            "--cache-dir",
            str(tmp_path / "cache"),
        ]
        + [str(tmp_path / "use.py")],
        capture_output=True,
        text=True,
        cwd=ROOT,  # where mypy finds lidframe (an editable install's import hook is not read by mypy)
        timeout=600,
    )
    return done.stdout.splitlines()


def _checked(lines: list[str]) -> tuple[list[str], list[str]]:
    """(revealed types, errors) of mypy's *lines*; an error anywhere (the mechanism included) is kept."""
    revealed = [m.group(1) for line in lines if (m := re.search(r'Revealed type is "(.*)"', line))]
    errors = [line for line in lines if ": error:" in line]
    return revealed, errors


@pytest.mark.slow
def test_array_overloads_return_arrays_with_torch_read_as_missing(tmp_path):
    revealed, errors = _checked(_mypy(tmp_path, USE, without_torch=True))
    mechanism_errors = [e for e in errors if "mechanism.py" in e or "use.py" in e]
    assert mechanism_errors == []
    assert len(revealed) == 3 and all(t.startswith("numpy.ndarray[") for t in revealed), revealed


@pytest.mark.slow
def test_tensor_overloads_return_tensors_with_torch_installed(tmp_path):
    pytest.importorskip("torch")
    revealed, errors = _checked(_mypy(tmp_path, USE + TORCH_USE, without_torch=False))
    mechanism_errors = [e for e in errors if "mechanism.py" in e or "use.py" in e]
    assert mechanism_errors == []
    assert [t.startswith("numpy.ndarray[") for t in revealed[:3]] == [True] * 3, revealed
    assert revealed[3:] == ["torch._tensor.Tensor"] * 2
