"""lidframe: audit voice anonymisation against 1-to-N linkage with Local Information Disclosure.

>>> import lidframe
>>> from lidframe.data.simulate import simulate_system
>>> dev, ev = simulate_system(leakage=0.5, seed=0)
>>> result = lidframe.evaluate(dev, ev)
>>> sorted(k for k in ("alid", "pdr", "lid_max") if k in result.summary)
['alid', 'lid_max', 'pdr']

Importing lidframe loads numpy, scipy, scikit-learn and attrs only; torch and
matplotlib load when a component that needs them is used.
"""

from lidframe.analyses.sensitivity import SensitivityResult, sensitivity
from lidframe.core.evaluation import Result, evaluate, fit_calibrator
from lidframe.core.priors import Explicit, Uniform, WatchList
from lidframe.data.scoreset import ScoreSet
from lidframe.errors import InputError, NotFittedError

__all__ = [
    "ScoreSet",
    "evaluate",
    "fit_calibrator",
    "Result",
    "sensitivity",
    "SensitivityResult",
    "Uniform",
    "WatchList",
    "Explicit",
    "InputError",
    "NotFittedError",
]
