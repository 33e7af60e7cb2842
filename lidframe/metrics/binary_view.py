"""The binary view of a score set in one pass: every pair metric from one sort.

A closed-set score set has T mated and T (N - 1) non-mated (trial, enrolled) pairs.
:func:`binary_summary` sorts their LLRs once and derives, from the same sorted arrays
and PAV bins:

=====================  ======================================================
``eer``                ROC-convex-hull EER (fraction), :func:`~lidframe.metrics.detection.eer_rocch`
``eer_threshold``      step-ROC single-threshold EER, :func:`~lidframe.metrics.detection.eer_threshold`
``cllr``               Cllr of the LLRs (bits), :func:`~lidframe.metrics.detection.cllr`
``min_cllr``           Cllr after PAV (bits), :func:`~lidframe.metrics.detection.min_cllr`
``dece_bits``          ZEBRA D_ECE (bits), :func:`~lidframe.metrics.zebra.dece_bits`
``max_abs_llr_log10``  ZEBRA max |LLR| (log10), :func:`~lidframe.metrics.zebra.max_abs_llr`
``zebra_tag``          its category 0, A-F
``dsys``               linkability D_sys, :func:`~lidframe.metrics.linkability.dsys`
=====================  ======================================================
"""

from __future__ import annotations

import numpy as np

from lidframe.metrics.detection import (
    _bin_llr,
    _check_pair,
    _cllr_from_bins,
    _eer_from_bins,
    _eer_threshold_sorted,
    _pav_bins_sorted,
    cllr,
)
from lidframe.metrics.linkability import dsys
from lidframe.metrics.zebra import dece_from_bins, max_abs_from_bins, zebra_tag

__all__ = ["binary_summary", "BINARY_KEYS"]

BINARY_KEYS = ("eer", "eer_threshold", "cllr", "min_cllr", "dece_bits", "max_abs_llr_log10", "zebra_tag", "dsys")


def binary_summary(tar_llr, non_llr, *, overwrite: bool = False) -> dict:
    """All binary-view metrics of mated/non-mated LLRs (see the module docstring).

    Parameters
    ----------
    tar_llr, non_llr : ndarray
        Natural-log LLRs of the mated and non-mated pairs.
    overwrite : bool
        Sort the inputs in place instead of sorting copies (for callers that own large
        buffers: the memory added is then O(number of mated pairs)).

    Returns
    -------
    dict
        Keys :data:`BINARY_KEYS`.
    """
    tar, non = _check_pair(tar_llr, non_llr)
    out = {"cllr": cllr(tar, non), "dsys": dsys(tar, non)}
    if overwrite:
        tar.sort()
        non.sort()
    else:
        tar, non = np.sort(tar), np.sort(non)
    _, bin_tar, bin_non = _pav_bins_sorted(tar, non, laplace=False)
    out["eer"] = _eer_from_bins(bin_tar, bin_non)
    out["eer_threshold"] = _eer_threshold_sorted(tar, non)
    llr = _bin_llr(bin_tar, bin_non, bin_tar.sum(), bin_non.sum())
    out["min_cllr"] = _cllr_from_bins(llr, bin_tar, bin_non)
    out["dece_bits"] = dece_from_bins(bin_tar, bin_non)
    _, lap_tar, lap_non = _pav_bins_sorted(tar, non, laplace=True)
    out["max_abs_llr_log10"] = max_abs_from_bins(lap_tar, lap_non, tar.size, non.size)
    out["zebra_tag"] = zebra_tag(out["max_abs_llr_log10"])
    return {k: out[k] for k in BINARY_KEYS}
