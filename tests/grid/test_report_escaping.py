"""Names in the grid report's tables: a ``|`` in Markdown, a LaTeX special in table.tex, never break a row.

The Markdown tables are parsed by an independent parser (markdown-it-py, with GitHub's
table rule) and the LaTeX rows by counting their unescaped ``&``.
"""

from __future__ import annotations

import re

import pytest

from lidframe.data.simulate import simulate_system
from lidframe.grid.report import write_report
from lidframe.grid.runner import run_grid

#: System names (TOML keys) with what breaks a table row: Markdown pipes and backslashes, LaTeX specials.
NAMES = ["pipe|name", "back\\slash|pipe\\", "50% & $x_1$ #{~^}"]
#: Columns of the comparison: system, N, EER, ALID, PDR, LID+, LID-, LIDmax.
COLUMNS = 8


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """A finished grid of three systems named :data:`NAMES` and its tables-only report."""
    folder = tmp_path_factory.mktemp("escaping")
    lines = ['[grid]\ncalibrators = ["logistic"]\npriors = ["uniform"]\n']
    for i, name in enumerate(NAMES):
        dev, ev = simulate_system(leakage=0.3 + 0.1 * i, seed=i, n_enrolled=6, trials_per_speaker=4)
        dev.save(folder / f"s{i}_dev.npz")
        ev.save(folder / f"s{i}_eval.npz")
        key = name.replace("\\", "\\\\")  # a TOML basic string
        lines.append(f'[systems."{key}"]\ndev = "s{i}_dev.npz"\neval = "s{i}_eval.npz"\n')
    (folder / "grid.toml").write_text("\n".join(lines))
    run_grid(folder / "grid.toml", folder / "out")
    write_report(folder / "out", figures=False)
    return folder / "out" / "report"


def separators(line: str) -> int:
    """Cell separators of a Markdown table row as GitHub reads it: ``|`` that no backslash escapes."""
    count, escaped = 0, False
    for char in line:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "|":
            count += 1
    return count


def test_a_pipe_in_a_system_name_keeps_the_markdown_row_whole(reported):
    table = [line for line in (reported / "summary.md").read_text().splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(NAMES)  # header, rule, one row per system
    assert all(separators(line) == COLUMNS + 1 for line in table), table
    markdown_it = pytest.importorskip("markdown_it")
    html = markdown_it.MarkdownIt("commonmark").enable("table").render((reported / "summary.md").read_text())
    rows = re.findall(r"<tr>(.*?)</tr>", html, flags=re.S)
    assert len(rows) == 1 + len(NAMES)  # the header and one row per system
    cells = [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, flags=re.S) for row in rows]
    assert all(len(row) == COLUMNS for row in cells), cells
    import html as html_module

    assert sorted(html_module.unescape(row[0]) for row in cells[1:]) == sorted(NAMES)


def unescaped_ampersands(line: str) -> int:
    """Column separators of a LaTeX row: ``&`` not preceded by an odd run of backslashes."""
    return sum(1 for m in re.finditer(r"(\\*)&", line) if len(m.group(1)) % 2 == 0)


def test_latex_specials_in_a_system_name_keep_the_tabular_row_whole(reported):
    tex = (reported / "table.tex").read_text()
    body = [line for line in tex.splitlines() if line.endswith("\\\\") and not line.startswith("System")]
    assert len(body) == len(NAMES)
    assert all(unescaped_ampersands(line) == COLUMNS - 1 for line in body), body
    for line in body:
        name = line.split(" & ")[0]
        assert not re.search(r"(?<!\\)[%$#_{}]", name.replace("\\textbackslash{}", "").replace("{}", "")), name
