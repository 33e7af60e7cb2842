"""The metric catalogue (lidframe.metrics.catalogue): complete, consistent, and what the tables print.

The expected headers below are written out as the README, docs/report.md and the grid's
summaries print them (not read from the catalogue), so a row that changes a label or an
order fails here.
"""

from __future__ import annotations

import math

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe.core.summary import LID_FIELDS, OPEN_SET_INTERVALS, Summary
from lidframe.metrics.binary_view import BINARY_KEYS, BINARY_TEXT_KEYS
from lidframe.metrics.catalogue import GROUPS, METRICS, TABLES, Metric, attacker_prefers, metric, metrics_of, table
from lidframe.stats.bootstrap import BINARY_METRICS, LID_METRICS

#: The console header of `lidframe evaluate` and the simulated demo (README.md's table).
CONSOLE_HEADER = ["N", "log2N", "T", "out", "EER", "Cllr", "minCllr", "ALID", "PDR", "LID+", "LID-", "LIDq99", "LIDmax"]
#: The page's comparison table (docs/report.md).
COMPARISON_HEADER = [
    "N",
    "log2 N",
    "trials",
    "ALID",
    "PDR",
    "LID+",
    "LID−",
    "LID q99",
    "LIDmax",
    "EER",
    "Cllr",
    "minCllr",
    "D_sys",
    "minDCF",
    "actDCF",
    "D_ECE",
    "max |LLR|",
    "rank-1",
]
CARD_ITEMS = ["N", "log2 N (bits)", "ALID (bits)", "LIDmax (bits)", "LID q99 (bits)", "EER", "PDR"]


def test_keys_are_unique_and_every_table_names_catalogue_metrics():
    keys = [m.key for m in METRICS]
    assert len(keys) == len(set(keys))
    for name, shown in TABLES.items():
        assert len(shown) == len(set(shown)), name
        assert set(shown) <= set(keys), (name, set(shown) - set(keys))


def test_labels_are_unique_where_they_are_column_headers():
    for name in TABLES:
        labels = [m.label for m in table(name)]
        shorts = [m.short for m in table(name)]
        assert len(set(labels)) == len(labels), name
        assert len(set(shorts)) == len(shorts), name
    shorts = [m.short for m in METRICS]
    assert len(set(shorts)) == len(shorts)


def test_every_numeric_summary_field_has_a_row_and_every_summary_row_a_field():
    """A metric added to Summary without its catalogue row (or the reverse) fails here."""
    fields = {f.name for f in attrs.fields(Summary)}
    numeric_binary = [k for k in BINARY_KEYS if k not in BINARY_TEXT_KEYS]
    summary_metrics = {"n_enrolled", "log2_n", "n_enrolled_trials", "n_outsider_trials", *LID_FIELDS}
    summary_metrics |= {"cllr_mc", "rank1_rate", "rank_disclosure_bits"}
    assert summary_metrics <= fields
    in_summary_groups = {m.key for g in ("size", "lid", "identification", "binary") for m in metrics_of(g)}
    of_records = {"n_trials", "lid_ceiling"}  # sizes of the per-speaker records, not of a summary
    assert in_summary_groups - of_records == summary_metrics | set(numeric_binary)


def test_intervals_are_the_bootstrap_metrics():
    with_interval = {m.key for m in METRICS if m.interval}
    legal = {"pi_link", "pi_sing"}  # their speaker-bootstrap intervals are in lidframe.analyses.legal's records
    assert with_interval == set(LID_METRICS) | set(BINARY_METRICS) | set(OPEN_SET_INTERVALS) | legal
    assert TABLES["open_set"] == OPEN_SET_INTERVALS


def test_tables_print_todays_headers():
    assert [m.short for m in table("console")] == CONSOLE_HEADER
    assert [m.label for m in table("comparison")] == COMPARISON_HEADER
    assert [m.titled for m in table("card")] == CARD_ITEMS
    assert [m.short for m in table("paper")] == ["N", "EER", "ALID", "PDR", "LID+", "LID-", "LIDmax"]
    assert [m.short for m in table("paper_utility")] == ["WER", "ρ_F0"]


def test_directions_are_the_attackers_preferences_of_the_sensitivity_analysis():
    # written out as docs/sensitivity.md states them: ALID..LIDmax max, Cllr and dev log-loss min
    expected = dict.fromkeys(("alid", "pdr", "lid_pos", "lid_neg", "lid_q99", "lid_max"), "max")
    expected |= {"cllr": "min", "dev_logloss_bits": "min"}
    assert {k: attacker_prefers(k) for k in TABLES["sensitivity"]} == expected
    assert {attacker_prefers(k) for k in TABLES["sensitivity_open_set"]} == {"max"}
    assert attacker_prefers("eer") == "min"
    with pytest.raises(ValueError, match="neither direction"):
        attacker_prefers("n_enrolled")


def test_unknown_key_names_itself():
    with pytest.raises(KeyError, match="'alidd' is not a metric of the catalogue"):
        metric("alidd")


def test_groups_cover_every_row_in_order():
    assert {m.group for m in METRICS} <= set(GROUPS)
    assert [m for g in GROUPS for m in metrics_of(g)] == sorted(METRICS, key=lambda m: GROUPS.index(m.group))


def test_a_row_is_validated():
    with pytest.raises(ValueError):
        Metric(key="x", label="x", short="x", unit="nats", direction=1, group="lid", description="x")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Metric(key="x", label="x", short="x", unit="bits", direction=2, group="lid", description="x")  # type: ignore[arg-type]


@given(
    key=st.sampled_from([m.key for m in METRICS]),
    value=st.one_of(st.integers(0, 10**9), st.floats(-1e6, 1e6, allow_nan=False)),
)
def test_formats_follow_the_unit(key, value):
    """Counts print as integers everywhere; every other unit with 3 decimals on the console and 2 on paper."""
    m = metric(key)
    if m.unit == "count":
        value = int(abs(value))
        assert format(value, m.console_format()) == str(value)
        assert m.paper_format().format(value) == str(value)
    else:
        value = float(value)
        decimals = 2 if key == "log2_n" else 3
        assert format(value, m.console_format()) == f"{value:.{decimals}f}"
        text = m.paper_format().format(value)
        assert math.isclose(float(text), value, abs_tol=0.005 + 1e-9)
        assert len(text.split(".")[1]) == 2


def test_the_lid_group_is_what_lid_summary_computes_in_its_order():
    """The summary's LID keys come from the catalogue: a quantile added to the computation needs its row."""
    import numpy as np

    from lidframe.metrics.aggregates import lid_summary

    assert [m.key for m in metrics_of("lid")] == list(lid_summary(np.array([0.5, -0.25, 1.0])))


def test_compare_measures_the_catalogues_compare_table_and_refuses_others():
    import numpy as np

    from lidframe.analyses.compare import _metrics_of_values, compare_systems
    from lidframe.errors import InputError

    assert tuple(_metrics_of_values(np.array([[0.5, -1.0, 2.0]]))) == TABLES["compare"]
    ids, speakers = np.array(["t1", "t2"]), np.array(["s1", "s2"])
    systems = {"a": (ids, speakers, np.array([1.0, 0.0])), "b": (ids, speakers, np.array([0.5, 0.5]))}
    with pytest.raises(InputError, match="cannot compare 'eer': the metrics compared are alid, pdr"):
        compare_systems(systems, metrics=("alid", "eer"))
