"""Each kind's contract is written once, as a Protocol, and everything else reads it.

The expectations here are written out by hand (what the contract said before it moved
into the Protocols), so a Protocol edited by mistake, or a reader that stops reading
it, fails here.
"""

import inspect
import re
import subprocess
import sys
from pathlib import Path

import attrs
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
from lidframe.testing import ConformanceError, check_attacker, check_calibrator, check_prior, check_recogniser

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
        "numeric options refused outside their declared ranges",
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


# -- capabilities: declared with their types and defaults, read in one place --
#: kind -> {capability: default}, written out by hand (what docs/plugins.md's table says).
CAPABILITY_DEFAULTS = {
    "attacker": {
        "input_files": None,
        "describe": None,
        "option_ranges": {},
        "reads_audio": True,
        "build_model": None,
        "output_layer": None,
        "output_layer_inputs": None,
        "window_features": None,
    },
    "calibrator": {
        "input_files": None,
        "describe": None,
        "option_ranges": {},
        "input_scale": "znorm",
        "absolute_llr": True,
        "fit_rows": None,
        "llr_map": None,
        "to_dict": None,
        "refit_weighted": None,
    },
    "prior": {"input_files": None, "describe": None, "option_ranges": {}, "outside": 0.0},
    "recogniser": {"input_files": None, "describe": None, "option_ranges": {}, "sample_rate": 16000},
}


def test_each_kind_has_a_record_of_its_capabilities_with_their_defaults():
    assert tuple(registry.CAPABILITIES) == registry.KINDS
    for kind, defaults in CAPABILITY_DEFAULTS.items():
        assert attrs.asdict(registry.capabilities_of(kind, object()), recurse=False) == defaults, kind
    with pytest.raises(InputError, match="unknown component kind 'scorer'"):
        registry.capabilities_of("scorer", object())


def test_the_plugins_page_tables_every_capability_with_its_default():
    text = (Path(__file__).parents[1] / "docs" / "plugins.md").read_text(encoding="utf-8")
    table = text.split("| capability | kind | type | default | what it changes |")[1].split("\n\n")[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.strip().splitlines()[1:]]
    documented = {}
    for name, kind, _, default, _ in rows:
        kinds = registry.KINDS if kind == "every kind" else (kind,)
        for k in kinds:
            documented.setdefault(k, {})[name.strip("`").split("(")[0]] = default
    shown = {"none": None, "`True`": True, "`0.0`": 0.0, '`"znorm"`': "znorm", "`16000`": 16000, "`{}`": {}}
    assert {k: {n: shown[d] for n, d in v.items()} for k, v in documented.items()} == CAPABILITY_DEFAULTS


@pytest.mark.parametrize(
    ("kind", "base", "declared"),
    [
        ("calibrator", "lidframe.calibrators.base:Calibrator", {"describe", "llr_map", "to_dict"}),
        ("attacker", "lidframe.attackers.base:Attacker", set()),
        ("prior", "lidframe.core.priors:Prior", {"describe"}),
    ],
)
def test_each_base_class_declares_the_defaults(kind, base, declared):
    """The base classes hold each capability's default (their methods where they define one)."""
    cls = registry.discovery.import_target(base, base)
    found = attrs.asdict(registry.capabilities_of(kind, cls), recurse=False)
    assert {k for k, v in found.items() if callable(v)} == declared
    assert {k: v for k, v in found.items() if k not in declared} == {
        k: v for k, v in CAPABILITY_DEFAULTS[kind].items() if k not in declared
    }
    for name in CAPABILITY_DEFAULTS[kind]:
        if name not in ("fit_rows", "refit_weighted"):  # absent by default: the base class cannot hold a hook
            assert hasattr(cls, name), (base, name)


def test_declared_capabilities_are_read_with_their_types():
    from lidframe.attackers import PrecomputedEmbeddings, RandomAttacker
    from lidframe.calibrators import Identity, Logistic, Temperature
    from lidframe.core.priors import Uniform

    temperature = registry.capabilities_of("calibrator", Temperature())
    assert temperature.absolute_llr is False and callable(temperature.fit_rows)
    assert registry.capabilities_of("calibrator", Identity()).input_scale == "raw"
    assert registry.capabilities_of("calibrator", Logistic()).fit_rows is None
    assert registry.capabilities_of("attacker", RandomAttacker).reads_audio is False
    from lidframe.attackers import EcapaTdnn, Ge2e

    assert registry.capabilities_of("attacker", RandomAttacker).build_model is None  # not trainable
    ecapa, ge2e = registry.capabilities_of("attacker", EcapaTdnn()), registry.capabilities_of("attacker", Ge2e())
    assert callable(ecapa.build_model) and ecapa.output_layer is None  # trained whole
    assert all(
        callable(h) for h in (ge2e.build_model, ge2e.output_layer, ge2e.output_layer_inputs, ge2e.window_features)
    )
    assert callable(registry.capabilities_of("attacker", PrecomputedEmbeddings).input_files)
    # on a class, a value only its instances hold (an attrs field) reads as the default
    assert registry.capabilities_of("prior", Uniform).outside == 0.0
    assert registry.capabilities_of("prior", Uniform(outside="auto")).outside == "auto"

    class Plain:  # a duck-typed plugin with numpy values
        reads_audio = np.bool_(False)
        sample_rate = np.int64(8000)

    assert registry.capabilities_of("attacker", Plain()).reads_audio is False
    assert type(registry.capabilities_of("recogniser", Plain()).sample_rate) is int


#: (kind, capability, a wrong value, what the message says)
WRONG = [
    ("attacker", "reads_audio", "no", "reads_audio must be True or False, got 'no'"),
    ("attacker", "input_files", ["a.npy"], "input_files must be a method (or None, for none), got ['a.npy']"),
    ("attacker", "build_model", "ecapa", "build_model must be a method (or None, for none), got 'ecapa'"),
    ("attacker", "output_layer", 3, "output_layer must be a method (or None, for none), got 3"),
    ("calibrator", "absolute_llr", 1, "absolute_llr must be True or False, got 1"),
    ("calibrator", "input_scale", "log", "input_scale must be 'znorm' or 'raw', got 'log'"),
    ("calibrator", "fit_rows", True, "fit_rows must be a method (or None, for none), got True"),
    ("prior", "outside", 1.5, "outside = 1.5: the prior mass of 'nobody enrolled' must be in [0, 1) (or 'auto')"),
    ("prior", "describe", "mine", "describe must be a method (or None, for none), got 'mine'"),
    ("recogniser", "sample_rate", 16000.0, "sample_rate must be a positive integer (Hz), got 16000.0"),
]


@pytest.mark.parametrize(("kind", "name", "value", "message"), WRONG)
def test_a_capability_of_the_wrong_type_is_an_error_that_names_it(kind, name, value, message):
    cls = type("Wrong", (component_class(kind, {n for n, _, _ in EXPECTED[kind]}),), {name: value})
    for obj in (cls, cls()):
        with pytest.raises(InputError) as info:
            registry.capabilities_of(kind, obj)
        assert str(info.value).startswith(f"{kind} {__name__}:") and str(info.value).endswith(message)
        with pytest.raises(InputError) as info:
            check_contract(kind, obj, label="it")
        assert str(info.value) == f"it is not a {kind}: {message}"


class FlatPrior:
    """A duck-typed prior that passes every check of its suite."""

    def log_prior(self, enrolled):
        if len(enrolled) == 0:
            raise ValueError("no enrolled speakers")
        return np.full(len(enrolled), -np.log(len(enrolled)))


@pytest.mark.parametrize(("kind", "name", "value", "message"), [w for w in WRONG if w[0] != "recogniser"])
def test_the_suites_fail_a_capability_of_the_wrong_type(kind, name, value, message):
    from lidframe.attackers import RandomAttacker
    from lidframe.calibrators import Logistic

    good = {"attacker": RandomAttacker, "calibrator": Logistic, "prior": FlatPrior}[kind]
    # one that passes every check, subclassed with one wrong declaration
    cls = type(f"Wrong{good.__name__}", (good,), {name: value, "__module__": __name__})
    check = {"attacker": check_attacker, "calibrator": check_calibrator, "prior": check_prior}[kind]
    with pytest.raises(ConformanceError) as info:
        check(cls())
    contract = [line for line in str(info.value).splitlines() if line.startswith("  - contract: ")]
    assert contract == [f"  - contract: InputError: {kind} {__name__}:{cls.__qualname__} is not a {kind}: {message}"]


def test_the_recogniser_suite_fails_a_sample_rate_of_the_wrong_type():
    class Silent:
        sample_rate = 16000.0

        def transcribe(self, waveform, sample_rate):
            return ""

    with pytest.raises(ConformanceError) as info:
        check_recogniser(Silent())
    failed = str(info.value).splitlines()[1:]
    assert [line.split(":")[0] for line in failed] == ["  - contract", "  - sample_rate is a positive integer"]
    assert all(line.endswith("sample_rate must be a positive integer (Hz), got 16000.0") for line in failed)


def test_a_plugin_without_capabilities_passes_with_the_defaults():
    assert "contract" in check_prior(FlatPrior())  # no base class, no capability declared
    assert registry.capabilities_of("prior", FlatPrior()) == registry.PriorCapabilities()
    assert registry.describe_component(FlatPrior()) == "FlatPrior"


def test_capabilities_are_read_only_through_the_accessor():
    """No module reads a capability with its own getattr default: registry.capabilities is the one reader."""
    names = "reads_audio|input_files|absolute_llr|fit_rows|input_scale|outside|sample_rate|llr_map"
    probe = re.compile(rf"(getattr|hasattr)\([^,()]+, \"({names})\"")
    root = Path(__file__).parents[1]
    found = [
        f"{path.relative_to(root)}:{n}"
        for folder in ("lidframe", "attackers", "calibrators")
        for path in sorted((root / folder).rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if probe.search(line) and path.name != "capabilities.py"
    ]
    assert found == []
