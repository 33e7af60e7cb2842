"""The audit report (lidframe.report): its numbers, its reading sentence, provenance, safety, files.

Every number the page prints is compared with the Result's summary (or the record it came
from), formatted here the way docs/report.md says; the reading sentence with a 99th
percentile computed here by hand (linear interpolation between order statistics).
"""

from __future__ import annotations

import hashlib
import math
import re
import subprocess
import sys
import tomllib
import xml.etree.ElementTree as ET
from fnmatch import fnmatch
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import lidframe
from lidframe.data.simulate import simulate_system
from lidframe.errors import InputError
from lidframe.stats.interval import Interval
from tests.report.conftest import CREATED
from tests.report.formatting import fmt_bits, fmt_count, fmt_percent
from tests.report.htmltree import parse
from tests.strategies import lid_grid_values

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("evaluate", "systems", "dp-audit", "grid")


# ------------------------------------------------------------------ independent formatting
#: card title -> (summary key, formatter), as docs/report.md lists them.
CARD = {
    "N": ("n_enrolled", fmt_count),
    "log2 N (bits)": ("log2_n", fmt_bits),
    "ALID (bits)": ("alid", fmt_bits),
    "LIDmax (bits)": ("lid_max", fmt_bits),
    "LID q99 (bits)": ("lid_q99", fmt_bits),
    "EER": ("eer", fmt_percent),
    "PDR": ("pdr", fmt_percent),
}


def expected_interval(summary, key, fmt) -> str:
    bounds = (summary.get("intervals") or {}).get(key)
    if bounds is None:
        return ""
    low, high = fmt(bounds[0]), fmt(bounds[1])
    if fmt is fmt_percent:
        return f"[{low[:-2]}, {high[:-2]}] %"
    return f"[{low}, {high}]"


def hand_q99(lid: np.ndarray) -> float:
    """The 99th percentile by linear interpolation between order statistics (numpy's default, by hand)."""
    x = np.sort(lid)
    h = 0.99 * (x.size - 1)
    lo = math.floor(h)
    hi = min(lo + 1, x.size - 1)
    return float(x[lo] + (h - lo) * (x[hi] - x[lo]))


def cards_of(root, label: str):
    return [c for c in root.find_all("article") if c.find("h3").text() == label]


# ------------------------------------------------------------------ headline numbers
def test_headline_numbers_equal_the_result_summary(rendered):
    built, page = rendered["evaluate"]
    summary = built.sources["anon-weak"].summary
    root = parse(page)
    cards = cards_of(root, "anon-weak")
    assert len(cards) == 1
    assert root.find("a", href=f"#{cards[0].attrs['id']}")  # the system's section links to it
    for card in cards:
        items = {d.attrs["data-metric"]: d for d in card.find_all("div") if "data-metric" in d.attrs}
        assert set(items) == set(CARD)
        for title, (key, fmt) in CARD.items():
            dd = items[title].find("dd")
            shown = dd.text()
            want = fmt(summary[key])
            interval = expected_interval(summary, key, fmt)
            if interval and key == "lid_max":  # a maximum's percentile interval: marked biased low
                interval += " †"
            assert shown == (f"{want} {interval}" if interval else want), title
            assert float(items[title].attrs["data-sort"]) == summary[key]  # full precision, exactly
    # this Result has intervals for ALID, PDR, q99, LIDmax and EER: they must show
    assert "[" in cards[0].find("div", data_metric="ALID (bits)").text()
    assert "[" in cards[0].find("div", data_metric="EER").text()


def test_comparison_table_carries_every_summary_value(rendered):
    built, page = rendered["systems"]
    root = parse(page)
    table = root.find("table", id="comparison-table")
    headers = [th.text() for th in table.find("thead").find_all("th")]
    rows = table.find("tbody").find_all("tr")
    assert [r.find_all("td")[0].text() for r in rows] == list(built.sources["results"])
    columns = {"N": "n_enrolled", "ALID": "alid", "PDR": "pdr", "LID+": "lid_pos", "LID−": "lid_neg"}
    columns |= {"LID q99": "lid_q99", "LIDmax": "lid_max", "EER": "eer", "Cllr": "cllr", "rank-1": "rank1_rate"}
    for row, (name, result) in zip(rows, built.sources["results"].items()):
        cells = row.find_all("td")
        for title, key in columns.items():
            cell = cells[headers.index(title)]
            value = result.summary[key]
            if isinstance(value, float) and math.isnan(value):  # plain: no trial with LID <= 0
                assert cell.attrs["data-sort"] == "" and cell.text() == "—", (name, title)
            else:
                assert float(cell.attrs["data-sort"]) == value, (name, title)
                fmt = (
                    fmt_percent
                    if key in ("pdr", "eer", "rank1_rate")
                    else fmt_count
                    if key == "n_enrolled"
                    else fmt_bits
                )
                assert cell.text() == fmt(value), (name, title)


def test_dp_audit_report_numbers_and_the_columns_it_leaves_out(rendered):
    built, page = rendered["dp-audit"]
    record = built.sources["record"]
    root = parse(page)
    for row in record.rows:
        for attacker in ("bayes", "cosine"):
            (card,) = cards_of(root, f"{attacker} · mu {row['mu']:g}")[:1]
            alid = card.find("div", data_metric="ALID (bits)")
            low, high = row[f"{attacker}_alid_low"], row[f"{attacker}_alid_high"]
            assert alid.find("dd").text() == f"{row[f'{attacker}_alid']:.2f} [{low:.2f}, {high:.2f}]"
            assert card.find("div", data_metric="PDR").find("dd").text() == "—"  # the audit does not compute it
            assert card.find("p", **{"class": "reading"}).text().startswith("The 99th percentile of LID is")
    caption = root.find("table", id="comparison-table").find("caption").text()
    assert (
        "not shown: trials, PDR, LID+, LID−, Cllr, minCllr, D_sys, minDCF, actDCF, D_ECE, max |LLR|, rank-1" in caption
    )
    dp_rows = root.find("table", id="dp-table").find("tbody").find_all("tr")
    assert [float(r.find_all("td")[0].attrs["data-sort"]) for r in dp_rows] == [r["mu"] for r in record.rows]


# ------------------------------------------------------------------ the reading sentence
def test_reading_sentence_on_a_hand_checked_example():
    from lidframe.report.headline import Headline, reading_sentence

    lid = np.arange(100) / 10.0  # 0.0, 0.1, ..., 9.9
    # h = 0.99 * 99 = 98.01: q99 = 9.8 + 0.01 * (9.9 - 9.8) = 9.801; only 9.9 lies above it
    headline = Headline.from_summary({"n_enrolled": 1024, "alid": lid.mean(), "lid_q99": 9.801, "lid_max": 9.9})
    assert (
        reading_sentence(headline, lid, 10.0)
        == "1 % of trials (1 of 100) disclose more than 9.80 bits of a possible 10.00."
    )
    # without the per-trial LIDs, only the percentile can be stated
    assert reading_sentence(headline, None, 10.0) == "The 99th percentile of LID is 9.80 bits of a possible 10.00."
    # q99 and the ceiling alike at 2 decimals: a third one; within 0.001 bit: said so
    near = Headline.from_summary({"n_enrolled": 8, "alid": 1.0, "lid_q99": 2.9962, "lid_max": 3.0})
    assert reading_sentence(near, lid, 3.0).endswith("more than 2.996 bits of a possible 3.000.")
    # q99 within 0.001 bit of the ceiling: nothing is "more than" it; the trials that close are counted (issue 27)
    at = Headline.from_summary({"n_enrolled": 8, "alid": 1.0, "lid_q99": 2.99995, "lid_max": 3.0})
    close = np.array([0.5, 1.0, 2.9985, 2.9992, 2.99995, 3.0])  # the last three lie within 0.001 bit of 3
    assert reading_sentence(at, close, 3.0) == (
        "50 % of trials (3 of 6) disclose within 0.001 bit of the possible 3.00 bits: on these trials the attacker "
        "is practically certain of their speaker, but no confidence interval was computed to show it beyond them."
    )


def _with_q99_interval(headline, low: float, high: float, level: float = 0.95):
    """*headline* with an interval of LID q99 (the estimate its own)."""
    import attrs

    interval = Interval(headline.lid_q99, low, high, level, "bca")
    return attrs.evolve(headline, intervals={"lid_q99": interval}, interval_level=level)


def test_practically_certain_only_where_the_lower_end_of_the_q99_interval_supports_it():
    """Issue 41: the claim follows the interval's lower end, not the point estimate."""
    from lidframe.report.headline import Headline, reading_sentence

    at = Headline.from_summary({"n_enrolled": 8, "alid": 1.0, "lid_q99": 2.99995, "lid_max": 3.0})
    close = np.array([0.5, 1.0, 2.9985, 2.9992, 2.99995, 3.0])
    start = "50 % of trials (3 of 6) disclose within 0.001 bit of the possible 3.00 bits"
    supported = reading_sentence(_with_q99_interval(at, 2.9995, 3.0), close, 3.0)  # 0.0005 bit below the ceiling
    assert supported == (
        f"{start}: the attacker is practically certain of their speaker (the 95 % interval of the 99th percentile "
        "starts within 0.001 bit of it too)."
    )
    # the same point estimate, but a calibrator fitted on a few dev speakers: the interval reaches far lower
    unsupported = reading_sentence(_with_q99_interval(at, 2.1, 3.0, level=0.9), close, 3.0)
    assert unsupported == (
        f"{start}, but the 90 % interval of the 99th percentile reaches down to 2.10 bits: the data do not show the "
        "attacker practically certain of their speaker."
    )
    # a lower end just outside 0.001 bit of the ceiling is not enough
    assert "do not show" in reading_sentence(_with_q99_interval(at, 2.9989, 3.0), close, 3.0)


def test_the_99th_percentile_is_read_with_its_interval():
    from lidframe.report.headline import Headline, reading_sentence

    lid = np.arange(100) / 10.0
    headline = Headline.from_summary({"n_enrolled": 1024, "alid": lid.mean(), "lid_q99": 9.801, "lid_max": 9.9})
    assert reading_sentence(_with_q99_interval(headline, 9.123, 9.9), lid, 10.0) == (
        "1 % of trials (1 of 100) disclose more than 9.80 bits (95 % interval 9.12 to 9.90) of a possible 10.00."
    )


def test_reading_sentence_when_the_tail_discloses_nothing():
    from lidframe.report.headline import Headline, reading_sentence

    lid = np.array([-2.0, -1.0, -0.5, 0.0, 0.25])  # q99 = 0 + 0.96 * 0.25 = 0.24 > 0 ...
    assert reading_sentence(Headline.from_summary(_summary(lid)), lid, 3.0).startswith("20 % of trials (1 of 5)")
    lid = np.array([-2.0, -1.0, -0.5, 0.0, 0.0])  # ... but here q99 = 0: count what discloses anything
    sentence = reading_sentence(Headline.from_summary(_summary(lid)), lid, 3.0)
    assert sentence == (  # no "Only" before a share that may be anything (issue 27)
        "0 % of trials (0 of 5) disclose anything (LID > 0); the largest disclosure is 0.00 bits of a possible 3.00."
    )


def _summary(lid: np.ndarray) -> dict:
    return {"n_enrolled": 8, "alid": float(lid.mean()), "lid_q99": hand_q99(lid), "lid_max": float(lid.max())}


SENTENCE = re.compile(
    r"^(?P<share>[\d.]+) % of trials \((?P<k>\d+) of (?P<t>\d+)\) disclose more than (?P<q>[\d.]+) bits"
)
NEAR = re.compile(
    r"^(?P<share>[\d.]+) % of trials \((?P<k>\d+) of (?P<t>\d+)\) disclose within 0\.001 bit of the possible "
    r"(?P<c>[\d.]+) bits: on these trials the attacker is practically certain of their speaker, but no confidence "
    r"interval was computed to show it beyond them\.$"
)


def share_text_by_hand(count: int, total: int) -> str:
    """A share as docs/report.md prints it: whole percent from 10 % (and 0 %), else two significant digits."""
    percent = 100 * count / total
    return f"{percent:.0f} %" if percent == 0 or percent >= 10 else f"{float(f'{percent:.2g}'):g} %"


@given(st.lists(lid_grid_values, min_size=1, max_size=400), st.sampled_from([0.0, 0.0004, 0.5, 2.0]))
def test_reading_sentence_counts_the_trials_above_the_99th_percentile(values, headroom):
    from lidframe.report.headline import Headline, reading_sentence

    lid = np.array(values, dtype=np.float64)
    q99 = hand_q99(lid)
    ceiling = float(lid.max()) + headroom
    sentence = reading_sentence(Headline.from_summary(_summary(lid)), lid, ceiling)
    if q99 > 0 and ceiling - q99 < 0.001:  # practically at the ceiling: counted as within 0.001 bit of it
        match = NEAR.match(sentence)
        assert match, sentence
        near = int(np.count_nonzero(lid > ceiling - 0.001))
        assert (int(match["k"]), int(match["t"])) == (near, lid.size) and near >= 1
        assert abs(float(match["c"]) - ceiling) <= 0.005 and "more than" not in sentence
    elif q99 > 0:
        match = SENTENCE.match(sentence)
        assert match, sentence
        above = int(np.count_nonzero(lid > q99))
        assert (int(match["k"]), int(match["t"])) == (above, lid.size)
        assert math.isclose(float(match["share"]), 100 * above / lid.size, rel_tol=0.05, abs_tol=0.5)
        assert abs(float(match["q"]) - q99) <= 0.005
        assert re.search(r"of a possible [\d.]+\.$", sentence)
        assert abs(float(re.search(r"possible ([\d.]+)\.$", sentence)[1]) - ceiling) <= 0.005
    else:
        positive = int(np.count_nonzero(lid > 0))
        assert not sentence.startswith("Only ")
        assert sentence.startswith(
            f"{share_text_by_hand(positive, lid.size)} of trials ({positive} of {lid.size}) disclose anything (LID > 0)"
        )


@given(st.integers(0, 10_000), st.integers(1, 10_000))
def test_share_text_has_two_significant_digits_below_ten_percent(count, total):
    from lidframe.report.headline import share_text

    count = min(count, total)
    text = share_text(count / total)
    assert text.endswith(" %")
    shown = float(text[:-2])
    percent = 100 * count / total
    if percent >= 10 or percent == 0:
        assert shown == round(percent)  # whole percent
    else:
        assert math.isclose(shown, float(f"{percent:.2g}"))


def test_reading_in_the_page_is_computed_from_the_trials(rendered):
    built, page = rendered["evaluate"]
    result = built.sources["anon-weak"]
    lid = result.lid[~result.is_outsider]
    q99 = hand_q99(lid)
    assert math.isclose(q99, result.summary["lid_q99"], rel_tol=0, abs_tol=1e-12)
    above = int(np.count_nonzero(lid > q99))
    reading = cards_of(parse(page), "anon-weak")[0].find("p", **{"class": "reading"}).text()
    from lidframe.report.headline import share_text

    want = f"{share_text(above / lid.size)} of trials ({above} of {lid.size}) disclose more than {q99:.2f} bits "
    assert reading.startswith(want)
    assert reading.endswith(f"of a possible {math.log2(result.summary['n_enrolled']):.2f}.")


# ------------------------------------------------------------------ the ceiling under a prior
def test_lid_ceiling_under_a_watch_list_prior():
    from lidframe.report import lid_ceiling_bits

    dev, ev = simulate_system(leakage=0.5, seed=2, n_enrolled=6, trials_per_speaker=4)
    listed, weight = ["eval-spk000", "eval-spk001"], 4.0
    result = lidframe.evaluate(dev, ev, prior=lidframe.WatchList(listed, weight))
    total = weight * len(listed) + (6 - len(listed))  # prior mass: w for each listed speaker, 1 for the others
    unlisted = -math.log2(1 / total)  # the least likely true speaker bounds every trial's LID
    assert math.isclose(lid_ceiling_bits(result), unlisted, rel_tol=1e-12)
    assert np.all(result.lid[~result.is_outsider] <= unlisted + 1e-9)
    uniform = lidframe.evaluate(dev, ev)
    assert lid_ceiling_bits(uniform) == pytest.approx(math.log2(6), abs=1e-12)


def test_grid_ceiling_from_the_per_trial_file_matches_the_prior(rendered):
    built, _ = rendered["grid"]
    for system in built.report.systems:
        if system.prior == "uniform":
            assert system.lid_ceiling_bits == system.headline.log2_n
        else:
            total = 4.0 * 2 + (8 - 2)
            # the max over trials of -log2 prior(true): an unlisted speaker's, as every speaker has trials
            assert system.lid_ceiling_bits == pytest.approx(math.log2(total), abs=1e-9)


# ------------------------------------------------------------------ self-contained, well-formed
EXTERNAL = re.compile(r"^\s*(https?:|//|ftp:)", re.I)


@pytest.mark.parametrize("kind", KINDS)
def test_page_is_self_contained_and_well_formed(rendered, kind):
    _, page = rendered[kind]
    root = parse(page)  # every element closed in order
    for node in root.iter():
        for name, value in node.attrs.items():
            if name in ("src", "href", "xlink:href", "action", "data", "poster", "srcset") and value:
                assert not EXTERNAL.match(value), (node.tag, name, value)
                assert value.startswith(("#", "data:")), (node.tag, name, value)
    assert not re.search(r"url\(\s*['\"]?(https?:|//)", page, re.I)
    assert "://" not in page  # no URL at all, not even an SVG namespace name
    assert "@import" not in page
    scripts = root.find_all("script")
    assert len(scripts) == 1 and "src" not in scripts[0].attrs
    assert not root.find_all("link", rel="stylesheet")
    csp = root.find("meta", http_equiv="Content-Security-Policy").attrs["content"]
    assert "default-src 'none'" in csp
    # the script's hash in the policy is that of the inline script, so the browser runs it
    script = re.search(r"<script>(.*?)</script>", page, re.S)[1]
    digest = __import__("base64").b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in csp
    # every inline SVG is well-formed XML with ids unique across the page
    svgs = re.findall(r"<svg\b.*?</svg>", page, re.S)
    assert svgs
    for svg in svgs:
        ET.fromstring(svg)
    ids = [n.attrs["id"] for n in root.iter() if "id" in n.attrs]
    assert len(ids) == len(set(ids))


def test_figures_of_each_kind(rendered):
    count = {kind: len(re.findall(r"<figure\b", page)) for kind, (_, page) in rendered.items()}
    assert count["evaluate"] == 5  # CCDF and scatter; the CMC curve; the system's CCDF and histogram
    # systems: 2 overview + the CMC curves + 4 x (CCDF + histogram) + 1 sensitivity CCDF + 2 per-speaker dot plots
    assert count["systems"] == 2 + 1 + 8 + 1 + 2
    assert count["dp-audit"] == 1  # no per-trial LIDs: only the measured-versus-bound figure
    # small multiples of CCDFs and of the scatter; per system CCDF + histogram; the cells' linkability curves
    # (a grid keeps no ranks, so no CMC curve)
    assert count["grid"] == 2 + 2 * 2 + 1
    _, grid_page = rendered["grid"]
    for calibrator in ("logistic", "isotonic"):  # the caption names every calibrator x prior
        assert f"calibrator {calibrator}, prior uniform" in grid_page


# ------------------------------------------------------------------ provenance
def test_provenance_holds_the_input_digests(rendered):
    built, page = rendered["evaluate"]
    rows = parse(page).find("table", id="inputs-table").find("tbody").find_all("tr")
    shown = {r.find_all("td")[0].text(): (r.find_all("td")[1].text(), r.find_all("td")[3].text()) for r in rows}
    for role, path in built.files.items():
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        assert shown[role] == (str(path), digest)
    settings = built.report.provenance.systems[0]
    summary = built.sources["anon-weak"].summary
    assert (settings.znorm_ddof, settings.n_dev_enrolled_trials, settings.n_eval_enrolled_trials) == (
        summary["znorm_ddof"],
        summary["n_dev_enrolled_trials"],
        summary["n_enrolled_trials"],
    )
    assert settings.calibrator_fit["fitted"]["slope_"] == built.sources["anon-weak"].calibrator.slope_
    assert built.report.provenance.created == "2026-01-02T03:04:05+00:00" == CREATED.isoformat()
    assert f"lidframe {lidframe.__version__}" in page


def test_grid_provenance_digests_the_store_and_every_per_trial_file(rendered):
    built, page = rendered["grid"]
    out = built.sources["out"]
    digests = {f.path: f.sha256 for f in built.report.provenance.inputs}
    wanted = [out / "results.sqlite"] + [out / c["per_trial"] for c in built.sources["cells"]]
    wanted.append(built.files["grid spec"])
    for path in wanted:
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        assert digests[str(path)] == digest
        assert digest in page
    assert len(built.report.systems) == 8  # 2 systems x 2 calibrators x 2 priors


def test_a_missing_input_file_is_refused_naming_it(tmp_path):
    from lidframe.report import report_from_results

    dev, ev = simulate_system(leakage=0.5, seed=0, n_enrolled=4, trials_per_speaker=3)
    result = lidframe.evaluate(dev, ev)
    with pytest.raises(InputError, match=r"nope\.npz \(eval\): no such file"):
        report_from_results({"a": result}, inputs={"eval": tmp_path / "nope.npz"})


def test_a_grid_cell_without_its_per_trial_file_is_refused(rendered, tmp_path):
    from lidframe.report import report_from_grid

    built, _ = rendered["grid"]
    cells = [dict(c) for c in built.sources["cells"]]
    cells[0]["per_trial"] = "cells/gone.npz"
    with pytest.raises(InputError, match=r"gone\.npz: the per-trial file of grid cell .* is missing"):
        report_from_grid(cells, out_dir=built.sources["out"])


# ------------------------------------------------------------------ escaping and bad input
def test_labels_are_escaped(tmp_path):
    from lidframe.report import render_html, report_from_results

    dev, ev = simulate_system(leakage=0.5, seed=0, n_enrolled=4, trials_per_speaker=3)
    result = lidframe.evaluate(dev, ev)
    nasty = '<script>alert(1)</script>"><img src=x onerror=alert(2)>--><!--'
    page = render_html(report_from_results({nasty: result}, notes=["<b>bold?</b>"]))
    root = parse(page)
    assert len(root.find_all("script")) == 1  # only the page's own
    assert not root.find_all("img")
    assert "<b>bold?</b>" not in page and "&lt;b&gt;bold?&lt;/b&gt;" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "onerror=alert(2)>" not in page
    # matplotlib writes each label into an SVG comment: the comments are stripped
    assert "<!--" not in page.split("<body>", 1)[1]


def test_records_for_unknown_labels_are_refused():
    from lidframe.report import report_from_results

    dev, ev = simulate_system(leakage=0.5, seed=0, n_enrolled=4, trials_per_speaker=3)
    result = lidframe.evaluate(dev, ev)
    with pytest.raises(InputError, match="per_speaker given for 'b'"):
        report_from_results({"a": result}, per_speaker={"b": object()})
    with pytest.raises(InputError, match="not a lidframe Result"):
        report_from_results({"a": result.summary})
    with pytest.raises(InputError, match="at least one Result"):
        report_from_results({})
    with pytest.raises(InputError, match="not a SensitivityResult"):
        report_from_results({"a": result}, sensitivity={"a": result})


def test_write_report_is_atomic(tmp_path, monkeypatch):
    from lidframe.report import render, report_from_results, write_report

    dev, ev = simulate_system(leakage=0.5, seed=0, n_enrolled=4, trials_per_speaker=3)
    report = report_from_results({"a": lidframe.evaluate(dev, ev)})
    with pytest.raises(InputError, match="does not exist"):
        write_report(tmp_path / "missing" / "report.html", report)
    target = tmp_path / "report.html"
    target.write_text("old")

    def broken(_report):
        raise RuntimeError("render failed")

    monkeypatch.setattr(render, "render_html", broken)
    with pytest.raises(RuntimeError):
        write_report(target, report)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]  # no temporary left behind
    monkeypatch.undo()
    assert write_report(target, report) == target
    assert target.read_text(encoding="utf-8").startswith("<!doctype html>")


# ------------------------------------------------------------------ per speaker and sensitivity
def test_per_speaker_and_sensitivity_tables_match_their_records(rendered):
    built, page = rendered["systems"]
    root = parse(page)
    record = built.sources["per_speaker"]["uneven"]
    (table,) = [
        t for t in root.find_all("table") if t.find("caption").text().startswith("Disclosure per speaker of uneven")
    ]
    rows = table.find("tbody").find_all("tr")
    assert [r.find_all("td")[0].text() for r in rows] == [r["speaker"] for r in record.rows]
    for tr, row in zip(rows, record.rows):
        alid = tr.find_all("td")[2]  # speaker, trials, ALID (with its interval folded in)
        if row["n_trials"]:
            assert float(alid.attrs["data-sort"]) == row["alid"]
            if not math.isnan(row["alid_low"]):
                assert alid.text() == f"{row['alid']:.2f} [{row['alid_low']:.2f}, {row['alid_high']:.2f}]"
    sens = built.sources["sensitivity"]["uneven"]
    (table,) = [t for t in root.find_all("table") if t.find("caption").text().startswith("Calibrator sensitivity")]
    rows = table.find("tbody").find_all("tr")
    assert [r.find_all("td")[0].text() for r in rows] == [r["calibrator"] for r in sens.rows]
    for tr, row in zip(rows, sens.rows):
        assert float(tr.find_all("td")[2].attrs["data-sort"]) == row["alid"]
    worst = sens.worst_case["lid_max"]
    assert f"LIDmax: {worst['value']:.2f} bits with {worst['calibrator']}" in page


# ------------------------------------------------------------------ packaging and layering
def test_importing_the_report_wing_loads_neither_jinja2_nor_matplotlib():
    code = (
        "import sys, lidframe, lidframe.report\n"
        "print(','.join(m for m in ('jinja2', 'matplotlib', 'torch') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


def test_template_files_are_package_data():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    setuptools = config["tool"]["setuptools"]
    assert "lidframe.report" in setuptools["packages"]
    patterns = setuptools["package-data"]["lidframe.report"]
    folder = ROOT / "lidframe" / "report"
    files = [p.relative_to(folder).as_posix() for p in (folder / "templates").iterdir() if p.is_file()]
    assert {"templates/report.html.j2", "templates/report.css", "templates/report.js"} <= set(files)
    for name in files:
        assert any(fnmatch(name, pattern) for pattern in patterns), name
    layers = config["tool"]["importlinter"]["contracts"][0]["layers"]
    assert (
        layers.index("lidframe.grid | lidframe.demo")
        < layers.index("lidframe.report")
        < layers.index("lidframe.analyses | lidframe.testing")
    )


def test_metrics_not_computed_are_named_not_shown():
    from lidframe.report import render_html, report_from_results

    dev, ev = simulate_system(leakage=0.5, seed=0, n_enrolled=5, trials_per_speaker=4)
    result = lidframe.evaluate(dev, ev, binary_metrics=False)
    root = parse(render_html(report_from_results({"a": result})))
    table = root.find("table", id="comparison-table")
    headers = [th.text() for th in table.find("thead").find_all("th")]
    assert "EER" not in headers and "Cllr" not in headers and "ALID" in headers
    assert "not computed for any, so not shown: EER, Cllr" in table.find("caption").text()
    assert root.find("div", data_metric="EER").find("dd").text() == "—"
    captions = [f.text() for f in root.find_all("figcaption")]
    assert not any(c.startswith("EER against") for c in captions)  # no EER, no scatter
    assert any(c.startswith("LID CCDF per system") for c in captions)
