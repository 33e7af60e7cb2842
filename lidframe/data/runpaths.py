"""The paths of one run: its input folders checked, and the one rule that keeps its outputs off its inputs.

A command reads inputs -- files, and folders such as Kaldi data dirs -- and writes outputs:
files, and folders it fills.  :func:`refuse_outputs_on_inputs` is the one rule, made
before anything is written, that no output replaces or changes an input:

* no output (file or folder) *is* an input file or folder;
* no output lies inside an input folder (a data dir);
* no output folder holds an input.

Names are compared with every symlink followed (:func:`lidframe.data.fileio.real_path`),
so a second name of an input, ``..`` in a path or a link to it is the input.  A data
dir's inputs are the folder and every audio file its ``wav.scp`` lists, wherever the
file lies (a corpus keeps its audio beside its data dirs); a relative path counts in both
places it may name, against the current folder and against the data dir (the two
conventions of :data:`lidframe.data.kaldi.WAV_PATHS`), whichever the run reads.

:func:`check_outputs` is what a command calls with all its outputs and inputs: each
output file writable (:func:`~lidframe.data.fileio.check_output_path`), each output
folder makable (:func:`~lidframe.data.fileio.check_output_dir`), no two outputs one file,
then the rule.  :func:`check_input_dir` checks an input folder as
:func:`~lidframe.data.fileio.check_input_file` checks a file: a missing folder, a
dangling symlink, a symlink loop or a file are named as what they are.

A command that fills an output folder runs inside :func:`no_empty_folders_left`: a run
that fails (a full disk on the first write) leaves no empty skeleton of folders behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import attrs

from lidframe.data.fileio import (
    StrPath,
    check_output_dir,
    check_output_path,
    input_stat,
    loop_words,
    read_text,
    real_path,
)
from lidframe.errors import InputError

__all__ = ["check_input_dir", "check_outputs", "no_empty_folders_left", "refuse_outputs_on_inputs"]

#: What names an audio file listed by a data dir in messages.
_LISTED = "listed in {scp}"


def check_input_dir(path: StrPath, what: str = "a data directory (wav.scp, utt2spk)") -> Path:
    """*path* as a Path after checking that it is a folder this process may read.

    Parameters
    ----------
    path : str or os.PathLike
        The input folder (symlinks are followed).
    what : str
        What was expected there, with its article, for the message.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    InputError
        One line naming *path* and what it is: missing (``no such data directory``, or a
        dangling symlink, naming where it points), a symlink loop, a file (or anything
        else that is not a folder), or not readable.
    """
    text = os.fspath(path)
    input_stat(text, what, missing="no such data directory", name="folder")
    if not os.path.isdir(text):
        kind = "a file" if os.path.isfile(text) else "not a folder"
        raise InputError(f"{text}: is {kind}; expected {what}")
    if not os.access(text, os.R_OK | os.X_OK):
        raise InputError(f"{text}: cannot be read (permission denied); expected {what}")
    return Path(text)


@attrs.frozen
class _Place:
    """One input or output of a run: how it was given (for messages), its real path and whether it is a folder."""

    shown: str
    real: str
    folder: bool
    label: str = ""  # an output's flag; an input listed by a data dir: where it is listed

    def holds(self, other: _Place) -> bool:
        """Whether *other* lies inside this folder (never for a file)."""
        return self.folder and other.real.startswith(self.real.rstrip(os.sep) + os.sep)


def _listed_audio(folder: str, shown: str) -> Iterator[_Place]:
    """The audio files a data dir's ``wav.scp`` lists, as input places: a relative one twice, from the current folder
    and from the data dir (both conventions of reading it).

    Read leniently: a ``wav.scp`` that cannot be read, or a line that is no ``UTT PATH``, is
    left for the data dir's reader to refuse (before anything is written).
    """
    scp = os.path.join(folder, "wav.scp")
    if not os.path.isfile(scp):
        return
    try:
        text = read_text(scp, "wav.scp")
    except InputError:
        return
    where = _LISTED.format(scp=os.path.join(shown, "wav.scp"))
    parents: dict[str, str] = {}  # one realpath per folder of audio, not per file
    for line in text.split("\n"):
        fields = line.split(maxsplit=1)
        if len(fields) != 2 or "\x00" in fields[1]:
            continue
        written = fields[1].strip()
        # an absolute location stays as it is: both are then one place
        for location in dict.fromkeys((os.path.abspath(written), os.path.join(folder, written))):
            parent, name = os.path.split(location)
            if parent not in parents:
                parents[parent] = os.fspath(real_path(parent))
            real = os.path.join(parents[parent], name)
            if os.path.islink(real):
                real = os.fspath(real_path(real))
            yield _Place(written, real, folder=False, label=where)


def _input_places(inputs: Iterable[StrPath | None]) -> list[_Place]:
    """Every input of *inputs* as a place; a data dir adds the audio its ``wav.scp`` lists."""
    places = []
    for item in inputs:
        if item is None:
            continue
        shown = os.fspath(item)
        real = os.fspath(real_path(shown))
        folder = os.path.isdir(real)
        places.append(_Place(shown, real, folder))
        if folder:
            places.extend(_listed_audio(real, shown))
    return places


def _output_places(files: Mapping[str, StrPath | None], folders: Mapping[str, StrPath | None]) -> list[_Place]:
    """The outputs given (None: not asked for) as places, files first."""
    return [
        _Place(os.fspath(path), os.fspath(real_path(path)), folder, label)
        for given, folder in ((files, False), (folders, True))
        for label, path in given.items()
        if path is not None
    ]


def refuse_outputs_on_inputs(
    files: Mapping[str, StrPath | None] | None = None,
    *,
    folders: Mapping[str, StrPath | None] | None = None,
    inputs: Iterable[StrPath | None] = (),
) -> None:
    """The one rule that keeps a run's outputs off its inputs (module docstring).

    Parameters
    ----------
    files : mapping of str to path or None
        The output files, by the flag that names them in messages (None: not asked for).
    folders : mapping of str to path or None
        The output folders a run makes or fills, by flag.
    inputs : iterable of path or None
        Every input file and folder of the run (None: not given).  A folder holding a
        ``wav.scp`` also brings the audio files it lists.

    Raises
    ------
    InputError
        One line naming the output's flag and path and the input it would overwrite,
        lie inside or hold.
    """
    outputs = _output_places(files or {}, folders or {})
    if not outputs:
        return
    sources = _input_places(inputs)
    by_real = {source.real: source for source in sources}
    for out in outputs:  # the input itself first: the most telling message
        if out.real in by_real:
            raise InputError(
                f"{out.label} {out.shown}: is an input of this run ({_shown(by_real[out.real])}); writing it would "
                "overwrite the input"
            )
    for source in (source for source in sources if source.folder):  # a data dir: nothing is written inside it
        for out in outputs:
            if source.holds(out):
                raise InputError(
                    f"{out.label} {out.shown}: lies inside {_shown(source)}, an input folder of this run; write "
                    "outputs outside the run's inputs"
                )
    for out in (out for out in outputs if out.folder):  # an output folder holds no input (audio included)
        for source in sources:
            if out.holds(source):
                raise InputError(
                    f"{out.label} {out.shown}: holds {_shown(source)}, an input of this run; give an output folder "
                    "apart from the inputs"
                )


def _shown(source: _Place) -> str:
    """An input as a message names it: as given, and where a data dir lists it."""
    return f"{source.shown}, {source.label}" if source.label else source.shown


def check_outputs(
    files: Mapping[str, StrPath | None] | None = None,
    *,
    folders: Mapping[str, StrPath | None] | None = None,
    inputs: Iterable[StrPath | None] = (),
) -> dict[str, Path | None]:
    """Every output of a run checked before any work: writable, no two the same, none on an input.

    Parameters
    ----------
    files : mapping of str to path or None
        The output files, by flag (None: not asked for): each must be writable
        (:func:`lidframe.data.fileio.check_output_path`).
    folders : mapping of str to path or None
        The output folders, by flag: each must be a writable folder or one that can be
        made (:func:`lidframe.data.fileio.check_output_dir`; a symlink loop is named).
    inputs : iterable of path or None
        The run's inputs (:func:`refuse_outputs_on_inputs`).

    Returns
    -------
    dict of str to Path or None
        Each flag of *files* then *folders* with its path as given (None where not given).

    Raises
    ------
    InputError
        The first problem, in one line naming the flag.
    """
    files, folders = dict(files or {}), dict(folders or {})
    checked: dict[str, Path | None] = {}
    for flag, path in files.items():
        checked[flag] = None if path is None else check_output_path(path, flag)
    for flag, path in folders.items():
        if path is not None:
            try:
                os.stat(path)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    text = os.fspath(path)
                    raise InputError(f"{flag} {text}: {loop_words(text)}; expected a folder") from None
        checked[flag] = None if path is None else check_output_dir(path, flag)
    seen: dict[str, str] = {}
    for place in _output_places(files, folders):
        if place.real in seen:
            raise InputError(
                f"{place.label} {place.shown}: the same file as {seen[place.real]}; give each output its own file"
            )
        seen[place.real] = place.label
    refuse_outputs_on_inputs(files, folders=folders, inputs=inputs)
    return checked


@contextlib.contextmanager
def no_empty_folders_left(folder: StrPath) -> Iterator[Path]:
    """Run a block that fills the output folder *folder*; if it fails, remove the empty folders it made.

    A command that makes ``OUT`` (and ``OUT/wav``, ...) before its first write would
    otherwise leave an empty skeleton behind when that write fails (a full disk).  Only
    folders that did not exist before the block, and that are empty, are removed (bottom
    up, so a folder holding only empty ones goes too); files and the folders holding them
    stay, as do the folders that were there before.

    Parameters
    ----------
    folder : str or os.PathLike
        The output folder (made by the block, or there already).

    Yields
    ------
    pathlib.Path
        *folder*.
    """
    top = os.fspath(folder)
    before = {root for root, _, _ in os.walk(top)}  # empty when the folder is not there yet
    try:
        yield Path(top)
    except BaseException:
        for root, _, _ in os.walk(top, topdown=False):
            if root not in before:
                with contextlib.suppress(OSError):  # not empty (a finished file stays), or gone
                    os.rmdir(root)
        raise
