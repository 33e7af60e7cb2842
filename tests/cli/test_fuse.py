"""``lidframe fuse`` (issue 42, item 1): fused score sets that ``lidframe evaluate`` reads, with their provenance.

The fused scores are compared with the affine map of the inputs' row z-scores computed
here with numpy under scikit-learn's weights; digests with :mod:`hashlib`; the
provenance member read with plain numpy and json.  Bad input goes through the bad-input
suite's one check (exit 2, one line, nothing written).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from lidframe.cli import main
from lidframe.data.scoreset import ScoreSet
from tests.bad_input.conftest import assert_refused
from tests.core.test_fusion import _z, gaussian_views


def _document(path: Path) -> dict:
    with np.load(path) as archive:
        return json.loads(archive["provenance"].item())


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture()
def inputs(tmp_path):
    """Two attackers' dev and eval score sets (Gaussian views), as files: {"dev": [A, B], "eval": [A, B]}."""
    files: dict[str, list[Path]] = {}
    for split, seed in (("dev", 20), ("eval", 21)):
        views, _ = gaussian_views(seed, n_speakers=10, per_speaker=4, prefix=split)
        files[split] = []
        for name, view in zip("AB", views, strict=True):
            path = tmp_path / f"{name}_{split}.npz"
            view.save(path)
            files[split].append(path)
    return files


def _fuse(inputs, out, *extra):
    return ["fuse", "--dev", *inputs["dev"], "--eval", *inputs["eval"], "--out", out, *extra]


def test_fuse_writes_the_fused_dev_and_eval_sets_with_their_provenance(inputs, tmp_path, capsys):
    out = tmp_path / "fused"
    assert main([str(a) for a in _fuse(inputs, out, "--no-penalty")]) == 0
    printed = capsys.readouterr().out
    assert "fused 2 attackers" in printed and str(out / "eval.npz") in printed
    dev = [ScoreSet.load(p) for p in inputs["dev"]]
    model = LogisticRegression(class_weight="balanced", C=np.inf, tol=1e-12, max_iter=100_000)
    model.fit(np.column_stack([_z(s.scores).ravel() for s in dev]), dev[0].mated_mask().ravel())
    for split in ("dev", "eval"):
        fused = ScoreSet.load(out / f"{split}.npz")
        sets = [ScoreSet.load(p) for p in inputs[split]]
        expected = model.intercept_[0] + sum(w * _z(s.scores) for w, s in zip(model.coef_[0], sets, strict=True))
        np.testing.assert_allclose(fused.scores, expected, rtol=1e-5, atol=1e-5)
        assert np.array_equal(fused.trial_ids, sets[0].trial_ids) and np.array_equal(fused.enrolled, sets[0].enrolled)
        record = _document(out / f"{split}.npz")
        assert record["attacker"]["name"] == "fusion" and record["data_dirs"] == []
        settings = dict(record["attacker"]["settings"])
        for k, weight in enumerate(model.coef_[0], start=1):
            assert float(settings[f"weight {k}"].split()[0]) == pytest.approx(weight, rel=1e-5)
            assert settings[f"weight {k}"].endswith(f"({inputs['dev'][k - 1].name})")
        assert settings["C"] == "None"
        assert [item["file"] for item in record["fused_from"]] == [
            {"role": f"{role} {k}", "path": str(path), "sha256": _sha256(path), "size_bytes": path.stat().st_size}
            for role in ("dev", "eval")
            for k, path in enumerate(inputs[role], start=1)
        ]
        assert all(item["provenance"] is None for item in record["fused_from"])  # saved without one
        assert record["command"].startswith("lidframe fuse --dev")


def test_the_provenance_of_an_input_is_nested_in_the_fused_sets(tmp_path, capsys):
    """Inputs scored by lidframe score keep their provenance inside the fused set's, and evaluate reads it."""
    from tests.data.provenance_dirs import write_audio_dir

    made = {}
    for split in ("dev", "eval"):
        enrol = write_audio_dir(tmp_path / f"{split}_enrol", f"{split}e", speakers=4, per_speaker=2, seed=1)
        trials = write_audio_dir(tmp_path / f"{split}_trials", f"{split}t", speakers=4, per_speaker=3, seed=2)
        made[split] = []
        for seed in (1, 2):
            path = tmp_path / f"random{seed}_{split}.npz"
            argv = ["score", "--attacker", f"random?seed={seed}", "--enrol", enrol, "--trials", trials, "--out", path]
            assert main([str(a) for a in argv]) == 0
            made[split].append(path)
    out = tmp_path / "fused"
    assert main([str(a) for a in _fuse(made, out)]) == 0
    record = _document(out / "eval.npz")
    nested = [item["provenance"] for item in record["fused_from"]]
    assert [p["attacker"]["spec"] for p in nested] == ["random?seed=1", "random?seed=2"] * 2
    assert nested == [_document(path) for path in [*made["dev"], *made["eval"]]]
    summary = tmp_path / "summary.json"
    argv = ["evaluate", "--dev", out / "dev.npz", "--eval", out / "eval.npz", "--json", summary, "--no-bootstrap"]
    capsys.readouterr()
    assert main([str(a) for a in argv]) == 0
    carried = json.loads(summary.read_text())["provenance"]["eval"]["provenance"]
    assert carried["fused_from"][2]["provenance"]["attacker"]["spec"] == "random?seed=1"


# ------------------------------------------------------------------ bad input
def _mismatched(path: Path, what: str) -> Path:
    """A copy of the score set at *path* with its first trial id, enrolled id or trial speaker changed."""
    s = ScoreSet.load(path)
    ids, enrolled, speakers = (a.astype(object) for a in (s.trial_ids, s.enrolled, s.trial_speakers))
    {"trial": ids, "enrolled": enrolled, "speaker": speakers}[what][0] = "stranger"
    changed = path.with_name(f"{what}_{path.name}")
    ScoreSet(s.scores, enrolled, speakers, ids).save(changed)
    return changed


@pytest.mark.parametrize(
    ("what", "split", "words"),
    [
        ("trial", "dev", ["trial_B_dev.npz", "has no trial 'devutt0000'", "A_dev.npz"]),
        ("enrolled", "eval", ["enrolled_B_eval.npz", "has no enrolled speaker 'evalspk000'", "A_eval.npz"]),
        ("speaker", "dev", ["speaker_B_dev.npz", "trial 'devutt0000' has speaker 'stranger'", "A_dev.npz"]),
    ],
)
def test_inputs_of_other_trials_or_speakers_are_refused_naming_the_file_and_the_id(
    inputs, tmp_path, capsys, what, split, words
):
    inputs[split][1] = _mismatched(inputs[split][1], what)
    out = tmp_path / "fused"
    assert_refused(_fuse(inputs, out), capsys, expect=words, watch=[tmp_path])
    assert not out.exists()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda f: {"dev": f["dev"][:1], "eval": f["eval"][:1]}, ["--dev", "at least two score sets", "got 1"]),
        (lambda f: {"dev": f["dev"], "eval": f["eval"][:1]}, ["--eval gives 1 score sets but --dev 2"]),
        (lambda f: {"dev": [f["dev"][0]] * 2, "eval": f["eval"]}, ["--dev", "A_dev.npz", "given twice"]),
    ],
    ids=["one input", "fewer eval than dev sets", "the same file twice"],
)
def test_bad_counts_are_refused_before_anything_is_read(inputs, tmp_path, capsys, change, words):
    assert_refused(_fuse(change(inputs), tmp_path / "fused"), capsys, expect=words, watch=[tmp_path])


def test_an_output_on_an_input_is_refused(inputs, tmp_path, capsys):
    folder = tmp_path / "scores"
    folder.mkdir()
    target = folder / "dev.npz"
    inputs["dev"][0].rename(target)
    inputs["dev"][0] = target
    line = assert_refused(_fuse(inputs, folder), capsys, expect=["--out", "is an input of this run"], watch=[tmp_path])
    assert "dev.npz" in line


def test_a_failed_write_leaves_neither_file_and_no_folder(inputs, tmp_path, capsys, monkeypatch):
    """The second file failing (a full disk, say) takes the first back: both or neither."""
    from lidframe.data import scoreset

    real_save = scoreset.ScoreSet.save

    def save(self, path, **kwargs):
        if Path(path).name == "eval.npz":
            raise OSError(28, "No space left on device", str(path))
        return real_save(self, path, **kwargs)

    monkeypatch.setattr(scoreset.ScoreSet, "save", save)
    out = tmp_path / "fused"
    assert main([str(a) for a in _fuse(inputs, out)]) != 0
    assert "No space left on device" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    ("damage", "words"),
    [
        (lambda d: d.update(fused_from="x"), ["fused_from is 'x'", "a list"]),
        (lambda d: d["fused_from"][1].pop("file"), ["fused_from[1] has no 'file'"]),
        (lambda d: d["fused_from"][0]["file"].update(sha256="no"), ["fused_from[0].file.sha256", "SHA-256"]),
    ],
    ids=["not a list", "an input without its file", "a bad digest"],
)
def test_a_damaged_fused_from_is_one_line_naming_the_field(inputs, tmp_path, capsys, damage, words):
    from lidframe.data.provenance import read_provenance
    from lidframe.errors import InputError

    out = tmp_path / "fused"
    assert main([str(a) for a in _fuse(inputs, out)]) == 0
    record = _document(out / "dev.npz")
    assert read_provenance(out / "dev.npz").to_dict() == record  # the document reads back as written
    damage(record)
    fused = ScoreSet.load(out / "dev.npz")
    damaged = tmp_path / "damaged.npz"
    np.savez(
        damaged,
        scores=fused.scores,
        enrolled=fused.enrolled,
        trial_speakers=fused.trial_speakers,
        trial_ids=fused.trial_ids,
        provenance=np.array(json.dumps(record)),
    )
    with pytest.raises(InputError) as caught:
        read_provenance(damaged)
    message = str(caught.value)
    assert message.startswith(str(damaged)) and "\n" not in message
    for fragment in words:
        assert fragment in message
