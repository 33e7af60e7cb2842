"""Each kind's contract is written once, as a Protocol, and everything else reads it.

The expectations here are written out by hand (what the contract said before it moved
into the Protocols), so a Protocol edited by mistake, or a reader that stops reading
it, fails here.
"""

import inspect
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe import InputError, registry
from lidframe.registry import (
    AttackerLike,
    CalibratorLike,
    PriorLike,
    RecogniserLike,
    check_contract,
    contract_methods,
)
from lidframe.testing import ConformanceError, check_attacker, check_calibrator, check_prior

#: kind -> [(method, positional arguments, what it returns)], as the error messages say it.
EXPECTED = {
    "calibrator": [
        ("fit", ("scores", "labels"), "self, fitted on 1-D z-scores and 0/1 mated labels"),
        ("llr", ("scores",), "an ndarray of natural-log LLRs, same shape as scores, non-decreasing"),
    ],
    "prior": [
        ("log_prior", ("enrolled",), "an ndarray (N,) of natural-log probabilities summing to 1"),
    ],
    "attacker": [
        ("embed", ("utterances",), "an ndarray (n, d) of embeddings, one row per utterance"),
        ("score", ("trials", "enrolment"), "a lidframe.ScoreSet of every trial against every enrolled speaker"),
    ],
    "recogniser": [
        ("transcribe", ("waveform", "sample_rate"), "a str of the words recognised"),
    ],
}


def test_the_protocols_are_the_contracts():
    assert dict(registry.PROTOCOLS) == {
        "attacker": AttackerLike,
        "calibrator": CalibratorLike,
        "prior": PriorLike,
        "recogniser": RecogniserLike,
    }
    assert registry.KINDS == ("attacker", "calibrator", "prior", "recogniser")
    for kind, expected in EXPECTED.items():
        assert [(m.name, m.arguments, m.returns) for m in contract_methods(kind)] == expected
        assert [m.call() for m in contract_methods(kind)] == [f"{n}({', '.join(a)})" for n, a, _ in expected]
    with pytest.raises(InputError, match="unknown component kind 'scorer'"):
        contract_methods("scorer")


def component_class(kind: str, present: set[str]) -> type:
    """A class with the methods of *kind* named in *present*, each taking the contract's arguments."""
    namespace = {}
    for name, arguments, _ in EXPECTED[kind]:
        if name in present:
            source = f"def {name}(self, {', '.join(arguments)}):\n    return self\n"
            exec(source, namespace)
    return type(f"Partial{kind.title()}", (), {k: v for k, v in namespace.items() if k in present})


@given(data=st.data())
def test_check_contract_lists_exactly_the_missing_methods(data):
    kind = data.draw(st.sampled_from(sorted(EXPECTED)))
    names = [name for name, _, _ in EXPECTED[kind]]
    present = set(data.draw(st.lists(st.sampled_from(names), unique=True)))
    cls = component_class(kind, present)
    missing = [f"missing {n}({', '.join(a)}) returning {r}" for n, a, r in EXPECTED[kind] if n not in present]
    for obj in (cls, cls()):  # a class and an instance alike
        if not missing:
            check_contract(kind, obj)
            continue
        with pytest.raises(InputError) as info:
            check_contract(kind, obj, label="it")
        assert str(info.value) == f"it is not a {kind}: " + "; ".join(missing)


@pytest.mark.parametrize(
    ("kind", "base"),
    [
        ("calibrator", "lidframe.calibrators.base:Calibrator"),
        ("attacker", "lidframe.attackers.base:Attacker"),
        ("prior", "lidframe.core.priors:Prior"),
    ],
)
def test_each_base_class_takes_the_arguments_of_its_protocol(kind, base):
    cls = registry.discovery.import_target(base, base)
    check_contract(kind, cls)
    for name, arguments, _ in EXPECTED[kind]:
        positional = [
            p.name
            for p in inspect.signature(getattr(cls, name)).parameters.values()
            if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
        ]
        assert positional == ["self", *arguments], (base, name)
        assert f"registry.{registry.PROTOCOLS[kind].__name__}" in inspect.getdoc(getattr(cls, name)), (base, name)


def test_the_suites_check_the_protocol_first():
    class Nothing:
        pass

    for check, kind in ((check_calibrator, "calibrator"), (check_prior, "prior"), (check_attacker, "attacker")):
        with pytest.raises(ConformanceError) as info:
            check(Nothing())
        first = str(info.value).splitlines()[1]
        wanted = "; ".join(f"missing {n}({', '.join(a)}) returning {r}" for n, a, r in EXPECTED[kind])
        assert first.startswith("  - contract: InputError: ") and first.endswith(f"is not a {kind}: {wanted}")


def test_the_suites_run_the_same_checks_in_the_same_order():
    from lidframe.attackers import RandomAttacker
    from lidframe.calibrators import Logistic, Temperature
    from lidframe.core.priors import Uniform

    calibrator_checks = [
        "contract",
        "input_scale is 'znorm' or 'raw'",
        "get_params and clone",
        "unfitted llr raises NotFittedError",
        "fit returns self, input untouched",
        "llr keeps shape, returns floats",
        "llr finite and non-decreasing",
        "llr_map() agrees with llr()",
        "deterministic fit",
        "to_dict/from_dict JSON round trip",
        "bad input raises ValueError",
    ]
    assert check_calibrator(Logistic()) == calibrator_checks
    assert check_calibrator(Temperature) == calibrator_checks  # a class, fitted on dev rows
    assert check_prior(Uniform()) == [
        "contract",
        "log_prior shape and normalisation",
        "log_prior follows the id order",
        "empty ids raise ValueError",
        "outside is a mass in [0, 1) or 'auto'",
    ]
    assert check_attacker(RandomAttacker()) == [
        "contract",
        "embed shape, determinism, batch independence",
        "score returns the full T x N ScoreSet",
        "bad input raises ValueError",
        "run options named in the constructor",
    ]


def test_a_fit_that_fails_stops_the_fitted_checks():
    class Refuses:
        def get_params(self, deep=True):
            return {}

        def fit(self, scores, labels):
            raise RuntimeError("no")

        def llr(self, scores):
            raise RuntimeError("unfitted")

    with pytest.raises(ConformanceError) as info:
        check_calibrator(Refuses())
    failed = [line.split(":")[0].strip(" -") for line in str(info.value).splitlines()[1:]]
    assert failed == ["unfitted llr raises NotFittedError", "fit returns self, input untouched"]
    assert "RuntimeError: no" in str(info.value)


@pytest.mark.slow
def test_the_contract_is_read_where_docstrings_are_stripped():
    code = (
        "from lidframe.registry import check_contract\n"
        "try:\n    check_contract('prior', object(), label='x')\n"
        "except Exception as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-OO", "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "x is not a prior: missing log_prior(enrolled) returning np.ndarray"


def test_the_wing_reexports_its_public_api():
    from lidframe.registry import coercion, contracts, discovery, specs

    for name in registry.__all__:
        assert hasattr(registry, name), name
    for module in (coercion, contracts, discovery, specs):
        for name in module.__all__:
            assert not name.startswith("_")
    assert np.isfinite(registry.create("prior", "uniform").log_prior(["a", "b"])).all()


def test_the_prior_suite_checks_an_outside_attribute():
    """A prior's outside must be a mass in [0, 1) or 'auto'; a prior without one is the closed set."""
    import numpy as np

    from lidframe.core.priors import Uniform

    class Flat:
        def __init__(self, outside):
            self.outside = outside

        def log_prior(self, enrolled):
            if len(enrolled) == 0:
                raise ValueError("no enrolled speakers")
            return np.full(len(enrolled), -np.log(len(enrolled)))

    for good in (0.0, 0.3, "auto"):
        assert "outside is a mass in [0, 1) or 'auto'" in check_prior(Flat(good))
    for bad in (1.0, -0.2, "most", float("nan")):
        with pytest.raises(ConformanceError, match="outside is a mass.*InputError: outside"):
            check_prior(Flat(bad))
    assert "outside is a mass in [0, 1) or 'auto'" in check_prior(Uniform(outside=0.5))
