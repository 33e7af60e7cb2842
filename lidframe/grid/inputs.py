"""What a grid cell is computed from: its inputs, ``{key: [label, digest]}``, and their digest.

Every cell records the SHA-256 of each file it reads (score-set files; a data dir's
``wav.scp``, ``utt2spk`` and ``spk2utt``, and the audio they list when the attacker reads
audio -- for an ``ignorant`` cell those of the ``original_enrol`` dir it enrols; every
file a component spec names or declares, for a ``semi-informed`` cell the adapted
checkpoint its attacker scores with), the code (lidframe's version and
each component's distribution version) and the settings ``znorm_ddof``,
``[grid.bootstrap]``, ``[grid.longitudinal]``, ``[grid] legal`` and, where it sets
anything but the defaults, ``[grid.evaluate]``.  Only the keys and digests identify a
cell (:func:`inputs_digest`); the labels say in messages what changed.  The keys are
those every earlier lidframe wrote (the ``[grid.bootstrap]`` settings keep the key
``setting ci``), so no stored cell looks changed because of a renamed name.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lidframe.core.options import EvaluateOptions
from lidframe.data.digests import DigestCache
from lidframe.data.fileio import StrPath
from lidframe.grid.records import Inputs
from lidframe.grid.spec.reading import EVALUATE_KEYS

if TYPE_CHECKING:
    from lidframe.data.kaldi import WavPaths
    from lidframe.grid.spec.records import DataDirSource, GridSpec
    from lidframe.stats.bootstrap import Bootstrap

__all__ = [
    "Inputs",
    "InputDigests",
    "hash_parts",
    "inputs_digest",
    "settings_inputs",
    "bootstrap_key",
    "evaluate_key",
    "shown_path",
]


def hash_parts(*parts: Any) -> str:
    """32 hex digits of SHA-256 over the JSON of each part (keys sorted), NUL-separated."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(json.dumps(part, sort_keys=True, default=str).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:32]


def shown_path(path: StrPath) -> str:
    """*path* relative to the working directory when it lies below it, else absolute."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    return absolute if relative.startswith("..") else relative


def inputs_digest(inputs: Inputs) -> str:
    """One hash of a cell's inputs (their digests, not their labels)."""
    return hash_parts(sorted((key, value[1]) for key, value in inputs.items()))


def bootstrap_key(bootstrap: Bootstrap) -> dict[str, Any]:
    """The ``[grid.bootstrap]`` settings that identify a cell (its seed is the cell's own)."""
    return {k: v for k, v in bootstrap.to_dict().items() if k != "seed"}


def settings_inputs(spec: GridSpec, version: str) -> Inputs:
    """The settings and the lidframe code every cell of *spec* is computed with, as inputs."""
    bootstrap = None if spec.bootstrap is None else bootstrap_key(spec.bootstrap)
    inputs = {
        "setting znorm_ddof": ["[grid] znorm_ddof", json.dumps(spec.znorm_ddof)],
        "setting ci": ["[grid.bootstrap]", json.dumps(bootstrap, sort_keys=True)],  # the key of every store
        "setting longitudinal": ["[grid.longitudinal]", json.dumps(spec.longitudinal, sort_keys=True)],
        # always a key, on or off: a cell stored without the legal block (by a lidframe before it,
        # or with legal = false) is never reused where the spec asks for the block, nor the reverse
        "setting legal": ["[grid] legal", json.dumps(spec.legal)],
        "lidframe code": ["lidframe code", f"lidframe {version}"],
    }
    evaluate = evaluate_key(spec.evaluate)
    if evaluate != evaluate_key(EvaluateOptions()):  # the defaults: the key every earlier store has
        inputs["setting evaluate"] = ["[grid.evaluate]", json.dumps(evaluate, sort_keys=True)]
    return inputs


def evaluate_key(options: EvaluateOptions) -> dict[str, Any]:
    """The settings of ``[grid.evaluate]`` in *options*, as a cell's key holds them (:data:`~lidframe.grid.spec.reading.EVALUATE_KEYS`)."""
    values = options.to_dict()
    return {key: values[key] for key in EVALUATE_KEYS}


class InputDigests:
    """The inputs of sources and components, each computed once per plan.

    Parameters
    ----------
    digests : DigestCache
        Where file digests are looked up and remembered.
    """

    def __init__(self, digests: DigestCache):
        self.digests = digests
        self._folders: dict[tuple[str, bool, str], Inputs] = {}
        self._components: dict[tuple[str, str], tuple[Inputs, bool]] = {}

    def source(
        self, split: str, source: str | DataDirSource, *, reads_audio: bool, enrol_role: str = "enrol"
    ) -> Inputs:
        """Inputs of one split: a score-set file, or data dirs (their lists, and audio if read).

        Parameters
        ----------
        split : {"dev", "eval"}
        source : str or DataDirSource
            A score-set file, or the enrolment and trial dirs that are scored.
        reads_audio : bool
            Whether the attacker opens the audio the lists name (then it is an input too).
        enrol_role : str
            What the enrolment dir is, in the input keys: ``"enrol"``, or
            ``"original_enrol"`` when the ``ignorant`` scenario enrols the original speech.
        """
        if isinstance(source, str):
            return {f"{split} file": [f"{split} file {shown_path(source)}", self.digests.digest(source)]}
        from lidframe.grid.spec.records import source_wav_paths

        inputs: Inputs = {}
        wav_paths = source_wav_paths(source)
        for role, folder in [(enrol_role, source["enrol"])] + [("trials", f) for f in source["trials"]]:
            for key, value in self._folder(folder, reads_audio, wav_paths).items():
                inputs[f"{split} {role} {key}"] = [f"{split} {value[0]}", value[1]]
        return inputs

    def _folder(self, folder: str, reads_audio: bool, wav_paths: WavPaths) -> Inputs:
        # the audio is keyed by the digests of the files read, wherever wav_paths finds them: not by wav_paths
        cached = self._folders.get((folder, reads_audio, wav_paths))
        if cached is not None:
            return cached
        from lidframe.data.kaldi import read_data_dir

        base = Path(folder)
        inputs: Inputs = {}
        for name in ("wav.scp", "utt2spk"):
            inputs[f"{folder} {name}"] = [f"{shown_path(base / name)}", self.digests.digest(base / name)]
        if (base / "spk2utt").is_file():  # optional, but read_data_dir checks it against utt2spk
            inputs[f"{folder} spk2utt"] = [f"{shown_path(base / 'spk2utt')}", self.digests.digest(base / "spk2utt")]
        if reads_audio:  # a listed file that is missing counts as "missing": its arrival changes the digest
            listing = [
                (u.utt_id, self.digests.digest(u.path) if u.path and os.path.isfile(u.path) else "missing")
                for u in read_data_dir(base, wav_paths=wav_paths)
            ]
            inputs[f"{folder} audio"] = [f"audio listed in {shown_path(base / 'wav.scp')}", hash_parts(listing)]
        self._folders[(folder, reads_audio, wav_paths)] = inputs
        return inputs

    def component(self, kind: str, spec: str) -> tuple[Inputs, bool]:
        """Inputs of a component spec (its files and code version), and whether it reads audio."""
        key = (kind, spec)
        if key not in self._components:
            from lidframe.registry import spec_inputs

            found = spec_inputs(kind, spec)
            inputs: Inputs = {f"{kind} code": [f"{kind} {spec!r} code", found.version]}
            for path in found.files:
                inputs[f"{kind} file {path}"] = [f"{kind} file {shown_path(path)}", self.digests.digest(path)]
            self._components[key] = (inputs, found.reads_audio)
        return self._components[key]
