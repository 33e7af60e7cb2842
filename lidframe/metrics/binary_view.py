"""The binary view of a score set in one pass: every pair metric from one sort.

A closed-set score set has T mated and T (N - 1) non-mated (trial, enrolled) pairs.
:func:`binary_summary` sorts their LLRs once and derives, from the same sorted arrays
and PAV bins:

=====================  ======================================================
``eer``                ROC-convex-hull EER (fraction), :func:`~lidframe.metrics.detection.eer_rocch`
``eer_threshold``      step-ROC single-threshold EER, :func:`~lidframe.metrics.detection.eer_threshold`
``cllr``               Cllr of the LLRs (bits), :func:`~lidframe.metrics.detection.cllr`
``min_cllr``           Cllr after PAV (bits), :func:`~lidframe.metrics.detection.min_cllr`
``min_dcf``            normalised minimum detection cost, :func:`~lidframe.metrics.detection.min_dcf`
``act_dcf``            normalised detection cost at the LLRs' Bayes threshold, :func:`~lidframe.metrics.detection.act_dcf`
``dece_bits``          ZEBRA D_ECE (bits), :func:`~lidframe.metrics.zebra.dece_bits`
``max_abs_llr_log10``  ZEBRA max ``|LLR|`` (log10) of the real scores, :func:`~lidframe.metrics.zebra.max_abs_llr`
``zebra_tag``          its category 0, A-F
``dsys``               linkability D_sys, :func:`~lidframe.metrics.linkability.dsys`
``dsys_method``        how D_sys was integrated: ``"reference"`` (the VoicePrivacy code's)
=====================  ======================================================

Text-valued keys are listed in :data:`BINARY_TEXT_KEYS` (``None`` where the binary view
is not computed).  ``min_dcf`` and ``act_dcf`` are measured at an
:class:`~lidframe.metrics.detection.OperatingPoint` (``operating_point=``; default
P_target = 0.01, C_miss = C_fa = 1, SpeechBrain's ``minDCF`` defaults).
"""

from __future__ import annotations

import numpy as np

from lidframe.errors import InputError
from lidframe.metrics.detection import (
    OperatingPoint,
    act_dcf_sorted,
    bin_llr,
    check_pair,
    cllr,
    cllr_from_bins,
    eer_from_bins,
    eer_threshold_sorted,
    min_dcf_from_counts,
    pav_bins_of_runs,
    tied_runs,
)
from lidframe.metrics.linkability import DSYS_METHODS, dsys_of_sorted
from lidframe.metrics.zebra import dece_from_bins, max_abs_from_bins, zebra_tag

__all__ = ["binary_summary", "check_operating_point", "BINARY_KEYS", "BINARY_TEXT_KEYS"]

BINARY_KEYS = (
    "eer",
    "eer_threshold",
    "cllr",
    "min_cllr",
    "min_dcf",
    "act_dcf",
    "dece_bits",
    "max_abs_llr_log10",
    "zebra_tag",
    "dsys",
    "dsys_method",
)
#: The keys of :data:`BINARY_KEYS` that hold text, not numbers.
BINARY_TEXT_KEYS = ("zebra_tag", "dsys_method")

#: The D_sys integration rule the binary view reports (see :mod:`lidframe.metrics.linkability`).
DSYS_METHOD = DSYS_METHODS[0]


def binary_summary(
    mated_llr: np.ndarray,
    non_mated_llr: np.ndarray,
    *,
    overwrite: bool = False,
    operating_point: OperatingPoint | None = None,
) -> dict:
    """All binary-view metrics of mated/non-mated LLRs (see the module docstring).

    Parameters
    ----------
    mated_llr : ndarray, shape (n_mated,)
        Natural-log LLRs of the mated pairs.
    non_mated_llr : ndarray, shape (n_non_mated,)
        Natural-log LLRs of the non-mated pairs.
    overwrite : bool
        Sort the inputs in place instead of sorting copies, for callers that own large
        float64 buffers: the memory added is then O(number of distinct mated LLRs), not
        a copy of the buffers.  Every metric is computed from the two sorted arrays (one
        sort each): the histogram of D_sys and the single-threshold EER by binary search,
        the PAV bins from runs between the mated values.
    operating_point : OperatingPoint, optional
        Where ``min_dcf`` and ``act_dcf`` are measured (default ``OperatingPoint()``:
        P_target = 0.01, C_miss = C_fa = 1).

    Returns
    -------
    dict
        Keys :data:`BINARY_KEYS`.
    """
    point = check_operating_point(operating_point)
    mated, non_mated = check_pair(mated_llr, non_mated_llr)
    actual_cllr = cllr(mated, non_mated)  # in input order, before the sort
    if overwrite:
        mated.sort()
        non_mated.sort()
    else:
        mated, non_mated = np.sort(mated), np.sort(non_mated)
    out = pav_summary(*tied_runs(mated, non_mated), operating_point=point)
    out.update(
        cllr=actual_cllr,
        act_dcf=act_dcf_sorted(mated, non_mated, point),
        eer_threshold=eer_threshold_sorted(mated, non_mated),
        dsys=dsys_of_sorted(mated, non_mated, method=DSYS_METHOD),
        dsys_method=DSYS_METHOD,
    )
    return {k: out[k] for k in BINARY_KEYS}


def check_operating_point(operating_point: object) -> OperatingPoint:
    """*operating_point* (None: the default ``OperatingPoint()``), or an InputError naming what it got."""
    if operating_point is None:
        return OperatingPoint()
    if not isinstance(operating_point, OperatingPoint):
        raise InputError(
            f"operating_point must be a lidframe.metrics.detection.OperatingPoint, got {type(operating_point).__name__}"
        )
    return operating_point


def pav_summary(
    values: np.ndarray,
    n_mated: np.ndarray,
    n_non_mated: np.ndarray,
    *,
    operating_point: OperatingPoint | None = None,
) -> dict[str, float | str]:
    """The keys of ordered runs (eer, min_cllr, min_dcf, dece_bits, max_abs_llr_log10, zebra_tag).

    Parameters
    ----------
    values : ndarray, shape (K,)
        Largest score of each run (ascending); only its order matters.
    n_mated, n_non_mated : ndarray, shape (K,)
        Mated and non-mated counts of each run of tied (or binned) scores, every run non-empty.
    operating_point : OperatingPoint, optional
        Of ``min_dcf`` (default ``OperatingPoint()``).
    """
    _, bin_mated, bin_non_mated = pav_bins_of_runs(values, n_mated, n_non_mated, laplace=False)
    llr = bin_llr(bin_mated, bin_non_mated, bin_mated.sum(), bin_non_mated.sum())
    _, lap_mated, lap_non_mated = pav_bins_of_runs(values, n_mated, n_non_mated, laplace=True)
    max_abs = max_abs_from_bins(lap_mated, lap_non_mated, n_mated.sum(), n_non_mated.sum())
    return {
        "eer": eer_from_bins(bin_mated, bin_non_mated),
        "min_cllr": cllr_from_bins(llr, bin_mated, bin_non_mated),
        "min_dcf": min_dcf_from_counts(n_mated, n_non_mated, check_operating_point(operating_point)),
        "dece_bits": dece_from_bins(bin_mated, bin_non_mated),
        "max_abs_llr_log10": max_abs,
        "zebra_tag": zebra_tag(max_abs),
    }
