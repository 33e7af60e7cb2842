"""Small VoicePrivacy results folders in exactly the recipe's layout, written by the tests (tensors with torch.save).

The recipe (``evaluation/privacy/asv``) writes, per ASV model::

    exp/<model>/cosine_out/emb_xvect/<dataset>/{utt-level,spk-level}/
        speaker_vectors.pt   torch.save of a float tensor (n, d)
        id2idx               "IDENTIFIER INDEX", lines sorted by identifier
        idx2spk              "INDEX SPEAKER", lines sorted by index
        spk2gender           "SPEAKER f|m", lines sorted by speaker
    exp/<model>/cosine_out/<enrolment dataset>-<trial dataset>/scores   "ENROLLED TRIAL SCORE"
    data/<trial dataset>/trials                                         "ENROLLED TRIAL target|nontarget"

:func:`write_exp` builds such a tree from seeded random embeddings and returns the arrays
it saved (:class:`Dataset`), so a test compares what lidframe reads and computes with
what it built, by its own route.  Rows are stored in a shuffled order, so ``id2idx``
(sorted by identifier, as the recipe writes it) is not the identity: an id mapped to the
wrong row shows.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the recipe's caches are torch files")

SPLITS = ("libri_dev", "libri_test")
GENDERS = ("f", "m")
DIM = 6


@attrs.frozen(eq=False)
class Dataset:
    """What one level folder holds, in row order: identifiers, speakers, vectors; and the speakers' genders."""

    identifiers: list[str]
    speakers: list[str]
    vectors: np.ndarray
    gender_of: dict[str, str]

    def rows(self, gender: str | None = None) -> np.ndarray:
        return np.array([i for i, s in enumerate(self.speakers) if gender is None or self.gender_of[s] == gender])


def write_level(
    folder: Path, identifiers, speakers, vectors, gender_of, *, tensor=None, skip: tuple[str, ...] = ()
) -> None:
    """One level folder as the recipe writes it; *tensor* replaces the saved tensor, *skip* leaves files out."""
    folder.mkdir(parents=True)
    if "speaker_vectors.pt" not in skip:
        torch.save(torch.as_tensor(vectors) if tensor is None else tensor, folder / "speaker_vectors.pt")
    lines = {
        "id2idx": [f"{identifier} {row}" for row, identifier in sorted(enumerate(identifiers), key=lambda x: x[1])],
        "idx2spk": [f"{row} {speaker}" for row, speaker in enumerate(speakers)],
        "spk2gender": [f"{speaker} {gender_of[speaker]}" for speaker in sorted(set(speakers))],
    }
    for name, text in lines.items():
        if name not in skip:
            (folder / name).write_text("".join(line + "\n" for line in text))


def _speakers(split: str, gender: str, n: int) -> list[str]:
    return [f"{split[6:]}{gender}{k}" for k in range(n)]  # "devf0", "testm3"


@attrs.frozen(eq=False)
class Exp:
    """A written tree: ``root`` (the exp folder), ``data`` (the data folder), and each dataset's arrays by name."""

    root: Path
    data: Path
    datasets: dict[tuple[str, str], Dataset]  # (results folder relative to root, dataset name) -> arrays

    def get(self, results: str, name: str) -> Dataset:
        return self.datasets[results, name]


def _write_system(
    out: dict,
    root: Path,
    results: str,
    suffix: str,
    rng: np.random.Generator,
    noise: float,
    enrolled: int,
    trials: dict[str, int],
) -> None:
    """The six datasets of one system: *enrolled* speakers per gender, one outsider each, ``trials[gender]`` trials each."""
    emb = root / results / "emb_xvect"
    for split in SPLITS:
        centres = {}
        gender_of = {}
        for gender in GENDERS:
            for speaker in _speakers(split, gender, enrolled + 1):  # the last one is not enrolled
                centres[speaker] = rng.normal(size=DIM)
                gender_of[speaker] = gender
        enrol_speakers = [s for g in GENDERS for s in _speakers(split, g, enrolled)]
        order = rng.permutation(len(enrol_speakers))
        speakers = [enrol_speakers[i] for i in order]
        vectors = np.array([centres[s] + noise * rng.normal(size=DIM) for s in speakers], dtype=np.float32)
        name = f"{split}_enrolls{suffix}"
        write_level(emb / name / "spk-level", speakers, speakers, vectors, gender_of)
        out[results, name] = Dataset(speakers, speakers, vectors, {s: gender_of[s] for s in speakers})
        for gender in GENDERS:
            pairs = [(s, f"{s}-{k}") for s in _speakers(split, gender, enrolled + 1) for k in range(trials[gender])]
            pairs = [pairs[i] for i in rng.permutation(len(pairs))]  # the same ids in every system, rows shuffled
            trial_speakers, utts = [s for s, _ in pairs], [u for _, u in pairs]
            vectors = np.array([centres[s] + noise * rng.normal(size=DIM) for s in trial_speakers], dtype=np.float32)
            name = f"{split}_trials_{gender}{suffix}"
            genders = dict.fromkeys(trial_speakers, gender)
            write_level(emb / name / "utt-level", utts, trial_speakers, vectors, genders)
            out[results, name] = Dataset(utts, trial_speakers, vectors, genders)


def write_exp(
    tmp_path: Path, *, seed: int = 0, enrolled: int = 5, scores: bool = False, trials: dict[str, int] | None = None
) -> Exp:
    """An exp folder of two ASV models: ``asv_ssl`` (original and ``_mcadams``) and ``asv_anon_mcadams`` (``_mcadams``).

    Each system has *enrolled* speakers per gender and one outsider per gender, three
    trials each (*trials*: gender -> trials of each of its speakers), in dev and test.  Datasets the command does not read are added
    (``libri_dev_trials_mixed``, ``train-clean-360``).  With *scores*, each system's score
    files (the cosines of the saved vectors, the recipe's full per-gender grids) and the
    data folder's trial lists are written too.
    """
    rng = np.random.default_rng(seed)
    root, data = tmp_path / "exp", tmp_path / "data"
    out: dict = {}
    for results, suffix, noise in (
        ("asv_ssl/cosine_out", "", 0.4),
        ("asv_ssl/cosine_out", "_mcadams", 1.2),
        ("asv_anon_mcadams/cosine_out", "_mcadams", 0.9),
    ):
        _write_system(out, root, results, suffix, rng, noise, enrolled, trials or dict.fromkeys(GENDERS, 3))
    extra = root / "asv_ssl/cosine_out/emb_xvect"
    write_level(extra / "libri_dev_trials_mixed" / "utt-level", ["x"], ["s"], np.ones((1, DIM)), {"s": "f"})
    write_level(extra / "train-clean-360" / "utt-level", ["y"], ["s"], np.ones((1, DIM)), {"s": "m"})
    exp = Exp(root, data, out)
    if scores:
        write_scores(exp)
    return exp


def cosines(enrol: Dataset, trials: Dataset, gender: str) -> tuple[np.ndarray, list[str]]:
    """The (T, N) cosines of *trials* against *enrol*'s speakers of *gender*, in float64; those speakers."""
    rows = enrol.rows(gender)
    e = enrol.vectors[rows].astype(np.float64)
    t = trials.vectors.astype(np.float64)
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    t = t / np.linalg.norm(t, axis=1, keepdims=True)
    return t @ e.T, [enrol.speakers[i] for i in rows]


def write_scores(exp: Exp) -> None:
    """Each system's score files and the trial lists, as the recipe writes them (trial list order, no header)."""
    systems = {(results, name[len("libri_dev_enrolls") :]) for results, name in exp.datasets if "dev_enrolls" in name}
    for results, suffix in sorted(systems):
        for split in SPLITS:
            enrol_name = f"{split}_enrolls{suffix}"
            enrol = exp.get(results, enrol_name)
            for gender in GENDERS:
                trial_name = f"{split}_trials_{gender}{suffix}"
                trials = exp.get(results, trial_name)
                scores, speakers = cosines(enrol, trials, gender)
                key, lines = [], []
                for j, speaker in enumerate(speakers):
                    for i, utt in enumerate(trials.identifiers):
                        label = "target" if trials.speakers[i] == speaker else "nontarget"
                        key.append(f"{speaker} {utt} {label}\n")
                        lines.append(f"{speaker} {utt} {float(scores[i, j])!r}\n")
                folder = exp.root / results / f"{enrol_name}-{trial_name}"
                folder.mkdir(parents=True)
                (folder / "scores").write_text("".join(lines))
                listing = exp.data / f"{split}_trials_{gender}" / "trials"
                if not listing.exists():
                    listing.parent.mkdir(parents=True)
                    listing.write_text("".join(key))
