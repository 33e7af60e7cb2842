"""lidframe: audit voice anonymisation against 1-to-N linkage with Local Information Disclosure.

>>> import lidframe
>>> from lidframe.data.simulate import simulate_system
>>> dev, ev = simulate_system(leakage=0.5, seed=0)
>>> result = lidframe.evaluate(dev, ev)
>>> sorted(k for k in ("alid", "pdr", "lid_max") if k in result.summary)
['alid', 'lid_max', 'pdr']

Importing lidframe loads numpy, scipy, scikit-learn (and the pandas it brings) and attrs,
never torch or matplotlib: those load when a component that needs them is used.

The top level re-exports the everyday API (``evaluate``, ``evaluate_fitted``,
``fit_calibrator``, ``Result``, ``ScoreSet``, the ``EvaluateOptions``, ``Bootstrap`` and ``Engine``
option records, the priors, ``sensitivity``, ``per_speaker``, the errors); everything else lives in its wing
(``lidframe.data``, ``metrics``, ``stats``, ``calibrators``, ``core``, ``attackers``,
``analyses``, ``privacy``, ``audio``, ``grid``, ``cli``: see ``docs/architecture.md``).
"""

from lidframe._version import __version__
from lidframe.analyses.per_speaker import PerSpeakerResult, per_speaker
from lidframe.analyses.sensitivity import SensitivityResult, sensitivity
from lidframe.core.engine import Engine
from lidframe.core.evaluation import evaluate, evaluate_fitted, fit_calibrator
from lidframe.core.options import EvaluateOptions
from lidframe.core.priors import Explicit, Uniform, WatchList
from lidframe.core.result import Result
from lidframe.data.scoreset import ScoreSet
from lidframe.errors import InputError, NotFittedError
from lidframe.stats.bootstrap import Bootstrap

__all__ = [
    "__version__",
    "ScoreSet",
    "evaluate",
    "evaluate_fitted",
    "fit_calibrator",
    "EvaluateOptions",
    "Bootstrap",
    "Engine",
    "Result",
    "sensitivity",
    "SensitivityResult",
    "per_speaker",
    "PerSpeakerResult",
    "Uniform",
    "WatchList",
    "Explicit",
    "InputError",
    "NotFittedError",
]
