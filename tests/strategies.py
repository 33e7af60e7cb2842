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
