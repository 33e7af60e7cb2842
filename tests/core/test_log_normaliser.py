"""log_normaliser against 50-digit arithmetic: a few ulp for every π_∅ in (0, 1) and every E.

The reference is the definition log Z = log(π_∅ + (1 - π_∅) e^E) evaluated by mpmath with
50 significant digits left after the cancellation near Z = 1 (the working precision is
raised by the digits that |E| < 1 and 1 - π_∅ < 1 cost), so it is exact to well below a
float64 ulp.  Before issue 39 the E >= 0 branch, E + log1p(π_∅ expm1(-E)), cancelled as
π_∅ -> 1: relative error 2.8e-11 at π_∅ = 1 - 1e-6, 1.1e-8 at 1 - 1e-9, 0.9 at 1 - 2^-53.
"""

import math

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lidframe.core.openset import log_normaliser

mpmath = pytest.importorskip("mpmath", reason="mpmath is not installed (pip install -e '.[test]')")

ULP = 2.0**-52
"""Relative spacing of float64 numbers in [1, 2)."""

TOLERANCE_ULP = 2.0
"""What "a few ulp" means in the docstring and docs/theory.md."""

SMALLEST_NORMAL = 2.0**-1022
"""Below this the result is subnormal and only its absolute error can be small."""

# π_∅ anywhere in (0, 1), and close to 1 where the old form cancelled
outsides = st.one_of(
    st.floats(0.0, 1.0, exclude_min=True, exclude_max=True),
    st.floats(0.0, 16.0).map(lambda k: 1.0 - 10.0**-k).filter(lambda p: 0.0 < p < 1.0),
    st.just(1.0 - 2.0**-53),
)
# E from very negative to very large, and tiny magnitudes (Z close to 1)
evidences = st.one_of(
    st.floats(-700.0, 2000.0),
    st.floats(-300.0, 2.0).flatmap(lambda k: st.sampled_from([10.0**k, -(10.0**k)])),
)


def reference_log_z(evidence: float, outside: float) -> mpmath.mpf:
    """log(π_∅ + (1 - π_∅) e^E) with 50 significant digits (mpmath)."""
    lost = max(0, -math.floor(math.log10(abs(evidence)))) if evidence else 0
    lost += max(0, -math.floor(math.log10(1.0 - outside)))
    with mpmath.workdps(50 + lost + 5):
        pi = mpmath.mpf(outside)
        return mpmath.log(pi + (1 - pi) * mpmath.exp(mpmath.mpf(evidence)))


@example(evidence=20.0, outside=1.0 - 1e-6)
@example(evidence=3.0, outside=1.0 - 1e-9)
@example(evidence=1e-3, outside=0.75)
@example(evidence=800.0, outside=1.0 - 2.0**-53)
@given(evidence=evidences, outside=outsides)
def test_log_normaliser_is_within_a_few_ulp_of_fifty_digit_arithmetic(evidence, outside):
    want = reference_log_z(evidence, outside)
    got = float(log_normaliser([evidence], outside)[0])
    error = abs(mpmath.mpf(got) - want)
    if abs(want) >= SMALLEST_NORMAL:
        assert error <= TOLERANCE_ULP * ULP * abs(want), (got, float(want), float(error / abs(want) / ULP))
    else:
        assert error <= 2.0**-1070


@pytest.mark.parametrize(
    ("outside", "before"),
    [(1.0 - 1e-6, 2.8e-11), (1.0 - 1e-9, 1.1e-8)],
)
def test_the_audited_cases_are_now_exact_to_an_ulp(outside, before):
    # the audit's worst relative errors (before) came from E of a few nats
    evidence = np.linspace(0.0, 40.0, 4001)[1:]
    want = np.array([float(reference_log_z(float(e), outside)) for e in evidence])
    relative = np.abs(log_normaliser(evidence, outside) - want) / np.abs(want)
    assert relative.max() <= TOLERANCE_ULP * ULP < before
