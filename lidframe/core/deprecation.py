"""One release of deprecation for options given by position: :func:`keyword_only`."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar, cast

__all__ = ["keyword_only"]

P = ParamSpec("P")
R = TypeVar("R")


def keyword_only(*names: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Make *names* (keyword-only parameters, in order) still accept a positional value, with a FutureWarning.

    For one release: a call that gives them by position warns which keyword to use and
    runs as the keyword call; more positional values than *names* are a TypeError.
    """

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        parameters = inspect.signature(func).parameters.values()
        n_positional = sum(p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for p in parameters)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            extra = args[n_positional:]
            if extra:
                if len(extra) > len(names):
                    raise TypeError(
                        f"{func.__name__}() takes {n_positional} positional arguments but {len(args)} were given"
                    )
                given = names[: len(extra)]
                for name in given:
                    if name in kwargs:
                        raise TypeError(f"{func.__name__}() got multiple values for argument {name!r}")
                keywords = ", ".join(f"{name}=..." for name in given)
                warnings.warn(
                    f"{func.__name__}(): pass {keywords} by keyword; giving {' and '.join(given)} by position "
                    "is deprecated and stops working in the next release",
                    FutureWarning,
                    stacklevel=2,
                )
                kwargs.update(zip(given, extra))
            return func(*args[:n_positional], **kwargs)

        return cast("Callable[P, R]", wrapper)

    return decorate
