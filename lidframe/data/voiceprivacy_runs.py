"""The systems a VoicePrivacy ``exp/`` folder holds, and each one's dev and eval sets as lidframe reads them.

The recipe (2024 and 2026) evaluates each ASV model in a results folder
``exp/<asv model>/<distance>_out`` (``asv_ssl``, ``asv_pre_ecapa``: the model trained on
original speech; ``asv_anon<suffix>``: one trained on anonymised speech).  There it caches
the embeddings of every dataset it scored (``emb_xvect/<dataset>/``,
:mod:`lidframe.data.voiceprivacy`) and writes the scores of each enrolment-trial pair
(``<enrolment dataset>-<trial dataset>/scores``).  The datasets are::

    libri_dev_enrolls<suffix>    libri_dev_trials_f<suffix>    libri_dev_trials_m<suffix>
    libri_test_enrolls<suffix>   libri_test_trials_f<suffix>   libri_test_trials_m<suffix>

with an empty suffix for the original speech and ``_<system>`` (``_mcadams``) for an
anonymised copy.  A :class:`System` is one suffix in one results folder: the six datasets
(or, read from the score files, the four enrolment-trial pairs), enrolment and trials
with the same suffix (the recipe's OO scenario for the original speech, AA for an
anonymised one).  The dev datasets (``libri_dev_*``) calibrate, the test datasets
(``libri_test_*``) are evaluated.  A view is ``"pooled"`` (both genders' trials against
every enrolled speaker), ``"f"`` or ``"m"`` (one gender's trials against that gender's
enrolled speakers, as the recipe scores them).

:func:`find_systems` finds every system under a folder (the ``exp/`` folder, one model's
folder, one results folder, or its ``emb_xvect``); a system with some of its datasets and
not all (a run that stopped, a folder copied in part) is refused in one line naming what
is missing -- it is never dropped in silence.  Other datasets (``libri_*_trials_mixed``,
``train-clean-360``, IEMOCAP) are not read and are listed in :attr:`Runs.ignored`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import attrs

from lidframe.data.embedset import EmbeddingSet
from lidframe.data.fileio import StrPath
from lidframe.data.scoreset import ScoreSet
from lidframe.data.voiceprivacy import GENDERS, LEVEL_FILES, embedding_set, read_scores
from lidframe.errors import InputError, preview

__all__ = ["SPLITS", "VIEWS", "Runs", "Source", "System", "find_systems"]

#: The recipe's dataset prefix of each role: the dev datasets calibrate, the test datasets are evaluated.
SPLITS = {"dev": "libri_dev", "eval": "libri_test"}
#: The views a system is reported in: both genders pooled, then each gender alone.
VIEWS = ("pooled", *GENDERS)
#: Where a system's sets are read from: the embedding cache (``emb_xvect``) or the score files.
Source = Literal["embeddings", "scores"]

_EMBEDDINGS = "emb_xvect"
_DATASET = re.compile(r"(?P<split>libri_(?:dev|test))_(?P<part>enrolls|trials_f|trials_m)(?P<suffix>(?:_.+)?)")
_PARTS = ("enrolls", *(f"trials_{g}" for g in GENDERS))


@attrs.frozen
class System:
    """One system in one ASV model's results folder: the datasets of one suffix.

    Attributes
    ----------
    results : pathlib.Path
        The results folder (``exp/<asv model>/<distance>_out``).
    suffix : str
        ``""`` for the original speech, ``"_<system>"`` for an anonymised copy.
    attacker : str
        The results folder as the report names it: its last two parts (``asv_ssl/cosine_out``).
    """

    results: Path
    suffix: str
    attacker: str

    @property
    def name(self) -> str:
        """``"original"``, or the suffix without its ``_`` (``"mcadams"``)."""
        return self.suffix[1:] if self.suffix else "original"

    @property
    def label(self) -> str:
        """The system's name on the page and in the JSON: ``"mcadams [asv_anon_mcadams/cosine_out]"``."""
        return f"{self.name} [{self.attacker}]"

    def dataset(self, split: str, part: str) -> str:
        """The recipe's name of a dataset: ``dataset("libri_test", "trials_f")`` -> ``"libri_test_trials_f_mcadams"``."""
        return f"{split}_{part}{self.suffix}"

    def _trial_parts(self, view: str) -> tuple[str, ...]:
        if view not in VIEWS:
            raise InputError(f"view {view!r}: expected one of {', '.join(VIEWS)}")
        return tuple(f"trials_{g}" for g in (GENDERS if view == "pooled" else (view,)))

    def embedding_set(self, split: str, view: str) -> EmbeddingSet:
        """The cosine attacker's set of *split* (``"libri_dev"``, ``"libri_test"``) in *view*, from the cache."""
        folder = self.results / _EMBEDDINGS
        trials = [folder / self.dataset(split, part) for part in self._trial_parts(view)]
        gender = None if view == "pooled" else view
        return embedding_set(folder / self.dataset(split, "enrolls"), trials, gender=gender)

    def scores_file(self, split: str, gender: str) -> Path:
        """The recipe's score file of *split*'s enrolment against its trials of *gender*."""
        pair = f"{self.dataset(split, 'enrolls')}-{self.dataset(split, f'trials_{gender}')}"
        return self.results / pair / "scores"

    def score_set(self, split: str, gender: str, data: StrPath) -> ScoreSet:
        """The recipe's score set of *split* for *gender*, labelled by ``data/<split>_trials_<gender>/trials``."""
        return read_scores(self.scores_file(split, gender), trials_list(data, split, gender))

    def files(self, split: str, view: str, source: Source, data: StrPath | None = None) -> dict[str, Path]:
        """The files read for *split* in *view*, by a name for the report's input digests."""
        if source == "scores":
            if view == "pooled" or data is None:
                raise InputError("the recipe's score files are read per gender, with the data folder's trial lists")
            return {
                f"{self.label} {split} {view} scores": self.scores_file(split, view),
                f"{self.label} {split} {view} trials": trials_list(data, split, view),
            }
        out = {}
        for part in ("enrolls", *self._trial_parts(view)):
            level = "spk-level" if part == "enrolls" else "utt-level"
            folder = self.results / _EMBEDDINGS / self.dataset(split, part) / level
            for name in LEVEL_FILES:
                out[f"{self.label} {self.dataset(split, part)}/{level}/{name}"] = folder / name
        return out


def trials_list(data: StrPath, split: str, gender: str) -> Path:
    """The trial list of *split*'s trials of *gender* in the recipe's data folder (the original dataset's)."""
    return Path(data) / f"{split}_trials_{gender}" / "trials"


@attrs.frozen
class Runs:
    """What :func:`find_systems` found.

    Attributes
    ----------
    systems : list of System
        Every complete system: the original speech first, then by results folder and suffix.
    ignored : list of str
        The datasets (or score folders) seen and not read, as ``<attacker>/emb_xvect/<name>``
        (``<attacker>/<name>``).
    """

    systems: list[System]
    ignored: list[str]


def _results_folders(root: Path, source: Source) -> list[Path]:
    """The results folders at most two levels under *root* (or *root* itself) that hold *source*."""
    if root.name == _EMBEDDINGS and source == "embeddings":
        return [root.parent]
    levels = [root, *sorted(root.glob("*")), *sorted(root.glob("*/*"))]
    folders = [p for p in levels if p.is_dir()]
    if source == "embeddings":
        return [p for p in folders if (p / _EMBEDDINGS).is_dir()]
    return [p for p in folders if any(_score_pair(q.parent.name) for q in p.glob("*-*/scores") if q.is_file())]


def _score_pair(name: str) -> tuple[str, str] | None:
    """``(split, suffix)`` of a score folder's name ``<split>_enrolls<suffix>-<split>_trials_<g><suffix>``, or None."""
    for cut in (i for i, c in enumerate(name) if c == "-"):
        enrol, trial = _DATASET.fullmatch(name[:cut]), _DATASET.fullmatch(name[cut + 1 :])
        if (
            enrol is not None
            and trial is not None
            and enrol["part"] == "enrolls"
            and trial["part"] != "enrolls"
            and (enrol["split"], enrol["suffix"]) == (trial["split"], trial["suffix"])
        ):
            return trial["split"] + "_" + trial["part"], trial["suffix"]
    return None


def _datasets(results: Path, source: Source) -> tuple[dict[str, set[str]], list[str]]:
    """The parts found per suffix in *results* (``{suffix: {"libri_dev_enrolls", ...}}``) and the names not read."""
    found: dict[str, set[str]] = {}
    ignored: list[str] = []
    if source == "embeddings":
        for folder in sorted((results / _EMBEDDINGS).iterdir()):
            match = _DATASET.fullmatch(folder.name) if folder.is_dir() else None
            if match is None:
                ignored.append(folder.name)
                continue
            found.setdefault(match["suffix"], set()).add(f"{match['split']}_{match['part']}")
        return found, ignored
    for scores in sorted(results.glob("*-*/scores")):
        pair = _score_pair(scores.parent.name) if scores.is_file() else None
        if pair is None:
            ignored.append(scores.parent.name)
            continue
        found.setdefault(pair[1], set()).add(pair[0])
    return found, ignored


def _required(source: Source) -> set[str]:
    """The parts a complete system has: six datasets, or four score files (the enrolment is in each)."""
    parts = _PARTS if source == "embeddings" else _PARTS[1:]
    return {f"{split}_{part}" for split in SPLITS.values() for part in parts}


def find_systems(root: StrPath, *, source: Source = "embeddings") -> Runs:
    """Every system of a VoicePrivacy results tree (module docstring).

    Parameters
    ----------
    root : str or os.PathLike
        The recipe's ``exp/`` folder, one model's folder (``exp/asv_ssl``), one results
        folder (``exp/asv_ssl/cosine_out``) or its ``emb_xvect``.
    source : {"embeddings", "scores"}
        Find the systems in the embedding cache (default) or in the score files.

    Returns
    -------
    Runs

    Raises
    ------
    InputError
        *root* is not a folder; no results folder holds a system; or a system is partial
        (one line naming the results folder, the system and the datasets it lacks).
    """
    root = Path(root)
    if not root.is_dir():
        raise InputError(
            f"{root}: {'is not a folder' if root.exists() else 'does not exist'}; expected a VoicePrivacy exp/ folder"
        )
    systems: list[System] = []
    ignored: list[str] = []
    required = _required(source)
    for results in _results_folders(root, source):
        found, left = _datasets(results, source)
        attacker = "/".join(results.absolute().parts[-2:])  # <asv model>/<distance>_out
        ignored += [
            f"{attacker}/{_EMBEDDINGS}/{name}" if source == "embeddings" else f"{attacker}/{name}" for name in left
        ]
        for suffix in sorted(found):  # "" (the original speech) first
            missing = sorted(required - found[suffix])
            if missing:
                what = "datasets in emb_xvect" if source == "embeddings" else "score files (enrolment-trial pairs)"
                raise InputError(
                    f"{results}: a partial VoicePrivacy system {suffix or 'original'!r}: no {what} for "
                    f"{preview(name + suffix for name in missing)}; expected "
                    f"libri_{{dev,test}}_{{enrolls,trials_f,trials_m}}{suffix}"
                )
            systems.append(System(results, suffix, attacker))
    if not systems:
        where = (
            f"{_EMBEDDINGS}/libri_{{dev,test}}_{{enrolls,trials_f,trials_m}}"
            if source == "embeddings"
            else ("libri_{dev,test}_enrolls-libri_{dev,test}_trials_{f,m}/scores")
        )
        raise InputError(
            f"{root}: no VoicePrivacy results found; expected <asv model>/<distance>_out/{where} "
            "(the layout the 2024 and 2026 recipes write)"
        )
    return Runs(sorted(systems, key=lambda s: (s.suffix != "", s.attacker, s.suffix)), ignored)
