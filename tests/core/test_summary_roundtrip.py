"""Summary.from_dict reads back what Summary.to_dict wrote: the dict exactly, the record with its nested records."""

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe import Bootstrap, evaluate
from lidframe.core.engine_result import EngineUsed
from lidframe.core.summary import RENAMED_KEYS, Summary
from lidframe.core.summary_views import BinaryView, OpenSetView
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.simulate import simulate_system
from lidframe.errors import InputError
from lidframe.metrics.aggregates import LIDAggregates
from lidframe.metrics.detection import OperatingPoint
from lidframe.stats.bootstrap import Interval
from tests.strategies import summaries


def same(a, b) -> bool:
    """Equal, NaN equal to NaN and of the same type as the other side, through dicts, lists and tuples."""
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return type(a) is type(b) and a == b


def check_round_trip(summary: Summary) -> Summary:
    """from_dict of to_dict: the same dict (and JSON text), the same raw mapping (NaN back as NaN), the records rebuilt."""
    stored = summary.to_dict()
    again = Summary.from_dict(stored)
    assert again.to_dict() == stored
    assert json.dumps(again.to_dict()) == json.dumps(stored)  # the same keys in the same order, ints still ints
    assert same(dict(summary), dict(again))  # the raw mapping view: a stored None is a NaN again where it was one
    # through JSON text, as a file or a grid store holds it
    assert Summary.from_dict(json.loads(json.dumps(stored))).to_dict() == stored
    for name in ("binary", "open_set", "engine", "bootstrap"):
        assert (getattr(again, name) is None) == (getattr(summary, name) is None), name
    assert again.binary is None or isinstance(again.binary, BinaryView)
    assert again.binary is None or isinstance(again.binary.operating_point, OperatingPoint)
    assert again.engine is None or isinstance(again.engine, EngineUsed)
    assert again.bootstrap is None or again.bootstrap == summary.bootstrap
    if again.open_set is not None:
        assert isinstance(again.open_set, OpenSetView)
        assert isinstance(again.open_set.enrolled, LIDAggregates)
        assert (again.open_set.outsider is None) == (summary.open_set.outsider is None)
        detection = summary.open_set.membership_detection
        assert (again.open_set.membership_detection is None) == (detection is None)
    if summary.intervals is not None:
        assert list(again.intervals) == list(summary.intervals)
        for metric, interval in again.intervals.items():
            assert isinstance(interval, Interval)
            assert same([interval.low, interval.high], [summary.intervals[metric].low, summary.intervals[metric].high])
            assert interval.level == summary.bootstrap.level
    return again


@given(summaries())
def test_from_dict_reads_back_what_to_dict_wrote(summary):
    check_round_trip(summary)


@given(summaries(), st.data())
def test_from_dict_reads_the_old_keys_of_the_release_before(summary, data):
    stored = summary.to_dict()
    new_to_old = {new: old for old, (new, _) in RENAMED_KEYS.items()}
    renamed = data.draw(st.sets(st.sampled_from(sorted(k for k in stored if k in new_to_old))))
    old = {new_to_old[k] if k in renamed else k: v for k, v in stored.items()}
    assert Summary.from_dict(old).to_dict() == stored


@given(summaries())
def test_numbers_come_back_as_nan_where_they_were_nan(summary):
    again = Summary.from_dict(summary.to_dict())
    for name in ("log2_n", "alid", "lid_pos", "lid_q99", "cllr_mc", "rank_disclosure_bits"):
        assert same(getattr(again, name), getattr(summary, name)), name
    if summary.binary is not None:
        for name in ("eer", "min_dcf", "dece_bits", "dsys"):
            assert same(getattr(again.binary, name), getattr(summary.binary, name)), name
    if summary.open_set is not None:
        assert same(again.open_set.misattribution_rate, summary.open_set.misattribution_rate)
        assert same(again.open_set.enrolled.lid_neg, summary.open_set.enrolled.lid_neg)


def embedding_sets(seed=0, n_trials=40, n_enrolled=8, dim=12):
    rng = np.random.default_rng(seed)
    profiles = rng.normal(size=(n_enrolled, dim))
    names = [f"s{j}" for j in range(n_enrolled)]

    def one(tag):
        speaker = rng.integers(0, n_enrolled, size=n_trials)
        trials = profiles[speaker] + 0.8 * rng.normal(size=(n_trials, dim))
        speakers = [names[k] for k in speaker]
        speakers[0] = "stranger"  # one outsider trial
        return EmbeddingSet(trials, profiles, names, speakers, [f"{tag}{i}" for i in range(n_trials)])

    return one("d"), one("e")


@pytest.fixture(scope="module")
def systems():
    return simulate_system(leakage=0.5, seed=3)


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"binary_metrics": False},
        {"bootstrap": Bootstrap(n_boot=100)},
        {"bootstrap": Bootstrap(n_boot=100, method="percentile", unit="trial")},
        {"prior": "uniform?outside=0.2"},
        {"prior": "uniform?outside=0.2", "bootstrap": Bootstrap(n_boot=100)},
    ],
    ids=["plain", "no-binary", "bootstrap", "percentile", "open-set", "open-set-bootstrap"],
)
def test_real_summaries_round_trip(systems, options):
    dev, ev = systems
    result = evaluate(dev, ev, **options)
    again = check_round_trip(result.summary)
    assert again.alid == result.summary.alid and again.lidframe_version == result.summary.lidframe_version
    # a JSON file of evaluate holds the fitted calibrator too: not the summary's, ignored
    assert Summary.from_dict(result.to_dict()).to_dict() == result.summary.to_dict()


@pytest.mark.parametrize("binary_metrics", ["auto", True])
def test_real_summaries_of_embedding_sets_round_trip(binary_metrics):
    dev, ev = embedding_sets()
    summary = evaluate(dev.to_scoreset(), ev, binary_metrics=binary_metrics).summary
    assert summary.engine is not None and summary.binary.method == ("exact" if binary_metrics == "auto" else "binned")
    again = check_round_trip(summary)
    assert again.engine == summary.engine
    assert again.binary.error_bounds == summary.binary.error_bounds and again.binary.n_bins == summary.binary.n_bins


def test_a_dict_without_a_key_that_to_dict_always_writes_is_refused(systems):
    stored = evaluate(*systems).summary.to_dict()
    del stored["alid"], stored["binary_operating_point"]
    with pytest.raises(InputError, match="'alid', 'binary_operating_point'"):
        Summary.from_dict(stored)
