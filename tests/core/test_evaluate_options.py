"""EvaluateOptions: one checked record of an evaluation's settings, shared by evaluate, evaluate_fitted, CLI and grid."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe import evaluate, evaluate_fitted
from lidframe.core.engine import Engine
from lidframe.core.evaluation import fit_calibrator
from lidframe.core.options import EvaluateOptions, check_evaluate_options
from lidframe.data.simulate import simulate_system
from lidframe.errors import InputError
from lidframe.metrics.detection import OperatingPoint
from lidframe.stats.bootstrap import Bootstrap

options_records = st.builds(
    EvaluateOptions,
    znorm_ddof=st.sampled_from([0, 1]),
    binary_metrics=st.sampled_from(["auto", True, False]),
    bootstrap=st.none()
    | st.builds(
        Bootstrap,
        n_boot=st.integers(100, 5000),
        level=st.floats(0.5, 0.999),
        unit=st.sampled_from(["speaker", "trial"]),
        method=st.sampled_from(["bca", "percentile"]),
        seed=st.integers(0, 2**31),
    ),
    engine=st.builds(Engine, tile_rows=st.none() | st.integers(1, 4096), threads=st.none() | st.integers(1, 8)),
    misattribution_threshold=st.floats(0.5, 0.999),
    operating_point=st.builds(
        OperatingPoint, p_target=st.floats(0.001, 0.999), c_miss=st.floats(0.1, 10), c_fa=st.floats(0.1, 10)
    ),
)


@given(options=options_records)
def test_a_record_survives_json(options):
    """What a grid stores (JSON of to_dict) reads back as the same record."""
    assert EvaluateOptions.from_dict(json.loads(json.dumps(options.to_dict()))) == options


def test_defaults_are_the_evaluation_defaults():
    options = EvaluateOptions()
    assert (options.znorm_ddof, options.binary_metrics, options.bootstrap) == (1, "auto", None)
    assert options.engine == Engine() and options.operating_point == OperatingPoint()
    assert options.misattribution_threshold == 0.9


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"znorm_ddof": 2}, "znorm_ddof must be 0"),
        ({"binary_metrics": "yes"}, "binary_metrics must be 'auto', True or False"),
        ({"misattribution_threshold": 0.4}, "misattribution_threshold = 0.4"),
        ({"bootstrap": {"n_boot": 10}}, "n_boot"),
        ({"engine": "cpu"}, "engine must be None or a record of type Engine, got str"),
        ({"operating_point": {"p_target": 1.5}}, "p_target"),
        ({"bootstrap": 3}, "bootstrap must be None or a record of type Bootstrap, got int"),
        ({"alpha": 1}, "not an evaluation option: 'alpha'"),
    ],
)
def test_a_bad_value_is_named(values, message):
    with pytest.raises(InputError, match=message):
        EvaluateOptions.from_dict(values)


def test_options_and_a_keyword_beside_them_are_refused():
    given_keywords = {"znorm_ddof": 0, "binary_metrics": "auto"}
    with pytest.raises(InputError, match="not both: znorm_ddof"):
        check_evaluate_options(EvaluateOptions(), given_keywords)
    # keywords at their defaults beside options= are no conflict
    assert check_evaluate_options(EvaluateOptions(znorm_ddof=0), {"znorm_ddof": 1, "engine": None}).znorm_ddof == 0
    with pytest.raises(InputError, match="options must be None or a record of type EvaluateOptions"):
        check_evaluate_options({"znorm_ddof": 0}, {})


@settings(max_examples=10, deadline=None)
@given(
    ddof=st.sampled_from([0, 1]),
    threshold=st.floats(0.5, 0.99),
    p_target=st.floats(0.01, 0.5),
    seed=st.integers(0, 1000),
)
def test_options_give_what_the_same_keywords_give(ddof, threshold, p_target, seed):
    """evaluate / evaluate_fitted with options= equal the call with the same settings as keywords, key by key."""
    dev, ev = simulate_system(leakage=1.0, n_enrolled=8, trials_per_speaker=3, seed=seed)
    point = OperatingPoint(p_target=p_target)
    keywords = {"znorm_ddof": ddof, "misattribution_threshold": threshold, "operating_point": point, "prior": "uniform"}
    by_keywords = evaluate(dev, ev, **keywords).summary.to_dict()
    options = EvaluateOptions(znorm_ddof=ddof, misattribution_threshold=threshold, operating_point=point)
    by_options = evaluate(dev, ev, prior="uniform", options=options).summary.to_dict()
    assert json.dumps(by_options) == json.dumps(by_keywords)
    fitted = fit_calibrator(dev, "logistic", znorm_ddof=ddof)
    fitted_by_options = evaluate_fitted(ev, fitted, dev=dev, options=options).summary.to_dict()
    assert json.dumps(fitted_by_options) == json.dumps(by_keywords)
    assert np.isfinite(by_options["alid"])
