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
