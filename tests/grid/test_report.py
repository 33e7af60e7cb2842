"""The report's LaTeX table escapes every special character; the report folder never mixes two reports."""

import re
import shutil
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe.data.simulate import simulate_system
from lidframe.grid.report import latex_escape, write_report
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
