"""Attackers: turn audio or embeddings into ScoreSets (T trials x N enrolled speakers).

The attacker interface -- ``embed(utterances) -> (n, d)`` and
``score(trials, enrolment) -> ScoreSet`` -- and the built-in attackers (ECAPA-TDNN,
x-vector, random, precomputed embeddings) live here.  Nothing in this package may be
imported by ``import lidframe``: attackers pull in torch, and only when asked for.
"""

__all__: list[str] = []
