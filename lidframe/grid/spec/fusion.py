"""A fused attacker in a grid spec: ``fusion?of=NAME,NAME`` in ``[grid] attackers``.

The attacker ``fusion`` is not a registered component: it names two or more other
attackers of the same ``[grid] attackers`` list, and a cell of it evaluates their
linear logistic fusion (:mod:`lidframe.core.fusion`, what ``lidframe fuse`` computes)
fitted on the dev split of the cell's system (mechanism and scenario), applied to dev and
eval.  Its options:

``of`` (required)
    The fused attackers, comma-separated, at least two, each once: an attacker's name
    (``ecapa`` for ``ecapa?checkpoint=m.ckpt``), which must name exactly one attacker of
    the list, or an attacker's whole spec as the list gives it
    (``of=precomputed?path=a.npz,precomputed?path=b.npz``: percent-escape an ``&`` of
    its own as ``%26``).  Not a fusion itself: fusing fusions is refused.
``C``
    The inverse L2 penalty on the weights (a positive number, default 1.0, as
    ``lidframe fuse --C``), or ``none`` for no penalty.

The row z-norm of the fused inputs is the grid's (``[grid] znorm_ddof``).
:func:`fused_attacker` reads and resolves one entry; :func:`is_fusion` says whether an
entry is one.
"""

from __future__ import annotations

import math

import attrs

from lidframe.errors import InputError, quote
from lidframe.grid.spec.records import attacker_name

__all__ = ["FUSION", "FusedAttacker", "is_fusion", "fused_attacker"]

#: The attacker name of a fusion in ``[grid] attackers`` (reserved: no registered attacker of that name is used).
FUSION = "fusion"

#: The options a fusion entry takes.
_OPTIONS = ("of", "C")


@attrs.frozen(kw_only=True)
class FusedAttacker:
    """One ``fusion?of=...`` entry of ``[grid] attackers``, its names resolved.

    Attributes
    ----------
    members : tuple of str, length K >= 2
        The fused attackers' specs, as ``[grid] attackers`` gives them, in the order of ``of``.
    C : float or None
        Inverse L2 penalty on the fusion weights (None: none).
    """

    members: tuple[str, ...]
    C: float | None = 1.0

    def settings(self, znorm_ddof: int) -> dict[str, object]:
        """What the fit depends on besides its members' score sets, as JSON values (a cache key's and a cell's input)."""
        return {"C": self.C, "znorm_ddof": znorm_ddof}


def is_fusion(spec: str) -> bool:
    """Whether the attacker spec *spec* is a fusion entry (its name is :data:`FUSION`)."""
    return attacker_name(spec) == FUSION


def _penalty(text: str) -> float | None:
    """The ``C`` option: a positive finite number, or ``none``."""
    if text.strip().lower() in ("none", "null"):
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise InputError(f"C must be a positive number (or none: no penalty), got {quote(text)}")
    return value


def _member(entry: str, attackers: tuple[str, ...]) -> str:
    """The attacker of *attackers* that the ``of`` entry *entry* names (its whole spec, or its unique name)."""
    if entry in attackers:
        return entry
    named = [a for a in attackers if attacker_name(a) == entry]
    if len(named) > 1:
        raise InputError(
            f"of: {quote(entry)} names {len(named)} attackers of grid.attackers ({', '.join(map(quote, named))}); "
            "give the whole spec of the one to fuse"
        )
    if not named:
        names = ", ".join(quote(a) for a in attackers if not is_fusion(a)) or "none"
        raise InputError(f"of: no attacker {quote(entry)} in grid.attackers (its attackers: {names})")
    return named[0]


def fused_attacker(spec: str, attackers: tuple[str, ...]) -> FusedAttacker:
    """Read the fusion entry *spec* and resolve its ``of`` names among *attackers* (module docstring).

    Parameters
    ----------
    spec : str
        A ``fusion?of=...`` entry of ``[grid] attackers``.
    attackers : tuple of str
        The whole ``[grid] attackers`` list.

    Returns
    -------
    FusedAttacker

    Raises
    ------
    InputError
        One line (without the spec file and key, which the caller adds): ``of`` missing or
        naming fewer than two attackers, an attacker twice, a name that is no attacker of
        the list or names several, a fusion; an unknown option; a bad ``C``.
    """
    from lidframe.registry.coercion import split_query

    _, pairs = split_query(spec)
    options = dict(pairs)
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        raise InputError(f"fusion has no option {quote(unknown[0])}; it takes of=NAME,NAME and C")
    entries = [e.strip() for e in options.get("of", "").split(",") if e.strip()]
    if len(entries) < 2:
        raise InputError(
            f"fusion needs of= naming at least two attackers of grid.attackers (of=ecapa,xvector), got {len(entries)}"
        )
    members = tuple(_member(entry, attackers) for entry in entries)
    for k, member in enumerate(members):
        if is_fusion(member):
            raise InputError(f"of: {quote(entries[k])} is a fusion; fuse the attackers it fuses instead")
        if member in members[:k]:
            raise InputError(f"of: attacker {quote(member)} is named twice; fuse each attacker once")
    return FusedAttacker(members=members, C=_penalty(options["C"]) if "C" in options else 1.0)
