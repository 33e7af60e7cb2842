"""Sensitivity analysis across calibrators: rows, spread, worst case, CLI and plot."""

import json
import math

import numpy as np
import pytest

from lidframe import InputError, evaluate, sensitivity
from lidframe.analyses.sensitivity import SENSITIVITY_METRICS
from lidframe.cli import main
from lidframe.data.simulate import simulate_system
from lidframe.report.analysis_figures import plot_lid_ccdf


@pytest.fixture(scope="module")
def uneven():
    return simulate_system(leakage=0.1, leaky_share=0.1, leaky_leakage=0.6, seed=11)


def test_rows_match_evaluate_and_aggregates_are_right(uneven):
    dev, ev = uneven
    specs = ["logistic", "isotonic", "temperature"]
    result = sensitivity(dev, ev, specs)
    assert [r["calibrator"] for r in result.rows] == specs
    for row in result.rows:
        single = evaluate(dev, ev, calibrator=row["calibrator"]).summary
        for key in ("alid", "pdr", "lid_max", "lid_q99", "cllr"):
            assert row[key] == single[key]
    for metric, direction in SENSITIVITY_METRICS.items():
        values = [r[metric] for r in result.rows]
        assert result.spread[metric] == pytest.approx(max(values) - min(values))
        best = max(values) if direction == "max" else min(values)
        assert result.worst_case[metric]["value"] == best
        assert (
            result.rows[[r["calibrator"] for r in result.rows].index(result.worst_case[metric]["calibrator"])][metric]
            == best
        )


def test_dev_logloss_is_log2_n_minus_dev_alid(uneven):
    dev, ev = uneven
    result = sensitivity(dev, ev, ["temperature"])
    # Temperature maximises exactly this objective on dev: compare with its own record
    cal = result.results["temperature"].calibrator
    want = -cal.dev_mean_log_posterior_ / math.log(2)
    assert result.rows[0]["dev_logloss_bits"] == pytest.approx(want, abs=1e-10)
    frame = result.to_frame()
    assert list(frame["calibrator"]) == ["temperature"]
    json.dumps(result.to_dict())


def test_errors():
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=5, trials_per_speaker=4)
    with pytest.raises(InputError, match="at least one calibrator"):
        sensitivity(dev, ev, [])
    with pytest.raises(InputError, match="repeated"):
        sensitivity(dev, ev, ["logistic", "logistic"])


def test_cli_prints_table_writes_json_and_plot(tmp_path, uneven, capsys):
    dev, ev = uneven
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    code = main(
        [
            "sensitivity",
            "--dev",
            str(tmp_path / "dev.npz"),
            "--eval",
            str(tmp_path / "eval.npz"),
            "--calibrators",
            "logistic,isotonic?laplace=false",
            "--calibrators",
            "beta",
            "--json",
            str(tmp_path / "s.json"),
            "--plot",
            str(tmp_path / "ccdf.png"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "spread (max-min)" in out and "worst case" in out and "isotonic?laplace=false" in out
    record = json.loads((tmp_path / "s.json").read_text())
    assert [r["calibrator"] for r in record["rows"]] == ["logistic", "isotonic?laplace=false", "beta"]
    assert (tmp_path / "ccdf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_bad_calibrator_is_exit_2_and_writes_nothing(tmp_path, uneven, capsys):
    dev, ev = uneven
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    code = main(
        [
            "sensitivity",
            "--dev",
            str(tmp_path / "dev.npz"),
            "--eval",
            str(tmp_path / "eval.npz"),
            "--calibrators",
            "logistic,isotonc",
            "--json",
            str(tmp_path / "s.json"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and "unknown calibrator 'isotonc'" in err and err.count("\n") == 1
    assert not (tmp_path / "s.json").exists()


def test_plot_needs_only_the_result(tmp_path, uneven):
    dev, ev = uneven
    result = sensitivity(dev, ev, ["logistic"])
    plot_lid_ccdf(result, tmp_path / "x.svg")
    assert (tmp_path / "x.svg").read_text().lstrip().startswith("<?xml")
    assert np.all([path.name == "x.svg" for path in tmp_path.iterdir()])
