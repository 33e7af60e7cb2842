"""The provenance of the real-voice demo's score files: the record ``lidframe score`` writes into its own.

:func:`split_provenance` makes it with :func:`lidframe.report.score_files.score_provenance`,
the function behind ``lidframe score``: the attacker's spec and settings, its checkpoint
or default weights and the weights its model scored with, each data dir's tables and the
audio they list (every file hashed once per run, :class:`~lidframe.data.digests.DigestCache`),
the rung of the ladder a row stands for, the command line and the software.  The report
carries it onto the page, under "Settings and provenance".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lidframe.data.scenario import SCENARIOS

if TYPE_CHECKING:
    from lidframe.data.digests import DigestCache
    from lidframe.data.provenance import ScoreProvenance
    from lidframe.data.utterance import Utterance

__all__ = ["split_provenance"]


def split_provenance(
    label: str,
    spec: str,
    params: Mapping[str, Any],
    attacker: object,
    data_dirs: Sequence[tuple[str, Path, Sequence[Utterance]]],
    *,
    digests: DigestCache,
) -> ScoreProvenance:
    """The provenance of one split's score file of the row *label*, which *attacker* scored.

    Parameters
    ----------
    label : str
        The row (``"pitch/ge2e/ignorant"``); a last part naming a rung of
        :data:`~lidframe.data.scenario.SCENARIOS` is its scenario.
    spec, params : str, mapping
        The attacker as a registry spec and its parameters (``"ecapa"``, ``{"checkpoint": ...}``).
    attacker : object
        The attacker that scored (after it scored: its weights are known).
    data_dirs : sequence of (str, path, sequence of Utterance)
        ``("enrol", folder, utterances)`` and ``("trials", folder, utterances)``.
    digests : DigestCache
        Where each file is hashed once per run.

    Returns
    -------
    ScoreProvenance
    """
    from lidframe.report.score_files import score_provenance
    from lidframe.report.sections.provenance_model import command_line

    rung = SCENARIOS.get(label.rsplit("/", 1)[-1])
    scenario = None
    if rung is not None:
        checkpoint = params.get("checkpoint")
        model = f"{spec}, checkpoint {checkpoint}" if checkpoint else f"{spec}, its default weights"
        folders = {role: str(folder) for role, folder, _ in data_dirs}
        stated = rung.stated(enrolment=folders["enrol"], trials=[folders["trials"]], model=model)
        scenario = {"name": rung.name, "code": rung.code, "stated": stated}
    return score_provenance(
        spec, params, attacker, data_dirs, command=command_line(), scenario=scenario, digest=digests.digest
    )
