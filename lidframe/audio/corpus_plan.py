"""The plan of a synthesized corpus: which voice says which sentence, in which data dir.

:func:`plan_corpus` splits the voices into train / dev / eval, picks each one's sentences
(in dev and eval the first ``enrol`` of them are enrolment, the rest trials) and adds the
*outsiders*: voices enrolled nowhere, with trial utterances only, in ``dev_trials`` or
``eval_trials``.  The outsiders are drawn after every split speaker, so the split and its
speakers' sentences are the same with or without them.  :class:`CorpusPlan` holds the
result: each data dir's rows, the wav files to make and the voices per engine;
:func:`write_data_dir` writes a data dir of rows.  :func:`lidframe.audio.corpus.build_corpus`
synthesizes what the plan lists.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import numpy as np

from lidframe.data.kaldi import WavPaths, wav_location

if TYPE_CHECKING:
    from lidframe.audio.corpus import Voice

__all__ = ["DATA_DIRS", "CorpusPlan", "plan_corpus", "write_data_dir"]

#: The data dirs of a corpus.
DATA_DIRS = ("train", "dev_enrolls", "dev_trials", "eval_enrolls", "eval_trials")
#: One line of a data dir: (utterance id, speaker, wav path relative to the data dir, text).
_Row = tuple[str, str, str, str]


@attrs.define
class CorpusPlan:
    """What a corpus holds: each data dir's rows, the wav files to make, and the voices per engine.

    ``work`` lists ``(voice, sentence, wav path)`` per utterance; a wav's name carries the
    digest of its recipe (*recipe* of the voice and the sentence), so an existing file was
    made this way.  ``speakers`` and ``outsiders`` name the voices of each split (train,
    dev, eval) and the outsiders of dev and eval (:func:`plan_corpus`).
    """

    out: Path
    recipe: Callable[[Voice, str], str]
    enrol: int
    dirs: dict[str, list[_Row]] = attrs.field(factory=lambda: {name: [] for name in DATA_DIRS})
    engines: dict[str, int] = attrs.field(factory=dict)
    work: list[tuple[Voice, str, Path]] = attrs.field(factory=list)
    speakers: dict[str, list[str]] = attrs.field(factory=lambda: {"train": [], "dev": [], "eval": []})
    outsiders: dict[str, list[str]] = attrs.field(factory=lambda: {"dev": [], "eval": []})

    def listed(self, wav_paths: WavPaths) -> dict[str, list[_Row]]:
        """Each data dir's rows with the wav path as its ``wav.scp`` names it (:func:`lidframe.data.kaldi.wav_location`)."""
        return {
            name: [
                (u, s, wav_location(self.out / name / path, self.out / name, wav_paths), t) for u, s, path, t in rows
            ]
            for name, rows in self.dirs.items()
        }

    def add_speaker(self, voice: Voice, split_name: str, texts: Sequence[str], *, outsider: bool = False) -> None:
        """Add *voice*'s utterances of *texts* to *split_name* (dev/eval: the first ``enrol`` are enrolment).

        An *outsider* (dev/eval) gets the trials only (the texts after the first
        ``enrol``): it is enrolled nowhere.
        """
        self.engines[voice.engine] = self.engines.get(voice.engine, 0) + 1
        (self.outsiders if outsider else self.speakers)[split_name].append(voice.speaker)
        for k, text in enumerate(texts):
            if outsider and k < self.enrol:
                continue
            utt = f"{voice.speaker}-{k:03d}"
            name = f"{utt}-{self.recipe(voice, text)}.wav"
            self.work.append((voice, text, self.out / "wav" / voice.speaker / name))
            if split_name == "train":
                target = "train"
            else:
                target = f"{split_name}_enrolls" if k < self.enrol else f"{split_name}_trials"
            self.dirs[target].append((utt, voice.speaker, f"../wav/{voice.speaker}/{name}", text))


def plan_corpus(
    plan: CorpusPlan,
    voices: Sequence[Voice],
    outsiders: Sequence[Voice],
    *,
    n_dev_outsiders: int,
    texts: Sequence[str],
    sentences: int,
    split: tuple[float, float, float],
    rng: np.random.Generator,
) -> CorpusPlan:
    """Fill *plan*: *voices* split into train / dev / eval, then *outsiders* shared between dev and eval.

    Parameters
    ----------
    plan : CorpusPlan
        Empty.
    voices : sequence of Voice
        The speakers of the splits (at least 3).
    outsiders : sequence of Voice
        Voices enrolled nowhere: in an order drawn from *rng*, the first *n_dev_outsiders*
        give trials to dev, the others to eval.
    n_dev_outsiders : int
    texts : sequence of str
        The sentences to pick from.
    sentences : int
        Sentences per voice (an outsider's first ``plan.enrol`` are not spoken).
    split : (float, float, float)
        Shares of *voices* for train, dev and eval (:func:`split_speakers`).
    rng : numpy.random.Generator
        Draws the split, then each split speaker's sentences, then the outsiders' order and
        sentences: the draws of the split come first, so that they do not depend on the outsiders.

    Returns
    -------
    CorpusPlan
        *plan*, filled.
    """
    groups = split_speakers(len(voices), split, rng)
    for split_name, members in groups.items():
        for index in members:
            picks = rng.choice(len(texts), size=sentences, replace=False)
            plan.add_speaker(voices[index], split_name, [texts[i] for i in picks])
    order = rng.permutation(len(outsiders))
    for position, index in enumerate(order):
        picks = rng.choice(len(texts), size=sentences, replace=False)
        split_name = "dev" if position < n_dev_outsiders else "eval"
        plan.add_speaker(outsiders[index], split_name, [texts[i] for i in picks], outsider=True)
    for names in (*plan.speakers.values(), *plan.outsiders.values()):
        names.sort()
    return plan


def split_speakers(n: int, split: tuple[float, float, float], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``{"train", "dev", "eval"} -> indices`` of *n* speakers in an order drawn from *rng*, shared as *split* says."""
    order = rng.permutation(n)
    n_dev = max(1, round(split[1] * n))
    n_eval = max(1, round(split[2] * n))
    n_train = max(1, n - n_dev - n_eval)
    return {"train": order[:n_train], "dev": order[n_train : n_train + n_dev], "eval": order[n_train + n_dev :]}


def write_data_dir(folder: Path, utterances: list[_Row]) -> None:
    """wav.scp, utt2spk, spk2utt and text of (utt, speaker, wav.scp location, text) tuples."""
    folder.mkdir(parents=True, exist_ok=True)
    utterances = sorted(utterances)
    (folder / "wav.scp").write_text("".join(f"{u} {p}\n" for u, _, p, _ in utterances))
    (folder / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s, _, _ in utterances))
    (folder / "text").write_text("".join(f"{u} {t}\n" for u, _, _, t in utterances))
    by_speaker: dict[str, list[str]] = {}
    for u, s, _, _ in utterances:
        by_speaker.setdefault(s, []).append(u)
    (folder / "spk2utt").write_text("".join(f"{s} {' '.join(us)}\n" for s, us in sorted(by_speaker.items())))
