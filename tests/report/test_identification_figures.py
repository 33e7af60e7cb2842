"""The CMC figure and the membership ROC figure (lidframe.report.identification_figures): what they draw."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from lidframe import Bootstrap, evaluate
from lidframe.core.cmc import result_cmc
from lidframe.data.simulate import simulate_system
from lidframe.report.identification_figures import (
    cmc_figure,
    membership_roc_figure,
    save_cmc,
    save_membership_roc,
)


@pytest.fixture(scope="module")
def open_set_result():
    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=30, trials_per_speaker=4, n_outsiders=8)
    return evaluate(dev, ev, prior="uniform?outside=0.2")


def test_the_cmc_figure_draws_the_curve_its_interval_and_chance(open_set_result, tmp_path):
    curve = result_cmc(open_set_result, bootstrap=Bootstrap(n_boot=100))
    fig = cmc_figure(curve)
    (ax,) = fig.axes
    lines = {line.get_label(): line for line in ax.get_lines()}
    np.testing.assert_array_equal(lines["top-k rate (attacker)"].get_ydata(), [p.top_k_rate for p in curve.points])
    np.testing.assert_array_equal(lines["chance k/N"].get_ydata(), [p.chance for p in curve.points])
    assert ax.get_xscale() == "log"  # N = 30
    assert "95% interval (speakers)" in [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"chance {1 / 30:.1%}" in ax.get_title()
    save_cmc(curve, tmp_path / "cmc.svg")
    assert (tmp_path / "cmc.svg").read_text().lstrip().startswith(("<?xml", "<svg"))


def test_the_membership_figure_draws_the_roc_and_marks_each_budget(open_set_result, tmp_path):
    detection = open_set_result.summary.open_set.membership_detection
    fig = membership_roc_figure(detection)
    (ax,) = fig.axes
    assert ax.get_xscale() == "log" and ax.get_xlim()[0] <= 0.0005  # the 0.1 % budget is on the axis
    roc = next(line for line in ax.get_lines() if line.get_label().startswith("attacker"))
    np.testing.assert_array_equal(roc.get_ydata(), detection.roc_tpr)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    for point in detection.points:
        assert any(label.startswith(f"TPR at FPR ≤ {point.max_fpr:g}") for label in labels)
    assert any("(unresolved)" in label for label in labels)  # 160 outsider trials cannot resolve 0.1 %
    save_membership_roc(detection, tmp_path / "roc.png")
    assert (tmp_path / "roc.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_importing_the_figures_does_not_import_matplotlib():
    import subprocess
    import sys

    code = "import sys, lidframe.report.identification_figures; print('matplotlib.pyplot' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
