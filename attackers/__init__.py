"""Attackers: turn utterances into embeddings and full T x N ScoreSets.

The interface (:mod:`lidframe.attackers.base`): ``embed(utterances) -> (n, d)`` and
``score(trials, enrolment) -> ScoreSet``; :class:`EmbeddingAttacker` provides
``score`` (enrolment profiles + cosine) for anything that can ``embed``.

Built-in, with registry names: :class:`RandomAttacker` (``random``),
:class:`PrecomputedEmbeddings` (``precomputed``), and the torch speaker encoders
:class:`EcapaTdnn` (``ecapa``), :class:`XVector` (``xvector``) and the pretrained
:class:`Ge2e` (``ge2e``: Resemblyzer's GE2E weights, ``pip install -e '.[pretrained]'``).  ``import
lidframe.attackers`` does not import torch: the encoders load it on first access.
:class:`Utterance` and :func:`group_by_speaker` are re-exported from
:mod:`lidframe.data.utterance`.

The torch side of the folder: the shared batching, caching and checkpoint loading of the
encoders (:mod:`~lidframe.attackers.neural`), the filterbank front end
(:mod:`~lidframe.attackers.frontend`), the SpeechBrain-named layers and models
(:mod:`~lidframe.attackers.layers`, :mod:`~lidframe.attackers.ecapa_model`,
:mod:`~lidframe.attackers.xvector_model`) and the AAM-softmax training of a
semi-informed attacker (:mod:`~lidframe.attackers.training`).  Those modules import torch
through :mod:`~lidframe.attackers._torch`: without torch they fail with one line naming
what to install (:data:`TORCH_INSTALL_HINT`).
"""

from lidframe.data.utterance import Utterance, group_by_speaker

from .base import Attacker, EmbeddingAttacker
from .precomputed import PrecomputedEmbeddings
from .random import RandomAttacker

__all__ = [
    "TORCH_INSTALL_HINT",
    "Attacker",
    "EmbeddingAttacker",
    "Utterance",
    "group_by_speaker",
    "RandomAttacker",
    "PrecomputedEmbeddings",
    "EcapaTdnn",
    "XVector",
    "Ge2e",
]

#: What to install for the torch attackers (README.md, "Install"); quoted by every missing-torch error.
TORCH_INSTALL_HINT = (
    "pip install -e '.[audio]' (on a CPU-only machine install the CPU build of torch first: "
    "pip install torch --index-url https://download.pytorch.org/whl/cpu)"
)

_LAZY = {
    "EcapaTdnn": "lidframe.attackers.ecapa",
    "XVector": "lidframe.attackers.xvector",
    "Ge2e": "lidframe.attackers.ge2e",
}


def __getattr__(name):  # PEP 562: torch is imported only when an encoder is asked for
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'lidframe.attackers' has no attribute {name!r}")
