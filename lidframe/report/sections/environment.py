"""The software behind a report's numbers: lidframe's code (version, source digest, git commit) and its packages.

:func:`environment` reads it now (:class:`Environment`), without importing the packages;
:func:`environment_table` is its table under "Settings and provenance".  Besides the
packages every report names (:data:`ENVIRONMENT_PACKAGES`), the page names those of
:data:`USED_PACKAGES` where its numbers used them (:func:`packages_used`): the GE2E
weights' resemblyzer, the recogniser and the pitch tracker of the utility.
"""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from collections.abc import Iterable
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version
from pathlib import Path

import attrs

from lidframe._version import __version__, _source_digest

__all__ = [
    "ENVIRONMENT_PACKAGES",
    "NOT_INSTALLED",
    "USED_PACKAGES",
    "Environment",
    "environment",
    "environment_table",
    "packages_used",
    "text_pairs",
    "utility_packages",
]


def text_pairs(items: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """(name, value) pairs as text: the converter of the records' settings."""
    return tuple((str(k), str(v)) for k, v in items)


#: The packages whose versions every report states: the numbers' stack (torch read from its metadata, never imported).
ENVIRONMENT_PACKAGES = ("numpy", "scipy", "scikit-learn", "torch")
#: What the page says of a package of :data:`ENVIRONMENT_PACKAGES` that is not installed.
NOT_INSTALLED = "not installed"
#: The packages a page names where its numbers used them: distribution -> what it did.
USED_PACKAGES = {
    "resemblyzer": "GE2E speaker encoder weights (attacker ge2e)",
    "pocketsphinx": "speech recogniser of the utility's WER (recogniser pocketsphinx)",
    "praat-parselmouth": "pitch tracker of the utility's ρ_F0 (Praat, through parselmouth)",
}
#: The components whose use puts a package of :data:`USED_PACKAGES` on the page: (kind, name) -> distribution.
_USED_BY = {("attacker", "ge2e"): "resemblyzer", ("recogniser", "pocketsphinx"): "pocketsphinx"}
#: The package of the pitch tracker behind ρ_F0 (:mod:`lidframe.utility.pitch`).
_PITCH_PACKAGE = "praat-parselmouth"


def utility_packages(utilities: Iterable[object]) -> tuple[str, ...]:
    """The packages behind utility records' numbers: the recogniser's, and the pitch tracker's where ρ_F0 was measured.

    Parameters
    ----------
    utilities : iterable of lidframe.utility.Utility
        Read by their ``recogniser`` and ``rho_f0``.
    """
    measured = [u for u in utilities if hasattr(u, "recogniser")]
    recognisers = [u.recogniser for u in measured]
    return packages_used(recognisers=recognisers, pitch=any(getattr(u, "rho_f0", None) is not None for u in measured))


def _component_name(text: object) -> str:
    """The name a spec or a description begins with: ``"pocketsphinx (en-us, ...)"`` -> ``"pocketsphinx"``."""
    return re.split(r"[?\s(]", str(text).strip(), maxsplit=1)[0]


def packages_used(
    *, attackers: Iterable[str] = (), recognisers: Iterable[str] = (), pitch: bool = False
) -> tuple[str, ...]:
    """The packages of :data:`USED_PACKAGES` that the named components use, in that table's order.

    Parameters
    ----------
    attackers, recognisers : iterable of str
        Names, specs or descriptions (``"ge2e"``, ``"ge2e?device=cpu"``, ``"pocketsphinx
        (en-us, the wheel's model)"``) of the attackers that scored and the recognisers of
        the utility.
    pitch : bool
        Whether a ρ_F0 was measured (by the pitch tracker).

    Examples
    --------
    >>> packages_used(attackers=["ge2e?device=cpu", "ecapa"], pitch=True)
    ('resemblyzer', 'praat-parselmouth')
    """
    names = {("attacker", _component_name(a)) for a in attackers}
    names |= {("recogniser", _component_name(r)) for r in recognisers}
    used = {_USED_BY[n] for n in names if n in _USED_BY} | ({_PITCH_PACKAGE} if pitch else set())
    return tuple(name for name in USED_PACKAGES if name in used)


@attrs.frozen
class Environment:
    """The software that computed a report: lidframe's code, and the packages under it.

    Attributes
    ----------
    lidframe_version : str
        The installed lidframe version (``"0+unknown"`` in a source tree that is not installed).
    source_digest : str
        SHA-256 (64 hex digits) of the lidframe code this process loaded: the ``lidframe``
        package and the ``lidframe.attackers`` / ``lidframe.calibrators`` folders
        (:func:`lidframe._version.tree_digest`; the ``src.`` part of
        :func:`lidframe._version.code_version` is its first 16 digits).
    git_commit : str or None
        The commit (40 hex digits) of the git checkout lidframe runs from; None when it
        does not run from one (an installed wheel) or git cannot say.
    git_modified : bool or None
        Whether that checkout's tracked files differ from the commit (uncommitted
        changes: then the source digest, not the commit, names the code); None without a commit.
    python : str
        The Python version (``"3.11.7"``).
    packages : tuple of (str, str)
        (distribution, version) of each of :data:`ENVIRONMENT_PACKAGES`, the version
        :data:`NOT_INSTALLED` for one that is not; read with :mod:`importlib.metadata`, so
        nothing is imported.
    used : tuple of (str, str)
        (distribution, version) of each package of :data:`USED_PACKAGES` the numbers used.
    """

    lidframe_version: str
    source_digest: str
    git_commit: str | None
    git_modified: bool | None
    python: str
    packages: tuple[tuple[str, str], ...] = attrs.field(converter=text_pairs, factory=tuple)
    used: tuple[tuple[str, str], ...] = attrs.field(converter=text_pairs, factory=tuple)


#: The folder lidframe's source lies in (a git checkout's root when it runs from one).
_SOURCE_ROOT = Path(__file__).resolve().parents[3]
#: How long a git query may take before the commit is left out (seconds).
_GIT_TIMEOUT = 10.0


def _git(*args: str) -> str | None:
    """The output of ``git -C <source root> ARGS``, stripped; None where git is missing, fails or hangs."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        done = subprocess.run(
            [git, "-C", str(_SOURCE_ROOT), *args], capture_output=True, text=True, timeout=_GIT_TIMEOUT, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _git_checkout() -> tuple[str | None, bool | None]:
    """(commit, modified) of the git checkout lidframe runs from; (None, None) when it runs from none.

    Only a checkout whose root holds lidframe's package counts: an installed lidframe inside
    some other repository (a virtual environment in a project) has no commit of its own.
    """
    if not (_SOURCE_ROOT / ".git").exists() or not (_SOURCE_ROOT / "lidframe" / "_version.py").is_file():
        return None, None
    commit = _git("rev-parse", "--verify", "HEAD")
    if commit is None or len(commit) != 40:
        return None, None
    status = _git("status", "--porcelain", "--untracked-files=no")
    return commit, None if status is None else bool(status)


def _package_version(name: str) -> str:
    try:
        return _distribution_version(name)
    except PackageNotFoundError:
        return NOT_INSTALLED


def environment(used: Iterable[str] = ()) -> Environment:
    """The software computing now: lidframe's version, source digest and git commit, Python and the packages.

    Reads the packages' versions from their metadata (:mod:`importlib.metadata`): torch is
    never imported.  The source digest is computed once per process.  *used* names the
    packages of :data:`USED_PACKAGES` the numbers used (:func:`packages_used`).

    Returns
    -------
    Environment
    """
    commit, modified = _git_checkout()
    return Environment(
        lidframe_version=__version__,
        source_digest=_source_digest(),
        git_commit=commit,
        git_modified=modified,
        python=platform.python_version(),
        packages=[(name, _package_version(name)) for name in ENVIRONMENT_PACKAGES],
        used=[(name, _package_version(name)) for name in used],
    )


def environment_table(environment: Environment | None) -> list[tuple[str, str, str]]:
    """The software behind the numbers, one row each: (key, what, value).

    Keys: ``lidframe``, ``source digest``, ``git commit`` (only in a git checkout),
    ``python``, then each package of :data:`ENVIRONMENT_PACKAGES` and each used one
    (:data:`USED_PACKAGES`, said what it did) by its distribution name.
    """
    if environment is None:
        return []
    rows = [
        ("lidframe", "lidframe", environment.lidframe_version),
        ("source digest", "lidframe source (SHA-256 of its code files)", environment.source_digest),
    ]
    if environment.git_commit is not None:
        state = " with uncommitted changes (the source digest names the code)" if environment.git_modified else ""
        rows.append(("git commit", "git commit of the checkout", environment.git_commit + state))
    rows.append(("python", "Python", environment.python))
    rows += [(name, name, version) for name, version in environment.packages]
    rows += [(name, f"{name}: {USED_PACKAGES.get(name, 'used')}", version) for name, version in environment.used]
    return rows
