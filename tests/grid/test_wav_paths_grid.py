"""A grid's data-dir source with ``wav_paths``: the audio it reads, and the score cache keyed by that audio.

The attacker ``listening`` reads every utterance's audio file (its embedding is drawn from
the file's bytes and the speaker), so a cell's number depends on which files a data dir's
relative paths name.  Issue 41: relative paths are read against the current folder unless
the source says ``wav_paths = "data-dir"``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lidframe import evaluate
from lidframe.data.utterance import Utterance, group_by_speaker
from lidframe.grid.plan import plan_grid
from lidframe.grid.report import load_results
from lidframe.grid.runner import run_grid
from lidframe.grid.spec import load_grid_spec
from tests.listening import Listening, registered

SPEC = """[grid]
attackers = ["listening"]
calibrators = ["logistic"]

[systems.anon]
dev = {{ enrol = "dev_enrol", trials = ["dev_trials"]{extra} }}
eval = {{ enrol = "eval_enrol", trials = ["eval_trials"]{extra} }}
"""


def _system(root: Path) -> None:
    """dev and eval data dirs under *root*, each listing ``wav/<utt>.wav`` relative to itself (a data dir that moves)."""
    for split in ("dev", "eval"):
        for role, per_speaker in (("enrol", 2), ("trials", 3)):
            folder = root / f"{split}_{role}"
            (folder / "wav").mkdir(parents=True)
            utts = [(f"{split}-{role}-{s}-{k}", f"{split}spk{s}") for s in range(6) for k in range(per_speaker)]
            for utt, _ in utts:
                (folder / "wav" / f"{utt}.wav").write_text(f"the audio of {utt}")
            (folder / "wav.scp").write_text("".join(f"{u} wav/{u}.wav\n" for u, _ in utts))
            (folder / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utts))


def test_a_data_dir_source_reads_its_audio_by_its_wav_paths(tmp_path, monkeypatch):
    folder = tmp_path / "spec"
    _system(folder)
    (folder / "grid.toml").write_text(SPEC.format(extra=', wav_paths = "data-dir"'))
    monkeypatch.chdir(tmp_path)  # no wav/ here: only the data-dir convention finds the audio
    with registered():
        run_grid(folder / "grid.toml", tmp_path / "out")
        (cell,) = load_results(tmp_path / "out")
        # the same number scored here, from the files each wav.scp names relative to its data dir
        attacker = Listening()
        scored = {}
        for split in ("dev", "eval"):
            enrol, trials = ([], [])
            for role, into in (("enrol", enrol), ("trials", trials)):
                base = folder / f"{split}_{role}"
                for line in (base / "utt2spk").read_text().splitlines():
                    utt, speaker = line.split()
                    into.append(Utterance(utt, speaker, str(base / "wav" / f"{utt}.wav")))
            scored[split] = attacker.score(trials, group_by_speaker(enrol))
        assert cell.summary.alid == evaluate(scored["dev"], scored["eval"]).summary.alid

        def audio_digest(extra: str) -> str:
            (folder / "grid.toml").write_text(SPEC.format(extra=extra))
            (plan_cell,) = plan_grid(load_grid_spec(folder / "grid.toml"), tmp_path / "plan").cells
            return next(
                v[1] for k, v in plan_cell.inputs.items() if k.startswith("eval trials") and k.endswith("audio")
            )

        found = audio_digest(', wav_paths = "data-dir"')
        with pytest.warns(UserWarning, match="give --wav-paths data-dir"):
            missing = audio_digest("")
        assert found != missing  # read against the current folder, every listed file is missing
        (folder / "eval_trials" / "wav" / "eval-trials-0-0.wav").write_text("changed audio")
        assert audio_digest(', wav_paths = "data-dir"') != found  # the cache follows the files read
        with pytest.warns(UserWarning, match="are not in the current folder but are in the data dir"):
            assert audio_digest("") == missing
