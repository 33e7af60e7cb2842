"""Neural speaker encoders as attackers: audio -> filterbanks -> embeddings, batched and cached.

:class:`NeuralAttacker` is the shared machinery of :class:`~lidframe.attackers.EcapaTdnn`
and :class:`~lidframe.attackers.XVector`:

* **checkpoints** load with ``torch.load(path, map_location=..., weights_only=True)``
  (no pickled code is ever run) into ``load_state_dict(strict=True)``; a mismatch names
  the missing and unexpected keys;
* **batching**: utterances are sorted by length and cut into batches of at most
  ``batch_size`` utterances and ``max_batch_frames`` padded frames; with
  ``padding="exact"`` every convolution reflects each utterance at its own end and
  every pooling masks its padding, so an utterance's embedding does not depend on what
  it is batched with (cosine to the single-utterance embedding >= 0.9999999 on the
  SpeechBrain fixture);
* **device**: ``"auto"`` takes CUDA when available; ``precision="bf16"`` runs the model
  under CUDA/CPU autocast; everything under ``torch.inference_mode``; a tqdm progress
  bar with ``progress=True``;
* **cache**: with ``cache_dir``, each embedding is stored as ``<key>.npz`` where the key
  hashes the audio samples, the model weights, the front-end/model configuration, and
  the code that computes it (this folder's source, a subclass's own module, torch's
  version);
  a hit skips the model.  A corrupt entry is a miss (recomputed, replaced atomically), a
  folder that cannot be written is used read-only, and either is reported by one
  :class:`~lidframe.attackers.cache.CacheWarning` per ``embed``/``enrol``/``score`` call;
  a cache folder that is a file is refused (:mod:`lidframe.attackers.cache`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, cast

import numpy as np

from lidframe.core.engine import resolve_device as resolve_engine_device
from lidframe.data.fileio import StrPath, file_sha256
from lidframe.data.scoreset import ScoreSet
from lidframe.data.torchfile import load_weights_only
from lidframe.data.utterance import Utterance, check_utterances
from lidframe.errors import InputError
from lidframe.registry.capabilities import range_checked
from lidframe.registry.ranges import Range

from ._torch import torch
from .base import SCORING_RANGES, SEED, EmbeddingAttacker
from .cache import CacheWarning, EmbeddingCache
from .frontend import SAMPLE_RATE, Fbank, probe_audio, read_audio, sentence_mean_norm
from .layers import PADDING_MODES, Lengths
from .loudness import check_loudness_length, normalise_loudness

__all__ = [
    "CacheWarning",
    "NeuralAttacker",
    "attackers_code_digest",
    "load_checkpoint",
    "load_weights_file",
    "resolve_device",
]


def resolve_device(device: str | torch.device) -> torch.device:
    """The ``torch.device`` of *device*, resolved by :func:`lidframe.core.engine.resolve_device`.

    ``"auto"`` is CUDA if available, else the CPU; an explicit CUDA (or MPS) device that
    this machine does not have is an :class:`~lidframe.errors.InputError`, not a run on
    the CPU.  A ``torch.device`` is taken by its name.
    """
    return torch.device(resolve_engine_device(str(device) if isinstance(device, torch.device) else device))


def load_weights_file(path: StrPath, *, what: str = "checkpoint", map_location: Any = "cpu") -> Any:
    """``torch.load(path, weights_only=True)``, each failure one :class:`InputError` line naming *path*.

    Weights-only loading unpickles tensors, containers and plain values only: a file that
    pickles anything else (a whole ``nn.Module``, numpy arrays, a callable such as
    ``os.system``) is refused before any of it runs.  The one reader of torch files,
    :func:`lidframe.data.torchfile.load_weights_only`, with a checkpoint's words.

    Parameters
    ----------
    path : str or os.PathLike
        A ``torch.save`` file.
    what : str
        What the file is, for the messages ("checkpoint", "training state").
    map_location
        Passed to :func:`torch.load`.

    Raises
    ------
    InputError
        Missing, a folder, a FIFO or a device (never waited on or read: the one opener,
        :func:`~lidframe.data.fileio.open_input`), empty, not a torch file, corrupt, or not
        weights-only.
    """
    return load_weights_only(
        path,
        what=what,
        saved_as="torch.save(model.state_dict())",
        advice="save model.state_dict()",
        map_location=map_location,
    )


def attackers_code_digest() -> str:
    """SHA-256 of what trains and runs lidframe's encoders besides their weights: this folder's source files and torch's version.

    Part of every embedding cache key (:meth:`NeuralAttacker._cache_key`) and of the
    demo's checkpoint keys (:mod:`lidframe.demo.voice`).
    """
    from lidframe._version import tree_digest

    digest = hashlib.sha256(tree_digest([Path(__file__).parent]).encode())
    digest.update(torch.__version__.encode())
    return digest.hexdigest()


def load_checkpoint(
    model: torch.nn.Module, path: StrPath, *, label: str = "model", state: Mapping[str, Any] | None = None
) -> str:
    """Load a SpeechBrain-style state dict into *model* (strict); return the file's SHA-256.

    *state*: the state dict already read from *path* by a reader of another file layout
    (:func:`lidframe.attackers.ge2e_model.load_ge2e_state`); by default the file is read
    with :func:`load_weights_file` and must hold a plain state dict.

    Raises
    ------
    InputError
        The file is missing, a folder, empty, not a weights-only torch file
        (:func:`load_weights_file`), not a state dict of tensors, or its keys or shapes do
        not match the model (the message lists missing and unexpected keys).
    """
    path = Path(path)
    if state is None:
        state = load_weights_file(path, what="checkpoint")
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise InputError(f"{path}: expected a state dict of tensors (torch.save(model.state_dict()))")
    expected = set(model.state_dict())
    missing = sorted(expected - set(state))
    unexpected = sorted(set(state) - expected)
    if missing or unexpected:
        raise InputError(
            f"{path}: checkpoint does not fit the {label} configuration: "
            f"missing keys {missing[:5]}{' ...' if len(missing) > 5 else ''} ({len(missing)}), "
            f"unexpected keys {unexpected[:5]}{' ...' if len(unexpected) > 5 else ''} ({len(unexpected)})"
        )
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise InputError(
            f"{path}: checkpoint shapes do not fit the {label} configuration ({str(exc).splitlines()[-1].strip()})"
        ) from None
    return file_sha256(path)


class NeuralAttacker(EmbeddingAttacker):
    """Base of the torch speaker-encoder attackers (see the module docstring).

    Subclasses implement :meth:`build_model` and :meth:`model_config`.

    Parameters
    ----------
    checkpoint : path, optional
        SpeechBrain ``embedding_model.ckpt``-style state dict.  Without one the model
        keeps a seeded random initialisation (tests and benchmarks only).
    device : str
        ``"auto"``, ``"cpu"``, ``"cuda"``, ``"cuda:1"``, ...
    precision : {"fp32", "bf16"}
    batch_size : int, optional
        Utterances per batch at most (>= 1); default 32 on CUDA and 1 on CPU, where batching
        does not pay (``bench/embed_cpu.py``: batches of 16 ran at 0.6x the speed of
        single utterances on 2 cores, padding and the per-utterance reflection cost more
        than the larger matrix products gain).
    max_batch_frames : int
        Padded frames (batch x longest) per batch at most (>= 1; an utterance longer than
        that is a batch of its own).
    padding : {"exact", "speechbrain"}
        See :mod:`lidframe.attackers.layers`.
    cache_dir : path, optional
        Embedding cache folder (created when missing).  Corrupt entries are recomputed
        and replaced; a folder that cannot be written is used read-only (hits are read,
        new embeddings are not stored); both give one :class:`CacheWarning` per call;
        a folder that is a file raises :class:`~lidframe.errors.InputError`
        (:mod:`lidframe.attackers.cache`).
    progress : bool
        Show a tqdm progress bar.
    seed : int
        Seed of the random initialisation when there is no checkpoint, in [0, 2**64 - 1].
    enrolment : {"mean_of_normalised", "mean"}
    **scoring
        The scoring options of :class:`~lidframe.attackers.EmbeddingAttacker`
        (:data:`~lidframe.attackers.base.SCORING_OPTIONS`: ``score_norm``, ``cohort``, ``cohort_top_k``).
    compile : bool
        Run the model through ``torch.compile`` (dynamic shapes) on CUDA; the first
        batches pay the compilation (tens of seconds), large runs gain.  Ignored on CPU.
    loudness : float, optional
        Integrated loudness (LUFS, in [-70, 0]) every waveform is scaled to before it is
        embedded or trained on, as the VoicePrivacy toolkit does (``loudness=-30``;
        :mod:`lidframe.attackers.loudness`, needs pyloudnorm).  None (the default): the
        audio is read as it is.  Audio shorter than 0.4 s or silent is then refused.
    **scoring
        ``backend``, ``plda_train``, ``plda_dim``: how trials are scored (see
        :class:`~lidframe.attackers.EmbeddingAttacker`).
    """

    #: Range of the random chunk length (seconds) that training cuts from each utterance.
    training_chunk_seconds: tuple[float, float] = (2.0, 3.0)
    option_ranges: ClassVar[Mapping[str, Range]] = {
        **SCORING_RANGES,
        "batch_size": Range(1, integer=True, none=True),
        "max_batch_frames": Range(1, integer=True),
        "seed": SEED,
        "loudness": Range(-70, 0, none=True),  # LUFS: below the -70 LUFS gate nothing is loud enough to measure
    }

    @classmethod
    def input_files(cls, params: dict) -> list[Path]:
        """The checkpoint, when one is given, and its scoring options' files: files it reads, which must exist (grid validation, cache keys)."""
        checkpoint = params.get("checkpoint")
        return [*([Path(checkpoint)] if checkpoint else []), *super().input_files(params)]

    @range_checked("attacker")
    def __init__(
        self,
        *,
        checkpoint: StrPath | None = None,
        device: str = "auto",
        precision: str = "fp32",
        batch_size: int | None = None,
        max_batch_frames: int = 64_000,
        padding: str = "exact",
        cache_dir: StrPath | None = None,
        progress: bool = False,
        seed: int = 0,
        enrolment: str = "mean_of_normalised",
        compile: bool = False,
        loudness: float | None = None,
        **scoring: Any,
    ):
        super().__init__(enrolment=enrolment, **scoring)
        self.loudness = loudness
        self.checkpoint = checkpoint
        self.device = device
        self.precision = precision
        self.batch_size = batch_size
        self.max_batch_frames = max_batch_frames
        self.padding = padding
        self.cache_dir = cache_dir
        self.progress = progress
        self.seed = seed
        self.compile = compile
        self._model: torch.nn.Module | None = None
        self._forward: Any = None  # the model, or its torch.compile wrapper
        self._fbank: Any = None
        self._weights_hash: Any = None  # str once the model is built
        self.model_calls = 0  # number of batches run through the model (for cache tests)
        self._cache: EmbeddingCache | None = None  # the cache of the outermost embed/enrol/score call
        self._embedding_dim: int | None = None
        self._code: str | None = None  # _code_digest(), computed once

    # -- to implement -------------------------------------------------------------
    def build_model(self) -> torch.nn.Module:  # pragma: no cover - interface
        raise NotImplementedError

    def model_config(self) -> dict:  # pragma: no cover - interface
        raise NotImplementedError

    # -- hooks with the filterbank encoders' defaults ------------------------------
    def build_frontend(self) -> torch.nn.Module:
        """The feature extractor of waveforms (B, samples): 80 log-mel filterbanks (:class:`Fbank`)."""
        return Fbank()

    def frontend_config(self) -> str:
        """What the front end computes, for the embedding cache's keys."""
        return "fbank80-sentence-mean-fp32"

    def default_weights(self) -> Path | None:
        """The weights file used when no ``checkpoint`` is given; None: a seeded random initialisation."""
        return None

    def load_weights(self, model: torch.nn.Module, path: StrPath) -> str:
        """Load the weights file *path* into *model* (strict); return its SHA-256 (:func:`load_checkpoint`)."""
        return load_checkpoint(model, path, label=type(self).__name__)

    def prepare_audio(self, waveform: np.ndarray) -> np.ndarray:
        """A 16 kHz waveform as this encoder reads it (embedding and training); unchanged by default."""
        return waveform

    def read_waveform(self, path: StrPath) -> np.ndarray:
        """The audio file *path* as this attacker embeds and trains on it: 16 kHz mono, at ``loudness`` LUFS where set,
        then :meth:`prepare_audio`, shape (samples,)."""
        waveform = read_audio(path, sample_rate=SAMPLE_RATE)
        if self.loudness is not None:
            waveform = normalise_loudness(
                waveform, sample_rate=SAMPLE_RATE, target_lufs=float(self.loudness), source=path
            )
        return self.prepare_audio(waveform)

    def chunk_features(self, frontend: torch.nn.Module, chunks: list[np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
        """Training features of waveform chunks: padded, sentence-normalised filterbanks (B, T, 80) and frames (B,)."""
        feats = [frontend(torch.from_numpy(np.ascontiguousarray(c))[None])[0] for c in chunks]
        frames = torch.tensor([f.shape[0] for f in feats])
        padded = torch.zeros(len(feats), int(frames.max()), feats[0].shape[1])
        for j, f in enumerate(feats):
            padded[j, : f.shape[0]] = f
        return sentence_mean_norm(padded, frames), frames

    def encode(self, model: torch.nn.Module, feats: torch.Tensor, frames: torch.Tensor) -> torch.Tensor:
        """Training forward pass: embeddings (B, d) of features (B, T, C) with *frames* valid frames each."""
        lengths = Lengths(frames, frames.to(torch.float32) / feats.shape[1])
        return model(feats, lengths)[:, 0]

    # -- model --------------------------------------------------------------------
    def _check_options(self):
        if self.precision not in ("fp32", "bf16"):
            raise InputError(f"precision must be 'fp32' or 'bf16', got {self.precision!r}")
        if self.padding not in PADDING_MODES:
            raise InputError(f"padding must be one of {PADDING_MODES}, got {self.padding!r}")
        if self.batch_size is not None and not (isinstance(self.batch_size, int) and self.batch_size >= 1):
            raise InputError(f"batch_size must be a positive integer, got {self.batch_size!r}")

    @property
    def model(self) -> torch.nn.Module:
        """The encoder (built, loaded and moved to the device on first use)."""
        if self._model is None:
            self._check_options()
            device = resolve_device(self.device)  # before the model is built or its checkpoint read
            torch.manual_seed(self.seed)
            weights = self.checkpoint if self.checkpoint is not None else self.default_weights()
            model = self.build_model()
            if weights is not None:
                self._weights_hash = self.load_weights(model, weights)
            else:
                digest = hashlib.sha256()
                for name, tensor in model.state_dict().items():
                    digest.update(name.encode())
                    digest.update(tensor.detach().cpu().numpy().tobytes())
                self._weights_hash = digest.hexdigest()
            self._model = model.to(device).eval()
            self._fbank = self.build_frontend().to(device)
            self._forward = self._model
            if self.compile and device.type == "cuda":
                self._forward = torch.compile(self._model, dynamic=True)
        return self._model

    @property
    def weights_sha256(self) -> str | None:
        """SHA-256 of the weights the model scores with; None until the model is built (its first embedding).

        That of the weights file (``checkpoint``, or :meth:`default_weights`), or, without
        one, of the seeded initialisation's tensors (each name and its bytes, in order);
        recorded in the provenance of a score file (:mod:`lidframe.data.provenance`).
        """
        return self._weights_hash

    def _cache_key(self, audio: np.ndarray) -> str:
        config = json.dumps(
            {
                "model": self.model_config(),
                "class": type(self).__name__,
                "frontend": self.frontend_config(),
                "padding": self.padding,
                "precision": self.precision,
            },
            sort_keys=True,
        )
        digest = hashlib.sha256(audio.tobytes())
        digest.update(self._weights_hash.encode())
        digest.update(config.encode())
        digest.update(self._code_digest().encode())
        return digest.hexdigest()

    def _code_digest(self) -> str:
        """What computes an embedding besides the weights: the attackers' source, the class's own module, torch's version.

        Part of every cache key, so that an edited front end or network (lidframe's, or a
        plugin subclass's module) never reads embeddings the old code made, even where the
        weights file is the same (a pretrained one).
        """
        if self._code is None:
            import inspect

            digest = hashlib.sha256(attackers_code_digest().encode())
            source = inspect.getsourcefile(type(self))
            if source is not None and Path(source).parent != Path(__file__).parent:
                digest.update(Path(source).read_bytes())
            self._code = digest.hexdigest()
        return self._code

    # -- embedding ----------------------------------------------------------------
    def embed_audio(self, waveforms: list[np.ndarray]) -> np.ndarray:
        """Embeddings (n, d) float32 of 16 kHz mono float32 waveforms, batched by length."""
        model = self.model
        device = next(model.parameters()).device
        batch_size = self.batch_size or (32 if device.type == "cuda" else 1)
        n_frames = [self._fbank.num_frames(w.shape[0]) for w in waveforms]
        order = np.argsort(n_frames, kind="stable")[::-1]
        out: list = [None] * len(waveforms)
        batches: list[list[int]] = []
        current: list[int] = []
        for index in order:
            longest = n_frames[current[0]] if current else n_frames[index]
            if current and (len(current) >= batch_size or longest * (len(current) + 1) > self.max_batch_frames):
                batches.append(current)
                current = []
            current.append(index)
        if current:
            batches.append(current)
        iterator = batches
        if self.progress:
            from tqdm import tqdm

            iterator = tqdm(batches, desc=f"{type(self).__name__} embeddings", unit="batch")
        autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16, enabled=self.precision == "bf16")
        with torch.inference_mode():
            for batch in iterator:
                # filterbanks in float32 (autocast would run the mel matmul in bf16)
                feats, frames = self._features([waveforms[i] for i in batch], device)
                lengths = Lengths(frames, frames.to(torch.float32) / feats.shape[1], self.padding)
                with autocast:
                    emb = self._forward(feats, lengths)[:, 0].float().cpu().numpy()
                self.model_calls += 1
                for row, index in enumerate(batch):
                    out[index] = emb[row]
        return np.stack(out)

    def _features(self, waveforms, device):
        """Padded, sentence-normalised filterbanks (B, T, 80) and valid frames (B,)."""
        if device.type == "cuda":
            return self._features_on_device(waveforms, device)
        feats = [self._fbank(torch.from_numpy(w)[None])[0] for w in waveforms]
        frames = torch.tensor([f.shape[0] for f in feats], dtype=torch.long)
        padded = torch.zeros(len(feats), int(frames.max()), feats[0].shape[1])
        for i, f in enumerate(feats):
            padded[i, : f.shape[0]] = f
        return sentence_mean_norm(padded, frames).to(device), frames.to(device)

    def _features_on_device(self, waveforms, device):
        """:meth:`_features` for accelerators: one pinned, zero-padded waveform batch copied
        asynchronously, filterbanks of the whole batch on the device.

        Zero padding changes no valid frame: frames are centred with zero (constant)
        padding, so the frames of a short waveform see zeros past its end either way.
        """
        lengths = [w.shape[0] for w in waveforms]
        batch = torch.zeros(len(waveforms), max(lengths), dtype=torch.float32, pin_memory=device.type == "cuda")
        for i, w in enumerate(waveforms):
            batch[i, : lengths[i]] = torch.from_numpy(w)
        frames = torch.tensor([self._fbank.num_frames(n) for n in lengths], dtype=torch.long)
        feats = self._fbank(batch.to(device, non_blocking=True))[:, : int(frames.max())]
        frames = frames.to(device, non_blocking=True)
        return sentence_mean_norm(feats, frames), frames

    def embedding_dim(self) -> int:
        """Length of this encoder's embeddings (what a cache entry must hold).

        ``lin_neurons`` of :meth:`model_config` when it has one (ECAPA-TDNN, x-vector);
        otherwise measured once by embedding one second of silence.
        """
        if self._embedding_dim is None:
            configured = self.model_config().get("lin_neurons")
            if configured is not None:
                self._embedding_dim = int(configured)
            else:
                self._embedding_dim = int(self.embed_audio([np.zeros(SAMPLE_RATE, np.float32)]).shape[1])
        return self._embedding_dim

    @contextlib.contextmanager
    def _cache_run(self) -> Iterator[EmbeddingCache | None]:
        """The embedding cache of this call (None without ``cache_dir``), shared by nested calls.

        The outermost ``embed``/``enrol``/``score`` call opens it (refusing a cache folder
        that is a file before any work) and, when it returns normally, turns the cache's
        report into one :class:`CacheWarning`.
        """
        if self._cache is not None or self.cache_dir is None:
            yield self._cache
            return
        cache = EmbeddingCache(self.cache_dir)
        self._cache = cache
        try:
            yield cache
        finally:
            self._cache = None
        message = cache.report()
        if message is not None:
            warnings.warn(message, CacheWarning, stacklevel=4)

    def embed(self, utterances: Sequence[Utterance]) -> np.ndarray:
        """Embeddings (n, d) of utterances with audio ``path``s (cached when ``cache_dir`` is set)."""
        utterances = check_utterances(utterances, "utterances")
        missing = [u.utt_id for u in utterances if u.path is None]
        if missing:
            raise InputError(f"{type(self).__name__} needs audio: utterance {missing[0]!r} has no path")
        with self._cache_run() as cache:
            self.model  # noqa: B018 - builds the model (and its weights hash for cache keys)
            # no None path: checked above
            audio = [self.read_waveform(cast(str, u.path)) for u in utterances]
            result: list = [None] * len(audio)
            todo = list(range(len(audio)))
            keys: list[str] = []
            if cache is not None:
                dim = self.embedding_dim()
                keys = [self._cache_key(a) for a in audio]
                todo = []
                for i, key in enumerate(keys):
                    result[i] = cache.get(key, dim)
                    if result[i] is None:
                        todo.append(i)
            if todo:
                fresh = self.embed_audio([audio[i] for i in todo])
                for row, i in enumerate(todo):
                    result[i] = fresh[row]
                    if cache is not None:
                        cache.put(keys[i], fresh[row])
        return np.stack(result).astype(np.float64)

    def enrol(self, enrolment: Mapping[str, Sequence[Utterance]]) -> tuple[np.ndarray, np.ndarray]:
        """Speaker profiles (see :meth:`EmbeddingAttacker.enrol`); one cache report for the whole call."""
        with self._cache_run():
            return super().enrol(enrolment)

    def score(self, trials: Sequence[Utterance], enrolment: Mapping[str, Sequence[Utterance]]) -> ScoreSet:
        """Every trial against every enrolled speaker (see :meth:`EmbeddingAttacker.score`); one cache report.

        Every audio file, enrolment, trials and a data-dir cohort's, is checked from its header
        (:func:`~lidframe.attackers.frontend.probe_audio`) before anything is embedded, so a
        bad trial file is refused in seconds, not after the enrolment has been embedded.
        """
        with self._cache_run():
            trials = check_utterances(trials, "trials")
            enrolled = [u for utts in enrolment.values() for u in utts] if isinstance(enrolment, Mapping) else []
            cohort = self._checked_cohort(trials, enrolment)
            cohort_utts: list[Utterance] = []
            if cohort is not None and cohort.profiles is None and cohort.utterances is not None:  # not yet embedded
                cohort_utts = [u for utts in cohort.utterances.values() for u in utts]
            for utterance in [*enrolled, *trials, *cohort_utts]:
                if isinstance(utterance, Utterance) and utterance.path is not None:
                    frames, rate = probe_audio(utterance.path, sample_rate=SAMPLE_RATE)
                    if self.loudness is not None:  # too short to measure: refused before any work
                        check_loudness_length(utterance.path, frames, rate)
            return super().score(trials, enrolment)
