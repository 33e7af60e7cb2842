"""Attackers: turn utterances into embeddings and full T x N ScoreSets.

The interface (:mod:`lidframe.attackers.base`): ``embed(utterances) -> (n, d)`` and
``score(trials, enrolment) -> ScoreSet``; :class:`EmbeddingAttacker` provides
``score`` (enrolment profiles + cosine) for anything that can ``embed``.

Built-in: :class:`RandomAttacker` (registry name ``random``).  ``import lidframe``
does not import this package; attackers that need torch import it only when used.
"""

from lidframe.attackers.base import Attacker, EmbeddingAttacker, Utterance, group_by_speaker
from lidframe.attackers.random import RandomAttacker

__all__ = ["Attacker", "EmbeddingAttacker", "Utterance", "group_by_speaker", "RandomAttacker"]
