"""Every numeric option of every built-in attacker and recogniser: refused outside its range, taken inside it.

The ranges are written out here by hand (:data:`EXPECTED`, what docs/plugins.md's table
says), not read from the classes' ``option_ranges``: the tests draw values outside each
(Hypothesis) and expect one :class:`InputError` line naming the attacker and the option,
from the constructor and from a spec string alike; the values at each bound are taken;
and a configuration the constructor takes builds a model that embeds audio.
"""

from __future__ import annotations

import collections.abc
import inspect
import math
import types
import typing
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import quote

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe import registry
from lidframe.errors import InputError

torch = pytest.importorskip("torch", reason="the neural attackers need torch (pip install -e '.[audio]')")


class Expected(NamedTuple):
    """One option's range, as docs/plugins.md states it: [low, high] (a bound left out when open)."""

    integer: bool
    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False
    none: bool = False
    sequence: bool = False


SEED = Expected(True, 0, 2**64 - 1)
WIDTH = Expected(True, 1, 8192)
WIDTHS = Expected(True, 1, 8192, sequence=True)
SMALL = Expected(True, 1, 64)
SMALLS = Expected(True, 1, 64, sequence=True)
#: the scoring options every embedding attacker takes (issue 42: the PLDA back end's LDA dimension, K of AS-norm)
SCORING = {"plda_dim": Expected(True, 1, 8192, none=True), "cohort_top_k": Expected(True, 2, none=True)}
NEURAL = {
    **SCORING,
    "batch_size": Expected(True, 1, none=True),
    "max_batch_frames": Expected(True, 1),
    "seed": SEED,
    "loudness": Expected(False, -70, 0, none=True),  # LUFS (issue 41)
}

#: attacker or recogniser name -> {numeric option: its range}, by hand
EXPECTED: dict[str, dict[str, Expected]] = {
    "random": {**SCORING, "dim": WIDTH, "seed": SEED},
    "precomputed": {**SCORING},
    "ecapa": {
        **NEURAL,
        "input_size": Expected(True, 80, 80),
        "channels": WIDTHS,
        "kernel_sizes": SMALLS,
        "dilations": SMALLS,
        "attention_channels": WIDTH,
        "lin_neurons": WIDTH,
        "res2net_scale": SMALL,
        "se_channels": WIDTH,
        "groups": WIDTHS,
    },
    "xvector": {
        **NEURAL,
        "in_channels": Expected(True, 80, 80),
        "tdnn_blocks": SMALL,
        "tdnn_channels": WIDTHS,
        "tdnn_kernel_sizes": SMALLS,
        "tdnn_dilations": SMALLS,
        "lin_neurons": WIDTH,
    },
    "ge2e": {
        **NEURAL,
        "rate": Expected(False, 0.625, 100),
        "min_coverage": Expected(False, 0, 1, low_open=True),
        "volume_dbfs": Expected(False, high=0, none=True),
        "n_mels": WIDTH,
        "hidden_size": WIDTH,
        "num_layers": SMALL,
        "embedding_size": WIDTH,
    },
    "pocketsphinx": {},
}
KIND = {name: "recogniser" if name == "pocketsphinx" else "attacker" for name in EXPECTED}
#: what a built-in needs besides the option tried: no pretrained weights looked for, a file for precomputed
BASE: dict[str, dict[str, Any]] = {"ge2e": {"pretrained": False}, "precomputed": {"path": "embeddings.npz"}}
#: what an option needs besides itself: plda_dim is taken with the PLDA back end only (its training set is
#: read on first use, so any existing path does here); K of AS-norm needs AS-norm and a cohort (not read when built)
OPTION_BASE = {
    "plda_dim": {"backend": "plda", "plda_train": __file__},
    "cohort_top_k": {"score_norm": "asnorm", "cohort": "cohort.npz"},
}


def _base(name: str, option: str | None = None) -> dict[str, Any]:
    return {**BASE.get(name, {}), **OPTION_BASE.get(option or "", {})}


OPTIONS = [(name, option) for name, options in EXPECTED.items() for option in options]


def _class(name: str) -> type:
    return registry.load(KIND[name], name)


def _is_numeric(hint: Any) -> bool:
    """int or float, or a sequence of them, anywhere in a union (not bool): the test's own reading of a type."""
    if hint in (int, float):
        return True
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_is_numeric(arg) for arg in typing.get_args(hint))
    if origin in (list, tuple, collections.abc.Sequence):
        return any(_is_numeric(arg) for arg in typing.get_args(hint) if arg is not Ellipsis)
    return False


def _numeric_options(cls: type) -> set[str]:
    """The annotated numeric parameters of *cls*'s ``__init__`` and, where it forwards ``**options``, its bases'."""
    found: set[str] = set()
    for klass in cls.__mro__:
        if "__init__" not in vars(klass) or klass is object:
            continue
        init = vars(klass)["__init__"]
        hints = typing.get_type_hints(init)
        found |= {name for name, hint in hints.items() if name != "return" and _is_numeric(hint)}
        parameters = inspect.signature(init).parameters.values()
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
            break
    return found


@pytest.mark.parametrize("name", list(EXPECTED))
def test_every_numeric_option_of_every_builtin_has_its_range(name):
    cls = _class(name)
    assert _numeric_options(cls) == set(EXPECTED[name])
    assert set(registry.capabilities_of(KIND[name], cls).option_ranges) == set(EXPECTED[name])


def test_every_builtin_attacker_and_recogniser_is_covered():
    builtin = {
        n for kind in ("attacker", "recogniser") for n, e in registry.entries(kind).items() if e.origin == "built-in"
    }
    assert builtin == set(EXPECTED)


def _outside_numbers(expected: Expected) -> st.SearchStrategy[Any]:
    """Single values the range refuses: below or above a bound, non-finite, a non-integer for an integer option."""
    parts: list[st.SearchStrategy[Any]] = []
    if expected.integer:
        if math.isfinite(expected.low):
            parts.append(st.integers(max_value=int(expected.low) - 1))
        if math.isfinite(expected.high):
            parts.append(st.integers(min_value=int(expected.high) + 1))
        parts.append(st.floats().filter(lambda x: not (math.isfinite(x) and x.is_integer())))
    else:
        if math.isfinite(expected.low):
            parts.append(st.floats(max_value=expected.low, exclude_max=not expected.low_open, allow_nan=False))
        if math.isfinite(expected.high):
            parts.append(st.floats(min_value=expected.high, exclude_min=True, allow_nan=False))
        parts.append(st.sampled_from([math.nan, math.inf, -math.inf]))
    parts.append(st.booleans())  # a bool is not a number here
    return st.one_of(parts)


def _default(name: str, option: str) -> Any:
    return inspect.signature(_numeric_owner(_class(name), option)).parameters[option].default


def _numeric_owner(cls: type, option: str) -> Any:
    for klass in cls.__mro__:
        init = vars(klass).get("__init__")
        if init is not None and option in inspect.signature(init).parameters:
            return init
    raise AssertionError(option)


@st.composite
def _outside(draw, name: str, option: str) -> Any:
    """A value of *option* out of its range: a number, or the default list with one element out of range."""
    expected = EXPECTED[name][option]
    bad = draw(_outside_numbers(expected))
    if not expected.sequence:
        return None if (not expected.none and draw(st.integers(0, 9)) == 0) else bad
    values = list(_default(name, option))
    values[draw(st.integers(0, len(values) - 1))] = bad
    return values


def _spec_text(value: Any) -> str:
    """*value* as a spec's query writes it (percent-escaped: a ``+`` in ``1e+300`` would read as a space)."""
    return quote(",".join(map(repr, value)) if isinstance(value, list) else repr(value), safe=",")


@pytest.mark.parametrize(("name", "option"), [(n, o) for n, o in OPTIONS])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_a_value_outside_the_range_is_refused_by_the_constructor_and_by_a_spec(name, option, data):
    value = data.draw(_outside(name, option))
    label = f"{KIND[name]} {name!r}: {option} must be "
    with pytest.raises(InputError) as info:
        _class(name)(**_base(name, option), **{option: value})
    assert str(info.value).startswith(label), str(info.value)
    if value is None or isinstance(value, bool):
        return  # no spec text gives these to a number parameter
    query = "&".join([*(f"{k}={v}" for k, v in _base(name, option).items()), f"{option}={_spec_text(value)}"])
    with pytest.raises(InputError) as info:
        registry.create(KIND[name], f"{name}?{query}")
    text = str(info.value)
    items = value if isinstance(value, list) else [value]
    if EXPECTED[name][option].integer and any(isinstance(item, (float, bool)) for item in items):
        assert f"parameter {option!r} takes" in text, text  # not an integer: refused as text of another type
    else:
        assert text.startswith(label), text


def _inside(expected: Expected) -> st.SearchStrategy[Any]:
    if expected.integer:
        return st.integers(int(max(expected.low, -(2**70))), int(min(expected.high, 2**70)))
    low = expected.low if math.isfinite(expected.low) else -1e300
    return st.floats(low, expected.high, exclude_min=expected.low_open, allow_nan=False, allow_infinity=False)


#: options whose every in-range value is taken whatever the others are (the rest must fit the lists, below)
FREE = [
    (name, option)
    for name, option in OPTIONS
    if not EXPECTED[name][option].sequence
    and (name, option) not in {("ecapa", "res2net_scale"), ("xvector", "tdnn_blocks")}
]


@pytest.mark.parametrize(("name", "option"), FREE)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_a_value_inside_the_range_is_taken(name, option, data):
    value = data.draw(_inside(EXPECTED[name][option]))
    attacker = _class(name)(**_base(name, option), **{option: value})
    assert getattr(attacker, option) == value
    query = "&".join([*(f"{k}={v}" for k, v in _base(name, option).items()), f"{option}={_spec_text(value)}"])
    assert getattr(registry.create(KIND[name], f"{name}?{query}"), option) == value


def _bound_cases() -> list[tuple[str, dict[str, Any]]]:
    """(name, options) at each kept bound of each range, with the other options made to fit (written out)."""
    cases = []
    for name, option in OPTIONS:
        expected = EXPECTED[name][option]
        for bound in (expected.low, expected.high):
            if not math.isfinite(bound) or (bound == expected.low and expected.low_open):
                continue
            value = int(bound) if expected.integer else bound
            if not expected.sequence:
                cases.append((name, {option: value}))
    cases += [
        ("ge2e", {"min_coverage": 5e-324}),  # just inside the open bound
        ("ge2e", {"volume_dbfs": None}),
        ("ecapa", {"batch_size": None}),
        ("ecapa", {"channels": [1, 1, 1, 1, 1], "res2net_scale": 1}),
        ("ecapa", {"channels": [8192] * 5}),
        ("ecapa", {"kernel_sizes": [1] * 5, "dilations": [1] * 5}),
        ("ecapa", {"kernel_sizes": [64] * 5, "dilations": [64] * 5}),
        ("ecapa", {"groups": [1, 8192, 8192, 8192, 8192], "channels": [8192] * 5}),
        ("ecapa", {"res2net_scale": 64}),
        ("xvector", {"tdnn_channels": [1] * 5}),
        ("xvector", {"tdnn_channels": [8192] * 5, "tdnn_kernel_sizes": [64] * 5, "tdnn_dilations": [64] * 5}),
        ("xvector", {"tdnn_kernel_sizes": [1] * 5, "tdnn_dilations": [1] * 5}),
        (
            "xvector",
            {"tdnn_blocks": 64, "tdnn_channels": [8] * 64, "tdnn_kernel_sizes": [3] * 64, "tdnn_dilations": [1] * 64},
        ),
    ]
    return [case for case in cases if case[1] != {"tdnn_blocks": 64}]  # alone, more layers than the default lists


@pytest.mark.parametrize(("name", "options"), _bound_cases(), ids=lambda x: str(x)[:60])
def test_the_values_at_each_bound_are_taken(name, options):
    attacker = _class(name)(**{k: v for option in options for k, v in _base(name, option).items()}, **options)
    for option, value in options.items():
        got = getattr(attacker, option)
        assert (list(got) if isinstance(got, tuple) else got) == value


@settings(max_examples=30, deadline=None)
@given(
    blocks=st.integers(3, 5),
    width=st.sampled_from([4, 8, 12]),
    kernels=st.lists(st.integers(1, 7), min_size=5, max_size=5),
    dilations=st.lists(st.integers(1, 3), min_size=5, max_size=5),
    scale=st.integers(1, 4),
    groups=st.lists(st.sampled_from([1, 2, 4]), min_size=5, max_size=5),
    small=st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 6)),
)
def test_an_ecapa_the_constructor_takes_embeds_audio(blocks, width, kernels, dilations, scale, groups, small):
    """The ranges and the lists' rules are enough: every configuration taken builds a model that embeds."""
    from lidframe.attackers import EcapaTdnn

    options = {
        "channels": [width] * (blocks - 1) + [3 * width],
        "kernel_sizes": kernels[:blocks],
        "dilations": dilations[:blocks],
        "groups": groups[:blocks],
        "res2net_scale": scale,
        "attention_channels": small[0],
        "se_channels": small[1],
        "lin_neurons": small[2],
    }
    try:
        attacker = EcapaTdnn(**options, device="cpu")
    except InputError as exc:
        assert str(exc).startswith("attacker 'ecapa': "), exc
        return
    _embeds(attacker, small[2])


@settings(max_examples=30, deadline=None)
@given(
    blocks=st.integers(1, 4),
    channels=st.lists(st.integers(1, 12), min_size=1, max_size=4),
    kernels=st.lists(st.integers(1, 7), min_size=1, max_size=4),
    dilations=st.lists(st.integers(1, 3), min_size=1, max_size=4),
    lin_neurons=st.integers(1, 8),
)
def test_an_xvector_the_constructor_takes_embeds_audio(blocks, channels, kernels, dilations, lin_neurons):
    from lidframe.attackers import XVector

    try:
        attacker = XVector(
            tdnn_blocks=blocks,
            tdnn_channels=channels,
            tdnn_kernel_sizes=kernels,
            tdnn_dilations=dilations,
            lin_neurons=lin_neurons,
            device="cpu",
        )
    except InputError as exc:
        assert str(exc).startswith("attacker 'xvector': "), exc
        assert blocks > min(len(channels), len(kernels), len(dilations))
        return
    _embeds(attacker, lin_neurons)


@settings(max_examples=30, deadline=None)
@given(
    rate=st.floats(0.625, 100),
    min_coverage=st.floats(0, 1, exclude_min=True),
    volume=st.one_of(st.none(), st.floats(-120, 0)),
    sizes=st.tuples(st.integers(1, 48), st.integers(1, 8), st.integers(1, 3), st.integers(1, 8)),
)
def test_a_ge2e_the_constructor_takes_embeds_audio(rate, min_coverage, volume, sizes):
    from lidframe.attackers import Ge2e

    n_mels, hidden_size, num_layers, embedding_size = sizes
    attacker = Ge2e(
        pretrained=False,
        rate=rate,
        min_coverage=min_coverage,
        volume_dbfs=volume,
        n_mels=n_mels,
        hidden_size=hidden_size,
        num_layers=num_layers,
        embedding_size=embedding_size,
        device="cpu",
    )
    _embeds(attacker, embedding_size, prepare=True)


def _embeds(attacker: Any, dim: int, *, prepare: bool = False) -> None:
    """Embed a 0.3 s and a 1.7 s waveform (one batch): finite embeddings of *dim* values each."""
    rng = np.random.default_rng(0)
    waves = [(0.1 * rng.standard_normal(n)).astype(np.float32) for n in (4800, 27200)]
    if prepare:
        waves = [attacker.prepare_audio(w) for w in waves]
    attacker.batch_size = 2
    emb = attacker.embed_audio(waves)
    assert emb.shape == (2, dim)
    assert np.isfinite(emb).all()


def test_the_plugins_page_tables_the_builtin_ranges_as_the_code_declares_them():
    text = (Path(__file__).parents[2] / "docs" / "plugins.md").read_text(encoding="utf-8")
    table = text.split("| attacker | options | range |")[1].split("\n\n")[0]
    documented: dict[tuple[str, str], str] = {}
    for line in table.strip().splitlines()[1:]:
        names, options, described = (cell.strip() for cell in line.strip("|").split("|"))
        for name in names.replace("`", "").split(", "):
            for option in options.replace("`", "").split(", "):
                documented[(name, option)] = described
    declared = {
        (name, option): allowed.describe()
        for name in EXPECTED
        for option, allowed in registry.capabilities_of(KIND[name], _class(name)).option_ranges.items()
    }
    assert documented == declared
