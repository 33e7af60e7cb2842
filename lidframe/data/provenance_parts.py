"""The parts of a score file's provenance (:mod:`lidframe.data.provenance`): the files, data dirs and attacker behind it.

Each record is digested from the files now (``of``), written as JSON (``to_dict``) and
read back with every field checked (``from_dict``, through :class:`Fields`, whose every
fault is one :class:`~lidframe.errors.InputError` line naming the file and the field).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from lidframe.data.fileio import StrPath, file_sha256
from lidframe.data.utterance import Utterance
from lidframe.errors import InputError, quote

__all__ = [
    "DATA_DIR_TABLES",
    "Digest",
    "Fields",
    "FileDigest",
    "AudioDigests",
    "DataDirRecord",
    "AttackerRecord",
    "audio_sha256",
]

#: The Kaldi tables of a data dir whose digests the provenance records, where present (``wav.scp`` and
#: ``utt2spk`` always are).
DATA_DIR_TABLES = ("wav.scp", "utt2spk", "spk2utt", "spk2gender", "text", "segments", "utt2dur", "trials")

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
#: What a damaged provenance message ends with.
_FIX = "write the score file again with lidframe score"

Digest = Callable[[StrPath], str]


def audio_sha256(utterances: Iterable[tuple[str, str]]) -> str:
    """SHA-256 over the audio of a data dir: of the lines ``<file SHA-256>  <utterance id>``, in order.

    The text ``sha256sum`` prints, with each utterance's id in place of its file name, one
    line per ``wav.scp`` entry ending in a newline, as UTF-8.

    Parameters
    ----------
    utterances : iterable of (str, str)
        (utterance id, SHA-256 of its audio file), in ``wav.scp`` order.

    Examples
    --------
    >>> audio_sha256([("u1", "0" * 64)]) == hashlib.sha256(("0" * 64 + "  u1\\n").encode()).hexdigest()
    True
    """
    digest = hashlib.sha256()
    for utt_id, sha256 in utterances:
        digest.update(f"{sha256}  {utt_id}\n".encode())
    return digest.hexdigest()


class Fields:
    """Reads the fields of a provenance document, each fault one line naming the file (*where*) and the field."""

    def __init__(self, where: str):
        self.where = where

    def fail(self, at: str, found: Any, expected: str) -> InputError:
        shown = quote(found) if isinstance(found, str) else type(found).__name__ if found is not None else "null"
        return InputError(f"{self.where}: damaged provenance: {at} is {shown}; expected {expected} ({_FIX})")

    def mapping(self, value: Any, at: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(at, value, "an object")
        return value

    def get(self, record: Mapping[str, Any], key: str, at: str) -> Any:
        if key not in record:
            raise InputError(f"{self.where}: damaged provenance: {at} has no {key!r} ({_FIX})")
        return record[key]

    def text(self, record: Mapping[str, Any], key: str, at: str, *, none: bool = False) -> Any:
        value = self.get(record, key, at)
        if (value is None and none) or isinstance(value, str):
            return value
        raise self.fail(f"{at}.{key}", value, "text" + " or null" * none)

    def digest(self, record: Mapping[str, Any], key: str, at: str, *, none: bool = False) -> Any:
        value = self.get(record, key, at)
        if (value is None and none) or (isinstance(value, str) and _SHA256.match(value)):
            return value
        raise self.fail(f"{at}.{key}", value, "a SHA-256 (64 lowercase hex digits)" + " or null" * none)

    def count(self, record: Mapping[str, Any], key: str, at: str) -> int:
        value = self.get(record, key, at)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        raise self.fail(f"{at}.{key}", value, "a count (an integer >= 0)")

    def items(self, record: Mapping[str, Any], key: str, at: str, *, none: bool = False) -> Any:
        value = self.get(record, key, at)
        if (value is None and none) or isinstance(value, list):
            return value
        raise self.fail(f"{at}.{key}", value, "a list" + " or null" * none)

    def pairs(self, record: Mapping[str, Any], key: str, at: str) -> tuple[tuple[str, str], ...]:
        """A list of [text, text] pairs."""
        found = []
        for k, pair in enumerate(self.items(record, key, at)):
            if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair)):
                raise self.fail(f"{at}.{key}[{k}]", pair, "a pair [text, text]")
            found.append((pair[0], pair[1]))
        return tuple(found)


@attrs.frozen
class FileDigest:
    """A file read, with its SHA-256 digest.

    Attributes
    ----------
    role : str
        What it is (``"wav.scp"``, ``"checkpoint"``).
    path : str
        Absolute.
    sha256 : str
        64 hex digits (:func:`~lidframe.data.fileio.file_sha256`).
    size_bytes : int
    """

    role: str
    path: str
    sha256: str
    size_bytes: int

    @classmethod
    def of(cls, role: str, path: StrPath, *, digest: Digest = file_sha256) -> FileDigest:
        """Digest the file at *path* now (*digest*: how, e.g. a :class:`~lidframe.data.digests.DigestCache`'s)."""
        return cls(str(role), os.path.abspath(path), digest(path), os.stat(path).st_size)

    def to_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, value: Any, fields: Fields, at: str) -> FileDigest:
        record = fields.mapping(value, at)
        role, path = fields.text(record, "role", at), fields.text(record, "path", at)
        return cls(role, path, fields.digest(record, "sha256", at), fields.count(record, "size_bytes", at))


@attrs.frozen
class AudioDigests:
    """The audio a data dir lists: each file's SHA-256 by utterance, and one digest over them all.

    Attributes
    ----------
    n_files : int
        Utterances (``wav.scp`` entries).
    sha256 : str
        :func:`audio_sha256` of *utterances*.
    utterances : tuple of (str, str) or None
        (utterance id, SHA-256 of its file), in ``wav.scp`` order; None where left out of
        a provenance that would exceed :data:`MAX_PROVENANCE_BYTES`.
    """

    n_files: int
    sha256: str
    utterances: tuple[tuple[str, str], ...] | None

    @classmethod
    def of(cls, utterances: Sequence[Utterance], *, digest: Digest = file_sha256) -> AudioDigests:
        """Digest the audio file of each utterance now."""
        listed = []
        for utt in utterances:
            if utt.path is None:
                raise InputError(f"utterance {quote(utt.utt_id)} names no audio file to digest")
            listed.append((utt.utt_id, digest(utt.path)))
        return cls(len(listed), audio_sha256(listed), tuple(listed))

    def to_dict(self) -> dict[str, Any]:
        listed = None if self.utterances is None else [list(pair) for pair in self.utterances]
        return {"n_files": self.n_files, "sha256": self.sha256, "utterances": listed}

    @classmethod
    def from_dict(cls, value: Any, fields: Fields, at: str) -> AudioDigests:
        record = fields.mapping(value, at)
        n_files, sha256 = fields.count(record, "n_files", at), fields.digest(record, "sha256", at)
        listed = fields.items(record, "utterances", at, none=True)
        if listed is None:
            return cls(n_files, sha256, None)
        pairs = fields.pairs(record, "utterances", at)
        for k, (_, file_digest) in enumerate(pairs):
            if not _SHA256.match(file_digest):
                raise fields.fail(f"{at}.utterances[{k}][1]", file_digest, "a SHA-256 (64 lowercase hex digits)")
        if len(pairs) != n_files or audio_sha256(pairs) != sha256:
            raise InputError(
                f"{fields.where}: damaged provenance: {at} lists {len(pairs)} files whose digest is not its sha256 "
                f"{sha256[:12]}... of {n_files} files ({_FIX})"
            )
        return cls(n_files, sha256, pairs)


@attrs.frozen
class DataDirRecord:
    """A data dir that was scored: its tables' digests and, where the attacker reads it, its audio's.

    Attributes
    ----------
    role : str
        ``"enrol"`` or ``"trials"``.
    path : str
        The folder, absolute.
    n_utterances, n_speakers : int
    tables : tuple of FileDigest
        Each of :data:`DATA_DIR_TABLES` present, its role the table's name.
    audio : AudioDigests or None
        None where the attacker does not read audio.
    """

    role: str
    path: str
    n_utterances: int
    n_speakers: int
    tables: tuple[FileDigest, ...]
    audio: AudioDigests | None

    @classmethod
    def of(
        cls, role: str, folder: StrPath, utterances: Sequence[Utterance], *, audio: bool, digest: Digest = file_sha256
    ) -> DataDirRecord:
        """Digest the data dir *folder* (its *utterances*, as read from it) now; its audio too where *audio*."""
        base = Path(folder)
        tables = tuple(
            FileDigest.of(name, base / name, digest=digest) for name in DATA_DIR_TABLES if (base / name).is_file()
        )
        return cls(
            role=str(role),
            path=os.path.abspath(base),
            n_utterances=len(utterances),
            n_speakers=len({u.speaker for u in utterances}),
            tables=tables,
            audio=AudioDigests.of(utterances, digest=digest) if audio else None,
        )

    def to_dict(self) -> dict[str, Any]:
        record = {k: v for k, v in attrs.asdict(self, recurse=False).items() if k not in ("tables", "audio")}
        record["tables"] = [t.to_dict() for t in self.tables]
        record["audio"] = None if self.audio is None else self.audio.to_dict()
        return record

    @classmethod
    def from_dict(cls, value: Any, fields: Fields, at: str) -> DataDirRecord:
        record = fields.mapping(value, at)
        audio = fields.get(record, "audio", at)
        return cls(
            role=fields.text(record, "role", at),
            path=fields.text(record, "path", at),
            n_utterances=fields.count(record, "n_utterances", at),
            n_speakers=fields.count(record, "n_speakers", at),
            tables=tuple(
                FileDigest.from_dict(t, fields, f"{at}.tables[{k}]")
                for k, t in enumerate(fields.items(record, "tables", at))
            ),
            audio=None if audio is None else AudioDigests.from_dict(audio, fields, f"{at}.audio"),
        )


@attrs.frozen
class AttackerRecord:
    """The attacker that scored: its name, spec and settings, its code, the files it read, its weights.

    Attributes
    ----------
    name : str
    spec : str or None
        As given (``--attacker``); None for an attacker built in code (the demo's).
    settings : tuple of (str, str)
        Setting and value as text, the flags' included.
    code : str or None
        What identifies its code (:func:`lidframe.registry.code_version`: ``"lidframe 0.3.0"``).
    reads_audio : bool
    files : tuple of FileDigest
        The files its settings name or it declares (checkpoint, embeddings, default weights).
    weights_sha256 : str or None
        SHA-256 of the weights its model was loaded with (None: no model).
    """

    name: str
    spec: str | None
    settings: tuple[tuple[str, str], ...]
    code: str | None
    reads_audio: bool
    files: tuple[FileDigest, ...]
    weights_sha256: str | None

    @classmethod
    def of(
        cls,
        name: str,
        *,
        spec: str | None = None,
        settings: Mapping[str, Any] | None = None,
        code: str | None = None,
        reads_audio: bool = True,
        files: Mapping[str, StrPath] | None = None,
        weights_sha256: str | None = None,
        digest: Digest = file_sha256,
    ) -> AttackerRecord:
        """An attacker with its *settings* (shown as text) and *files* (role -> path, digested now)."""
        return cls(
            name=str(name),
            spec=spec,
            settings=tuple((str(k), str(v)) for k, v in (settings or {}).items()),
            code=code,
            reads_audio=bool(reads_audio),
            files=tuple(FileDigest.of(role, path, digest=digest) for role, path in (files or {}).items()),
            weights_sha256=weights_sha256,
        )

    def to_dict(self) -> dict[str, Any]:
        record = attrs.asdict(self, recurse=False)
        record["settings"] = [list(pair) for pair in self.settings]
        record["files"] = [f.to_dict() for f in self.files]
        return record

    @classmethod
    def from_dict(cls, value: Any, fields: Fields, at: str) -> AttackerRecord:
        record = fields.mapping(value, at)
        reads_audio = fields.get(record, "reads_audio", at)
        if not isinstance(reads_audio, bool):
            raise fields.fail(f"{at}.reads_audio", reads_audio, "true or false")
        return cls(
            name=fields.text(record, "name", at),
            spec=fields.text(record, "spec", at, none=True),
            settings=fields.pairs(record, "settings", at),
            code=fields.text(record, "code", at, none=True),
            reads_audio=reads_audio,
            files=tuple(
                FileDigest.from_dict(f, fields, f"{at}.files[{k}]")
                for k, f in enumerate(fields.items(record, "files", at))
            ),
            weights_sha256=fields.digest(record, "weights_sha256", at, none=True),
        )
