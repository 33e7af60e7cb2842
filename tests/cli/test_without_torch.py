"""Without torch: the demo falls back to the simulated one, and the torch commands refuse in one line.

Each run is a subprocess in which ``import torch`` fails as where torch is not installed
(:data:`BLOCK_TORCH`, a meta-path finder that finds no ``torch``), whether or not this
environment has torch.  (``sys.modules["torch"] = None`` would not do: scipy looks torch
up in ``sys.modules`` and trips over the None.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each test starts a Python of its own with torch blocked

INSTALL = ("pip install -e '.[audio]'", "https://download.pytorch.org/whl/cpu")
BLOCK_TORCH = """
import sys


class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, NoTorch())
"""


def run_without_torch(tmp_path: Path, argv: list[object], *, voices: bool | None = None) -> subprocess.CompletedProcess:
    """``lidframe *argv*`` in a Python where torch cannot be imported.

    *voices*: pretend a speech engine is (True) or is not (False) installed; None leaves
    the real :func:`~lidframe.audio.corpus.available_voices`.
    """
    patch = ""
    if voices is not None:
        patch = f"import lidframe.audio.corpus as corpus; corpus.available_voices = lambda: {['a voice'] if voices else []!r}"
    code = BLOCK_TORCH + f"{patch}\nfrom lidframe.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.run(
        [sys.executable, "-c", code, *map(str, argv)], capture_output=True, text=True, cwd=tmp_path, timeout=300
    )


def one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


def data_dir(folder: Path) -> Path:
    """A data dir of two utterances (their ids start with the folder's name) of speakers s1, s2."""
    folder.mkdir()
    (folder / "wav.scp").write_text(f"{folder.name}1 a.wav\n{folder.name}2 b.wav\n")
    (folder / "utt2spk").write_text(f"{folder.name}1 s1\n{folder.name}2 s2\n")
    return folder


def test_demo_falls_back_to_the_simulated_demo_with_one_line_saying_why(tmp_path):
    proc = run_without_torch(tmp_path, ["demo", "--out", "d"], voices=True)
    assert proc.returncode == 0, proc.stderr
    line = one_line(proc.stderr)
    assert line.startswith("lidframe demo: torch is not installed") and line.endswith("showing the simulated demo")
    assert all(hint in line for hint in INSTALL)
    summary = json.loads((tmp_path / "d" / "summary.json").read_text())
    assert set(summary["systems"]) == {"plain", "anon-weak", "anon-strong", "uneven", "random"}
    table = (tmp_path / "d" / "table.txt").read_text().strip()
    assert table in proc.stdout


def test_demo_without_speech_engines_says_so_on_stderr(tmp_path):
    proc = run_without_torch(tmp_path, ["demo"], voices=False)
    assert proc.returncode == 0, proc.stderr
    assert one_line(proc.stderr).startswith("lidframe demo: no speech engine here (apt-get install espeak-ng")
    assert "plain" in proc.stdout


@pytest.mark.parametrize("attacker", ["ecapa", "xvector?lin_neurons=64"])
def test_score_with_a_neural_attacker_refuses_in_one_line(tmp_path, attacker):
    data_dir(tmp_path / "e")
    data_dir(tmp_path / "t")
    proc = run_without_torch(
        tmp_path, ["score", "--attacker", attacker, "--enrol", "e", "--trials", "t", "--out", "s.npz"]
    )
    assert proc.returncode == 2, proc.stderr
    line = one_line(proc.stderr)
    assert line.startswith("lidframe: error: ") and "need torch, which is not installed" in line
    assert all(hint in line for hint in INSTALL)
    assert not (tmp_path / "s.npz").exists()


def test_score_with_the_random_attacker_needs_no_torch(tmp_path):
    data_dir(tmp_path / "e")
    data_dir(tmp_path / "t")
    proc = run_without_torch(
        tmp_path, ["score", "--attacker", "random", "--enrol", "e", "--trials", "t", "--out", "s.npz"]
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "s.npz").is_file()


def test_train_attacker_refuses_in_one_line(tmp_path):
    data_dir(tmp_path / "d")
    proc = run_without_torch(tmp_path, ["train-attacker", "--arch", "ecapa", "--data", "d", "--out", "c.ckpt"])
    assert proc.returncode == 2, proc.stderr
    line = one_line(proc.stderr)
    assert line.startswith("lidframe: error: ") and all(hint in line for hint in INSTALL)
    assert not (tmp_path / "c.ckpt").exists()


def test_a_grid_with_an_audio_attacker_refuses_in_one_line(tmp_path):
    for name in ("enrol", "trials"):
        data_dir(tmp_path / name)
    (tmp_path / "grid.toml").write_text(
        textwrap.dedent(
            """
            [grid]
            calibrators = ["logistic"]
            priors = ["uniform"]
            attackers = ["ecapa"]

            [systems.audio]
            dev = { enrol = "enrol", trials = ["trials"] }
            eval = { enrol = "enrol", trials = ["trials"] }
            """
        )
    )
    proc = run_without_torch(tmp_path, ["grid", "grid.toml", "--out", "g"])
    assert proc.returncode == 2, proc.stderr
    line = one_line(proc.stderr)
    assert line.startswith("lidframe: error: ") and "attackers" in line and all(hint in line for hint in INSTALL)
    assert not (tmp_path / "g").exists()


def test_the_python_api_names_what_to_install(tmp_path):
    code = BLOCK_TORCH + textwrap.dedent(
        """
        import lidframe.attackers as attackers
        attackers.RandomAttacker(dim=4)  # the torch-free attackers still import
        try:
            attackers.EcapaTdnn
        except ModuleNotFoundError as exc:
            print(exc.name, "|", exc)
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    name, message = proc.stdout.strip().split(" | ")
    assert name == "torch" and all(hint in message for hint in INSTALL)


def test_plugins_check_lists_the_neural_attackers_as_needing_torch_and_passes(tmp_path):
    # a built-in that needs an optional dependency is not a broken plugin: exit 0
    done = run_without_torch(tmp_path, ["plugins", "--check"])
    assert done.returncode == 0, done.stderr
    rows = {line.split()[1]: line for line in done.stdout.splitlines()[1:] if line.strip()}
    assert rows["ecapa"].endswith("needs torch (not installed)")
    assert rows["xvector"].endswith("needs torch (not installed)")
    assert rows["random"].endswith("ok") and rows["logistic"].endswith("ok")
    assert "BROKEN" not in done.stdout


def test_a_report_with_a_utility_and_the_utility_module_need_no_torch(tmp_path):
    """The word error rate reads audio with the attackers' reader, which must not pull torch in."""
    from lidframe.data.simulate import simulate_system
    from tests.report.conftest import utility_record

    dev, ev = simulate_system(leakage=0.5, seed=4, n_enrolled=6, trials_per_speaker=3)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    (tmp_path / "U.json").write_text(json.dumps(utility_record(0.25, rho_f0=0.8).to_dict()))
    proc = run_without_torch(
        tmp_path,
        [
            "evaluate",
            "--dev",
            "dev.npz",
            "--eval",
            "eval.npz",
            "--n-boot",
            "100",
            "--report",
            "r",
            "--utility",
            "U.json",
        ],
    )
    assert proc.returncode == 0, proc.stderr
    assert "Privacy and utility" in (tmp_path / "r" / "report.html").read_text()
    code = BLOCK_TORCH + "import lidframe.utility.evaluate, lidframe.attackers.audio\nprint('torch' in sys.modules)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "False", proc.stderr
