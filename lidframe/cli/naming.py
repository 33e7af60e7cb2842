"""What ``lidframe evaluate`` (and ``sensitivity``) call a system, and the warnings about what its inputs cannot show.

:func:`default_system_name` names a system after its two score files when ``--name`` is
not given: the stem they share once the split word is taken out of each
(``mcadams_dev.npz`` and ``mcadams_eval.npz``: ``mcadams``; ``libri_dev_b1``,
``libri_test_b1``: ``libri_b1``); otherwise the pair of stems, ``DEV/EVAL``
(``dev/eval`` for files named only by their split, ``b1_dev/b2_eval``), which says what
was calibrated on what (a folder name is left out: ``data`` or a temporary folder would
name nothing).  The same file twice is named by its stem.  Before issue 41 the name was
the eval file's stem, ``eval`` for the usual layout.

:func:`same_file_warning` and :func:`no_outsider_warning` are the one-line warnings of a
run whose numbers mean less than they seem to: calibrated on the very trials it is
evaluated on, or an open-set prior on an eval set that holds no outsider.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lidframe.core.summary import Summary

__all__ = ["SPLIT_WORDS", "default_system_name", "same_file_warning", "no_outsider_warning", "evaluate_warnings"]

#: The words that name a split rather than a system, taken out of a stem (any case).
SPLIT_WORDS = ("dev", "development", "eval", "evaluation", "test", "valid", "validation", "scores", "trials")
_SEPARATORS = "_. -"  # "-" last: a literal in a character class
_SPLIT_WORD = re.compile(
    rf"(?:^|(?<=[{_SEPARATORS}]))(?:{'|'.join(SPLIT_WORDS)})(?=$|[{_SEPARATORS}])", flags=re.IGNORECASE
)


def _without_split(stem: str) -> str:
    """*stem* less its split words and the separators they leave doubled or at the ends."""
    kept = _SPLIT_WORD.sub("", stem)
    kept = re.sub(rf"([{_SEPARATORS}])[{_SEPARATORS}]+", r"\1", kept)
    return kept.strip(_SEPARATORS)


def default_system_name(dev: str | os.PathLike[str], eval: str | os.PathLike[str]) -> str:
    """The name of the system scored in *dev* and *eval* when none is given (module docstring).

    Examples
    --------
    >>> default_system_name("scores/mcadams_dev.npz", "scores/mcadams_eval.npz")
    'mcadams'
    >>> default_system_name("runs/pitch/dev.npz", "runs/pitch/eval.csv")
    'dev/eval'
    >>> default_system_name("b1_dev.npz", "b2_eval.npz")
    'b1_dev/b2_eval'
    """
    dev_stem, eval_stem = Path(dev).stem, Path(eval).stem
    dev_name, eval_name = _without_split(dev_stem), _without_split(eval_stem)
    if dev_name and dev_name == eval_name:
        return eval_name
    return eval_stem if dev_stem == eval_stem else f"{dev_stem}/{eval_stem}"


def same_file_warning(dev: str | os.PathLike[str], eval: str | os.PathLike[str]) -> str | None:
    """A warning when *dev* and *eval* are one file (symlinks followed); None otherwise."""
    try:
        same = os.path.samefile(dev, eval)
    except OSError:  # a missing file is refused by its reader, with its own message
        return None
    if not same:
        return None
    return (
        f"--dev {os.fspath(dev)} and --eval {os.fspath(eval)} are the same file: the calibrator is fitted on the "
        "trials it is then evaluated on, so every number is optimistic; give a dev set of other speakers"
    )


def no_outsider_warning(summary: Summary, prior: str) -> str | None:
    """A warning when an open-set *prior* is evaluated on an eval set with no outsider trial; None otherwise.

    Every trial is then of an enrolled speaker: the prior's mass on "someone outside" only
    lowers each trial's posterior (and its LID), and no membership disclosure or
    misattribution rate can be measured.
    """
    if summary.open_set is None or summary.n_outsider_trials:
        return None
    outside = float(summary.open_set.outside)
    return (
        f"--prior {prior} is open-set (P(outside) = {outside:.3g}) but the eval set has no outsider trial: every "
        "trial is of an enrolled speaker, so the prior only lowers each posterior and no membership or "
        "misattribution can be measured; use a closed-set prior (uniform) or add outsider trials"
    )


def evaluate_warnings(dev: str, eval: str, prior: str, summary: Summary) -> list[str]:
    """The warnings of one ``lidframe evaluate`` run (:func:`same_file_warning`, :func:`no_outsider_warning`), in order;
    printed on the console and listed in the report's notes."""
    found = (same_file_warning(dev, eval), no_outsider_warning(summary, prior))
    return [warning for warning in found if warning is not None]
