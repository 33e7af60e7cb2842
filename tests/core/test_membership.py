"""Membership at low false-positive rates (lidframe.metrics.membership, lidframe.core.membership).

TPR at an FPR budget is checked against a brute-force sweep written here: every threshold
t (each distinct score and +inf), a trial flagged when its score is >= t (ties flagged
together), the thresholds with #outsiders flagged / #outsiders <= budget kept, the most
members flagged among them, and of those the highest threshold (fewest outsiders flagged).
"""

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import logsumexp

from lidframe import Bootstrap, InputError, evaluate
from lidframe.core.membership import MEMBERSHIP_FPRS, MembershipDetection, membership_detection
from lidframe.core.summary import Summary
from lidframe.core.znorm import calibrated_llr
from lidframe.data.simulate import simulate_system
from lidframe.metrics.membership import detection_roc, thinned_roc, tpr_at_fpr
from lidframe.stats.proportion import clopper_pearson_interval
from tests.core.test_summary_roundtrip import check_round_trip


def sweep(members, outsiders):
    """Every threshold, highest first: (t, members flagged, outsiders flagged), by counting."""
    thresholds = [math.inf] + sorted(set(members) | set(outsiders), reverse=True)
    return [(t, sum(s >= t for s in members), sum(s >= t for s in outsiders)) for t in thresholds]


def brute_tpr_at_fpr(members, outsiders, budget):
    admissible = [(t, tp, fp) for t, tp, fp in sweep(members, outsiders) if fp / len(outsiders) <= budget]
    best = max(tp for _, tp, _ in admissible)
    t, tp, fp = max((row for row in admissible if row[1] == best), key=lambda row: row[0])
    return tp, fp, t


# scores on a coarse grid, so that ties (within and across the two groups) are common
_scores = st.lists(st.integers(-6, 6).map(lambda v: v / 2), min_size=1, max_size=40)


@given(_scores, _scores, st.sampled_from([0.0, 0.001, 0.01, 0.05, 0.1, 0.25, 1 / 3, 0.5, 1.0]))
def test_tpr_at_fpr_is_the_brute_force_sweep_ties_flagged_together(members, outsiders, budget):
    assert tpr_at_fpr(members, outsiders, budget) == brute_tpr_at_fpr(members, outsiders, budget)


@given(_scores, _scores)
def test_the_roc_is_every_threshold_of_the_sweep(members, outsiders):
    thresholds, tp, fp = detection_roc(members, outsiders)
    assert list(zip(thresholds.tolist(), tp.tolist(), fp.tolist(), strict=True)) == sweep(members, outsiders)


@given(st.lists(st.floats(-5, 5), min_size=1, max_size=300), st.lists(st.floats(-5, 5), min_size=1, max_size=600))
def test_the_thinned_roc_reads_the_best_tpr_at_each_fpr_it_keeps(members, outsiders):
    _, tp, fp = detection_roc(members, outsiders)
    fpr, tpr = thinned_roc(tp, fp, len(members), len(outsiders), max_points=60)
    assert fpr[0] == 0.0 and fpr[-1] == 1.0 and tpr[-1] == 1.0 and (np.diff(fpr) > 0).all()
    assert len(fpr) <= 61 + 11
    rows = sweep(members, outsiders)
    for f, t in zip(fpr, tpr, strict=True):
        assert t == max(tp_ / len(members) for _, tp_, fp_ in rows if fp_ / len(outsiders) <= f)


def test_a_worked_example():
    members, outsiders = [3.0, 2.5, 2.0], [2.0, 1.0, 0.0, -1.0]
    assert tpr_at_fpr(members, outsiders, 0.25) == (3, 1, 2.0)  # the tie at 2.0 is flagged whole
    assert tpr_at_fpr(members, outsiders, 0.2) == (2, 0, 2.5)
    assert tpr_at_fpr([1.0], [1.0], 0.5) == (0, 0, math.inf)  # the tie cannot be split


@pytest.mark.parametrize(
    ("members", "outsiders", "budget", "words"),
    [
        ([], [1.0], 0.01, "enrolled and outsider trials"),
        ([1.0], [], 0.01, "enrolled and outsider trials"),
        ([math.nan], [1.0], 0.01, "finite"),
        ([1.0], [math.inf], 0.01, "finite"),
        ([1.0], [0.0], 1.5, "in \\[0, 1\\]"),
        ([1.0], [0.0], True, "in \\[0, 1\\]"),
    ],
)
def test_bad_input_is_one_line(members, outsiders, budget, words):
    with pytest.raises(InputError, match=words):
        tpr_at_fpr(members, outsiders, budget)


def test_the_record_holds_clopper_pearson_intervals_and_the_threshold_as_a_posterior():
    rng = np.random.default_rng(3)
    evidence = np.concatenate([rng.normal(1.0, 1.0, 3000), rng.normal(-1.0, 1.0, 800)])
    outsider = np.arange(evidence.size) >= 3000
    found = membership_detection(evidence, outsider, 0.3, level=0.9)
    assert [p.max_fpr for p in found.points] == list(MEMBERSHIP_FPRS)
    assert (found.n_members, found.n_outsiders) == (3000, 800)
    for point in found.points:
        tp, fp, t = brute_tpr_at_fpr(evidence[:3000].tolist(), evidence[3000:].tolist(), point.max_fpr)
        assert (point.true_positives, point.false_positives, point.threshold_llr) == (tp, fp, t)
        assert point.tpr == clopper_pearson_interval(tp, 3000, level=0.9)
        assert point.fpr == clopper_pearson_interval(fp, 800, level=0.9)
        assert point.resolved is (800 * point.max_fpr >= 1)
        # p(enrolled | s) = (1 - pi0) e^E / (pi0 + (1 - pi0) e^E)
        assert point.threshold_posterior == pytest.approx(0.7 * math.exp(t) / (0.3 + 0.7 * math.exp(t)), rel=1e-12)
    assert found.point(0.01).resolved and not found.point(0.001).resolved  # 800 x 0.001 < 1


def test_a_detector_that_flags_nothing_has_no_threshold():
    found = membership_detection([0.0, 0.0], [False, True], 0.5)  # the only member ties the only outsider
    (point, _) = found.points
    assert point.true_positives == 0 and math.isnan(point.threshold_llr) and math.isnan(point.threshold_posterior)
    json.dumps(found.to_dict(), allow_nan=True)  # no infinity


def test_membership_detection_refuses_what_has_no_meaning():
    with pytest.raises(InputError, match="outside"):
        membership_detection([1.0, 0.0], [False, True], 0.0)
    with pytest.raises(InputError, match="2 log evidences for 3"):
        membership_detection([1.0, 0.0], [False, True, True], 0.2)
    with pytest.raises(InputError, match="enrolled and outsider"):
        membership_detection([1.0, 0.0], [False, False], 0.2)


@pytest.fixture(scope="module")
def open_set_evaluation():
    dev, ev = simulate_system(leakage=0.6, seed=8, n_enrolled=20, trials_per_speaker=10, n_outsiders=12)
    prior = "uniform?outside=0.25"
    return dev, ev, evaluate(dev, ev, prior=prior, bootstrap=Bootstrap(n_boot=100, level=0.9))


def test_the_summary_measures_the_membership_posterior_of_every_trial(open_set_evaluation):
    _, ev, result = open_set_evaluation
    found = result.summary.open_set.membership_detection
    assert isinstance(found, MembershipDetection) and found.level == 0.9
    # E recomputed here: the calibrated LLRs of every trial, log-sum-exp under the uniform prior
    llr = calibrated_llr(ev.scores, result.calibrator, znorm_ddof=result.summary.znorm_ddof)
    evidence = logsumexp(llr, axis=1) - math.log(ev.n_enrolled)
    outsider = np.asarray(ev.is_outsider)
    assert (found.n_members, found.n_outsiders) == (int((~outsider).sum()), int(outsider.sum()))
    for point in found.points:
        tp, fp, t = brute_tpr_at_fpr(evidence[~outsider].tolist(), evidence[outsider].tolist(), point.max_fpr)
        assert (point.true_positives, point.false_positives) == (tp, fp)
        assert point.threshold_llr == pytest.approx(t, abs=1e-9)


def test_an_open_set_summary_with_membership_detection_round_trips(open_set_evaluation):
    _, _, result = open_set_evaluation
    again = check_round_trip(result.summary)
    assert again.open_set.membership_detection.to_dict() == result.summary.open_set.membership_detection.to_dict()
    stored = result.summary.to_dict()
    keys = list(stored["open_set"]["membership_detection"]["points"][0])
    assert keys[:7] == [
        "max_fpr",
        "membership_tpr",
        "membership_tpr_low",
        "membership_tpr_high",
        "membership_fpr",
        "membership_fpr_low",
        "membership_fpr_high",
    ]
    older = json.loads(json.dumps(stored))
    del older["open_set"]["membership_detection"]  # a summary written before: still read
    assert Summary.from_dict(older).open_set.membership_detection is None


def test_no_outsider_trial_no_membership_detection():
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=8, trials_per_speaker=4)
    result = evaluate(dev, ev, prior="uniform?outside=0.2")
    assert result.summary.open_set.membership_detection is None
    assert "membership_detection" not in result.summary.to_dict()["open_set"]
