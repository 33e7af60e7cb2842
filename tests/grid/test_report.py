"""The grid report: LaTeX escaping, a folder that never mixes two reports, intervals in the summary, the figures.

The summary's intervals are compared with the store's cell summaries, formatted here;
the figures are inspected as the matplotlib Figures lidframe saves (panel titles, legend,
the boxes of every drawn text).
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe.data.simulate import simulate_system
from lidframe.grid.report import latex_escape, write_report
from lidframe.grid.report.columns import LEGAL_COLUMNS
from lidframe.grid.runner import run_grid

#: Each special character and what LaTeX must be given for it, written out by hand.
BY_HAND = {
    "&": r"\&",
    "%": r"\%",
    "#": r"\#",
    "$": r"\$",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\\": r"\textbackslash{}",
    "_": r"\_",
}
NAME = "b3&50%#1$x{y}~z^w\\v_u"
NAME_IN_LATEX = r"b3\&50\%\#1\$x\{y\}\textasciitilde{}z\textasciicircum{}w\textbackslash{}v\_u"


def unescape(tex: str) -> str:
    """The inverse of the escaping above, read token by token (an independent parser)."""
    tokens = {v: k for k, v in BY_HAND.items()}
    pattern = "|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True))
    return re.sub(pattern, lambda m: tokens[m.group(0)], tex)


def test_hand_written_escaping_of_every_special():
    assert latex_escape(NAME) == NAME_IN_LATEX
    for char, tex in BY_HAND.items():
        assert latex_escape(f"a{char}b") == f"a{tex}b"


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=40))
def test_escaping_round_trips_and_leaves_no_bare_special(text):
    tex = latex_escape(text)
    assert unescape(tex) == text
    bare = re.sub("|".join(re.escape(t) for t in BY_HAND.values()), "", tex)
    assert not set(bare) & set(BY_HAND), tex


def test_line_breaks_cannot_end_a_latex_line():
    assert latex_escape("a\nb\rc") == "a b c"


def make_grid(folder, name: str):
    """Two systems, *name* and ``plain``, in a spec (the name as a quoted TOML key)."""
    folder.mkdir(parents=True)
    for seed in (1, 2):
        dev, ev = simulate_system(leakage=0.5, seed=seed, n_enrolled=8, trials_per_speaker=6)
        dev.save(folder / f"s{seed}_dev.npz")
        ev.save(folder / f"s{seed}_eval.npz")
    key = name.replace("\\", "\\\\").replace('"', '\\"')
    (folder / "grid.toml").write_text(
        f'[systems."{key}"]\ndev = "s1_dev.npz"\neval = "s1_eval.npz"\n'
        '[systems.plain]\ndev = "s2_dev.npz"\neval = "s2_eval.npz"\n'
    )
    return folder / "grid.toml"


@pytest.fixture()
def table_tex(tmp_path):
    spec = make_grid(tmp_path / "spec", NAME)
    run_grid(spec, tmp_path / "out")
    write_report(tmp_path / "out", figures=False)
    return (tmp_path / "out" / "report" / "table.tex").read_text()


def test_table_tex_escapes_a_system_name_holding_every_special(table_tex):
    row = next(line for line in table_tex.splitlines() if line.startswith("b3"))
    assert row.startswith(NAME_IN_LATEX + " & ")
    # apart from the escaped name, the table is what it was: nothing else got escaped
    assert table_tex.replace(NAME_IN_LATEX, "NAME").count("\\textbackslash") == 0
    assert "\\hline" in table_tex and "\\begin{tabular}{lrrrrrrr}" in table_tex and "LID$^+$" in table_tex
    assert any(line.startswith("plain & ") for line in table_tex.splitlines())


def test_table_tex_compiles(table_tex, tmp_path):
    if shutil.which("pdflatex") is None:
        pytest.skip("pdflatex not installed")
    document = tmp_path / "doc.tex"
    document.write_text("\\documentclass{article}\n\\begin{document}\n" + table_tex + "\n\\end{document}\n")
    done = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", document.name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:]


@pytest.mark.slow
def test_a_report_without_figures_removes_the_figures_of_an_earlier_one(tmp_path):
    spec = make_grid(tmp_path / "spec", "anon")
    run_grid(spec, tmp_path / "out")
    report = tmp_path / "out" / "report"
    write_report(tmp_path / "out", figures=True)
    assert (report / "lid_ccdf.png").is_file()
    (report / "notes.txt").write_text("mine")  # not a report file: left alone
    written = write_report(tmp_path / "out", figures=False)
    assert not (report / "lid_ccdf.png").exists() and (report / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in report.iterdir()) == sorted([*(p.rsplit("/", 1)[1] for p in written), "notes.txt"])
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.startswith(".report")]  # no staging left


# ------------------------------------------------------------------ intervals in the summary
CI_SPEC = """[grid]
calibrators = ["logistic", "isotonic"]
priors = ["uniform", "watchlist?ids=eval-spk000,eval-spk001&weight=4"]
seeds = [2, 7]
{ci}
[systems.weak]
dev = "weak_dev.npz"
eval = "weak_eval.npz"

[systems.strong]
dev = "strong_dev.npz"
eval = "strong_eval.npz"
"""
#: summary.md's columns after the system, and the summary keys they show (N has no interval).
MD_COLUMNS = {"N": "n_enrolled", "EER": "eer", "ALID": "alid", "PDR": "pdr", "LID+": "lid_pos", "LID-": "lid_neg"}
MD_COLUMNS |= {"LIDmax": "lid_max"}


@pytest.fixture(scope="module")
def ci_grids(tmp_path_factory):
    """Two runs of one 2 systems x 2 calibrators x 2 priors x 2 seeds grid: with [grid.bootstrap] and without."""
    root = tmp_path_factory.mktemp("ci-grid")
    for name, leakage in {"weak": 0.5, "strong": 0.2}.items():
        dev, ev = simulate_system(leakage=leakage, seed=len(name), n_enrolled=8, trials_per_speaker=5)
        dev.save(root / f"{name}_dev.npz")
        ev.save(root / f"{name}_eval.npz")
    out = {}
    for label, ci in {
        "ci": '\n[grid.bootstrap]\nn_boot = 100\nlevel = 0.9\nmethod = "percentile"\n',
        "plain": "",
    }.items():
        (root / f"{label}.toml").write_text(CI_SPEC.format(ci=ci))
        run_grid(root / f"{label}.toml", root / label)
        write_report(root / label, figures=False)
        out[label] = root / label
    return out


def markdown_tables(text: str) -> dict[tuple[str, str, str], list[dict[str, str]]]:
    """(attacker, calibrator, prior) -> rows of summary.md's tables (column -> text), read line by line."""
    tables, group, header = {}, None, None
    for line in text.splitlines():
        found = re.fullmatch(r"## attacker `(.*)`, calibrator `(.*)`, prior `(.*)`", line)
        if found:
            group, header = found.groups(), None
            tables[group] = []
        elif line.startswith("| system |"):
            header = [c.strip() for c in line.strip("|").split("|")]
        elif line.startswith("| ") and header and not line.startswith("|---"):
            tables[group].append(dict(zip(header, (c.strip() for c in line.strip("|").split("|")))))
    return tables


def test_summary_shows_the_intervals_the_spec_asked_for(ci_grids):
    from lidframe.grid.report import load_results

    cells = {(c["calibrator"], c["prior"], c["system"]): c for c in load_results(ci_grids["ci"]) if c["seed"] == 2}
    text = (ci_grids["ci"] / "report" / "summary.md").read_text()
    tables = markdown_tables(text)
    assert len(tables) == 4 and all(len(rows) == 2 for rows in tables.values())
    for (_attacker, calibrator, prior), rows in tables.items():
        for row in rows:
            summary = cells[(calibrator, prior, row["system"])]["summary"]
            for title, key in MD_COLUMNS.items():
                value = summary[key]
                if key == "n_enrolled":
                    assert row[title] == str(value)
                    continue
                low, high = summary["intervals"][key]
                if value is None:
                    want = "-"
                elif low is None or high is None:
                    want = f"{value:.2f}"
                else:
                    want = f"{value:.2f} [{low:.2f}, {high:.2f}]"  # the seed-2 cell's own interval
                assert row[title] == want, (calibrator, prior, row["system"], title)
    # the brackets are said to be what they are: level, method, resamples, unit and the seed of the cells shown
    assert (
        text.count(
            "90% bootstrap intervals in brackets (percentile, 100 resamples of speakers, seed 2; eval and dev speakers "
            "resampled, the calibrator refitted on each dev resample: they include the calibrator's uncertainty)."
        )
        == 4
    )
    html = (ci_grids["ci"] / "report" / "summary.html").read_text()
    tex = (ci_grids["ci"] / "report" / "table.tex").read_text()
    for rows in tables.values():
        for row in rows:
            assert f"<td>{row['ALID']}</td>" in html
            assert f" & {row['ALID']} & " in tex


def test_summary_without_intervals_has_no_brackets(ci_grids):
    text = (ci_grids["plain"] / "report" / "summary.md").read_text()
    tables = markdown_tables(text)
    assert len(tables) == 4
    assert not any("[" in value for rows in tables.values() for row in rows for value in row.values())
    assert "bootstrap intervals" not in text


# ------------------------------------------------------------------ the grid figures
def captured_figures(monkeypatch) -> dict[str, object]:
    """file name -> the matplotlib Figure that lidframe saved there (the figure is drawn first, to measure text)."""
    import lidframe.report.plotting as plotting  # where lidframe.grid.report looks save_figure up

    saved: dict[str, object] = {}
    real = plotting.save_figure

    def keep(fig, path):
        fig.canvas.draw()
        saved[Path(path).name] = {
            "titles": [ax.get_title() for ax in fig.axes],
            "legend": [t.get_text() for legend in fig.legends for t in legend.get_texts()]
            + [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()],
            "texts": drawn_texts(fig),
            "annotations": [t.get_text() for ax in fig.axes for t in ax.texts],
        }
        real(fig, path)

    monkeypatch.setattr(plotting, "save_figure", keep)
    return saved


def drawn_texts(fig) -> list[tuple[str, object]]:
    """(text, window box) of every text the figure shows: titles, axis labels, the tick labels inside the
    view, annotations and reference labels, figure texts and legend entries."""
    found = list(fig.texts)
    if fig._suptitle is not None:
        found.append(fig._suptitle)
    for legend in fig.legends:
        found += legend.get_texts()
    for ax in fig.axes:
        found += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts]
        if ax.get_legend():
            found += ax.get_legend().get_texts()
        for axis in (ax.xaxis, ax.yaxis):
            low, high = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks():
                if low - 1e-9 <= tick.get_loc() <= high + 1e-9:
                    found.append(tick.label1)
    unique = list({id(t): t for t in found}.values())  # the suptitle is among fig.texts too
    return [(t.get_text(), t.get_window_extent()) for t in unique if t.get_visible() and t.get_text().strip()]


@pytest.fixture(scope="module")
def figure_grid(tmp_path_factory):
    root = tmp_path_factory.mktemp("figure-grid")
    for name, leakage in {"weak": 0.5, "strong": 0.2}.items():
        dev, ev = simulate_system(leakage=leakage, seed=len(name), n_enrolled=8, trials_per_speaker=5)
        dev.save(root / f"{name}_dev.npz")
        ev.save(root / f"{name}_eval.npz")
    (root / "grid.toml").write_text(CI_SPEC.format(ci="").replace("seeds = [2, 7]", "seeds = [2]"))
    run_grid(root / "grid.toml", root / "out")
    return root / "out"


COMBOS = [
    ("logistic", "uniform"),
    ("logistic", "watchlist?ids=eval-spk000,eval-spk001&weight=4"),
    ("isotonic", "uniform"),
    ("isotonic", "watchlist?ids=eval-spk000,eval-spk001&weight=4"),
]


def panel_title(calibrator: str, prior: str) -> str:
    """A panel's title with every space and line break left out (long specs are wrapped anywhere)."""
    return "".join(f"calibrator {calibrator} prior {prior}".split())


def overlapping(texts) -> list[tuple[str, str]]:
    """Pairs of drawn texts whose boxes overlap by more than a pixel each way."""
    pairs = []
    for i, (a, box_a) in enumerate(texts):
        for b, box_b in texts[i + 1 :]:
            dx = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
            dy = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
            if dx > 1 and dy > 1:
                pairs.append((a, b))
    return pairs


@pytest.mark.slow
def test_lid_ccdf_png_has_a_panel_for_every_calibrator_and_prior(figure_grid, monkeypatch):
    saved = captured_figures(monkeypatch)
    write_report(figure_grid)
    ccdf = saved["lid_ccdf.png"]
    titles = ["".join(t.split()) for t in ccdf["titles"]]
    for calibrator, prior in COMBOS:  # every combination in its own panel, named in its title
        assert titles.count(panel_title(calibrator, prior)) == 1, (calibrator, prior, titles)
    assert sorted(ccdf["legend"]) == ["strong", "weak"]  # one legend for all panels, naming the systems


@pytest.mark.slow
def test_eer_vs_lid_png_names_systems_in_a_legend_and_panels_by_calibrator_and_prior(figure_grid, monkeypatch):
    saved = captured_figures(monkeypatch)
    write_report(figure_grid)
    eer = saved["eer_vs_lid.png"]
    titles = ["".join(t.split()) for t in eer["titles"]]
    for calibrator, prior in COMBOS:
        assert titles.count(panel_title(calibrator, prior)) == 1, (calibrator, prior, titles)
    assert sorted(eer["legend"]) == ["strong", "weak"]
    assert not {"strong", "weak"} & set(eer["annotations"])  # no system name written at its point
    assert overlapping(eer["texts"]) == []


@pytest.mark.slow
def test_a_single_combination_is_one_panel_that_names_its_calibrator_and_prior(tmp_path, monkeypatch):
    spec = make_grid(tmp_path / "spec", "anon")
    run_grid(spec, tmp_path / "out")
    saved = captured_figures(monkeypatch)
    write_report(tmp_path / "out")
    for name in ("lid_ccdf.png", "eer_vs_lid.png"):
        (title,) = saved[name]["titles"]
        assert "calibrator logistic, prior uniform" in title, (name, title)
        assert overlapping(saved[name]["texts"]) == [], name
    assert sorted(saved["eer_vs_lid.png"]["legend"]) == ["anon", "plain"]


@pytest.mark.slow
def test_a_forged_per_trial_file_is_one_line_and_changes_nothing(figure_grid, tmp_path, capsys):
    """A per-trial file whose lid header claims 10^9 floats: refused from its header, before any allocation."""
    import io
    import zipfile

    from numpy.lib import format as npy_format

    from lidframe.grid.report import load_results
    from tests.bad_input.conftest import assert_refused

    out = tmp_path / "out"
    shutil.copytree(figure_grid, out)
    write_report(out)
    path = out / load_results(out)[0]["per_trial"]
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    forged = io.BytesIO()
    npy_format.write_array_header_1_0(forged, {"descr": "<f8", "fortran_order": False, "shape": (10**9,)})
    members["lid.npy"] = forged.getvalue() + b"\0" * 80
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    line = assert_refused(["report", out], capsys, expect=[path.name, "lid", "rerun lidframe grid"], watch=[out])
    assert "per-trial file of grid cell" in line


def test_a_per_trial_file_of_another_run_is_refused_not_mixed_into_the_page(figure_grid, tmp_path, capsys):
    """A per-trial file whose trials are not those its cell's stored summary counted (3 trials short) is stale.

    Its digest would refuse it first (tests/bad_input/test_grid_state.py); a cell stored before
    per-trial digests (layout 2: none to check) still meets the reader's own check, tested here.
    """
    import sqlite3

    import numpy as np

    from lidframe.grid.report import load_results
    from tests.bad_input.conftest import assert_refused

    out = tmp_path / "out"
    shutil.copytree(figure_grid, out)
    cell = load_results(out)[0]
    path = out / cell["per_trial"]
    with np.load(path) as data:  # the test's own reading of a file it wrote itself
        arrays = {key: data[key][:-3] for key in data.files}
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)
    connection = sqlite3.connect(out / "results.sqlite")
    with connection:  # no digest to check the file against, as in a store of layout 2
        connection.execute("UPDATE cells SET per_trial_sha256 = NULL WHERE per_trial = ?", (cell["per_trial"],))
    connection.close()
    expect = [
        path.name,
        f"holds {cell['summary']['n_enrolled_trials'] - 3} closed-set trials",
        "stale",
        "rerun lidframe grid",
    ]
    assert_refused(["report", out], capsys, expect=expect, watch=[out])


def test_a_store_written_before_the_renamed_summary_keys_reports_its_intervals(ci_grids, tmp_path):
    """Summaries stored with the keys of an earlier lidframe (n_trials, n_dev_trials, ci, ci_settings) read as new."""
    import json
    import sqlite3

    from lidframe.grid.report import load_results

    old = tmp_path / "old"
    shutil.copytree(ci_grids["ci"], old)
    shutil.rmtree(old / "report")
    renamed = {"n_enrolled_trials": "n_trials", "n_dev_enrolled_trials": "n_dev_trials", "intervals": "ci",
               "bootstrap": "ci_settings"}  # fmt: skip
    with sqlite3.connect(old / "results.sqlite") as connection:
        rows = connection.execute("SELECT cell_id, summary FROM cells WHERE status = 'ok'").fetchall()
        for cell_id, text in rows:
            summary = {renamed.get(key, key): value for key, value in json.loads(text).items()}
            assert "ci" in summary and "intervals" not in summary
            connection.execute("UPDATE cells SET summary = ? WHERE cell_id = ?", (json.dumps(summary), cell_id))
    connection.close()
    assert [c["summary"] for c in load_results(old)] == [c["summary"] for c in load_results(ci_grids["ci"])]
    write_report(old, figures=False)
    text = (old / "report" / "summary.md").read_text()
    assert text == (ci_grids["ci"] / "report" / "summary.md").read_text()
    assert (
        text.count(
            "90% bootstrap intervals in brackets (percentile, 100 resamples of speakers, seed 2; eval and dev speakers "
            "resampled, the calibrator refitted on each dev resample: they include the calibrator's uncertainty)."
        )
        == 4
    )


#: The summary keys a grid store of lidframe 0.2.0 holds, in its order (the last release before the
#: renamed keys and the detection costs), as its ``Result.to_dict()`` wrote them.
KEYS_0_2_0 = (
    "n_trials", "n_enrolled", "n_impostor_trials", "log2_n", "alid", "pdr", "ndr", "lid_pos", "lid_neg", "lid_max",
    "lid_min", "lid_q50", "lid_q90", "lid_q99", "cllr_mc", "rank1_rate", "rank_disclosure_bits", "ci", "ci_settings",
    "eer", "eer_threshold", "cllr", "min_cllr", "dece_bits", "max_abs_llr_log10", "zebra_tag", "dsys", "dsys_method",
    "binary_metrics", "binary_method", "binary_bins", "binary_error_bounds", "calibrator", "prior", "znorm_ddof",
    "n_dev_trials", "n_dev_enrolled", "n_dev_impostor_trials", "lidframe_version", "calibrator_fit",
)  # fmt: skip
#: What lidframe 0.2.0 called the keys renamed since, and the keys it did not write (no detection costs).
NAMES_0_2_0 = {"n_enrolled_trials": "n_trials", "n_outsider_trials": "n_impostor_trials", "intervals": "ci",
               "bootstrap": "ci_settings", "n_dev_enrolled_trials": "n_dev_trials",
               "n_dev_outsider_trials": "n_dev_impostor_trials"}  # fmt: skip
NOT_IN_0_2_0 = ("min_dcf", "act_dcf", "binary_operating_point", "legal")


def test_a_store_written_by_lidframe_0_2_0_still_gives_a_report_with_the_detection_costs_missing(ci_grids, tmp_path):
    """A store of 0.2.0 (old keys, no min_dcf, act_dcf, binary_operating_point) is read, not refused.

    Its cells read as this release's with the detection costs missing (NaN, printed as not
    computed); every other number, the tables and the intervals are those of the same cells
    stored now.
    """
    import json
    import math
    import sqlite3

    import pandas as pd

    from lidframe.grid.report import load_results
    from lidframe.report import render_html, report_from_grid
    from tests.report.htmltree import parse

    old = tmp_path / "old"
    shutil.copytree(ci_grids["ci"], old)
    shutil.rmtree(old / "report")
    with sqlite3.connect(old / "results.sqlite") as connection:
        rows = connection.execute("SELECT cell_id, summary FROM cells WHERE status = 'ok'").fetchall()
        for cell_id, text in rows:
            summary = {NAMES_0_2_0.get(k, k): v for k, v in json.loads(text).items() if k not in NOT_IN_0_2_0}
            summary["lidframe_version"] = "0.2.0"
            assert tuple(summary) == KEYS_0_2_0  # the layout 0.2.0 wrote, key for key
            connection.execute("UPDATE cells SET summary = ? WHERE cell_id = ?", (json.dumps(summary), cell_id))
    connection.close()
    now = {c.cell_id: c for c in load_results(ci_grids["ci"])}
    cells = load_results(old)
    assert sorted(c.cell_id for c in cells) == sorted(now)
    for cell in cells:
        stored, want = cell["summary"], now[cell.cell_id]["summary"]
        assert {k: v for k, v in stored.items() if k not in (*NOT_IN_0_2_0, "lidframe_version")} == {
            k: v for k, v in want.items() if k not in (*NOT_IN_0_2_0, "lidframe_version")
        }
        assert stored["min_dcf"] is None and stored["act_dcf"] is None and stored["lidframe_version"] == "0.2.0"
        assert math.isnan(cell.summary.binary.min_dcf) and math.isnan(cell.summary.binary.act_dcf)
        assert cell.summary.binary.eer == now[cell.cell_id].summary.binary.eer
        assert cell.summary.intervals.keys() == now[cell.cell_id].summary.intervals.keys()
        assert cell.calibrator_fit == now[cell.cell_id].calibrator_fit is not None
    write_report(old, figures=False)
    assert (old / "report" / "summary.md").read_text() == (ci_grids["ci"] / "report" / "summary.md").read_text()
    table, want = (pd.read_csv(folder / "report" / "table.csv") for folder in (old, ci_grids["ci"]))
    want = want.drop(columns=list(LEGAL_COLUMNS))  # no cell of 0.2.0 has the legal block: no such columns
    assert list(table.columns) == list(want.columns)
    assert (
        table["min_dcf"].isna().all() and table["act_dcf"].isna().all() and set(table["lidframe_version"]) == {"0.2.0"}
    )
    same = [c for c in want.columns if c not in ("min_dcf", "act_dcf", "lidframe_version")]
    pd.testing.assert_frame_equal(table[same], want[same])
    # the page: the costs named as not computed (no blank column), the version that computed the cells
    root = parse(render_html(report_from_grid(cells, out_dir=old)))
    comparison = root.find("table", id="comparison-table")
    headers = [th.text() for th in comparison.find("thead").find_all("th")]
    assert "minDCF" not in headers and "actDCF" not in headers and "EER" in headers
    assert "minDCF" in comparison.find("caption").text() and "actDCF" in comparison.find("caption").text()
    assert "0.2.0" in root.text()
