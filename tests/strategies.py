"""Hypothesis strategies shared by the tests."""

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

finite_scores = st.floats(min_value=-5.0, max_value=5.0, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def score_matrices(draw, min_trials=1, max_trials=12, min_enrolled=2, max_enrolled=10, min_row_std=0.05):
    """(T, N) float64 scores whose rows are clearly non-constant."""
    n_trials = draw(st.integers(min_trials, max_trials))
    n_enrolled = draw(st.integers(min_enrolled, max_enrolled))
    scores = draw(arrays(np.float64, (n_trials, n_enrolled), elements=finite_scores, fill=st.nothing()))
    # rows (nearly) constant have no z-norm: give them a spread by construction rather
    # than filtering, which would starve the search
    flat = scores.std(axis=1) <= min_row_std
    scores[flat] += np.linspace(-1.0, 1.0, n_enrolled)
    return scores


@st.composite
def closed_set_cases(draw, **kwargs):
    """(scores, true_index): every trial's speaker is enrolled."""
    scores = draw(score_matrices(**kwargs))
    n_trials, n_enrolled = scores.shape
    true_index = np.array(draw(st.lists(st.integers(0, n_enrolled - 1), min_size=n_trials, max_size=n_trials)))
    return scores, true_index


@st.composite
def log_priors(draw, n_enrolled):
    """Normalised natural-log prior of length n_enrolled."""
    mass = np.array(draw(st.lists(st.floats(0.05, 20.0), min_size=n_enrolled, max_size=n_enrolled)), dtype=np.float64)
    return np.log(mass) - np.log(mass.sum())


@st.composite
def priors_of_every_kind(draw, n_enrolled):
    """(kind, log_prior (N,)): a uniform, a watch-list (lidframe's WatchList) or an explicit drawn prior."""
    from lidframe import WatchList

    kind = draw(st.sampled_from(["uniform", "watchlist", "explicit"]))
    if kind == "uniform":
        return kind, np.full(n_enrolled, -np.log(n_enrolled))
    if kind == "watchlist":
        enrolled = [f"spk{j}" for j in range(n_enrolled)]
        listed = draw(st.integers(1, n_enrolled))
        return kind, WatchList(enrolled[:listed], draw(st.floats(0.05, 100.0))).log_prior(enrolled)
    return kind, draw(log_priors(n_enrolled))


@st.composite
def scoresets(draw, max_trials=10, max_enrolled=8, outsiders=True):
    """ScoreSets with string ids; some trial speakers may be non-enrolled (outsiders)."""
    from lidframe import ScoreSet

    scores = draw(score_matrices(max_trials=max_trials, max_enrolled=max_enrolled))
    n_trials, n_enrolled = scores.shape
    enrolled = [f"spk{j}" for j in range(n_enrolled)]
    pool = enrolled + (["outsider0", "outsider1"] if outsiders else [])
    speakers = draw(st.lists(st.sampled_from(pool), min_size=n_trials, max_size=n_trials))
    trial_ids = [f"utt{i:03d}" for i in range(n_trials)]
    return ScoreSet(scores, enrolled, speakers, trial_ids)


#: LID values in bits on a 0.01 grid: ties and exact zeros (the PDR/NDR boundary) are common.
lid_grid_values = st.integers(-300, 300).map(lambda k: k / 100)


@st.composite
def resample_weights(draw, n_units, n_resamples):
    """(n_resamples, n_units) float64 bootstrap weights: each row counts n_units draws with replacement."""
    draws = draw(
        st.lists(
            st.lists(st.integers(0, n_units - 1), min_size=n_units, max_size=n_units),
            min_size=n_resamples,
            max_size=n_resamples,
        )
    )
    return np.array([np.bincount(row, minlength=n_units) for row in draws], dtype=np.float64)


dev_scores = st.floats(-6.0, 6.0, allow_nan=False, allow_infinity=False, width=64)


@st.composite
def dev_pairs(draw, max_mated=40, max_non_mated=120):
    """(scores, labels) of drawn dev z-scores of mated (label 1) and non-mated (label 0) pairs.

    Each class also gets the scores -1 and +1, so both classes have a spread (the Gaussian
    back end refuses a zero-variance class) and overlap (perfectly separated classes are
    their own tests).
    """
    mated = draw(arrays(np.float64, st.integers(1, max_mated), elements=dev_scores))
    non_mated = draw(arrays(np.float64, st.integers(1, max_non_mated), elements=dev_scores))
    scores = np.r_[mated, -1.0, 1.0, non_mated, -1.0, 1.0]
    labels = np.r_[np.ones(mated.size + 2, int), np.zeros(non_mated.size + 2, int)]
    return scores, labels


#: A summary's numbers: any float64, NaN and the infinities included (NaN is written as None by ``to_dict``).
summary_numbers = st.floats(allow_nan=True, allow_infinity=True, width=64)
_counts = st.integers(0, 10**9)
_names = st.text(max_size=12)


@st.composite
def lid_aggregates(draw):
    """:class:`lidframe.metrics.aggregates.LIDAggregates` groups with any numbers."""
    from lidframe.metrics.aggregates import LIDAggregates

    fields = [field.name for field in LIDAggregates.__attrs_attrs__ if field.name != "n_trials"]
    return LIDAggregates(n_trials=draw(st.integers(1, 10**9)), **{name: draw(summary_numbers) for name in fields})


@st.composite
def operating_points(draw):
    """:class:`lidframe.metrics.detection.OperatingPoint` records (P_target in (0, 1), positive finite costs)."""
    from lidframe.metrics.detection import OperatingPoint

    costs = st.floats(min_value=1e-6, max_value=1e6, allow_nan=False, allow_infinity=False)
    p_target = st.floats(min_value=1e-9, max_value=1.0 - 1e-9, allow_nan=False)
    return OperatingPoint(p_target=draw(p_target), c_miss=draw(costs), c_fa=draw(costs))


@st.composite
def binary_views(draw):
    """:class:`lidframe.core.summary_views.BinaryView` records, exact or binned (with bins and error bounds)."""
    from lidframe.core.summary_views import BinaryView
    from lidframe.metrics.binary_view import BINARY_KEYS, BINARY_TEXT_KEYS

    method = draw(st.sampled_from(["exact", "binned"]))
    binned = method == "binned"
    bounds = st.dictionaries(st.sampled_from(["eer", "min_cllr", "min_dcf", "dsys"]), summary_numbers)
    return BinaryView(
        **{key: draw(_names if key in BINARY_TEXT_KEYS else summary_numbers) for key in BINARY_KEYS},
        method=method,
        n_bins=draw(st.integers(1, 1 << 20)) if binned else None,
        error_bounds=draw(bounds) if binned else None,
        operating_point=draw(operating_points()),
    )


@st.composite
def membership_detections(draw):
    """:class:`lidframe.core.membership.MembershipDetection` records: any numbers, any number of points and ROC points."""
    from lidframe.core.membership import MembershipDetection, MembershipPoint
    from lidframe.stats.interval import Interval

    level = draw(summary_numbers)
    intervals = st.builds(
        Interval, summary_numbers, summary_numbers, summary_numbers, st.just(level), st.just("clopper-pearson")
    )
    points = draw(
        st.lists(
            st.builds(
                MembershipPoint,
                max_fpr=summary_numbers,
                tpr=intervals,
                fpr=intervals,
                true_positives=_counts,
                false_positives=_counts,
                threshold_llr=summary_numbers,
                threshold_posterior=summary_numbers,
                resolved=st.booleans(),
            ),
            max_size=3,
        )
    )
    roc = draw(st.lists(st.tuples(summary_numbers, summary_numbers), max_size=5))
    return MembershipDetection(
        n_members=draw(_counts),
        n_outsiders=draw(_counts),
        level=level,
        points=points,
        roc_fpr=[f for f, _ in roc],
        roc_tpr=[t for _, t in roc],
    )


@st.composite
def open_set_views(draw):
    """:class:`lidframe.core.summary_views.OpenSetView` records, with or without outsider trials (and membership detection)."""
    from lidframe.core.summary_views import OpenSetView

    return OpenSetView(
        outside=draw(summary_numbers),
        outside_source=draw(st.sampled_from(["given", "auto"])),
        enrolled=draw(lid_aggregates()),
        outsider=draw(st.none() | lid_aggregates()),
        membership_enrolled=draw(lid_aggregates()),
        misattribution_rate=draw(summary_numbers),
        misattribution_threshold=draw(summary_numbers),
        misattribution_rate_at_threshold=draw(summary_numbers),
        membership_detection=draw(st.none() | membership_detections()),
    )


@st.composite
def bootstraps(draw):
    """:class:`lidframe.stats.bootstrap.Bootstrap` settings of every kind."""
    from lidframe.stats.bootstrap import Bootstrap

    return Bootstrap(
        n_boot=draw(st.integers(100, 1_000_000)),
        level=draw(st.floats(min_value=1e-9, max_value=1.0 - 1e-9, allow_nan=False)),
        unit=draw(st.sampled_from(["speaker", "trial"])),
        method=draw(st.sampled_from(["bca", "percentile"])),
        seed=draw(st.integers(0, 2**63)),
    )


@st.composite
def summaries(draw):
    """:class:`lidframe.core.summary.Summary` records of every shape.

    With or without: the binary view (None: skipped), a dev set, the z-norm, bootstrap
    intervals (over some of the LID, binary and open-set metrics, with their settings), the
    engine, a scheduler and its blocks, the open set.  Numbers are any float64.
    """
    from lidframe.core.engine_result import EngineUsed
    from lidframe.core.summary import LID_FIELDS, OPEN_SET_INTERVALS, Summary
    from lidframe.stats.bootstrap import Interval

    binary = draw(st.none() | binary_views())
    bootstrap = draw(st.none() | bootstraps())
    intervals = None
    if bootstrap is not None:
        metrics = draw(st.lists(st.sampled_from([*LID_FIELDS, "eer", "cllr", *OPEN_SET_INTERVALS]), unique=True))
        intervals = {
            metric: Interval(draw(summary_numbers), draw(summary_numbers), draw(summary_numbers), bootstrap.level, "x")
            for metric in metrics
        }
    dev = draw(st.booleans())
    scheduler = draw(st.none() | _names)
    return Summary(
        n_enrolled_trials=draw(_counts),
        n_enrolled=draw(st.integers(2, 10**6)),
        n_outsider_trials=draw(_counts),
        **{name: draw(summary_numbers) for name in ("log2_n", *LID_FIELDS, "cllr_mc", "rank1_rate")},
        rank_disclosure_bits=draw(summary_numbers),
        binary_metrics="computed" if binary is not None else "skipped: " + draw(_names),
        binary=binary,
        intervals=intervals,
        bootstrap=bootstrap,
        calibrator=draw(_names),
        prior=draw(_names),
        znorm_ddof=draw(st.sampled_from([None, 0, 1])),
        n_dev_enrolled_trials=draw(_counts) if dev else None,
        n_dev_enrolled=draw(_counts) if dev else None,
        n_dev_outsider_trials=draw(_counts) if dev else None,
        lidframe_version=draw(_names),
        engine=draw(st.none() | st.builds(EngineUsed, kernel=_names, device=_names, precision=_names)),
        scheduler=scheduler,
        n_blocks=None if scheduler is None else draw(st.integers(1, 10**6)),
        open_set=draw(st.none() | open_set_views()),
    )
