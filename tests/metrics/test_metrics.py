"""Binary metrics against independent computations (hand PAV, convex hull, closed forms)."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial import ConvexHull

from lidframe.metrics.binary_view import binary_summary
from lidframe.metrics.detection import cllr, eer_rocch, min_cllr, pav_llr

scores_list = st.lists(st.integers(-6, 6).map(lambda k: k / 2), min_size=1, max_size=25)


def naive_pav(y, w):
    """Textbook pool-adjacent-violators on ordered values (O(n^2), for tests)."""
    blocks = [[float(v), float(x), 1] for v, x in zip(y, w)]  # value, weight, length
    i = 0
    while i < len(blocks) - 1:
        if blocks[i][0] > blocks[i + 1][0]:
            a, b = blocks[i], blocks[i + 1]
            merged = [(a[0] * a[1] + b[0] * b[1]) / (a[1] + b[1]), a[1] + b[1], a[2] + b[2]]
            blocks[i : i + 2] = [merged]
            i = max(i - 1, 0)
        else:
            i += 1
    return np.concatenate([[v] * n for v, _, n in blocks])


def hull_eer(mated, non_mated):
    """EER as the minimum over the ROC convex hull of max(P_miss, P_fa) (scipy ConvexHull)."""
    thresholds = np.r_[-np.inf, np.unique(np.r_[mated, non_mated]), np.inf]
    pts = np.array([[np.mean(mated <= t), np.mean(non_mated > t)] for t in thresholds])  # (P_miss, P_fa)
    pts = np.vstack([pts, [1.0, 1.0]])
    hull = ConvexHull(pts, qhull_options="QJ" if len(np.unique(pts, axis=0)) < 3 else "")
    best = 1.0
    verts = pts[hull.vertices]
    for a in verts:
        for b in verts:
            # the EER is where the lower hull crosses P_miss = P_fa
            da, db = a[0] - a[1], b[0] - b[1]
            if da <= 0 <= db and (db - da) > 0:
                t = -da / (db - da)
                best = min(best, a[0] + t * (b[0] - a[0]))
            elif da == 0:
                best = min(best, a[0])
    return best


def test_example_from_issue_5_rocch_and_threshold_eer_differ():
    from lidframe.metrics.detection import eer_threshold

    mated = np.array([0.9, 0.7, 0.5, 0.3])
    non_mated = np.repeat([0.8, 0.6, 0.4, 0.2], 3)
    # By hand.  Step ROC at each distinct threshold t (P_miss = share mated <= t,
    # P_fa = share non_mated > t):  t=0.2: (0, 9/12); 0.3: (1/4, 9/12); 0.4: (1/4, 6/12);
    # 0.5: (2/4, 6/12); ...  |P_fa - P_miss| is smallest (0) at t = 0.5, so the
    # threshold EER is (1/2 + 1/2) / 2 = 0.5.
    assert eer_threshold(mated, non_mated) == 0.5
    # PAV pools {0.3, 0.4}, {0.5, 0.6}, {0.7, 0.8} into bins of mated fraction 1/4 (collinear),
    # so the hull runs (P_miss, P_fa) = (0, 1) -> (0, 3/4) -> (3/4, 0) -> (1, 0).  On the
    # middle segment P_miss = 3/4 s and P_fa = 3/4 (1 - s) meet at s = 1/2: EER = 3/8.
    assert eer_rocch(mated, non_mated) == pytest.approx(0.375, abs=1e-15)
    assert eer_rocch(mated, non_mated) == pytest.approx(hull_eer(mated, non_mated), abs=1e-12)


@given(scores_list, scores_list)
def test_eer_rocch_equals_convex_hull_reference(mated, non_mated):
    mated, non_mated = np.array(mated), np.array(non_mated)
    assert eer_rocch(mated, non_mated) == pytest.approx(hull_eer(mated, non_mated), abs=1e-9)


@given(scores_list, scores_list)
def test_pav_llr_matches_naive_pav(mated, non_mated):
    mated, non_mated = np.array(mated), np.array(non_mated)
    values = np.unique(np.r_[mated, non_mated])
    n_t = np.array([np.sum(mated == v) for v in values], float)
    n_n = np.array([np.sum(non_mated == v) for v in values], float)
    post = naive_pav(n_t / (n_t + n_n), n_t + n_n)
    with np.errstate(divide="ignore"):
        llr_values = np.log(post) - np.log1p(-post) - math.log(mated.size / non_mated.size)
    got_t, got_n = pav_llr(mated, non_mated)
    np.testing.assert_allclose(got_t, llr_values[np.searchsorted(values, mated)], atol=1e-9)
    np.testing.assert_allclose(got_n, llr_values[np.searchsorted(values, non_mated)], atol=1e-9)


@given(scores_list, scores_list)
def test_laplace_llrs_are_finite_and_monotone(mated, non_mated):
    t_llr, n_llr = pav_llr(np.array(mated), np.array(non_mated), laplace=True)
    assert np.isfinite(t_llr).all() and np.isfinite(n_llr).all()
    s = np.r_[mated, non_mated]
    llr = np.r_[t_llr, n_llr]
    order = np.argsort(s, kind="stable")
    assert np.all(np.diff(llr[order]) >= -1e-12)


def test_cllr_closed_forms():
    assert cllr([0.0], [0.0]) == pytest.approx(1.0)  # uninformative
    assert cllr([50.0], [-50.0]) == pytest.approx(0.0, abs=1e-20)
    assert cllr([2.0, -1.0], [0.5]) == pytest.approx(
        0.5 * (np.mean(np.log2(1 + np.exp([-2.0, 1.0]))) + np.log2(1 + np.exp(0.5)))
    )


@given(scores_list, scores_list, st.floats(0.1, 5.0), st.floats(-3, 3))
def test_min_cllr_never_exceeds_cllr_of_any_affine_calibration(mated, non_mated, a, b):
    mated, non_mated = np.array(mated), np.array(non_mated)
    m = min_cllr(mated, non_mated)
    assert 0.0 <= m <= 1.0 + 1e-12
    assert m <= cllr(a * mated + b, a * non_mated + b) + 1e-9


def test_min_cllr_separable_and_identical():
    assert min_cllr([2.0, 3.0], [0.0, 1.0]) == pytest.approx(0.0, abs=1e-12)
    assert min_cllr([1.0, 1.0], [1.0, 1.0, 1.0]) == pytest.approx(1.0)
    assert eer_rocch([2.0, 3.0], [0.0, 1.0]) == 0.0
    assert eer_rocch([1.0], [1.0]) == pytest.approx(0.5)


@given(scores_list, scores_list)
def test_binary_summary_matches_the_separate_metrics(mated, non_mated):
    mated, non_mated = np.array(mated), np.array(non_mated)
    from lidframe.metrics.detection import act_dcf, eer_threshold, min_dcf
    from lidframe.metrics.linkability import dsys
    from lidframe.metrics.zebra import dece_bits, max_abs_llr, zebra_tag

    want = {
        "eer": eer_rocch(mated, non_mated),
        "eer_threshold": eer_threshold(mated, non_mated),
        "cllr": cllr(mated, non_mated),
        "min_cllr": min_cllr(mated, non_mated),
        "min_dcf": min_dcf(mated, non_mated),
        "act_dcf": act_dcf(mated, non_mated),
        "dece_bits": dece_bits(mated, non_mated),
        "max_abs_llr_log10": max_abs_llr(mated, non_mated),
        "dsys": dsys(mated, non_mated),
    }
    got = binary_summary(mated.copy(), non_mated.copy(), overwrite=True)
    assert got.pop("zebra_tag") == zebra_tag(want["max_abs_llr_log10"])
    assert got.pop("dsys_method") == "reference"
    assert got == pytest.approx(want, abs=1e-12)
    kept = non_mated.copy()
    binary_summary(mated, kept)
    np.testing.assert_array_equal(kept, non_mated)  # overwrite=False leaves inputs alone
