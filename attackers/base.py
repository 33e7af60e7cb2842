"""The Attacker interface: utterances in, embeddings and full T x N score sets out.

An attacker keeps the contract of :class:`lidframe.registry.AttackerLike` (written there
once): ``embed`` turns utterances into embeddings, ``score`` scores every trial against
every enrolled speaker.

:class:`EmbeddingAttacker` implements ``score`` once for all embedding extractors:
each enrolled speaker's profile aggregates its enrolment embeddings, and a trial is
scored against every profile by :meth:`EmbeddingAttacker.compare` (cosine by default).  Two aggregations:

``"mean_of_normalised"`` (default; the published LID reference code)
    L2-normalise each utterance embedding, then average.
``"mean"`` (VoicePrivacy 2024)
    average the raw embeddings.

Subclasses only implement ``embed``.  The pair scoring is one method,
:meth:`EmbeddingAttacker.compare` (trial embeddings against profiles), which the cohort
normalisation reuses to score the cohort (:mod:`lidframe.attackers.cohort`).

Scoring options (:data:`SCORING_OPTIONS`), taken by every embedding attacker:
``score_norm`` (``"none"``, ``"snorm"`` or ``"asnorm"``: cohort score normalisation,
:mod:`lidframe.core.cohort`), ``cohort`` (a data dir or an embedding-set ``.npz`` of other
speakers) and ``cohort_top_k`` (K of AS-norm); ``wav_paths`` says how relative audio paths
in the ``wav.scp`` of the data dirs it reads itself (a data-dir ``cohort`` or
``plda_train``) are resolved, as :func:`lidframe.data.kaldi.read_data_dir` does (the
command line passes its ``--wav-paths`` down).

Every embedding attacker takes a scoring back end (``backend``), used by :meth:`EmbeddingAttacker.compare`,
the one place where embeddings become scores:

``"cosine"`` (default)
    the cosine of the trial embedding with the profile.
``"plda"``
    the log-likelihood ratio of two-covariance PLDA with LDA (:mod:`lidframe.core.plda`),
    trained on ``plda_train`` -- a data dir the attacker embeds, or a file of labelled
    embeddings -- with the LDA dimension ``plda_dim``; the LLR takes each profile's number
    of enrolment embeddings (:mod:`lidframe.attackers.plda_backend`).

Run options (:data:`RUN_OPTIONS`: device, precision, batch size, cache folder) are taken
by the attackers they apply to and by no others; callers pass each only where it is taken.

Each attacker declares the range of each of its numeric options in ``option_ranges``
(:class:`lidframe.registry.Range`), checked when a spec is read and when its constructor
(decorated with :func:`lidframe.registry.range_checked`) is called; :data:`SEED`,
:data:`WIDTH` and :data:`WIDTHS` are the ranges several of them share.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import attrs
import numpy as np

from lidframe.data.fileio import StrPath
from lidframe.data.kaldi import WavPaths, check_wav_paths
from lidframe.data.scoreset import ScoreSet
from lidframe.data.utterance import Utterance, check_utterances
from lidframe.data.vectors import check_nonzero_rows, unit_rows
from lidframe.errors import InputError, preview
from lidframe.registry.capabilities import NO_RANGES, InputFiles, range_checked
from lidframe.registry.ranges import Range

from .cohort import (
    Cohort,
    check_cohort,
    check_score_norm,
    cohort_input_files,
    embed_cohort,
    normalise_with_cohort,
    read_cohort,
)

__all__ = [
    "Attacker",
    "EmbeddingAttacker",
    "BACKENDS",
    "ENROLMENT_AGGREGATIONS",
    "RUN_OPTIONS",
    "SCORING_OPTIONS",
    "SCORING_RANGES",
    "SEED",
    "WIDTH",
    "WIDTHS",
]

ENROLMENT_AGGREGATIONS = ("mean_of_normalised", "mean")
#: How an embedding attacker scores a trial embedding against a profile (module docstring).
BACKENDS = ("cosine", "plda")

#: Options of how an attacker runs, not of what it computes: the device, the precision of
#: its model's arithmetic, its batch size and its embedding cache folder.  An attacker
#: takes, as keyword parameters of its constructor (or ``from_params``), those that apply
#: to it and need not take the others: one without a model (``random``, ``precomputed``)
#: has nothing to place on a device, batch or cache.  ``lidframe score`` passes each
#: option only to an attacker that takes it (:func:`lidframe.registry.accepted_params`)
#: and says on one line that it does not apply to the others;
#: :func:`lidframe.testing.check_attacker` checks that a constructor names what it takes.
RUN_OPTIONS = ("device", "precision", "batch_size", "cache_dir")

#: Options of how an embedding attacker scores, taken by every one (forwarded to
#: :class:`EmbeddingAttacker` by a subclass's ``**scoring``): the back end (cosine or PLDA,
#: with its training set and LDA dimension), cohort score normalisation, and how the data dirs
#: among them resolve relative audio paths (``wav_paths``).
SCORING_OPTIONS = ("backend", "plda_train", "plda_dim", "score_norm", "cohort", "cohort_top_k", "wav_paths")

#: A seed: an integer in [0, 2**64 - 1], what ``torch.manual_seed`` takes (and ``--seed`` everywhere).
SEED = Range(0, 2**64 - 1, integer=True)
#: A width (an embedding's dimension, a layer's channels or units): an integer in [1, 8192], four times the
#: widest layer of a published speaker encoder; a width beyond it is a typo, and its weights would not fit.
WIDTH = Range(1, 8192, integer=True)
#: A list of widths (``channels=512,512,512,512,1536``), each in :data:`WIDTH`.
WIDTHS = attrs.evolve(WIDTH, sequence=True)
#: The ranges of the numeric :data:`SCORING_OPTIONS`: ``plda_dim`` (the PLDA back end's LDA dimension, or None
#: for the most the training set allows) and ``cohort_top_k`` (K of AS-norm: a standard deviation needs two
#: scores).  A subclass that forwards them to :class:`EmbeddingAttacker` declares ``{**SCORING_RANGES, ...}``
#: (one that does not take them, a plugin with an ``__init__`` of its own, declares nothing: the base class does
#: not, so it stays a valid attacker).
SCORING_RANGES: Mapping[str, Range] = {
    "plda_dim": attrs.evolve(WIDTH, none=True),
    "cohort_top_k": Range(2, integer=True, none=True),
}


class Attacker:
    """Base class of attackers; their contract is :class:`lidframe.registry.AttackerLike`.

    Subclasses set ``name`` (the registry name) and implement its methods, and may
    declare capabilities other than the defaults below
    (:class:`lidframe.registry.AttackerCapabilities`).
    """

    name: str = ""
    #: Whether it reads the audio files of the utterances it is given (a grid's cache keys
    #: follow them only where it does); an attacker that looks embeddings up says False.
    reads_audio: ClassVar[bool] = True
    #: The files a spec of it reads besides those its parameters name: a classmethod
    #: ``input_files(params) -> iterable of path``; None: only those.
    input_files: InputFiles | None = None
    #: Its name with settings for tables, a method ``describe() -> str``; None: the class name.
    describe: Callable[[], str] | None = None
    #: Its encoder as a torch module to train, a method ``build_model() -> torch.nn.Module``;
    #: None: not trainable (:class:`~lidframe.attackers.neural.NeuralAttacker` defines it).
    build_model: Callable[[], Any] | None = None
    #: The hooks that adapt only its output layer (``train-attacker --layers output``):
    #: ``output_layer(model)``, ``output_layer_inputs(model, windows)``,
    #: ``window_features(frontend, waveform)``; None: trained whole (GE2E defines them).
    output_layer: Callable[..., Any] | None = None
    output_layer_inputs: Callable[..., Any] | None = None
    window_features: Callable[..., Any] | None = None
    #: The values each numeric option of its constructor takes, ``{option: Range(...)}``; a subclass
    #: declares ``{**Base.option_ranges, ...}`` and decorates its ``__init__`` with ``range_checked("attacker")``.
    option_ranges: ClassVar[Mapping[str, Range]] = NO_RANGES

    def embed(self, utterances: Sequence[Utterance]) -> np.ndarray:  # pragma: no cover - interface
        """See :meth:`lidframe.registry.AttackerLike.embed`."""
        raise NotImplementedError

    def score(self, trials: Sequence[Utterance], enrolment: Mapping[str, Sequence[Utterance]]) -> ScoreSet:
        """See :meth:`lidframe.registry.AttackerLike.score`."""
        raise NotImplementedError  # pragma: no cover - interface


class EmbeddingAttacker(Attacker):
    """An attacker that scores embeddings: by cosine similarity, or by a PLDA back end.

    Parameters
    ----------
    enrolment : {"mean_of_normalised", "mean"}
        How a speaker's enrolment embeddings become one profile (module docstring).
    backend : {"cosine", "plda"}
        How a trial embedding is scored against a profile (module docstring).
    plda_train : path, optional
        The PLDA back end's training set (needed by ``backend="plda"``, refused otherwise): a
        data dir (``wav.scp``, ``utt2spk``) the attacker embeds, or a ``.npz`` of labelled
        embeddings (:func:`lidframe.data.embedset.read_labelled_embeddings`).
    plda_dim : int, optional
        The PLDA back end's LDA dimension (None: the most its training set allows).
    score_norm : {"none", "snorm", "asnorm"}
        Cohort score normalisation (:mod:`lidframe.core.cohort`); ``"none"``: raw cosines.
    cohort : path, optional
        The cohort (needed by ``snorm`` and ``asnorm``): a Kaldi data dir of other speakers,
        embedded by this attacker, or an embedding-set ``.npz`` whose enrolled speakers are
        the cohort (:mod:`lidframe.attackers.cohort`).  A cohort speaker who is enrolled or a
        trial's speaker is refused.
    cohort_top_k : int, optional
        K of AS-norm (>= 2; default :data:`lidframe.core.cohort.DEFAULT_TOP_K`).
    wav_paths : {"cwd", "data-dir"}
        How a relative audio path in the ``wav.scp`` of a data-dir ``cohort`` or
        ``plda_train`` is resolved: against the current folder (Kaldi's rule, default) or
        the data dir (:func:`lidframe.data.kaldi.read_data_dir`); the run's convention for
        its other data dirs (``lidframe score --wav-paths`` passes it down).
    """

    @classmethod
    def input_files(cls, params: dict) -> list[Path]:
        """The files of its scoring options: the PLDA training set's and the cohort's (grid cache keys, provenance)."""
        from .plda_backend import plda_input_files

        return [*plda_input_files(params), *cohort_input_files(params, reads_audio=cls.reads_audio)]

    @range_checked("attacker")
    def __init__(
        self,
        *,
        enrolment: str = "mean_of_normalised",
        backend: str = "cosine",
        plda_train: StrPath | None = None,
        plda_dim: int | None = None,
        score_norm: str = "none",
        cohort: StrPath | None = None,
        cohort_top_k: int | None = None,
        wav_paths: WavPaths = "cwd",
    ):
        from .plda_backend import check_backend

        self.enrolment = enrolment
        self.backend = backend
        self.plda_train = plda_train
        self.plda_dim = plda_dim
        check_backend(self)
        self._plda: Any = None  # the PLDA back end, fitted on first use (plda_backend.fitted_plda)
        self._plda_utterances: list[Utterance] | None = None  # its training data dir's utterances
        self.score_norm = score_norm
        self.cohort = cohort
        self.cohort_top_k = cohort_top_k
        self._cohort_norm = check_score_norm(score_norm, cohort, cohort_top_k)
        self._cohort: Cohort | None = None  # read on first use; its profiles once embedded
        self.wav_paths = check_wav_paths(wav_paths)

    def enrol(self, enrolment: Mapping[str, Sequence[Utterance]]) -> tuple[np.ndarray, np.ndarray]:
        """Speaker profiles: ``(speaker ids (N,), profiles (N, d))``."""
        if self.enrolment not in ENROLMENT_AGGREGATIONS:
            raise InputError(f"enrolment must be one of {ENROLMENT_AGGREGATIONS}, got {self.enrolment!r}")
        if not isinstance(enrolment, Mapping) or not enrolment:
            raise InputError("enrolment must be a non-empty mapping {speaker id: [utterances]}")
        speakers = [str(s) for s in enrolment]
        empty = [s for s, utts in enrolment.items() if not list(utts)]
        if empty:
            raise InputError(f"enrolled speakers without utterances: {preview(empty)}")
        utterances = check_utterances([u for utts in enrolment.values() for u in utts], "enrolment")
        emb = np.asarray(self.embed(utterances), dtype=np.float64)
        if emb.ndim != 2 or emb.shape[0] != len(utterances):
            raise InputError(f"{type(self).__name__}.embed returned shape {emb.shape} for {len(utterances)} utterances")
        if self.enrolment == "mean_of_normalised":
            emb = unit_rows(emb, what="enrolment embeddings", ids=[u.utt_id for u in utterances])
        counts = np.array([len(list(utts)) for utts in enrolment.values()])
        owner = np.repeat(np.arange(len(speakers)), counts)
        profiles = np.zeros((len(speakers), emb.shape[1]))
        np.add.at(profiles, owner, emb)
        profiles /= counts[:, None]
        return np.array(speakers), profiles

    def compare(
        self,
        trial_emb: np.ndarray,
        profiles: np.ndarray,
        *,
        counts: np.ndarray | None = None,
        trial_ids: Sequence[str] | None = None,
        profile_ids: Sequence[str] | None = None,
    ) -> np.ndarray:
        """Scores of trial embeddings against profiles by the attacker's back end: the one place that scores.

        Parameters
        ----------
        trial_emb : ndarray, shape (T, d)
            One embedding per trial (as :meth:`embed` gives them; for the cohort, its speakers'
            profiles standing as trials).
        profiles : ndarray, shape (N, d)
            One profile per enrolled speaker (as :meth:`enrol` makes them; or the cohort's, against trials).
        counts : ndarray of int, shape (N,), optional
            The embeddings averaged into each profile (default 1 each: a profile that is one
            embedding).  The PLDA LLR depends on it; cosine does not.
        trial_ids, profile_ids : sequence of str, optional
            Row names for error messages (a zero vector is named by them).

        Returns
        -------
        ndarray, shape (T, N), float64
            Cosines (``"cosine"``) or PLDA LLRs in nats (``"plda"``).
        """
        if self.backend == "plda":
            from .plda_backend import plda_scores

            return plda_scores(self, trial_emb, profiles, counts=counts, trial_ids=trial_ids)
        return (
            unit_rows(trial_emb, what="trial embeddings", ids=trial_ids)
            @ unit_rows(profiles, what="speaker profiles", ids=profile_ids).T
        )

    def score(self, trials: Sequence[Utterance], enrolment: Mapping[str, Sequence[Utterance]]) -> ScoreSet:
        """Every trial embedding against every enrolled speaker's profile (:meth:`compare`), cohort-normalised if asked."""
        trials = check_utterances(trials, "trials")
        cohort = self._checked_cohort(trials, enrolment)
        speakers, profiles = self.enrol(enrolment)
        emb = np.asarray(self.embed(trials), dtype=np.float64)
        if emb.ndim != 2 or emb.shape[0] != len(trials):
            raise InputError(f"{type(self).__name__}.embed returned shape {emb.shape} for {len(trials)} trials")
        trial_ids = [u.utt_id for u in trials]
        check_nonzero_rows(emb, what="trial embeddings", ids=trial_ids)
        check_nonzero_rows(profiles, what="speaker profiles", ids=speakers)
        counts = np.array([len(list(utts)) for utts in enrolment.values()])
        if self.backend == "plda":
            from .plda_backend import check_training_speakers

            check_training_speakers(self, speakers)
        scores = self.compare(emb, profiles, counts=counts, trial_ids=trial_ids, profile_ids=list(speakers))
        if cohort is not None and self._cohort_norm is not None:
            self._cohort = cohort = embed_cohort(self, cohort, emb.shape[1])  # embedded once per attacker
            scores = normalise_with_cohort(
                self,
                cohort,
                self._cohort_norm,
                scores,
                emb,
                profiles,
                counts=counts,
                trial_ids=trial_ids,
                enrolled=speakers,
            )
        return ScoreSet(scores, speakers, [u.speaker for u in trials], trial_ids)

    def _checked_cohort(
        self, trials: Sequence[Utterance], enrolment: Mapping[str, Sequence[Utterance]]
    ) -> Cohort | None:
        """The cohort (read once), checked against these enrolled and trial speakers before anything is embedded."""
        self._cohort_norm = check_score_norm(self.score_norm, self.cohort, self.cohort_top_k)  # as set now
        if self._cohort_norm is None or self.cohort is None:
            return None
        if self._cohort is None:
            self._cohort = read_cohort(self.cohort, wav_paths=self.wav_paths)
        enrolled = [str(s) for s in enrolment] if isinstance(enrolment, Mapping) else []
        check_cohort(self._cohort, self._cohort_norm, enrolled, [u.speaker for u in trials])
        return self._cohort
