"""The membership attack's intervals with the calibrator refitted on resampled dev speakers (issue 41).

Against a loop written here from the definitions (draw the dev speakers, refit the
calibrator exactly on each dev resample, recompute every trial's E by hand, choose the
detector at each FPR budget by a sweep of the thresholds, and invert the averaged
Clopper-Pearson tails by a root finder); a small dev set widens the interval; and with
the calibrator held fixed the numbers are those of plain Clopper-Pearson intervals, bit
for bit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import logsumexp
from scipy.stats import beta

from lidframe import Bootstrap, evaluate
from lidframe.core.membership import membership_detection
from lidframe.core.summary import Summary
from lidframe.core.znorm import row_znorm
from lidframe.data.simulate import simulate_system
from lidframe.errors import InputError
from lidframe.stats.proportion import CLOPPER_PEARSON, CLOPPER_PEARSON_MIXTURE, clopper_pearson_interval
from tests.core.test_membership import brute_tpr_at_fpr
from tests.stats.test_refit_bootstrap import _exact_fit, _unit_counts

OUTSIDE = 0.25


def _system(n_dev_speakers: int, seed: int = 4):
    """A simulated open set: the dev set's first *n_dev_speakers* speakers (no outsider), an eval set with outsiders."""
    dev, ev = simulate_system(leakage=0.5, seed=seed, n_enrolled=30, trials_per_speaker=10, n_outsiders=30)
    keep = np.isin(dev.trial_speakers, dev.enrolled[:n_dev_speakers]) & ~np.asarray(dev.is_outsider)
    return dev.subset(np.flatnonzero(keep)), ev


def _mixture(counts: np.ndarray, n: int, level: float) -> tuple[float, float]:
    """The Clopper-Pearson interval of k of n averaged over the counts k_b, by a root finder on the averaged tails."""
    tail = (1.0 - level) / 2.0

    def below(x: float) -> float:  # mean_b P(Beta(k_b, n - k_b + 1) <= x)
        return float(np.mean([1.0 if k == 0 else beta.cdf(x, k, n - k + 1) for k in counts]))

    def above(x: float) -> float:  # mean_b P(Beta(k_b + 1, n - k_b) > x)
        return float(np.mean([1.0 if k == n else beta.sf(x, k + 1, n - k) for k in counts]))

    low = 0.0 if np.mean(counts == 0) >= tail else brentq(lambda x: below(x) - tail, 0.0, 1.0, xtol=1e-14)
    high = 1.0 if np.mean(counts == n) >= tail else brentq(lambda x: above(x) - tail, 0.0, 1.0, xtol=1e-14)
    return low, high


def _brute_force(dev, ev, calibrator: str, options: Bootstrap, budgets) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per budget, (members flagged (B,), outsiders flagged (B,)) under the calibrator refitted on each dev resample."""
    dev_counts = _unit_counts(np.random.default_rng([options.seed, 1]), dev.trial_speakers, options.n_boot)
    dev_z, eval_z = row_znorm(dev.scores), row_znorm(ev.scores)
    outsider = np.asarray(ev.is_outsider)
    flagged = np.zeros((len(budgets), options.n_boot, 2), dtype=np.int64)
    for b in range(options.n_boot):
        rows = np.repeat(np.arange(dev.n_trials), dev_counts[b])
        llr = _exact_fit(calibrator, dev_z[rows], dev.true_index[rows])(eval_z)
        evidence = logsumexp(llr, axis=1) - math.log(ev.n_enrolled)  # E under the uniform prior
        for i, budget in enumerate(budgets):
            tp, fp, _ = brute_tpr_at_fpr(evidence[~outsider].tolist(), evidence[outsider].tolist(), budget)
            flagged[i, b] = tp, fp
    return [(flagged[i, :, 0], flagged[i, :, 1]) for i in range(len(budgets))]


@pytest.mark.parametrize("calibrator", ["logistic", "isotonic"])
def test_intervals_equal_a_loop_of_exact_refits_mixing_the_clopper_pearson_tails(calibrator):
    dev, ev = _system(3)
    options = Bootstrap(n_boot=100, method="percentile", seed=5, level=0.9)
    found = evaluate(dev, ev, calibrator=calibrator, prior=f"uniform?outside={OUTSIDE}", bootstrap=options)
    detection = found.summary.open_set.membership_detection
    assert detection.resample == "dev+eval" and detection.method == CLOPPER_PEARSON_MIXTURE
    want = _brute_force(dev, ev, calibrator, options, [p.max_fpr for p in detection.points])
    varied = False
    for point, (members, outsiders) in zip(detection.points, want, strict=True):
        varied |= np.unique(members).size > 1
        for got, counts, n in (
            (point.tpr, members, detection.n_members),
            (point.fpr, outsiders, detection.n_outsiders),
        ):
            low, high = _mixture(counts, n, options.level)
            assert got.low == pytest.approx(low, abs=1e-6) and got.high == pytest.approx(high, abs=1e-6)
            assert got.method == CLOPPER_PEARSON_MIXTURE
    assert varied  # the refits moved the detector: the test tells a mixture from the plain interval


def test_a_small_dev_set_widens_the_membership_interval():
    widening = {}
    for n_dev in (3, 30):
        dev, ev = _system(n_dev)
        width = {}
        for resample in ("eval", "dev+eval"):
            options = Bootstrap(n_boot=200, resample=resample)
            summary = evaluate(dev, ev, prior=f"uniform?outside={OUTSIDE}", bootstrap=options).summary
            point = summary.open_set.membership_detection.point(0.001)
            width[resample] = point.tpr.high - point.tpr.low
        widening[n_dev] = width["dev+eval"] / width["eval"]
    # at FPR 0.1 %: 0.0470 against 0.0424 with 3 dev speakers (+11 %), 0.0469 against 0.0462 with 30 (+2 %)
    assert widening[3] > 1.08 and widening[30] < 1.03


def test_held_fixed_the_intervals_are_plain_clopper_pearson_bit_for_bit():
    dev, ev = _system(5)
    for bootstrap in (Bootstrap(n_boot=100, resample="eval", level=0.9), None):
        summary = evaluate(dev, ev, prior=f"uniform?outside={OUTSIDE}", bootstrap=bootstrap).summary
        detection = summary.open_set.membership_detection
        assert detection.resample == "eval" and detection.method == CLOPPER_PEARSON
        assert "held fixed" in detection.note
        level = 0.95 if bootstrap is None else bootstrap.level
        for p in detection.points:
            assert p.tpr == clopper_pearson_interval(p.true_positives, detection.n_members, level=level)
            assert p.fpr == clopper_pearson_interval(p.false_positives, detection.n_outsiders, level=level)


def test_the_record_says_what_the_intervals_cover_and_round_trips():
    dev, ev = _system(5)
    summary = evaluate(dev, ev, prior=f"uniform?outside={OUTSIDE}", bootstrap=Bootstrap(n_boot=100)).summary
    stored = summary.to_dict()["open_set"]["membership_detection"]
    assert stored["resample"] == "dev+eval" and stored["method"] == CLOPPER_PEARSON_MIXTURE
    assert "refitted" in stored["note"]
    again = Summary.from_dict(summary.to_dict()).open_set.membership_detection
    assert again.to_dict() == stored and again.points[0].tpr.method == CLOPPER_PEARSON_MIXTURE
    older = summary.to_dict()
    del older["open_set"]["membership_detection"]["resample"]  # before 0.3.0 the calibrator was held fixed
    assert Summary.from_dict(older).open_set.membership_detection.resample == "eval"


def test_refitted_evidence_of_another_shape_or_none_is_refused():
    args = ([3.0, 2.0, 1.0], [False, False, True], 0.5)
    with pytest.raises(InputError, match="2 refitted log evidences for 3 trials"):
        membership_detection(*args, refitted=[np.zeros(2)])
    with pytest.raises(InputError, match="no refitted calibrator"):
        membership_detection(*args, refitted=[])
    same = membership_detection(*args, refitted=[np.array([3.0, 2.0, 1.0])] * 4)
    plain = membership_detection(*args)
    ends = [(p.tpr.low, p.tpr.high, p.fpr.low, p.fpr.high) for p in plain.points]  # every refit the same: plain
    assert np.allclose([(p.tpr.low, p.tpr.high, p.fpr.low, p.fpr.high) for p in same.points], ends, atol=1e-9)


def test_the_page_says_whether_the_membership_intervals_refit_the_calibrator():
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    from lidframe.report import render_html, report_from_results
    from tests.report.htmltree import parse

    dev, ev = _system(5)
    for resample, words in (
        ("dev+eval", "their tails averaged over the calibrator refitted on each resample of the dev speakers"),
        ("eval", "the calibrator held fixed"),
    ):
        result = evaluate(
            dev, ev, prior=f"uniform?outside={OUTSIDE}", bootstrap=Bootstrap(n_boot=100, resample=resample)
        )
        section = parse(render_html(report_from_results({"open": result}))).find("section", id="open-set")
        caption = section.find("table", id="membership-table").find("caption").text()
        assert f"(trials taken as independent, {words})" in caption
        roc = section.find_all("figure")[-1].find("figcaption").text()
        assert f"Clopper-Pearson interval, {words} (hollow" in roc
