"""Why an input path cannot be read, in one line: the ``os.stat`` of an input, or what stops it.

Shared by the checks of an input file (:func:`lidframe.data.fileio.check_input_file`) and of
an input folder (:func:`lidframe.data.runpaths.check_input_dir`), so that a symlink loop, a
dangling symlink, a missing parent or a NUL byte reads the same for both.
"""

from __future__ import annotations

import errno
import os

from lidframe.errors import InputError, quote

__all__ = ["input_stat", "loop_words"]


def loop_words(text: str) -> str:
    """``is a symlink loop`` where *text* itself is the link, else where its path runs through one."""
    return "is a symlink loop" if os.path.islink(text) else "runs through a symlink loop"


def input_stat(text: str, what: str, *, missing: str = "no such file", name: str = "file") -> os.stat_result:
    """``os.stat`` of the input *text* (symlinks followed), or one line for why there is none.

    A symlink loop, a missing path (*missing*: the path; a dangling symlink names where
    it points, a parent that is not a folder is said), an unreadable one, a NUL byte in
    the *name*; *what* was expected there.
    """
    try:
        return os.stat(text)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{text}: {loop_words(text)}; expected {what}") from None
        if exc.errno == errno.ENOENT and os.path.islink(text):
            raise InputError(f"{missing}: {text} (a dangling symlink to {os.readlink(text)})") from None
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            parent = " (a parent is not a folder)" if exc.errno == errno.ENOTDIR else ""
            raise InputError(f"{missing}: {text}{parent}") from None
        raise InputError(f"{text}: cannot be read ({exc.strerror or exc}); expected {what}") from None
    except ValueError:  # a NUL byte in the name (os.stat refuses it)
        raise InputError(f"{quote(text)}: a {name} name holding a NUL byte; expected {what}") from None
