"""The console text of ``lidframe evaluate`` beyond the system table: its intervals and its open-set section.

:func:`format_interval_table` prints the bootstrap intervals of a summary (the open set's
groups' too), :func:`format_open_set` the open set's prior mass, its groups' LID and the
misattribution rates.  The aligner is :func:`lidframe.report.text.text_table`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lidframe.core.summary import Summary
from lidframe.report.text import format_value, text_table

if TYPE_CHECKING:
    from lidframe.metrics.aggregates import LIDAggregates

__all__ = ["format_interval_table", "format_open_set"]

_INTERVAL_NAMES = {
    "alid": "ALID",
    "pdr": "PDR",
    "lid_pos": "LID+",
    "lid_neg": "LID-",
    "lid_q99": "LIDq99",
    "lid_max": "LIDmax",
    "eer": "EER",
    "cllr": "Cllr",
    "alid_enrolled": "ALID enrolled",
    "alid_outsider": "ALID outsider",
    "membership_enrolled": "membership enrolled",
    "misattribution_rate": "misattributed >0.5",
    "misattribution_rate_at_threshold": "misattributed >threshold",
}

#: The rows of the open-set table: (title, key of the group in the summary's ``open_set``; None: the top level).
_OPEN_SET_ROWS = (
    ("all trials", None),
    ("enrolled", "enrolled"),
    ("outsider", "outsider"),
    ("membership of enrolled", "membership_enrolled"),
)
_OPEN_SET_COLUMNS = (("alid", "ALID"), ("pdr", "PDR"), ("lid_pos", "LID+"), ("lid_neg", "LID-"), ("lid_max", "LIDmax"))


def format_interval_table(summary: Summary) -> str:
    """The bootstrap intervals of an evaluate summary (with a bootstrap) as text (in the open set, those of its groups too)."""
    settings = summary.bootstrap
    assert settings is not None and summary.intervals is not None  # the caller prints this only with intervals
    title = (
        f"{settings.level:.0%} bootstrap intervals ({settings.method}, {settings.n_boot} resamples of "
        f"{settings.unit}s, seed {settings.seed}; LIDmax: percentile, biased low -- prefer LIDq99)\n"
        f"covering: {settings.covers()}"
    )
    open_set = {}
    if summary.open_set is not None:
        from lidframe.report.sections.open_set_model import open_set_estimates

        open_set = open_set_estimates(summary.open_set.to_dict())

    def estimate(key: str) -> Any:
        return open_set[key] if key in open_set else summary.value(key)

    rows = [
        [_INTERVAL_NAMES.get(key, key), format_value(estimate(key)), format_value(i.low), format_value(i.high)]
        for key, i in summary.intervals.items()
    ]
    return title + "\n" + text_table(["metric", "estimate", "low", "high"], rows)


def format_open_set(summary: Summary) -> str:
    """The open-set section of an evaluate summary as text: π_∅, the groups' LID, membership and misattribution.

    Parameters
    ----------
    summary : Summary
        An open-set summary (its ``open_set`` not None).
    """
    o = summary.open_set
    assert o is not None  # the caller prints this section only in the open set
    source = (
        "auto from dev: the dev set's share of outsider trials, the attacker's belief"
        if o.outside_source == "auto"
        else "given"
    )
    lines = [
        f"open set: outside = pi_0 = {o.outside:.4g} ({source}), the prior mass of 'nobody enrolled'; every trial "
        "has a LID: an enrolled trial's identification disclosure, an outsider trial's membership disclosure",
    ]
    n_all = int(summary.n_enrolled_trials) + int(summary.n_outsider_trials)
    body = []
    for title, key in _OPEN_SET_ROWS:
        group: Summary | LIDAggregates | None = summary if key is None else getattr(o, key)
        if group is None:
            continue
        n = n_all if isinstance(group, Summary) else int(group.n_trials)
        body.append([title, str(n)] + [format_value(getattr(group, k)) for k, _ in _OPEN_SET_COLUMNS])
    lines.append(text_table(["trials", "n"] + [t for _, t in _OPEN_SET_COLUMNS], body))
    if not summary.n_outsider_trials:
        lines.append("misattribution rate: none (the eval set has no outsider trial)")
    else:
        lines.append(
            f"misattribution rate: {format_value(o.misattribution_rate)} of the {summary.n_outsider_trials} "
            "outsider trials have a top enrolled posterior above 0.5 (linked to an enrolled speaker who is not "
            f"theirs, more likely than not), {format_value(o.misattribution_rate_at_threshold)} above "
            f"{o.misattribution_threshold:g}"
        )
    lines.append(
        "(the system table above: T counts the enrolled trials, out the outsider trials, and its LID columns are over all "
        "of them; EER, Cllr, rank-1 rate, rank disclosure and multiclass Cllr are over the enrolled trials, as in "
        "the closed set)"
    )
    return "\n".join(lines)
