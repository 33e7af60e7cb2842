"""The records of a grid spec: :class:`GridSpec`, :class:`SystemSpec`, :class:`DataDirSource`.

:class:`GridSpec` is what :func:`~lidframe.grid.spec.load_grid_spec` returns, its source
paths absolute; :class:`SystemSpec` is one ``[systems.NAME]`` table.  With them, the
attacker-spec helpers of the ``semi-informed`` scenario: :func:`attacker_name` (how
``[systems.NAME.adapted]`` keys an attacker) and :func:`with_checkpoint` (the attacker
with its adapted checkpoint).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict
from urllib.parse import quote as url_quote

import attrs

from lidframe.core.options import EvaluateOptions
from lidframe.data.scenario import SCENARIOS
from lidframe.stats.bootstrap import Bootstrap

if TYPE_CHECKING:
    from lidframe.data.kaldi import WavPaths

__all__ = [
    "GridSpec",
    "SystemSpec",
    "DataDirSource",
    "CHECKPOINT",
    "attacker_name",
    "with_checkpoint",
    "source_wav_paths",
]


class DataDirSource(TypedDict):
    """A system split given as Kaldi data dirs (absolute paths): one enrolment dir, one or more trial dirs.

    ``original_enrol``, where given, is the clear-speech enrolment of the same speakers,
    which the ``ignorant`` scenario enrols.  ``wav_paths``, where given, says how relative
    audio paths in their ``wav.scp`` files are resolved (:func:`source_wav_paths`).
    """

    enrol: str
    trials: list[str]
    original_enrol: NotRequired[str]
    wav_paths: NotRequired[WavPaths]


def source_wav_paths(source: DataDirSource) -> WavPaths:
    """How the data dirs of *source* resolve relative audio paths: its ``wav_paths``, else ``"cwd"`` (as Kaldi does).

    Left out of a source that does not set it, so that such a source -- and the score
    cache keyed by it -- is what it was before the key existed.
    """
    return source.get("wav_paths", "cwd")


#: The parameter of an attacker that names its model's weights (what ``[systems.NAME.adapted]`` replaces).
CHECKPOINT = "checkpoint"


def attacker_name(spec: str) -> str:
    """The name of an attacker spec, as ``[systems.NAME.adapted]`` keys it: ``"ecapa"`` for ``"ecapa?device=cpu"``."""
    return spec.partition("?")[0].strip()


def with_checkpoint(spec: str, checkpoint: str) -> str:
    """The attacker *spec* with its ``checkpoint`` parameter set to *checkpoint* (replaced, or added last).

    Examples
    --------
    >>> with_checkpoint("ecapa?checkpoint=clear.ckpt&device=cpu", "/m/adapted b3.ckpt")
    'ecapa?checkpoint=/m/adapted%20b3.ckpt&device=cpu'
    >>> with_checkpoint("xvector", "/m/x.ckpt")
    'xvector?checkpoint=/m/x.ckpt'
    """
    from lidframe.registry.coercion import split_query

    name, pairs = split_query(spec)
    pairs = [(k, checkpoint if k == CHECKPOINT else v) for k, v in pairs]
    if all(k != CHECKPOINT for k, _ in pairs):
        pairs.append((CHECKPOINT, checkpoint))
    return name + "?" + "&".join(f"{url_quote(k, safe='')}={url_quote(v, safe='/,:')}" for k, v in pairs)


@attrs.frozen
class SystemSpec:
    """One system: dev and eval sources, each a score-set path or ``{"enrol": dir, "trials": [dirs]}``.

    Attributes
    ----------
    name : str
    dev, eval : str or DataDirSource
        Absolute paths.
    adapted : dict
        ``[systems.NAME.adapted]``: attacker name -> absolute path of its checkpoint adapted on
        this system's anonymised training speech (the ``semi-informed`` scenario); empty
        when not given.
    utility : str or None
        The absolute path of the system's utility file (``utility =``, the JSON of
        ``lidframe utility --json``), checked when the spec is read; None when not given.
        No cell reads it (it is no cell input): ``lidframe report`` reads it afresh.
    """

    name: str
    dev: str | DataDirSource
    eval: str | DataDirSource
    adapted: dict[str, str] = attrs.field(factory=dict)
    utility: str | None = None

    @property
    def needs_attacker(self) -> bool:
        """True when the sources are data dirs, which an attacker must score first."""
        return isinstance(self.dev, dict)

    def scored_source(self, split: str, scenario: str | None) -> DataDirSource:
        """The data dirs a data-dir *split* is scored from in *scenario* (None: the grid has no scenarios).

        The ``ignorant`` scenario enrols the split's ``original_enrol``; the others (and no
        scenario) its ``enrol``; the trials are the split's in each.
        """
        source = getattr(self, split)
        enrol = source["original_enrol"] if scenario is not None and SCENARIOS[scenario].original_enrolment else None
        scored: DataDirSource = {"enrol": enrol or source["enrol"], "trials": list(source["trials"])}
        if "wav_paths" in source:
            scored["wav_paths"] = source["wav_paths"]
        return scored

    def scoring_attacker(self, attacker: str, scenario: str | None) -> str:
        """The attacker spec that scores in *scenario*: *attacker*, or for ``semi-informed`` with its adapted checkpoint.

        An attacker without an entry in :attr:`adapted` (one that has no model: validation
        requires one for every attacker that takes a checkpoint) scores as it is.
        """
        if scenario is None or not SCENARIOS[scenario].adapted_model:
            return attacker
        checkpoint = self.adapted.get(attacker_name(attacker))
        return attacker if checkpoint is None else with_checkpoint(attacker, checkpoint)


@attrs.frozen
class GridSpec:
    """A validated grid spec (see the module docstring).

    Attributes
    ----------
    path : pathlib.Path
        The TOML file.
    digest : str
        SHA-256 of its bytes.
    systems : tuple of SystemSpec
        Source paths absolute.
    calibrators, priors, attackers, mechanisms : tuple of str
        Component specs (``attackers`` and ``mechanisms`` empty when not given).
    scenarios : tuple of str
        Threat-model scenarios (names of :data:`lidframe.data.scenario.SCENARIOS`) of the
        data-dir systems' cells; empty when not given (the cells have none).
    seeds : tuple of int
        Bootstrap seeds, one cell each.
    evaluate : EvaluateOptions
        How every cell is evaluated: ``znorm_ddof``, ``[grid.bootstrap]`` (each cell's
        seed replaces its ``seed``) and ``[grid.evaluate]`` (``binary_metrics``,
        ``misattribution_threshold``, ``operating_point``); the engine is the machine's.
    longitudinal : dict or None
        ``[grid.longitudinal]``: ``{"k": [...], "fusions": [...], "groups": int}``.
    legal : bool
        ``[grid] legal``: whether every cell computes linkability and singling out (its
        summary's ``legal`` block, :func:`lidframe.analyses.legal_criteria.legal_criteria`);
        true unless the spec says ``legal = false``.
    """

    path: Path
    digest: str
    systems: tuple[SystemSpec, ...]
    calibrators: tuple[str, ...]
    priors: tuple[str, ...]
    attackers: tuple[str, ...]
    mechanisms: tuple[str, ...]
    seeds: tuple[int, ...]
    evaluate: EvaluateOptions
    longitudinal: dict[str, Any] | None = None
    scenarios: tuple[str, ...] = ()
    legal: bool = True

    @property
    def znorm_ddof(self) -> int:
        """``[grid] znorm_ddof``: :attr:`evaluate`'s."""
        return self.evaluate.znorm_ddof

    @property
    def bootstrap(self) -> Bootstrap | None:
        """``[grid.bootstrap]`` (None: no intervals): :attr:`evaluate`'s."""
        return self.evaluate.bootstrap

    def n_cells(self) -> int:
        """Number of cells the grid expands to (attacker x mechanism x scenario only for data-dir systems)."""
        return _count_cells(
            self.systems, self.attackers, self.mechanisms, self.calibrators, self.priors, self.seeds, self.scenarios
        )


def _count_cells(systems, attackers, mechanisms, calibrators, priors, seeds, scenarios=()) -> int:
    with_attacker = sum(1 for s in systems if s.needs_attacker)
    per_system = len(attackers) * max(1, len(mechanisms)) * max(1, len(scenarios))
    pairs = with_attacker * per_system + (len(systems) - with_attacker)
    return pairs * len(calibrators) * len(priors) * len(seeds)
