"""The docs say what the code does: their code blocks run, their tables are what the code prints.

Python blocks
    Every ```python block in docs/ runs (in a scratch folder).

Shell blocks: docs you can paste
    Every ```sh, ```bash, ```shell or ```console block in README.md and docs/*.md runs
    verbatim, unless the line just before its opening fence is a marker::

        <!-- needs: WHAT -->   it needs what the reader brings (WHAT says what: "your data
                               (dev.csv, eval.csv)", "a clone of this repository",
                               "speech engines ..."); it is not run, but each of its
                               ``lidframe`` command lines must parse with lidframe's own
                               parser (every command and flag in it exists).
        <!-- slow: WHY -->     it runs, in the slow doc test only (``-m slow``).

    An unmarked block runs in a fresh scratch folder that holds ``demo-out/``, the output
    of ``lidframe demo --simulated --out demo-out`` (run once per session and copied; a
    block's own line ``lidframe demo --simulated --out demo-out`` is that run, already
    done), and a copy of the repository's ``examples/``.  Each command line (``\\``
    continues a line, ``#`` starts a comment; a ```console block's commands start with
    ``$ ``) must be one the test can run: ``lidframe ...``, run in this process through
    ``lidframe.cli.main`` and required to exit 0, or ``cd DIR``, ``ls PATH...`` and
    ``cat PATH...`` (the paths must exist).  Anything else (``make``, ``apt-get``, a
    pipe, ``.venv/bin/lidframe``, which is not in the scratch folder) fails the test
    unless the block is marked.  The real-voice demo takes minutes and needs speech
    engines: its blocks are marked ``needs``, and only ``--simulated`` demos run here.
"""

import importlib.util
import re
import shlex
import shutil
import tomllib
from pathlib import Path

import attrs
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
BLOCKS = [
    pytest.param(code, id=f"{page.name}:{n}")
    for page in sorted(DOCS.glob("*.md"))
    for n, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S))
]


@pytest.fixture()
def restore_registry():
    """Doc examples may register components; remove them so no other test sees them."""
    from lidframe import registry

    before = {k: dict(registry.entries(k)) for k in registry.KINDS}
    yield
    for kind in registry.KINDS:
        for name, entry in registry.entries(kind).items():
            if entry.origin == "register()" and name not in before[kind]:
                registry.unregister(kind, name)


@pytest.mark.parametrize("code", BLOCKS)
def test_doc_example_runs(code, tmp_path, monkeypatch, capsys, restore_registry):
    monkeypatch.chdir(tmp_path)
    try:
        exec(compile(code, "<doc>", "exec"), {"__name__": "__doc_example__"})
    except ModuleNotFoundError as exc:  # an example of the torch attackers, where torch is not installed
        if exc.name != "torch" or importlib.util.find_spec("torch") is not None:
            raise
        pytest.skip(f"the example needs torch: {exc}")


def test_worked_example_prints_0_9(tmp_path, monkeypatch, capsys):
    code = re.findall(r"```python\n(.*?)```", (DOCS / "theory.md").read_text(), flags=re.S)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<doc>", "exec"), {})
    assert capsys.readouterr().out.strip() == "0.9"


def test_demo_tables_in_readme_quickstart_and_openset_are_what_the_demo_prints(simulated_demo):
    # the table of the session's `lidframe demo --simulated` (seed 0), which table.txt holds with a newline
    table = (simulated_demo / "demo-out" / "table.txt").read_text(encoding="utf-8").removesuffix("\n")
    for page in (DOCS.parent / "README.md", DOCS / "quickstart.md", DOCS / "openset.md"):
        assert f"```\n{table}\n```" in page.read_text(), page


def test_sensitivity_table_in_calibrators_page_is_what_the_cli_prints():
    from lidframe.analyses.sensitivity import sensitivity
    from lidframe.cli.sensitivity import format_sensitivity_table
    from lidframe.data.simulate import simulate_system
    from lidframe.demo import DEMO_SYSTEMS

    offset = list(DEMO_SYSTEMS).index("uneven")
    dev, ev = simulate_system(seed=offset, **DEMO_SYSTEMS["uneven"])  # demo seed 0
    table = format_sensitivity_table(sensitivity(dev, ev))
    assert f"```\n{table}\n```" in (DOCS / "calibrators.md").read_text()


# ------------------------------------------------------------------ shell blocks
SHELL_LANGUAGES = ("sh", "bash", "shell", "console")
MARKER = re.compile(r"<!--\s*(needs|slow):\s*(.*?)\s*-->")
#: The command the scratch folder's demo-out/ comes from.
DEMO_COMMAND = ["lidframe", "demo", "--simulated", "--out", "demo-out"]


@attrs.frozen
class ShellBlock:
    """A shell block of a page: where it is, its marker (``needs``/``slow``, or None) and its command lines."""

    page: str
    line: int
    marker: str | None
    reason: str
    commands: tuple[tuple[str, ...], ...]

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def shell_commands(text: str, language: str) -> list[list[str]]:
    """The command lines of a block's text, each split as the shell would (``\\`` joins lines, ``#`` comments)."""
    lines = text.splitlines()
    if language == "console":  # commands follow a "$ " prompt; the other lines are output
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    joined, current = [], ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        joined.append(current + line)
        current = ""
    if current:
        joined.append(current)
    return [words for words in (shlex.split(line, comments=True) for line in joined) if words]


def shell_blocks(page: Path) -> list[ShellBlock]:
    """Every shell block of *page*, with the marker on the line before its fence; a stray marker is an error."""
    lines = page.read_text(encoding="utf-8").splitlines()
    name = str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else page.name
    blocks, fence_lines = [], set()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        info = lines[i][3:].strip().split()
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        fence_lines.add(i)
        if info and info[0] in SHELL_LANGUAGES:
            found = MARKER.fullmatch(lines[i - 1].strip()) if i else None
            blocks.append(
                ShellBlock(
                    page=name,
                    line=i + 1,
                    marker=found.group(1) if found else None,
                    reason=found.group(2) if found else "",
                    commands=tuple(tuple(c) for c in shell_commands("\n".join(lines[i + 1 : end]), info[0])),
                )
            )
        i = end + 1
    for k, line in enumerate(lines):  # a marker must sit right above a shell block and say what it needs
        found = MARKER.search(line)
        if found:
            assert k + 1 in fence_lines and any(b.line == k + 2 for b in blocks), (
                f"{name}:{k + 1}: {found.group(0)} is not on the line just above a shell block"
            )
            assert found.group(2), f"{name}:{k + 1}: the marker must say what is needed or why it is slow"
    return blocks


PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
SHELL_BLOCKS = [block for page in PAGES for block in shell_blocks(page)]


def _params(blocks):
    return [pytest.param(b, id=b.where, marks=[pytest.mark.slow] if b.marker == "slow" else []) for b in blocks]


@pytest.fixture(scope="session")
def simulated_demo(tmp_path_factory) -> Path:
    """The folder where ``lidframe demo --simulated --out demo-out`` ran (once per session)."""
    from lidframe.cli import main

    folder = tmp_path_factory.mktemp("demo-run")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        assert main(DEMO_COMMAND[1:]) == 0
    return folder


def run_command(words: tuple[str, ...], where: str, capsys) -> None:
    """One command line of a shell block, in the current folder (the module docstring says which run)."""
    import os

    from lidframe.cli import main

    program, *args = words
    if list(words) == DEMO_COMMAND:
        assert Path("demo-out", "table.txt").is_file(), f"{where}: demo-out/ was not prepared"
        return
    if program == "lidframe":
        code = main(args)
        out, err = capsys.readouterr()
        assert code == 0, f"{where}: {shlex.join(words)} exited {code}: {err.strip() or out[-500:]}"
    elif program == "cd":
        (folder,) = args
        os.chdir(folder)
    elif program in ("ls", "cat"):
        paths = [a for a in args if not a.startswith("-")]
        for path in paths or ["."]:
            assert Path(path).exists(), f"{where}: {program} {path}: no such file or folder"
            if program == "cat":
                Path(path).read_text(encoding="utf-8")
    else:
        pytest.fail(
            f"{where}: {shlex.join(words)!r} is not a command the doc test can run (lidframe, cd, ls, cat); "
            "mark the block <!-- needs: WHAT --> if the reader must bring something"
        )


@pytest.mark.parametrize("block", _params([b for b in SHELL_BLOCKS if b.marker != "needs"]))
def test_shell_block_runs_after_the_simulated_demo(block, simulated_demo, tmp_path, monkeypatch, capsys):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    shutil.copytree(simulated_demo / "demo-out", scratch / "demo-out")
    shutil.copytree(ROOT / "examples", scratch / "examples")
    monkeypatch.chdir(scratch)
    assert block.commands, f"{block.where}: an empty shell block"
    for words in block.commands:
        run_command(words, block.where, capsys)


@pytest.mark.parametrize("block", _params([b for b in SHELL_BLOCKS if b.marker == "needs"]))
def test_shell_block_that_needs_the_readers_data_parses(block):
    """Not run (the reader brings what it needs), but every lidframe command and flag in it exists."""
    from lidframe.cli.main import build_parser
    from lidframe.errors import InputError

    for words in block.commands:
        program, *args = words
        if Path(program).name != "lidframe" or args[:1] in (["--version"], ["--help"]):
            continue
        try:
            build_parser().parse_args(args)
        except InputError as exc:
            pytest.fail(f"{block.where}: {shlex.join(words)!r}: {exc}")


def test_the_shell_block_reader_sees_what_a_shell_would(tmp_path):
    """The reader itself: continuations, comments, quotes, console prompts, markers."""
    assert shell_commands("lidframe a \\\n    --b 'x y'   # note\n# only a comment\nls c", "sh") == [
        ["lidframe", "a", "--b", "x y"],
        ["ls", "c"],
    ]
    assert shell_commands("$ lidframe plugins\nsome output\n$ ls", "console") == [["lidframe", "plugins"], ["ls"]]
    page = tmp_path / "page.md"
    page.write_text("text\n<!-- needs: your data -->\n```sh\nmake x\n```\n\n```bash\nlidframe y\n```\n")
    needs, plain = shell_blocks(page)
    assert needs.where == "page.md:3"
    assert (needs.marker, needs.reason, needs.commands) == ("needs", "your data", (("make", "x"),))
    assert (plain.marker, plain.commands) == (None, (("lidframe", "y"),))


def test_an_unmarked_block_with_a_command_the_test_cannot_run_fails(monkeypatch, tmp_path, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(pytest.fail.Exception, match="mark the block <!-- needs: WHAT -->"):
        run_command(("make", "demo"), "page.md:1", capsys)
    with pytest.raises(AssertionError, match="exited 2: lidframe: error: no such file: nope.npz"):
        run_command(("lidframe", "evaluate", "--dev", "nope.npz", "--eval", "nope.npz"), "page.md:2", capsys)


def test_every_page_with_a_demo_command_runs_only_the_simulated_demo_unmarked():
    for block in SHELL_BLOCKS:
        for words in block.commands:
            if words[:2] == ("lidframe", "demo") and block.marker != "needs":
                assert "--simulated" in words, f"{block.where}: the real-voice demo takes minutes; mark it needs"


def test_readme_names_every_core_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0] for spec in project["dependencies"]]
    section = (ROOT / "README.md").read_text().split("## Installing elsewhere", 1)[1].split("\n## ", 1)[0]
    missing = [name for name in names if name not in section]
    assert not missing, f"README's 'Installing elsewhere' does not name core dependencies {missing}"


def test_quickstart_shows_how_to_activate_the_environment():
    blocks = [b for b in SHELL_BLOCKS if b.page == "docs/quickstart.md"]
    assert any(("source", ".venv/bin/activate") in b.commands for b in blocks)
    assert "lidframe: command not found" in (DOCS / "quickstart.md").read_text()


def test_readme_use_it_on_your_scores_mentions_the_report():
    section = (ROOT / "README.md").read_text().split("## Use it on your scores", 1)[1].split("\n## ", 1)[0]
    assert "report.html" in section and "--report" in section


def test_a_stray_marker_is_an_error(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("<!-- needs: your data -->\n\n```sh\nmake x\n```\n")
    with pytest.raises(AssertionError, match="not on the line just above a shell block"):
        shell_blocks(page)


def test_examples_scores_are_the_simulated_demo_score_sets(simulated_demo):
    """grids.md says examples/scores/ holds what ``lidframe demo --simulated`` writes: the same ids and scores.

    (Up to the last bits of a float64: the stored files were drawn on another machine.)
    """
    import numpy as np

    from lidframe import ScoreSet

    stored = sorted((ROOT / "examples" / "scores").glob("*.npz"))
    assert len(stored) == 10
    for path in stored:
        ours, demo = ScoreSet.load(path), ScoreSet.load(simulated_demo / "demo-out" / path.name)
        for field in ("enrolled", "trial_speakers", "trial_ids"):
            assert list(getattr(ours, field)) == list(getattr(demo, field)), (path.name, field)
        np.testing.assert_allclose(ours.scores, demo.scores, rtol=0, atol=1e-12, err_msg=path.name)
