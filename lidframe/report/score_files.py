"""The provenance a score file records of its making: :func:`score_provenance` (``lidframe score``, the real-voice demo).

A fused score set's (``lidframe fuse``, the real-voice demo's fused rows) is
:func:`fusion_provenance`; :func:`fuse_score_files` is their shared path from the input
files to the fused sets and that record.

It digests what the attacker read -- the files its spec names or it declares, each data
dir's tables and, where it reads audio, the audio they list -- and states its spec,
settings and code, the weights its model scored with, the rung of the ladder, the command
line and the software (:func:`~lidframe.report.sections.environment.environment`), as a
:class:`~lidframe.data.provenance.ScoreProvenance` that
:meth:`ScoreSet.save <lidframe.data.scoreset.ScoreSet.save>` stores in the file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lidframe.data.fileio import file_sha256
from lidframe.data.provenance import AttackerRecord, DataDirRecord, FusedInput, ScoreProvenance
from lidframe.data.provenance_parts import Digest
from lidframe.data.utterance import Utterance
from lidframe.registry import spec_inputs
from lidframe.registry.coercion import split_query
from lidframe.report.sections.environment import environment, environment_table, packages_used

if TYPE_CHECKING:
    from lidframe.core.fusion import FusionWeights
    from lidframe.data.scoreset import ScoreSet

__all__ = ["score_provenance", "fusion_provenance", "fuse_score_files"]


def _merged_spec(spec: str, params: Mapping[str, Any]) -> str:
    """``--attacker``'s spec with the flags' parameters (*params*) in it, as :func:`lidframe.registry.create` applies them."""
    from urllib.parse import quote, urlencode

    name, pairs = split_query(spec)
    merged = {**dict(pairs), **{key: _spec_text(value) for key, value in params.items()}}
    return f"{name}?{urlencode(merged, quote_via=quote)}" if merged else name


def _spec_text(value: Any) -> str:
    """A parameter as a spec writes it: a sequence comma-separated, a flag ``true``/``false``, a path as it is."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(_spec_text(item) for item in value)
    return os.fspath(value) if isinstance(value, os.PathLike) else str(value)


def _file_roles(files: Sequence[Path], settings: Mapping[str, str], attacker: object) -> dict[str, Path]:
    """Each file an attacker reads by its role: the setting that names it, ``default weights`` or ``declared file``.

    A file the attacker declares for a setting that names a folder (a cohort data dir's
    tables and audio) is ``"SETTING PATH"``, its path relative to that folder.
    """
    named: dict[str, str] = {}
    folders: dict[str, str] = {}
    for key, value in settings.items():
        for part in [value, *value.split(",")]:
            if part and os.path.isfile(part):
                named.setdefault(os.path.abspath(part), key)
            elif part and os.path.isdir(part):
                folders.setdefault(os.path.abspath(part), key)
    for path in files:
        for folder, key in folders.items():
            if str(path) not in named and Path(folder) in (Path(path).parents or ()):
                named[str(path)] = f"{key} {os.path.relpath(path, folder)}"
    default = getattr(attacker, "default_weights", None)
    weights = default() if callable(default) and getattr(attacker, "checkpoint", None) is None else None
    roles: dict[str, Path] = {}
    for path in files:
        role = named.get(str(path)) or (
            "default weights" if weights is not None and os.path.abspath(weights) == str(path) else "declared file"
        )
        roles[role if role not in roles else f"{role} {len(roles) + 1}"] = path
    return roles


def score_provenance(
    spec: str,
    params: Mapping[str, Any],
    attacker: object,
    data_dirs: Sequence[tuple[str, str | Path, Sequence[Utterance]]],
    *,
    command: str | None,
    scenario: Mapping[str, str] | None = None,
    digest: Digest = file_sha256,
) -> ScoreProvenance:
    """The provenance of a score set *attacker* made (after it scored: its weights are known).

    Parameters
    ----------
    spec : str
        ``--attacker``.
    params : mapping
        Parameters given beside the spec (``lidframe score``'s flags), as
        :func:`lidframe.registry.create` takes them.
    attacker : object
        The attacker built from them (its ``weights_sha256``, where it has one).
    data_dirs : sequence of (str, path, sequence of Utterance)
        (role, folder, the utterances read from it): the enrolment dir, then each trial dir.
    command : str or None
        The command line.
    scenario : mapping, optional
        ``{"name", "code", "stated"}`` of the rung (``--scenario``).
    digest : callable
        How a file is digested (default :func:`~lidframe.data.fileio.file_sha256`; a
        :meth:`DigestCache.digest <lidframe.data.digests.DigestCache.digest>` hashes each file once).

    Returns
    -------
    ScoreProvenance
        Every file digested now (:mod:`lidframe.data.provenance`).
    """
    merged = _merged_spec(spec, params)
    name, pairs = split_query(merged)
    found = spec_inputs("attacker", merged)
    record = AttackerRecord.of(
        name,
        spec=spec,
        settings=dict(pairs),
        code=found.version,
        reads_audio=found.reads_audio,
        files=_file_roles(found.files, dict(pairs), attacker),
        weights_sha256=getattr(attacker, "weights_sha256", None),
        digest=digest,
    )
    dirs = [
        DataDirRecord.of(role, folder, utts, audio=found.reads_audio, digest=digest) for role, folder, utts in data_dirs
    ]
    software = [(key, value) for key, _, value in environment_table(environment(packages_used(attackers=[name])))]
    return ScoreProvenance.make(record, dirs, command=command, software=software, scenario=scenario)


def fusion_provenance(
    fusion: FusionWeights,
    inputs: Sequence[tuple[str, str | Path]],
    *,
    command: str | None,
    names: Sequence[str] | None = None,
) -> ScoreProvenance:
    """The provenance of a fused score set (``lidframe fuse``): its inputs, digested, and the fitted weights.

    Parameters
    ----------
    fusion : FusionWeights
        The fit (:func:`lidframe.core.fusion.fit_fusion`).
    inputs : sequence of (str, path)
        (role, score file) of every input, dev and eval: ``("dev 1", "a_dev.npz")``, ...; the
        weight of input k is named after the k-th dev file.
    command : str or None
        The command line.
    names : sequence of str, optional
        What names input k beside its weight (a grid's attacker spec); default: the k-th
        dev file's name.

    Returns
    -------
    ScoreProvenance
        Attacker ``fusion`` (no audio, no data dirs of its own), its settings the weights
        (``weight k``, the dev file's name beside it), the offset, the z-norm and the
        penalty; ``fused_from`` each input with the provenance it holds.
    """
    from lidframe import __version__

    dev_files = [path for role, path in inputs if role.startswith("dev ")]
    shown = [Path(path).name for path in dev_files] if names is None else list(names)
    settings: dict[str, Any] = {"combines": "row z-scores of each input (docs/theory.md)"}
    for k, (weight, name) in enumerate(zip(fusion.weights, shown, strict=True), start=1):
        settings[f"weight {k}"] = f"{float(weight)!r} ({name})"
    settings.update(
        offset=repr(fusion.offset),
        znorm_ddof=fusion.znorm_ddof,
        C=fusion.C,
        dev_pairs=f"{fusion.n_mated} mated, {fusion.n_non_mated} non-mated ({fusion.n_fit_pairs} fitted on)",
    )
    record = AttackerRecord.of("fusion", settings=settings, code=f"lidframe {__version__}", reads_audio=False)
    fused_from = [FusedInput.of(role, path) for role, path in inputs]
    software = [(key, value) for key, _, value in environment_table(environment(packages_used()))]
    return ScoreProvenance.make(record, [], command=command, software=software, fused_from=fused_from)


def fuse_score_files(
    dev: Sequence[str | Path],
    eval: Sequence[str | Path],
    *,
    C: float | None = 1.0,
    znorm_ddof: int = 1,
    command: str | None,
) -> tuple[FusionWeights, dict[str, ScoreSet], ScoreProvenance]:
    """Fuse K attackers' score files: weights fitted on the dev files, applied to both splits, and the provenance.

    The path of ``lidframe fuse`` (and of the real-voice demo's fused rows): each file read
    (:meth:`ScoreSet.load <lidframe.data.scoreset.ScoreSet.load>`), the weights fitted on
    the dev sets' pairs (:func:`lidframe.core.fusion.fit_fusion`), both splits fused
    (:func:`~lidframe.core.fusion.apply_fusion`), and :func:`fusion_provenance` of it all;
    the caller writes the two sets (with that provenance) where it wants them.

    Parameters
    ----------
    dev, eval : sequence of path, length K >= 2 each
        The K attackers' dev and eval score files; the k-th eval file is the k-th dev
        file's attacker.
    C : float or None
        Inverse L2 penalty on the weights (None: none).
    znorm_ddof : {0, 1}
        The ddof of the inputs' row z-norm.
    command : str or None
        The command line, for the provenance.

    Returns
    -------
    fusion : FusionWeights
    fused : dict
        ``{"dev": ScoreSet, "eval": ScoreSet}``, each (T, N) in its first file's order.
    provenance : ScoreProvenance
        Of both fused sets: the 2K inputs (``"dev 1"``, ..., ``"eval K"``) and the weights.

    Raises
    ------
    InputError
        A file that does not read as a score set, or what fitting or applying the fusion refuses
        (fewer than two sets, mismatched trials or speakers: the first, named).
    """
    from lidframe.core.fusion import apply_fusion, fit_fusion
    from lidframe.data.scoreset import ScoreSet

    dev_names, eval_names = [str(p) for p in dev], [str(p) for p in eval]
    dev_sets = [ScoreSet.load(path) for path in dev]
    eval_sets = [ScoreSet.load(path) for path in eval]
    fusion = fit_fusion(dev_sets, C=C, znorm_ddof=znorm_ddof, names=dev_names)
    fused = {
        "dev": apply_fusion(fusion, dev_sets, names=dev_names),
        "eval": apply_fusion(fusion, eval_sets, names=eval_names),
    }
    inputs = [
        (f"{split} {k}", path) for split, paths in (("dev", dev), ("eval", eval)) for k, path in enumerate(paths, 1)
    ]
    return fusion, fused, fusion_provenance(fusion, inputs, command=command)
