"""Paired comparisons (lidframe.analyses.compare) on drawn LID vectors, against sums written out here.

The coverage and the Holm adjustment of paired comparisons are tested in tests/stats/test_stats.py.
"""

import json
import math
from pathlib import Path

import attrs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe.analyses.compare import PAIRED_BOOTSTRAP, paired_comparison
from tests.strategies import lid_grid_values

# few resamples and swaps: the properties below hold for any number of them
SMALL = attrs.evolve(PAIRED_BOOTSTRAP, n_boot=100, seed=5)
N_PERM = 200


@st.composite
def paired_lids(draw):
    """(lid_a, lid_b, speakers): two systems' LIDs on the same T trials, and each trial's speaker."""
    n_trials = draw(st.integers(2, 30))
    same_length = st.lists(lid_grid_values, min_size=n_trials, max_size=n_trials)
    speakers = draw(st.lists(st.sampled_from(["s0", "s1", "s2", "s3", "s4"]), min_size=n_trials, max_size=n_trials))
    return np.array(draw(same_length)), np.array(draw(same_length)), np.array(speakers)


def metrics_written_out(values) -> dict:
    """The six LID metrics of one system, in plain Python (exact sums, linear-interpolation quantile)."""
    values = [float(v) for v in values]
    n = len(values)
    positive = [v for v in values if v > 0]
    rest = [v for v in values if v <= 0]
    ordered = sorted(values)
    position = 0.99 * (n - 1)
    below = math.floor(position)
    above = min(below + 1, n - 1)
    return {
        "alid": math.fsum(values) / n,
        "pdr": len(positive) / n,
        "lid_pos": math.fsum(positive) / len(positive) if positive else math.nan,
        "lid_neg": math.fsum(rest) / len(rest) if rest else math.nan,
        "lid_q99": ordered[below] + (position - below) * (ordered[above] - ordered[below]),
        "lid_max": ordered[-1],
    }


def same(got, want, tol=1e-12):
    return (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, abs=tol)


@settings(max_examples=40, deadline=None)
@given(paired_lids(), st.sampled_from(["speaker", "trial"]))
def test_each_row_is_the_difference_of_the_two_systems_metrics(case, unit):
    lid_a, lid_b, speakers = case
    result = paired_comparison(lid_a, lid_b, speakers=speakers, bootstrap=attrs.evolve(SMALL, unit=unit), n_perm=N_PERM)
    want_a, want_b = metrics_written_out(lid_a), metrics_written_out(lid_b)
    assert [row["metric"] for row in result.rows] == list(want_a)
    for row in result.rows:
        metric = row["metric"]
        assert same(row["a"], want_a[metric]) and same(row["b"], want_b[metric]), metric
        assert same(row["diff"], want_a[metric] - want_b[metric]), metric
        if math.isnan(row["diff"]):
            assert math.isnan(row["p_value"])
        else:
            # a permutation p-value counts the observed split itself: within [1 / (1 + n_perm), 1]
            assert 1 / (1 + N_PERM) - 1e-15 <= row["p_value"] <= 1.0
    # the paired difference of ALID is the mean of the per-trial differences
    differences = [float(a) - float(b) for a, b in zip(lid_a, lid_b, strict=True)]
    assert result["alid"]["diff"] == pytest.approx(math.fsum(differences) / len(differences), abs=1e-12)


@settings(max_examples=40, deadline=None)
@given(paired_lids())
def test_swapping_the_systems_negates_the_difference_and_mirrors_the_interval(case):
    lid_a, lid_b, speakers = case
    forward = paired_comparison(lid_a, lid_b, speakers=speakers, bootstrap=SMALL, n_perm=N_PERM)
    backward = paired_comparison(lid_b, lid_a, speakers=speakers, bootstrap=SMALL, n_perm=N_PERM)
    for row, mirror in zip(forward.rows, backward.rows, strict=True):
        assert same(mirror["diff"], -row["diff"]), row["metric"]
        # the same seed draws the same resamples and swaps, so the two runs see negated values
        assert same(mirror["low"], -row["high"], 1e-9) and same(mirror["high"], -row["low"], 1e-9), row["metric"]
        assert same(mirror["p_value"], row["p_value"]), row["metric"]


@settings(max_examples=20, deadline=None)
@given(paired_lids())
def test_a_system_compared_with_itself_differs_by_nothing(case):
    lid, _, speakers = case
    for row in paired_comparison(lid, lid, speakers=speakers, bootstrap=SMALL, n_perm=N_PERM).rows:
        if math.isnan(row["a"]):
            continue  # a metric undefined for this system (no positive, or no non-positive LID)
        assert row["diff"] == 0.0 and row["low"] == 0.0 and row["high"] == 0.0, row["metric"]
        assert row["p_value"] == 1.0, row["metric"]


RANDOM_SYSTEM = Path(__file__).resolve().parents[2] / "examples" / "scores"


@pytest.mark.slow
def test_two_zero_information_systems_do_not_differ_end_to_end(tmp_path, capsys):
    # examples/grid.toml's `random` system, calibrated two ways that both find no evidence:
    # logistic under the grid's watch list and temperature under the uniform prior.  All
    # their LIDs are 0, so compare must not call them different (it gave p = 0.0005 for
    # PDR when rounding noise of 1e-16 and 1e-10 bit made PDR 1.00 and 0.50).
    from lidframe.cli import main

    data = ["--dev", str(RANDOM_SYSTEM / "random_dev.npz"), "--eval", str(RANDOM_SYSTEM / "random_eval.npz")]
    watchlist = "watchlist?ids=eval-spk000,eval-spk001,eval-spk002&weight=10"
    runs = {"logistic-watchlist": ["--prior", watchlist], "temperature": ["--calibrator", "temperature"]}
    for name, options in runs.items():
        assert main(["evaluate", *data, *options, "--per-trial", str(tmp_path / f"{name}.csv")]) == 0
    tables = [str(tmp_path / f"{name}.csv") for name in runs]
    code = main(["compare", *tables, "--n-boot", "200", "--permutations", "500", "--json", str(tmp_path / "c.json")])
    capsys.readouterr()
    assert code == 0
    rows = json.loads((tmp_path / "c.json").read_text())["rows"]
    assert {r["metric"] for r in rows} == {"alid", "pdr", "lid_q99"}
    for row in rows:
        assert row["value_a"] == row["value_b"] == row["diff"] == row["low"] == row["high"] == 0.0, row
        assert row["p_value"] == row["p_holm"] == 1.0, row
    # LID+ has no positive trial to average on either side: undefined, and so is its p-value
    from lidframe.cli.compare import read_per_trial

    (_, speakers, lid_a), (_, _, lid_b) = (read_per_trial(t) for t in tables)
    lid_pos = paired_comparison(lid_a, lid_b, speakers=speakers, bootstrap=SMALL, n_perm=N_PERM)["lid_pos"]
    assert all(math.isnan(lid_pos[k]) for k in ("a", "b", "diff", "p_value"))


@settings(max_examples=25, deadline=None)
@given(paired_lids(), st.sampled_from(["speaker", "trial"]), st.integers(2, 300), st.integers(0, 2**32 - 1))
def test_the_resamples_are_drawn_a_block_at_a_time_with_the_intervals_of_one_draw(case, unit, n_boot, seed):
    """The paired bootstrap holds one block of resample weights at a time (memory does not grow with
    n_boot x T); its intervals equal, bit for bit, those of one multinomial draw of every resample,
    percentile intervals taken here with numpy."""
    from lidframe.stats.bootstrap import resampling_units
    from lidframe.stats.weighted import lid_metrics_weighted

    a, b, speakers = case
    bootstrap = attrs.evolve(PAIRED_BOOTSTRAP, n_boot=max(n_boot, 100), seed=seed, unit=unit)
    got = paired_comparison(a, b, speakers=speakers, bootstrap=bootstrap, n_perm=10)
    unit_of_trial, n_units = resampling_units(a.size, speakers, unit)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=bootstrap.n_boot).astype(np.float64)
    boot_a = lid_metrics_weighted(a, weights[:, unit_of_trial])
    boot_b = lid_metrics_weighted(b, weights[:, unit_of_trial])
    tail = (1 - bootstrap.level) / 2
    for row in got.rows:
        diff = boot_a[row["metric"]] - boot_b[row["metric"]]
        diff = diff[np.isfinite(diff)]
        if diff.size == 0:
            continue
        low, high = np.quantile(diff, [tail, 1 - tail])
        assert (row["low"], row["high"]) == (low, high), row["metric"]


@pytest.mark.slow
def test_the_paired_bootstrap_memory_does_not_grow_with_resamples_times_trials():
    """5,000 resamples of 2,000 trials: one draw of every resample held 2 x 80 MB of weights; one block holds 2 MB."""
    import tracemalloc

    rng = np.random.default_rng(0)
    a, b = rng.normal(size=2000), rng.normal(size=2000)
    bootstrap = attrs.evolve(PAIRED_BOOTSTRAP, n_boot=5000, unit="trial")
    tracemalloc.start()
    try:
        paired_comparison(a, b, bootstrap=bootstrap, n_perm=10)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, f"peak {peak / 2**20:.0f} MiB"


@pytest.mark.parametrize("n_boot", [129, 257])  # the last block holds one resample
def test_paired_intervals_on_many_trials_are_those_of_one_draw_of_every_resample_bit_for_bit(n_boot):
    """On 10^4 trials the BLAS products of a block take their blocked paths, whose rounding depends on
    how the block's weights are laid out: each interval must still equal, bit for bit, the old
    algorithm's (one multinomial draw of every resample, fancy-indexed, one lid_metrics_weighted call
    per system), at a level whose interval of LID+ ends at the last resample's value -- the one a
    last block of one row computes."""
    from lidframe.stats.bootstrap import resampling_units
    from lidframe.stats.weighted import lid_metrics_weighted
    from tests.stats.test_bootstrap_streaming import (
        big_lid,
        level_ending_at,
        one_draw_of_every_resample,
        percentile_written_out,
    )

    a, speakers = big_lid(seed=7)
    b = a * 0.8 + np.random.default_rng(8).normal(0.0, 0.5, size=a.size)
    unit_of_trial, n_units = resampling_units(a.size, speakers, "speaker")
    weights = one_draw_of_every_resample(np.random.default_rng(11), unit_of_trial, n_units, n_boot)
    boot_a, boot_b = lid_metrics_weighted(a, weights), lid_metrics_weighted(b, weights)
    level = level_ending_at(boot_a["lid_pos"] - boot_b["lid_pos"], -1)
    bootstrap = attrs.evolve(PAIRED_BOOTSTRAP, n_boot=n_boot, seed=11, level=level)
    got = paired_comparison(a, b, speakers=speakers, bootstrap=bootstrap, n_perm=1)
    for row in got.rows:
        want = percentile_written_out(boot_a[row["metric"]] - boot_b[row["metric"]], level)
        assert (row["low"], row["high"]) == want, row["metric"]
