"""Independent dense float64 references, written without lidframe's code paths."""

import numpy as np


def dense_znorm(scores, ddof):
    scores = np.asarray(scores, dtype=np.float64)
    mean = scores.mean(axis=1, keepdims=True)
    std = scores.std(axis=1, ddof=ddof, keepdims=True)
    return (scores - mean) / std


def dense_lid(llr, log_prior, true_index):
    """LID in bits by the textbook formula, whole matrix at once."""
    llr = np.asarray(llr, dtype=np.float64)
    a = llr + log_prior[None, :]
    m = a.max(axis=1, keepdims=True)
    log_post = a - (m + np.log(np.exp(a - m).sum(axis=1, keepdims=True)))
    rows = np.arange(llr.shape[0])
    return (log_post[rows, true_index] - log_prior[true_index]) / np.log(2.0)


def dense_pipeline(scores, true_index, slope, intercept, log_prior, ddof=1):
    return dense_lid(slope * dense_znorm(scores, ddof) + intercept, log_prior, true_index)


def oracle_lids(rng, mu, n_enrolled=20):
    """Per-trial LID (bits) of the exact posterior for scores mu_i 1[j = true] + N(0, 1).

    The true column is 0; trial i's posterior is softmax_j(mu_i s_ij) (uniform prior).
    """
    import math

    s = rng.standard_normal((mu.size, n_enrolled))
    s[:, 0] += mu
    a = mu[:, None] * s
    peak = a.max(1, keepdims=True)
    return (a[:, 0] - (np.log(np.exp(a - peak).sum(1)) + peak[:, 0]) + math.log(n_enrolled)) / math.log(2)
