"""Atomic file output, output-path and input-file checks, text reading, JSON writing and file digests.

Atomic output writes to a temporary file beside the target, then renames it: a reader
never sees a half-written file, and a failed run leaves no output behind.  The file gets
the permissions a plain ``open(path, "w")`` would give it (``0o666`` less the umask for a
new file, the old mode for a replaced one), not the ``0o600`` of a temporary file.  A
write that fails (a full disk, ENOSPC) is reported against the target's name, never the
temporary one's.  Inside :func:`staged_outputs` the renames wait until the whole block
has succeeded, so a run that writes several files writes all of them or none.

:func:`check_output_path` checks a target before any work starts (its folder exists and
is writable, and it is not itself a folder), :func:`check_output_dir` an output folder.

Outputs are regular files.  A target that is a device node (``/dev/null``), a FIFO or
a socket is refused, and so are a symlink loop and a dangling symlink.  A symlink to a
regular file is *written through*: the temporary file goes beside the file the link
points to (all links followed) and is renamed onto it, so the link stays a link and its
target gets the new content atomically, with its own mode -- what ``open(link, "w")``
does, without the half-written file.  A dangling symlink is refused rather than
followed: writing through it would make a file wherever the link happens to point,
most often a sign of a moved or deleted folder.

Inputs are checked in one place, :func:`check_input_file`: a missing file, a dangling
symlink, a symlink loop, a folder, a FIFO, a device or a socket is named as what it is (a
FIFO is never opened: that would block until something writes to it); every reader opens
them through :func:`open_input`, with a size cap where it holds the whole file.  Text
inputs are read through :func:`open_text` / :func:`read_text`: UTF-8, with a byte-order
mark stripped and CRLF line ends read as LF; gzip, bzip2, xz, zstd and zip files and UTF-16
/ UTF-32 text are refused by name, and a byte that is not UTF-8 is named with its line.

:func:`float_texts` is how a CSV writes a float: the shortest decimal text that reads back
as the same float64.

:func:`real_path` is the one key that tells whether two names are one file.
:func:`file_sha256` is the one content digest of a file (checkpoint hashes of the neural
attackers, input digests of the grid's cache keys).
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import hashlib
import io
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any, TypeAlias

from lidframe.data.inputstat import input_stat, loop_words
from lidframe.errors import InputError, format_bytes

__all__ = [
    "StrPath",
    "atomic_path",
    "atomic_write",
    "check_output_dir",
    "check_input_file",
    "check_output_path",
    "file_kind",
    "file_sha256",
    "float_texts",
    "json_clean",
    "open_input",
    "open_text",
    "read_text",
    "real_path",
    "staged_outputs",
    "write_json",
]

#: What a path parameter accepts: a ``str`` or any ``os.PathLike[str]`` (e.g. :class:`pathlib.Path`).
StrPath: TypeAlias = str | os.PathLike[str]

# the (temporary, target, name given) renames waiting for the end of the innermost staged_outputs block
_staged: contextvars.ContextVar[list[tuple[Path, Path, Path]] | None] = contextvars.ContextVar("_staged", default=None)

# what each kind of file that is neither regular nor a folder is called in messages
_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _umask() -> int:
    """The process umask, read without changing it where the OS allows (Linux ``/proc``)."""
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)  # elsewhere: the classic set-and-restore
    os.umask(mask)
    return mask


def _output_mode(path: Path) -> int:
    """The mode ``open(path, "w")`` would leave: the existing file's, else ``0o666`` less the umask."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _cannot_write(exc: OSError, target: Path) -> OSError:
    """An error with *exc*'s errno (so its OSError subclass) that names *target*, not the temporary file."""
    return OSError(exc.errno or errno.EIO, f"cannot write ({exc.strerror or exc})", str(target))


def file_kind(mode: int) -> str:
    """What a file of this ``st_mode`` is, for messages: ``"a regular file"``, ``"a folder"``, ``"a FIFO (named pipe)"``, ..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISDIR(mode):
        return "a folder"
    for test, kind in _SPECIAL_KINDS:
        if test(mode):
            return kind
    return "a special file"  # pragma: no cover - door and whiteout files of other systems


def real_path(path: StrPath) -> Path:
    """The absolute path of *path* with every symlink followed: the key that tells two names of one file apart.

    Unlike :meth:`pathlib.Path.resolve` (Python < 3.13) it never raises on a symlink loop:
    the loop stays in the path, for the reader or writer of the file to refuse.
    """
    return Path(os.path.realpath(path))


def check_input_file(path: StrPath, what: str = "a file") -> Path:
    """*path* as a Path after checking that it is a regular file this process may read.

    The one check of an input file, made before any reader opens it: a FIFO is never
    opened (the open would block until something writes to it) and a device is never read.

    Parameters
    ----------
    path : str or os.PathLike
        The input file (symlinks are followed).
    what : str
        What was expected there, with its article (``"a score-set file (.npz or .csv)"``),
        for the message.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    InputError
        One line naming *path* and what it is: missing (or a dangling symlink, naming
        where it points), a symlink loop, a folder, a FIFO, a character or block device,
        a socket, or not readable.
    """
    text = os.fspath(path)
    info = input_stat(text, what)
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"{text}: is a folder; expected {what}")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"{text}: is {file_kind(info.st_mode)}, not a regular file; expected {what}")
    if not os.access(text, os.R_OK):
        raise InputError(f"{text}: cannot be read (permission denied); expected {what}")
    return Path(text)


def open_input(path: StrPath, what: str = "a file", *, max_bytes: int | None = None) -> IO[bytes]:
    """An input file opened for binary reading, after :func:`check_input_file`.

    The file is opened without blocking and checked again on the open descriptor, so a
    FIFO or device put in its place between the check and the open is refused, never
    waited on.  The caller closes the file (``with open_input(...) as handle:``).

    Parameters
    ----------
    path : str or os.PathLike
        The input file (symlinks are followed).
    what : str
        What was expected there, with its article, for messages.
    max_bytes : int, optional
        The largest file taken (bytes), for a reader that holds it whole; None: any size.

    Raises
    ------
    InputError
        One line naming *path*: what :func:`check_input_file` refuses, a file larger than
        *max_bytes*, or an open that fails.
    """
    target = check_input_file(path, what)
    try:
        descriptor = os.open(target, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"{target}: cannot be read ({exc.strerror or exc}); expected {what}") from None
    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode):
        os.close(descriptor)
        raise InputError(f"{target}: is {file_kind(info.st_mode)}, not a regular file; expected {what}")
    if max_bytes is not None and info.st_size > max_bytes:
        os.close(descriptor)
        size, cap = format_bytes(info.st_size), format_bytes(max_bytes)
        if size == cap:  # too close to tell apart rounded
            size, cap = f"{info.st_size} bytes", f"{max_bytes} bytes"
        raise InputError(f"{target}: is {size}, more than the {cap} lidframe reads as {what}")
    return os.fdopen(descriptor, "rb")


# leading bytes of formats that are not text, and what to say about them
_NOT_TEXT = (
    (b"\x1f\x8b", "is gzip-compressed; decompress it first (gunzip)"),
    (b"\xfd7zXZ\x00", "is xz-compressed; decompress it first (unxz)"),
    (b"\x28\xb5\x2f\xfd", "is zstd-compressed; decompress it first (unzstd)"),
    (b"PK\x03\x04", "is a zip archive; unzip it first"),
)
_BYTE_ORDER_MARKS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)
_HEAD_BYTES = 4096


def _encoding_problem(head: bytes) -> str | None:
    """What is wrong with text starting with *head* for a UTF-8 reader (None: nothing seen)."""
    for magic, problem in _NOT_TEXT:
        if head.startswith(magic):
            return problem
    if head.startswith(b"BZh") and head[3:4].isdigit() and head[4:10] == b"1AY&SY":
        return "is bzip2-compressed; decompress it first (bunzip2)"
    for mark, encoding in _BYTE_ORDER_MARKS:
        if head.startswith(mark):
            return f"is {encoding}; expected UTF-8 text (convert it: iconv -f {encoding} -t UTF-8)"
    if b"\x00" in head:
        even, odd = head[0::2].count(0), head[1::2].count(0)
        if max(even, odd) >= len(head) // 4 and min(even, odd) <= max(even, odd) // 8:
            return "is UTF-16 (no byte-order mark); expected UTF-8 text (convert it: iconv -f UTF-16LE -t UTF-8)"
        return "holds NUL bytes; expected UTF-8 text"
    return None


def _not_utf8(path: Path) -> str:
    """``line N is not UTF-8 text (byte 0xNN)``: the first line of *path* that does not decode."""
    with open_input(path) as handle:
        for number, line in enumerate(handle, start=1):
            if number == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                return f"line {number} is not UTF-8 text (byte {line[exc.start]:#04x}); save it as UTF-8"
    return "is not UTF-8 text; save it as UTF-8"  # pragma: no cover - the decoder failed on the whole, not a line


@contextlib.contextmanager
def open_text(path: StrPath, what: str = "a text file", *, max_bytes: int | None = None) -> Iterator[IO[str]]:
    """Open a UTF-8 text input for reading (:func:`open_input`), after a look at its first bytes.

    A UTF-8 byte-order mark is dropped and CRLF (or CR) line ends read as LF.  Compressed
    files and archives (gzip, bzip2, xz, zstd, zip) and UTF-16 / UTF-32 text are refused
    by name; a byte that is not UTF-8, met while the block reads, is refused naming its line.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    what : str
        What was expected there, with its article, for messages.
    max_bytes : int, optional
        The largest file taken (:func:`open_input`).

    Yields
    ------
    text file object

    Raises
    ------
    InputError
        One line naming *path*: what :func:`open_input` refuses, or an encoding that is
        not UTF-8 text.
    """
    target = Path(path)
    with contextlib.ExitStack() as stack:
        raw = stack.enter_context(open_input(target, what, max_bytes=max_bytes))
        problem = _encoding_problem(raw.read(_HEAD_BYTES))
        if problem is not None:
            raise InputError(f"{target}: {problem}")
        raw.seek(0)
        handle = stack.enter_context(io.TextIOWrapper(raw, encoding="utf-8-sig", newline=None))
        try:
            yield handle
        except UnicodeDecodeError:
            raise InputError(f"{target}: {_not_utf8(target)}") from None


def read_text(path: StrPath, what: str = "a text file") -> str:
    """The whole text of a UTF-8 input, read as :func:`open_text` reads it (no BOM, LF line ends)."""
    with open_text(path, what) as handle:
        return handle.read()


def _write_target(text: str, label: str) -> Path:
    """The file that writing to *text* replaces or makes: *text* itself, or the regular file its symlinks lead to.

    Raises
    ------
    InputError
        *text* is a folder, a device, a FIFO or a socket (or a link to one), a symlink
        loop, or a dangling symlink.
    """
    try:
        info = os.stat(text)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{label} {text}: {loop_words(text)}; expected a file name") from None
        if exc.errno == errno.ENOENT and os.path.islink(text):
            raise InputError(
                f"{label} {text}: is a dangling symlink (to {os.readlink(text)}); lidframe writes through a "
                "symlink only to an existing file: make that file, or remove the link"
            ) from None
        return Path(text)  # a new file (a missing or unwritable folder is the caller's to word)
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"{label} {text}: is a folder; expected a file name")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(
            f"{label} {text}: is {file_kind(info.st_mode)}, not a regular file; lidframe writes its outputs as "
            "regular files"
        )
    return real_path(text) if os.path.islink(text) else Path(text)


def check_output_path(path: StrPath, label: str = "output") -> Path:
    """*path* as a Path after checking, before any work, that a file can be written there.

    Parameters
    ----------
    path : str or os.PathLike
        The output file: a new name, a regular file, or a symlink to one (written
        through, module docstring).
    label : str
        What names it in the message (a flag such as ``"--json"``).

    Returns
    -------
    pathlib.Path
        *path* as given (not resolved).

    Raises
    ------
    InputError
        The path names a folder (or ends with a separator), a device, a FIFO or a socket,
        a symlink loop or a dangling symlink; its folder does not exist or is not a
        folder; or that folder (for a symlink: the folder of the file it points to) or
        the existing file is not writable.
    """
    text = os.fspath(path)
    if text.endswith((os.sep, "/")):
        raise InputError(f"{label} {text}: is a folder; expected a file name")
    target = _write_target(text, label)
    through = " (where the symlink points)" if target != Path(text) else ""
    folder = target.parent
    try:
        os.stat(folder)
    except OSError as exc:  # a loop is named here; a missing folder or a file in its path below
        if exc.errno == errno.ELOOP:
            raise InputError(f"{label} {text}: folder {folder} {loop_words(str(folder))}") from None
    if not folder.exists():
        raise InputError(f"{label} {text}: folder {folder} does not exist")
    if not folder.is_dir():
        raise InputError(f"{label} {text}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{label} {text}: folder {folder}{through} is not writable")
    if target.exists() and not os.access(target, os.W_OK):
        raise InputError(f"{label} {text}: the file{through} exists and is read-only")
    return Path(text)


def check_output_dir(path: StrPath, label: str = "output folder") -> Path:
    """*path* as a Path after checking, before any work, that a folder of outputs can be made or filled there.

    Parameters
    ----------
    path : str or os.PathLike
        The output folder.
    label : str
        What names it in the message (a flag such as ``"--out"``).

    Raises
    ------
    InputError
        *path* exists and is not a writable folder, or it does not exist and its parent
        is not an existing, writable folder.
    """
    folder = Path(path)
    if folder.exists():
        if not folder.is_dir():
            raise InputError(f"{label} {os.fspath(path)}: exists and is not a folder")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise InputError(f"{label} {os.fspath(path)}: folder is not writable")
        return folder
    parent = folder.parent
    if not parent.is_dir():
        raise InputError(f"{label} {os.fspath(path)}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(f"{label} {os.fspath(path)}: folder {parent} is not writable")
    return folder


@contextlib.contextmanager
def staged_outputs() -> Iterator[None]:
    """Hold back the renames of every :func:`atomic_path` inside the block until it succeeds.

    On success the files are renamed into place in the order they were written; on any
    exception every temporary file is removed and no target is touched, so a command that
    writes several outputs writes all of them or none.
    """
    pending: list[tuple[Path, Path, Path]] = []
    token = _staged.set(pending)
    try:
        yield
    except BaseException:
        for tmp, _, _ in pending:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
    finally:
        _staged.reset(token)
    for done, (tmp, target, given) in enumerate(pending):
        try:
            os.replace(tmp, target)
        except OSError as exc:
            for left, _, _ in pending[done:]:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(left)
            raise _cannot_write(exc, given) from exc


@contextlib.contextmanager
def atomic_path(path: StrPath, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path in the target's folder; rename it to *path* on success.

    Parameters
    ----------
    path : str or os.PathLike
        Final destination: a new name, a regular file, or a symlink to one (written
        through: the temporary file goes beside the file it points to).  Its parent
        folder must exist.
    suffix : str
        Suffix for the temporary name (some writers, e.g. ``numpy.savez``, append
        an extension unless the name already carries it).

    Raises
    ------
    InputError
        *path* is a folder, a device, a FIFO, a socket, a symlink loop or a dangling
        symlink (nothing is written).

    Notes
    -----
    The file gets the mode ``open(path, "w")`` would give it (module docstring); an
    :class:`OSError` about the temporary file (ENOSPC, EIO, ...) is re-raised naming
    *path*.  Inside :func:`staged_outputs` the rename waits for the end of that block.
    """
    given = Path(path)
    path = _write_target(os.fspath(given), "output")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix + ".tmp", dir=path.parent or ".")
    except OSError as exc:
        raise _cannot_write(exc, given) from exc
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        try:
            yield tmp
            os.chmod(tmp, _output_mode(path))
        except OSError as exc:
            if exc.filename not in (None, tmp_name, tmp):  # about another file (an input read inside the block)
                raise
            raise _cannot_write(exc, given) from exc
        pending = _staged.get()
        if pending is None:
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise _cannot_write(exc, given) from exc
        else:
            pending.append((tmp, path, given))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_write(path: StrPath, mode: str = "w", **open_kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file for writing; rename it to *path* when the block succeeds.

    Parameters
    ----------
    path : str or os.PathLike
        Final destination.
    mode : {"w", "wb"}
        Text or binary.
    **open_kwargs
        Passed to :func:`open` (e.g. ``newline=""`` for CSV).
    """
    with atomic_path(path) as tmp, open(tmp, mode, **open_kwargs) as handle:
        yield handle


def float_texts(values: Iterable[float]) -> list[str]:
    """Each value as the shortest decimal text that reads back as the same float64 (``repr``).

    ``0.1`` is written ``0.1`` (a fixed ``%.17g`` writes ``0.10000000000000001``, ``%.12g``
    loses bits), ``1e-300`` and ``5e-324`` as such, ``-0.0`` keeps its sign, NaN is ``nan``
    and the infinities ``inf`` / ``-inf``.  Any correctly rounding reader (Python's
    ``float``, numpy, pandas) gets the same bits back.

    Parameters
    ----------
    values : iterable of float
        Numbers (a numpy array's ``.ravel().tolist()`` is the fast way in).

    Returns
    -------
    list of str
        One text per value, in order.
    """
    return [repr(float(value)) for value in values]


def json_clean(value: Any) -> Any:
    """Replace NaN by None, recursively through dicts, lists and tuples (JSON has no NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: json_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_clean(v) for v in value]
    return value


def write_json(path: StrPath, record: Any) -> None:
    """Write *record* as indented JSON (NaN as null), atomically."""
    with atomic_write(path) as handle:
        json.dump(json_clean(record), handle, indent=2)
        handle.write("\n")


def file_sha256(path: StrPath) -> str:
    """SHA-256 of the file's bytes, as 64 lowercase hex digits (read in 1 MiB blocks, opened by :func:`open_input`).

    Parameters
    ----------
    path : str or os.PathLike
        An existing regular file (a FIFO or a device is refused, never read).

    Returns
    -------
    str
        ``hashlib.sha256(open(path, "rb").read()).hexdigest()``, without holding the
        whole file in memory.

    Raises
    ------
    InputError
        What :func:`open_input` refuses (missing, not a regular file, unreadable).
    """
    digest = hashlib.sha256()
    with open_input(path, "a file to digest") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
