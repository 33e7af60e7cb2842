"""When a dev set is too small to calibrate on: :data:`MIN_DEV_SPEAKERS`, :data:`MIN_DEV_MATED_PAIRS`, :func:`small_dev_warning`.

Every LID moves with the calibrator's slope, and the slope is fitted on the dev set's
mated pairs, one per trial of an enrolled speaker.  With few dev speakers the slope is
uncertain; the bootstrap of ``evaluate`` says how much, by refitting the calibrator on
resampled dev speakers (``Bootstrap(resample="dev+eval")``, :mod:`lidframe.core.refit`).
Below :data:`MIN_DEV_SPEAKERS` enrolled dev speakers or :data:`MIN_DEV_MATED_PAIRS` mated
dev pairs, ``lidframe evaluate`` and the page warn that the dev set is too small to
calibrate on.

Why these two numbers: in simulated audits (``bench/refit_bootstrap.py``,
``docs/statistics.md``: 40 enrolled speakers, 5 to 20 trials per dev speaker), refitting
the calibrator on resampled dev speakers widened the ALID interval by at most 7 % with at
least 20 dev speakers and 100 mated pairs -- the calibrator a small share of the
uncertainty -- and by 7 % to 46 % with 3 to 10 dev speakers (16 % to 46 % with 3 or 5):
the calibrator's share is then the point estimate's weak spot, and a number read without
its interval misleads.  The speakers drive it (100 mated pairs from 10 speakers: 19 %, from
20 speakers: 4 %); the mated-pairs bound guards dev sets of very few trials per speaker.
"""

from __future__ import annotations

__all__ = ["MIN_DEV_SPEAKERS", "MIN_DEV_MATED_PAIRS", "small_dev_warning"]

#: Fewest enrolled dev speakers to calibrate on without a warning (module docstring).
MIN_DEV_SPEAKERS = 20
#: Fewest mated dev pairs (dev trials of enrolled speakers) to calibrate on without a warning.
MIN_DEV_MATED_PAIRS = 100


def small_dev_warning(n_dev_speakers: int | None, n_dev_mated_pairs: int | None) -> str | None:
    """The warning for a dev set too small to calibrate on, or None (also None where the sizes are not known).

    Parameters
    ----------
    n_dev_speakers : int or None
        Enrolled speakers of the dev set (``Summary.n_dev_enrolled``).
    n_dev_mated_pairs : int or None
        Its mated pairs: trials whose speaker is enrolled (``Summary.n_dev_enrolled_trials``).

    Examples
    --------
    >>> small_dev_warning(60, 600) is None
    True
    >>> small_dev_warning(5, 50).startswith("the dev set is too small to calibrate on: 5 enrolled speakers")
    True
    """
    if n_dev_speakers is None or n_dev_mated_pairs is None:
        return None
    if n_dev_speakers >= MIN_DEV_SPEAKERS and n_dev_mated_pairs >= MIN_DEV_MATED_PAIRS:
        return None
    return (
        f"the dev set is too small to calibrate on: {n_dev_speakers} enrolled speakers and {n_dev_mated_pairs} "
        f"mated pairs (fewer than {MIN_DEV_SPEAKERS} speakers or {MIN_DEV_MATED_PAIRS} mated pairs); the "
        "calibrator's slope is uncertain and every LID with it: read the intervals, which refit the calibrator "
        "on resampled dev speakers, rather than the point estimates"
    )
