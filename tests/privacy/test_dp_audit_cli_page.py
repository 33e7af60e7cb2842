"""``lidframe dp-audit``: its flags' help, the intervals its console announces, and its page and figure.

- every flag of ``lidframe dp-audit --help`` says what it does;
- the console prints the bootstrap intervals it announces, the JSON's to the digit, and
  says which bound bounds what (the mutual-information bound bounds ALID, not LIDmax);
- the audit figure keeps one colour per attacker in both panels (the page's colour of
  that attacker), and its legend says the MI bound is on ALID;
- the page fills its settings: no empty cell in its settings table, each cell's interval
  settings whole, the splits' sizes those of the embeddings audited.
"""

from __future__ import annotations

import argparse
import json
import re

import numpy as np
import pytest

import lidframe
from lidframe.cli.main import build_parser, main
from lidframe.privacy.audit import dp_audit, simulated_splits
from tests.report.htmltree import parse

#: The audit's simulated embeddings without --embeddings (lidframe.cli.dp_audit).
SIMULATED = {"n_enrolled": 40, "trials_per_speaker": 10}


def _subparser(name: str) -> argparse.ArgumentParser:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices[name]


def test_every_dp_audit_flag_has_help_text():
    parser = _subparser("dp-audit")
    shown = [a for a in parser._actions if a.help != argparse.SUPPRESS and a.option_strings]
    assert {"--sensitivity", "--dev-enrol", "--dev-trials", "--enrol", "--trials"} <= {
        flag for a in shown for flag in a.option_strings
    }
    missing = [a.option_strings[0] for a in shown if not (a.help or "").strip()]
    assert missing == []
    text = parser.format_help()
    for flag in ("--dev-enrol", "--trials"):  # each data dir flag says which split and what it holds
        assert re.search(re.escape(flag) + r" DIR\s+Kaldi data dir", text)


@pytest.fixture(scope="module")
def audit_run(tmp_path_factory):
    """``lidframe dp-audit`` with --json and --report: (stdout, the JSON rows, the page, the folder)."""
    import contextlib
    import io

    folder = tmp_path_factory.mktemp("dp-cli")
    out = io.StringIO()
    argv = ["dp-audit", "--mu", "0.5,2", "--n-boot", "100", "--bootstrap-level", "0.9", "--seed", "3"]
    argv += ["--json", str(folder / "dp.json"), "--report", str(folder / "dp")]
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    rows = json.loads((folder / "dp.json").read_text())["rows"]
    return out.getvalue(), rows, (folder / "dp" / "report.html").read_text(encoding="utf-8"), folder


def test_the_console_prints_the_intervals_it_announces(audit_run):
    printed, rows, _, _ = audit_run
    assert "90% bootstrap intervals (bca, 100 resamples of speakers, seed 3):" in printed
    lines = printed.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["mu", "bayesEER"])
    assert lines[header].split() == ["mu", "bayesEER", "cosEER", "bayesALID", "cosALID"]
    for line, row in zip(lines[header + 1 : header + 1 + len(rows)], rows, strict=True):
        shown = re.findall(r"\[(-?\d+\.\d+), (-?\d+\.\d+)\]", line)
        assert float(line.split()[0]) == pytest.approx(row["mu"], abs=5e-3)
        want = [(row[f"{k}_low"], row[f"{k}_high"]) for k in ("bayes_eer", "cosine_eer", "bayes_alid", "cosine_alid")]
        assert [(float(a), float(b)) for a, b in shown] == [
            (float(f"{low:.3f}"), float(f"{high:.3f}")) for low, high in want
        ]
    # and which bound bounds what
    assert "MIbound = mu^2/(2 ln 2) bits" in printed and "bounds ALID (the average disclosure), not LIDmax" in printed


def _colours_by_attacker(fig) -> dict[str, set[str]]:
    """attacker -> the colours of every line drawn for it (EER, ALID, LIDmax; error bars too), over both panels."""
    from matplotlib.colors import to_hex

    found: dict[str, set[str]] = {}
    for ax in fig.axes:
        handles, labels = ax.get_legend_handles_labels()
        for handle, label in zip(handles, labels):
            attacker = label.split()[0]
            if attacker not in ("bayes", "cosine"):
                continue
            lines = handle.lines if hasattr(handle, "lines") else (handle,)
            for line in lines:
                for artist in line if isinstance(line, tuple) else (line,):
                    if artist is None:
                        continue
                    colour = artist.get_color() if hasattr(artist, "get_color") else artist.get_colors()[0]
                    found.setdefault(attacker, set()).add(to_hex(colour))
    return found


def test_the_figure_keeps_one_colour_per_attacker_and_says_what_the_mi_bound_bounds():
    from lidframe.report.analysis_figures import MI_BOUND_LABEL, dp_audit_figure
    from lidframe.report.plotting import pyplot

    dev, ev = simulated_splits(n_enrolled=8, trials_per_speaker=4, dim=16, seed=1)
    record = dp_audit(dev, ev, [0.5, 2.0, 8.0], bootstrap=lidframe.Bootstrap(n_boot=100))
    fig = dp_audit_figure(record)
    colours = _colours_by_attacker(fig)
    assert set(colours) == {"bayes", "cosine"}
    assert all(len(c) == 1 for c in colours.values()), colours  # one colour per attacker, in both panels
    assert colours["bayes"] != colours["cosine"]
    left, right = fig.axes
    assert {label.split()[1] for label in left.get_legend_handles_labels()[1] if label.startswith("bayes")} == {"EER"}
    right_labels = right.get_legend_handles_labels()[1]
    assert {"bayes ALID", "bayes LIDmax", "cosine ALID", "cosine LIDmax"} <= set(right_labels)
    assert MI_BOUND_LABEL in right_labels and "bounds ALID, not LIDmax" in MI_BOUND_LABEL
    # the measured values are in view under a bound far above them (mu = 8: 46 bits)
    top = max(r["bayes_lid_max"] for r in record.rows)
    assert right.get_ylim()[1] < 2 * max(top, record.rows[0]["log2_n"])
    pyplot().close(fig)


def test_the_pages_figure_gives_each_attacker_its_colour_on_the_page(monkeypatch):
    """On the page the figure's attackers keep the colours of their systems (report_styles)."""
    from matplotlib.colors import to_hex

    from lidframe.report import figures as page_figures
    from lidframe.report import report_from_dp_audit

    dev, ev = simulated_splits(n_enrolled=8, trials_per_speaker=4, dim=16, seed=1)
    record = dp_audit(dev, ev, [0.5, 2.0], bootstrap=lidframe.Bootstrap(n_boot=100))
    report = report_from_dp_audit(record)
    drawn = {}

    def keep(result, *, styles=None, title=None):
        from lidframe.report.analysis_figures import dp_audit_figure

        drawn["fig"] = dp_audit_figure(result, styles=styles, title=title)
        return drawn["fig"]

    monkeypatch.setattr(page_figures, "dp_audit_figure", keep)
    page_figures.FigureMaker(report).dp_audit()
    styles = page_figures.report_styles(report)
    want = {s.attacker: to_hex(styles[s.label]["color"]) for s in report.systems}
    assert {k: next(iter(v)) for k, v in _colours_by_attacker(drawn["fig"]).items()} == want


def test_the_page_fills_its_settings(audit_run):
    _, rows, page, _ = audit_run
    tree = parse(page)
    table = tree.find("table", id="settings-table")
    header = [th.text().replace("↕", "").strip() for th in table.find("thead").find_all("th")]
    body = table.find("tbody").find_all("tr")
    assert len(body) == 2 * len(rows)  # each attacker at each mu
    dev, ev = simulated_splits(seed=3)  # what the command audited: --seed 3, no --embeddings
    sizes = {
        "dev trials": len(dev.trial_ids),
        "dev N": len(dev.enrol),
        "eval trials": len(ev.trial_ids),
        "eval N": len(ev.enrol),
        "dev outsider trials": 0,
        "eval outsider trials": 0,
    }
    assert (sizes["eval trials"], sizes["eval N"]) == (
        SIMULATED["n_enrolled"] * SIMULATED["trials_per_speaker"],
        SIMULATED["n_enrolled"],
    )
    for tr in body:
        cells = dict(zip(header, (td.text() for td in tr.find_all("td")), strict=True))
        bayes = cells["system"].startswith("bayes")
        for key, value in sizes.items():
            expected = 0 if bayes and key in ("dev trials", "dev N") else value  # the Bayes attacker fits nothing
            assert cells[key] == f"{expected:,}", (cells["system"], key)
        assert cells["binary metrics"].startswith("skipped: the audit measures the pairwise EER and LID only")
        # the Bayes attacker's scores are read raw (no z-norm): the only setting it has none of
        assert cells["z-norm ddof"] in (("—", "none (raw scores)") if bayes else ("1",))
        empty = [k for k, v in cells.items() if v in ("", "—") and not (bayes and k == "z-norm ddof")]
        assert empty == [], (cells["system"], empty)
    # each cell's interval settings whole, as the command ran them
    text = tree.find("section", id="provenance").text()
    assert "n_boot = 100" in text and "level = 0.9" in text and "seed = 3" in text and "unit = speaker" in text


def test_the_dp_audit_console_and_page_agree_on_the_intervals(audit_run):
    """The page's DP table shows the same intervals as the JSON (and so as the console)."""
    _, rows, page, _ = audit_run
    tree = parse(page)
    dp = tree.find("table", id="dp-table")
    for tr, row in zip(dp.find("tbody").find_all("tr"), rows, strict=True):
        text = tr.text()
        low, high = row["bayes_alid_low"], row["bayes_alid_high"]
        assert f"[{low:.2f}, {high:.2f}]" in text
        assert np.isfinite(low) and low <= row["bayes_alid"] <= high
