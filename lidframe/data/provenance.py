"""Provenance of a score file: which attacker scored which bytes, with which code, when.

``lidframe score`` (and the real-voice demo) store it in the score-set ``.npz`` they write,
as one JSON document in the member ``provenance`` (a 0-d array of UTF-8 bytes:
``json.loads(numpy.load(path)["provenance"].item())``; no pickle).  Its fields:

``format``, ``version``
    ``"lidframe score provenance"`` and ``1``.
``lidframe_version``, ``created``, ``command``, ``working_folder``
    The lidframe that scored, the time (ISO 8601, UTC), the command line and the folder
    it ran in (what its relative paths are relative to).
``attacker``
    ``name``, ``spec`` (``--attacker``), ``settings`` (the flags' included), ``code``
    (the version of the code behind its name), ``reads_audio``, ``files`` (each file its
    settings name or it declares -- a checkpoint, an embedding file, GE2E's default
    weights -- with its SHA-256 and size) and ``weights_sha256`` (of the weights its model
    was loaded with: the file's, or the seeded initialisation's tensors'; null without a model).
``data_dirs``
    Per data dir (``role`` enrol, trials or plda_train, absolute ``path``, utterance and speaker
    counts): the SHA-256 of each Kaldi table in it (:data:`DATA_DIR_TABLES`) and, where the
    attacker reads audio, ``audio``: each listed file's SHA-256 by utterance in ``wav.scp``
    order, and ``sha256`` over them all (:func:`audio_sha256`); null where it reads none.
``scenario``
    The threat-model rung (``--scenario``: ``name``, ``code``, ``stated``), or null.
``software``
    (software, version) pairs: lidframe, its source digest and git commit, Python, packages.
``fused_from`` (only in a fused set's, ``lidframe fuse``)
    The score files it was fused from (:class:`FusedInput`): each ``file`` (role ``dev 1``,
    ``eval 1``, ..., absolute path, SHA-256, size) and the ``provenance`` it holds (this
    document, nested; null where it holds none).  The attacker is then ``fusion``, its
    settings the fitted weights, and ``data_dirs`` is empty (the inputs' are in theirs).
    A document without the key (every other) has none.

The member is not part of the scores: :meth:`ScoreSet.load <lidframe.data.scoreset.ScoreSet.load>`
reads the same set with or without it, and a score file without it (written by an
earlier lidframe, or a ``.csv``) still loads: :func:`read_provenance` gives None, and a
report says :data:`NO_PROVENANCE`.  A damaged one -- not JSON, a field missing or of the
wrong kind, an audio digest that does not match its files' -- is one
:class:`~lidframe.errors.InputError` line naming the file and the field.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from lidframe._version import __version__
from lidframe.data.documents import parse_json
from lidframe.data.fileio import StrPath, check_input_file
from lidframe.data.npzfile import npz_headers, read_npz
from lidframe.data.provenance_parts import (
    DATA_DIR_TABLES,
    AttackerRecord,
    AudioDigests,
    DataDirRecord,
    Fields,
    FileDigest,
    audio_sha256,
)
from lidframe.data.scenario import SCENARIOS
from lidframe.errors import InputError, format_bytes, quote

__all__ = [
    "PROVENANCE_KEY",
    "FORMAT",
    "FORMAT_VERSION",
    "MAX_PROVENANCE_BYTES",
    "NO_PROVENANCE",
    "DATA_DIR_TABLES",
    "FileDigest",
    "AudioDigests",
    "DataDirRecord",
    "AttackerRecord",
    "ScoreProvenance",
    "FusedInput",
    "ScoreFile",
    "audio_sha256",
    "provenance_member",
    "read_provenance",
]

#: The member of a score-set ``.npz`` that holds its provenance.
PROVENANCE_KEY = "provenance"
#: The document's ``format`` and ``version``.
FORMAT = "lidframe score provenance"
FORMAT_VERSION = 1
#: The largest provenance read (bytes of JSON): about two million utterances' audio digests.
MAX_PROVENANCE_BYTES = 256 << 20
#: What a report says of a score file that holds no provenance.
NO_PROVENANCE = "no provenance recorded: scored outside lidframe score or before 0.3.0"


def _scenario_dict(value: Any, fields: Fields) -> dict[str, str] | None:
    """The ``scenario`` field: None, or a rung of :data:`~lidframe.data.scenario.SCENARIOS` with its code."""
    if value is None:
        return None
    record = fields.mapping(value, "scenario")
    name = fields.text(record, "name", "scenario")
    if name not in SCENARIOS:
        raise fields.fail("scenario.name", name, f"one of {', '.join(SCENARIOS)}")
    code = fields.text(record, "code", "scenario")
    if code != SCENARIOS[name].code:
        raise fields.fail("scenario.code", code, f"{SCENARIOS[name].code!r}, the code of {name}")
    return {"name": name, "code": code, "stated": fields.text(record, "stated", "scenario")}


@attrs.frozen
class ScoreProvenance:
    """Where a score file's numbers come from (module docstring): the attacker, the data, the code, the time.

    Attributes
    ----------
    lidframe_version, created : str
    command, working_folder : str or None
    attacker : AttackerRecord
    data_dirs : tuple of DataDirRecord
        The enrolment dir, then each trial dir.
    scenario : dict or None
        ``{"name", "code", "stated"}`` of the rung (``--scenario``).
    software : tuple of (str, str)
    fused_from : tuple of FusedInput
        The score files a fused set was made of (empty for any other).
    """

    lidframe_version: str
    created: str
    command: str | None
    working_folder: str | None
    attacker: AttackerRecord
    data_dirs: tuple[DataDirRecord, ...]
    scenario: dict[str, str] | None
    software: tuple[tuple[str, str], ...]
    fused_from: tuple[FusedInput, ...] = ()

    @classmethod
    def make(
        cls,
        attacker: AttackerRecord,
        data_dirs: Sequence[DataDirRecord],
        *,
        command: str | None,
        software: Iterable[tuple[str, str]] = (),
        scenario: Mapping[str, str] | None = None,
        created: _dt.datetime | None = None,
        fused_from: Sequence[FusedInput] = (),
    ) -> ScoreProvenance:
        """The provenance of a run scoring now (*created*: default now), by this lidframe in this folder."""
        moment = (created or _dt.datetime.now(_dt.UTC)).astimezone(_dt.UTC)
        try:
            folder: str | None = os.getcwd()
        except OSError:  # the folder was removed under the process
            folder = None
        return cls(
            lidframe_version=__version__,
            created=moment.isoformat(timespec="seconds"),
            command=command,
            working_folder=folder,
            attacker=attacker,
            data_dirs=tuple(data_dirs),
            scenario=None if scenario is None else dict(scenario),
            software=tuple((str(k), str(v)) for k, v in software),
            fused_from=tuple(fused_from),
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (module docstring)."""
        document = {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "lidframe_version": self.lidframe_version,
            "created": self.created,
            "command": self.command,
            "working_folder": self.working_folder,
            "attacker": self.attacker.to_dict(),
            "data_dirs": [d.to_dict() for d in self.data_dirs],
            "scenario": self.scenario,
            "software": [list(pair) for pair in self.software],
        }
        if self.fused_from:
            document["fused_from"] = [item.to_dict() for item in self.fused_from]
        return document

    @classmethod
    def from_dict(cls, document: Any, where: StrPath) -> ScoreProvenance:
        """The provenance in the JSON *document* read from *where* (a score file), every field checked.

        Raises
        ------
        InputError
            One line naming *where* and the field: missing, of the wrong kind, or an audio
            digest that does not match its files'; or a format this lidframe does not read.
        """
        fields = Fields(str(where))
        record = fields.mapping(document, "the document")
        if record.get("format") != FORMAT:
            raise fields.fail("its format", record.get("format"), repr(FORMAT))
        if record.get("version") != FORMAT_VERSION:
            raise InputError(
                f"{where}: provenance version {quote(record.get('version'))} is not one this lidframe reads "
                f"({FORMAT_VERSION}); read it with the lidframe that wrote it, or upgrade"
            )
        return cls(
            lidframe_version=fields.text(record, "lidframe_version", "the document"),
            created=fields.text(record, "created", "the document"),
            command=fields.text(record, "command", "the document", none=True),
            working_folder=fields.text(record, "working_folder", "the document", none=True),
            attacker=AttackerRecord.from_dict(fields.get(record, "attacker", "the document"), fields, "attacker"),
            data_dirs=tuple(
                DataDirRecord.from_dict(d, fields, f"data_dirs[{k}]")
                for k, d in enumerate(fields.items(record, "data_dirs", "the document"))
            ),
            scenario=_scenario_dict(fields.get(record, "scenario", "the document"), fields),
            software=fields.pairs(record, "software", "the document"),
            fused_from=tuple(
                FusedInput.from_dict(item, fields, f"fused_from[{k}]")
                for k, item in enumerate(
                    fields.items(record, "fused_from", "the document") if "fused_from" in record else ()
                )
            ),
        )

    def to_json(self) -> bytes:
        """The document as compact UTF-8 JSON."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


@attrs.frozen
class FusedInput:
    """A score file a fused set was made of: the file, digested, and the provenance it holds.

    Attributes
    ----------
    file : FileDigest
        Role ``"dev 1"``, ``"eval 2"``, ...: the split and the input's place on the command line.
    provenance : ScoreProvenance or None
        What the file holds (None: it holds none, a ``.csv`` or a file from elsewhere).
    """

    file: FileDigest
    provenance: ScoreProvenance | None

    @classmethod
    def of(cls, role: str, path: StrPath) -> FusedInput:
        """Digest the score file at *path* now and read the provenance it holds (:func:`read_provenance`)."""
        return cls(FileDigest.of(role, path), read_provenance(path))

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file.to_dict(),
            "provenance": None if self.provenance is None else self.provenance.to_dict(),
        }

    @classmethod
    def from_dict(cls, value: Any, fields: Fields, at: str) -> FusedInput:
        record = fields.mapping(value, at)
        document = fields.get(record, "provenance", at)
        return cls(
            FileDigest.from_dict(fields.get(record, "file", at), fields, f"{at}.file"),
            None if document is None else ScoreProvenance.from_dict(document, f"{fields.where}: {at}.provenance"),
        )


def provenance_member(provenance: ScoreProvenance, *, where: StrPath = "score file") -> np.ndarray:
    """The ``provenance`` member of a score-set ``.npz``: a 0-d array of the document's UTF-8 bytes.

    A document over :data:`MAX_PROVENANCE_BYTES` leaves out the per-utterance audio
    digests (each data dir keeps its one digest over them all), with a warning.
    """
    text = provenance.to_json()
    if len(text) > MAX_PROVENANCE_BYTES:
        shorter = [
            d if d.audio is None else attrs.evolve(d, audio=attrs.evolve(d.audio, utterances=None))
            for d in provenance.data_dirs
        ]
        text = attrs.evolve(provenance, data_dirs=tuple(shorter)).to_json()
        warnings.warn(
            f"{where}: the provenance would take more than {format_bytes(MAX_PROVENANCE_BYTES)}; it keeps one audio "
            "digest per data dir, without each file's",
            stacklevel=2,
        )
    return np.array(text)


def read_provenance(path: StrPath) -> ScoreProvenance | None:
    """The provenance a score file holds; None where it holds none (a ``.csv``, or an ``.npz`` without the member).

    Only the member is read (every header of the archive is checked,
    :mod:`lidframe.data.npzfile`), its size capped at :data:`MAX_PROVENANCE_BYTES`.

    Raises
    ------
    InputError
        One line naming *path*: what :func:`~lidframe.data.npzfile.read_npz` refuses, a
        member that is not UTF-8 text, not JSON, or a damaged document
        (:meth:`ScoreProvenance.from_dict`).
    """
    target = Path(path)
    if target.suffix.lower() != ".npz":
        return None
    check_input_file(target, "a score-set file (.npz or .csv)")  # named as ScoreSet.load names it
    header = npz_headers(target).get(PROVENANCE_KEY)
    if header is None:
        return None
    member = f"{target}: member {PROVENANCE_KEY!r}"
    if header.dtype.kind not in "SU" or header.shape != ():
        raise InputError(f"{member} is {header.describe()}; expected the provenance as one text (a 0-d bytes array)")
    if header.data_bytes > MAX_PROVENANCE_BYTES * (4 if header.dtype.kind == "U" else 1):
        raise InputError(
            f"{member} takes {format_bytes(header.data_bytes)}, more than the {format_bytes(MAX_PROVENANCE_BYTES)} "
            "a provenance may"
        )
    text = read_npz(target, only=(PROVENANCE_KEY,))[PROVENANCE_KEY].item()
    document = parse_json(text, member, "lidframe score's provenance, a JSON object")
    return ScoreProvenance.from_dict(document, target)


@attrs.frozen
class ScoreFile:
    """A score file behind a report's numbers, with the provenance it holds (None: :data:`NO_PROVENANCE`).

    Attributes
    ----------
    role : str
        What it is to the report (``"dev"``, ``"eval"``, ``"ecapa/logistic dev"``).
    path : str
    provenance : ScoreProvenance or None
    """

    role: str
    path: str
    provenance: ScoreProvenance | None

    @classmethod
    def of(cls, role: str, path: StrPath) -> ScoreFile:
        """Read the provenance of the score file at *path* (:func:`read_provenance`)."""
        return cls(str(role), str(path), read_provenance(path))

    def to_dict(self) -> dict[str, Any]:
        """``{"path", "provenance"}``, the document; where the file holds none, null and a ``note`` (:data:`NO_PROVENANCE`)."""
        if self.provenance is None:
            return {"path": self.path, "provenance": None, "note": NO_PROVENANCE}
        return {"path": self.path, "provenance": self.provenance.to_dict()}
