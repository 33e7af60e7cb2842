"""The metric catalogue: every quantity lidframe reports, named once.

One :class:`Metric` row per reported quantity -- its key, its label on the page and in
plain text, its unit, its direction (does a higher value mean more disclosure?), whether
it has a bootstrap interval, its group and one sentence that says what it is.  The
console table, ``summary.json``'s metric keys, the grid's tidy columns (``<key>``,
``<key>_low``, ``<key>_high``), the report's tables and cards, the LaTeX and Markdown
summaries and ``lidframe compare`` take their labels, units, formats and directions from
here; each table's choice and order of metrics is one tuple of keys below
(:data:`TABLES`).

Adding a metric is its computation plus one row of :data:`METRICS` (and its key in the
tables that show it): docs/architecture.md, "Adding a metric".

Formats follow one rule per surface, from the unit (:meth:`Metric.console_format`,
:meth:`Metric.paper_format`; the page's formatters are chosen by unit in
:mod:`lidframe.report`):

========  =============  ===========================  ==========================
unit      console        paper (Markdown, HTML, TeX)  page
========  =============  ===========================  ==========================
bits      3 decimals     2 decimals                   2 decimals
fraction  3 decimals     2 decimals                   percent, 1 decimal
count     integer        integer                      integer, thousands commas
number    3 decimals     2 decimals                   3 decimals
========  =============  ===========================  ==========================

A row may set its own console format (``log2 N`` prints 2 decimals there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import attrs

from lidframe.metrics.zebra import ZEBRA_TAGS

__all__ = [
    "Metric",
    "METRICS",
    "TABLES",
    "GROUPS",
    "metric",
    "metrics_of",
    "table",
    "attacker_prefers",
]

Unit = Literal["bits", "fraction", "count", "number"]
Group = Literal["size", "lid", "binary", "identification", "legal", "open_set", "utility", "analysis"]

#: The groups of :attr:`Metric.group`, in the order a page or a glossary shows them.
GROUPS: tuple[Group, ...] = ("size", "lid", "binary", "identification", "legal", "open_set", "utility", "analysis")
_UNITS = ("bits", "fraction", "count", "number")


@attrs.frozen(kw_only=True)
class Metric:
    """One reported quantity.

    Attributes
    ----------
    key : str
        Its name in a :class:`~lidframe.core.summary.Summary` (attribute), in
        ``summary.json``, in a grid's tidy columns (its interval: ``<key>_low``,
        ``<key>_high``) and in the records of the analyses.
    label : str
        Its name on the page (Unicode: ``"LID−"``, ``"LID q99"``).
    short : str
        Its name in plain text: the console, Markdown and LaTeX (``"LID-"``, ``"LIDq99"``).
    unit : {"bits", "fraction", "count", "number"}
        What one of its values is; a fraction is in [0, 1] (the page shows a percentage).
    direction : {1, -1, 0}
        1: a higher value means more disclosure (the attacker's best is the largest);
        -1: a lower value does (an error rate, a cost); 0: neither (a size).
    group : str
        One of :data:`GROUPS`.
    interval : bool
        Whether an evaluation's bootstrap gives it an interval (``Summary.intervals``; the
        ``legal`` group's in their records, :mod:`lidframe.analyses.legal`).
    description : str
        One sentence: what it is (the page's tooltip and glossary).
    console : str or None
        Its format spec in the console table, where it is not the unit's.
    note : str
        A longer explanation for the page's glossary, where one sentence does not say
        enough (why ALID can be negative, what ZEBRA's tags mean); ``""`` where none.
    """

    key: str
    label: str
    short: str
    unit: Unit = attrs.field(validator=attrs.validators.in_(_UNITS))
    direction: Literal[1, -1, 0] = attrs.field(validator=attrs.validators.in_((1, -1, 0)))
    group: Group = attrs.field(validator=attrs.validators.in_(GROUPS))
    interval: bool = False
    description: str
    console: str | None = None
    note: str = ""

    def console_format(self) -> str:
        """The format spec of its values in the console (``"d"``, ``".3f"``)."""
        if self.console is not None:
            return self.console
        return "d" if self.unit == "count" else ".3f"

    def paper_format(self) -> str:
        """The ``str.format`` template of its values in the Markdown, HTML and LaTeX summaries of a grid."""
        return "{:d}" if self.unit == "count" else "{:.2f}"

    @property
    def titled(self) -> str:
        """Its page label with its unit where the unit is bits (``"ALID (bits)"``), as a headline card names it."""
        return f"{self.label} (bits)" if self.unit == "bits" else self.label


def _m(
    key: str,
    label: str,
    short: str,
    unit: Unit,
    direction: Literal[1, -1, 0],
    group: Group,
    description: str,
    *,
    interval: bool = False,
    console: str | None = None,
    note: str = "",
) -> Metric:
    return Metric(
        key=key,
        label=label,
        short=short,
        unit=unit,
        direction=direction,
        group=group,
        interval=interval,
        description=description,
        console=console,
        note=note,
    )


def _zebra_tags() -> str:
    """ZEBRA's tags of max ``|LLR|`` in words, from :data:`lidframe.metrics.zebra.ZEBRA_TAGS`."""
    bounds = [f"{tag} (= 0)" if bound == 0 else f"{tag} (≤ {bound:g})" for bound, tag in ZEBRA_TAGS]
    return ", ".join(bounds) + f", F (> {ZEBRA_TAGS[-1][0]:g})"


#: Every reported quantity, by group.
METRICS: tuple[Metric, ...] = (
    # -- the size of the search
    _m("n_enrolled", "N", "N", "count", 0, "size", "enrolled speakers the attacker searches"),
    _m(
        "log2_n",
        "log2 N",
        "log2N",
        "bits",
        0,
        "size",
        "the most a trial can disclose under a uniform prior (bits)",
        console=".2f",
        note=(
            "It is the ceiling of a closed-set trial under a uniform prior. An open-set prior or a watch-list "
            "prior moves the ceiling (see LIDmax); the page's ceiling is the largest −log2 prior of a true hypothesis."
        ),
    ),
    _m("n_enrolled_trials", "trials", "T", "count", 0, "size", "eval trials whose speaker is enrolled (with a LID)"),
    _m("n_outsider_trials", "outsider trials", "out", "count", 0, "size", "eval trials whose speaker is not enrolled"),
    _m("n_trials", "trials", "n", "count", 0, "size", "trials of the group (a speaker's, say)"),
    _m(
        "lid_ceiling",
        "ceiling",
        "ceiling",
        "bits",
        0,
        "size",
        "the most one of the group's trials can disclose, -log2 of its speaker's prior (bits)",
    ),
    # -- LID and its aggregates (bits, or shares of trials)
    _m(
        "alid",
        "ALID",
        "ALID",
        "bits",
        1,
        "lid",
        "average LID (bits)",
        interval=True,
        note=(
            "ALID can be negative. LID_i = log2(p_i / π_i) is below 0 for a trial whose calibrated posterior of the "
            "true speaker is under its prior: the attacker was led towards someone else. For an attacker whose "
            "calibration holds on the eval set, the expected LID is the mutual information between voice and "
            "speaker, never below 0; an ALID below 0 says the calibration fitted on dev does not hold on eval (a "
            "mismatched or too small dev set), or is sampling noise around 0 (read its interval). It never means the "
            "system hides more than nothing."
        ),
    ),
    _m("pdr", "PDR", "PDR", "fraction", 1, "lid", "share of trials with LID > 0", interval=True),
    _m("ndr", "NDR", "NDR", "fraction", -1, "lid", "share of trials with LID ≤ 0"),
    _m("lid_pos", "LID+", "LID+", "bits", 1, "lid", "mean LID of the trials with LID > 0 (bits)", interval=True),
    _m("lid_neg", "LID−", "LID-", "bits", 1, "lid", "mean LID of the trials with LID ≤ 0 (bits)", interval=True),
    _m(
        "lid_max",
        "LIDmax",
        "LIDmax",
        "bits",
        1,
        "lid",
        "largest LID of any trial (bits)",
        interval=True,
        note=(
            "In the closed set under a uniform prior no trial can disclose more than log2 N. In the open set (a prior "
            "with π_∅ = outside > 0) an enrolled speaker's prior is (1 − π_∅)/N, so one trial can disclose up to "
            "log2(N / (1 − π_∅)) bits, more than log2 N, and an outsider trial up to −log2 π_∅, which exceeds log2 N "
            "whenever π_∅ < 1/N; a watch-list prior likewise raises the ceiling of the speakers it makes unlikely. "
            "The page's ceiling is the largest −log2 prior of a true hypothesis."
        ),
    ),
    _m("lid_min", "LIDmin", "LIDmin", "bits", 1, "lid", "smallest LID of any trial (bits)"),
    _m("lid_q50", "LID q50", "LIDq50", "bits", 1, "lid", "median LID (bits)"),
    _m("lid_q90", "LID q90", "LIDq90", "bits", 1, "lid", "90th percentile of LID (bits)"),
    _m("lid_q99", "LID q99", "LIDq99", "bits", 1, "lid", "99th percentile of LID (bits)", interval=True),
    # -- the binary (verification) view of the pairs
    _m("eer", "EER", "EER", "fraction", -1, "binary", "pairwise equal error rate, ROC convex hull", interval=True),
    _m("eer_threshold", "EER (threshold)", "EERthr", "fraction", -1, "binary", "equal error rate of the step ROC"),
    _m("cllr", "Cllr", "Cllr", "bits", -1, "binary", "binary log-likelihood-ratio cost (bits)", interval=True),
    _m(
        "min_cllr",
        "minCllr",
        "minCllr",
        "bits",
        -1,
        "binary",
        "Cllr after PAV: the discrimination part of Cllr (bits)",
    ),
    _m(
        "min_dcf",
        "minDCF",
        "minDCF",
        "number",
        -1,
        "binary",
        "normalised detection cost at its best threshold",
        note=(
            "Measured at the binary view's operating point (P_target, C_miss, C_fa), given beside it on the page, "
            "and normalised by min(C_miss·P_target, C_fa·(1 − P_target)): 1 is the cost of always taking the "
            "cheaper decision, lower means the scores help an attacker verify a claimed speaker."
        ),
    ),
    _m(
        "act_dcf",
        "actDCF",
        "actDCF",
        "number",
        -1,
        "binary",
        "normalised detection cost at the LLRs' Bayes threshold",
        note=(
            "Measured at the same operating point as minDCF, given beside it on the page, deciding with the "
            "calibrated LLRs at their Bayes threshold ln(C_fa (1 − P_target) / (C_miss P_target)); actDCF − minDCF is "
            "what the calibration loses at that point."
        ),
    ),
    _m(
        "dece_bits",
        "D_ECE",
        "DECE",
        "bits",
        0,
        "binary",
        "ZEBRA's expected calibration divergence (bits)",
        note=(
            "ZEBRA's population metric (Nautsch et al., Interspeech 2020): the area, over every prior of 'same "
            "speaker', between the binary entropy of the prior and the empirical cross-entropy of the optimally "
            "calibrated (PAV) LLRs: 0 bit when the scores carry no evidence, 1/ln 4 ≈ 0.721 bit for perfect separation."
        ),
    ),
    _m(
        "max_abs_llr_log10",
        "max |LLR|",
        "maxLLR",
        "number",
        0,
        "binary",
        "ZEBRA's largest |LLR| (log10)",
        note=(
            "ZEBRA's individual metric: the strongest evidence any single comparison gives, the largest |LLR| of the "
            "Laplace-smoothed PAV LLRs in decimal orders of magnitude (2 means a likelihood ratio of 100 : 1), shown "
            f"with its tag: {_zebra_tags()}. The tag says how far the worst-case comparison can go, whatever the "
            "average: a system with a small D_ECE can still carry an F."
        ),
    ),
    _m("dsys", "D_sys", "Dsys", "number", 1, "binary", "linkability D_sys of the pairs, 0 (none) to 1 (full)"),
    # -- identification
    _m("cllr_mc", "Cllr (multiclass)", "CllrMC", "bits", -1, "identification", "multiclass Cllr (bits)"),
    _m(
        "rank1_rate",
        "rank-1",
        "rank1",
        "fraction",
        1,
        "identification",
        "share of trials whose true speaker scores highest",
    ),
    _m(
        "rank_disclosure_bits",
        "rank disclosure",
        "rankBits",
        "bits",
        1,
        "identification",
        "what the true speaker's rank discloses (bits)",
    ),
    # -- the law's criteria of singling out and linkability (lidframe.analyses.legal, docs/legal.md)
    _m(
        "pi_link",
        "π_link",
        "piLink",
        "fraction",
        1,
        "legal",
        "share of trials linked to their speaker among N′ candidates, the exact expectation (chance 1/N′)",
        interval=True,
    ),
    _m(
        "pi_sing",
        "π_sing",
        "piSing",
        "fraction",
        1,
        "legal",
        "share of calibrated predicates that single out exactly one of N speakers (chance e^−1)",
        interval=True,
    ),
    # -- the open set
    _m(
        "alid_enrolled",
        "ALID enrolled",
        "ALIDenr",
        "bits",
        1,
        "open_set",
        "average LID of the trials whose speaker is enrolled (bits)",
        interval=True,
    ),
    _m(
        "alid_outsider",
        "ALID outsider",
        "ALIDout",
        "bits",
        1,
        "open_set",
        "average membership disclosure of the outsider trials (bits)",
        interval=True,
    ),
    _m(
        "membership_enrolled",
        "membership enrolled",
        "memberEnr",
        "bits",
        1,
        "open_set",
        "average membership disclosure of the enrolled trials (bits)",
        interval=True,
    ),
    _m(
        "misattribution_rate",
        "misattributed",
        "misattr",
        "fraction",
        1,
        "open_set",
        "share of outsider trials whose top enrolled posterior exceeds 0.5",
        interval=True,
    ),
    _m(
        "misattribution_rate_at_threshold",
        "misattributed > threshold",
        "misattrThr",
        "fraction",
        1,
        "open_set",
        "share of outsider trials whose top enrolled posterior exceeds the chosen threshold",
        interval=True,
    ),
    _m(
        "membership_bits",
        "membership",
        "member",
        "bits",
        1,
        "open_set",
        "membership disclosure: what the attacker learns of whether the speaker is enrolled (bits)",
    ),
    _m(
        "max_fpr",
        "FPR budget",
        "maxFPR",
        "fraction",
        0,
        "open_set",
        "the false-positive rate a membership operating point may not exceed (1 %, 0.1 %)",
    ),
    _m(
        "membership_tpr",
        "membership TPR",
        "memberTPR",
        "fraction",
        1,
        "open_set",
        "share of enrolled trials the membership attack flags as enrolled, at its FPR budget",
    ),
    _m(
        "membership_fpr",
        "membership FPR",
        "memberFPR",
        "fraction",
        0,
        "open_set",
        "share of outsider trials the membership attack flags as enrolled (at most its budget)",
    ),
    # -- what the anonymisation costs the speech
    _m("wer", "WER", "WER", "fraction", 0, "utility", "word error rate of a recogniser on the speech"),
    _m("rho_f0", "ρ_F0", "ρ_F0", "number", 0, "utility", "correlation of the F0 contours with the original speech"),
    # -- analyses
    # the CMC curve with its chance levels (lidframe.core.cmc)
    _m(
        "top_k_rate",
        "top-k",
        "topK",
        "fraction",
        1,
        "analysis",
        "share of trials whose true speaker is among the attacker's k best-scored enrolled speakers (a CMC point)",
    ),
    _m(
        "chance",
        "chance",
        "chance",
        "fraction",
        0,
        "analysis",
        "what an attacker without information about the voice reaches (k/N for a top-k rate)",
    ),
    _m(
        "p_chance",
        "p (chance)",
        "pChance",
        "number",
        0,
        "analysis",
        "how often an attacker at chance would do as well: the binomial tail P(hits or more)",
    ),
    _m(
        "dev_logloss_bits",
        "dev log-loss (bits)",
        "devLogLoss",
        "bits",
        -1,
        "analysis",
        "the fitted calibrator's log-loss on the dev pairs (bits)",
    ),
)

_BY_KEY: dict[str, Metric] = {m.key: m for m in METRICS}

#: The metrics each table shows, in its order of columns (or of a card's items).
TABLES: Mapping[str, tuple[str, ...]] = {
    # lidframe evaluate / demo / sensitivity: the console's comparison table
    "console": (
        "n_enrolled",
        "log2_n",
        "n_enrolled_trials",
        "n_outsider_trials",
        "eer",
        "cllr",
        "min_cllr",
        "alid",
        "pdr",
        "lid_pos",
        "lid_neg",
        "lid_q99",
        "lid_max",
    ),
    # the page's comparison table (its columns with no value in any system are left out)
    "comparison": (
        "n_enrolled",
        "log2_n",
        "n_enrolled_trials",
        "alid",
        "pdr",
        "lid_pos",
        "lid_neg",
        "lid_q99",
        "lid_max",
        "eer",
        "cllr",
        "min_cllr",
        "dsys",
        "min_dcf",
        "act_dcf",
        "dece_bits",
        "max_abs_llr_log10",
        "rank1_rate",
    ),
    # a system's headline card on the page, and its worst case over calibrators and priors
    "card": ("n_enrolled", "log2_n", "alid", "lid_max", "lid_q99", "eer", "pdr"),
    "worst_case": ("alid", "lid_q99", "lid_max", "pdr"),
    # a grid's comparison tables in summary.md, summary.html and table.tex (then the utility's)
    "paper": ("n_enrolled", "eer", "alid", "pdr", "lid_pos", "lid_neg", "lid_max"),
    "paper_utility": ("wer", "rho_f0"),
    # the open-set metrics of a summary's ``open_set`` (tidy columns, sensitivity, intervals)
    "open_set": (
        "alid_enrolled",
        "alid_outsider",
        "membership_enrolled",
        "misattribution_rate",
        "misattribution_rate_at_threshold",
    ),
    # lidframe compare: the paired differences of per-trial LID
    "compare": ("alid", "pdr", "lid_pos", "lid_neg", "lid_q99", "lid_max"),
    # lidframe sensitivity: the metrics whose spread and worst case over calibrators it reports
    "sensitivity": ("alid", "pdr", "lid_pos", "lid_neg", "lid_q99", "lid_max", "cllr", "dev_logloss_bits"),
    "sensitivity_open_set": ("alid_enrolled", "alid_outsider", "membership_enrolled", "misattribution_rate"),
}


def metric(key: str) -> Metric:
    """The catalogue's row of *key*; a KeyError names the key and that it is not in the catalogue."""
    try:
        return _BY_KEY[key]
    except KeyError:
        raise KeyError(f"{key!r} is not a metric of the catalogue (lidframe.metrics.catalogue.METRICS)") from None


def table(name: str) -> tuple[Metric, ...]:
    """The metrics of the table *name* of :data:`TABLES`, in its order."""
    return tuple(_BY_KEY[key] for key in TABLES[name])


def metrics_of(group: Group) -> tuple[Metric, ...]:
    """The metrics of *group*, in catalogue order."""
    return tuple(m for m in METRICS if m.group == group)


def attacker_prefers(key: str) -> Literal["max", "min"]:
    """``"max"`` where a larger value of *key* favours the attacker (more disclosure), else ``"min"``.

    A size (direction 0) has no preference: a ValueError says so.
    """
    direction = metric(key).direction
    if direction == 0:
        raise ValueError(f"{key!r} is a size or a setting: neither direction favours the attacker")
    return "max" if direction > 0 else "min"
