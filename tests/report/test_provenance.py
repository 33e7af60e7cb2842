"""Provenance an auditor can cite, on every kind of page (issue 27, "The page").

Each check reads the page's HTML (tests/report/htmltree.py) and compares it with a
value found here independently of lidframe.report: package versions from
``importlib.metadata``, the source digest re-computed over the code files, the git
commit from ``git rev-parse``, the command line parsed back with ``shlex``, digests with
``hashlib``, the fitted calibrator with the ``calibrator_fit`` of the JSON the same run
wrote, counts of systems from the runs' own specs.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lidframe
import lidframe.report
from lidframe._version import _source_digest
from lidframe.data.simulate import simulate_system
from tests.bad_input.conftest import assert_refused
from tests.report.conftest import CREATED, SYSTEMS
from tests.report.htmltree import parse

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("evaluate", "systems", "dp-audit", "grid")
#: A word written twice in a row ("calibrator calibrator", "slope slope").
DOUBLED = re.compile(r"\b([A-Za-z][\w-]+)\s+\1\b")


# ------------------------------------------------------------------ independent values
def metadata_version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def code_digest() -> str:
    """SHA-256 over lidframe's code files, as lidframe/_version.py documents it, computed here.

    Folders: the ``lidframe`` package and the ``lidframe.attackers`` / ``lidframe.calibrators``
    folders; per folder n, each .py/.j2/.css/.js file below it in sorted order contributes
    ``"n:<relative path>\\0"``, its bytes and ``"\\0"``.
    """
    roots = []
    for name in ("lidframe", "lidframe.attackers", "lidframe.calibrators"):
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            roots += [Path(p).resolve() for p in spec.submodule_search_locations]
    digest = hashlib.sha256()
    for n, root in enumerate(roots):
        files = sorted(p for p in root.rglob("*") if p.suffix in (".py", ".j2", ".css", ".js") and p.is_file())
        for path in files:
            digest.update(f"{n}:{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


def environment_rows(root) -> dict[str, str]:
    table = root.find("table", id="environment-table")
    return {tr.attrs["data-key"]: tr.find("td").text() for tr in table.find("tbody").find_all("tr")}


def provenance_settings(root) -> dict[str, str]:
    block = root.find("dl", **{"class": "provenance"})
    return {d.find("dt").text(): d.find("dd").text() for d in block.find_all("div")}


def run_main(argv, monkeypatch, capsys) -> tuple[int, str]:
    """``lidframe ARGV`` as the console script runs it: ``main()`` reading ``sys.argv``."""
    from lidframe.cli import main

    monkeypatch.setattr(sys, "argv", [str(Path(sys.prefix) / "bin" / "lidframe"), *map(str, argv)])
    code = main()
    out, err = capsys.readouterr()
    assert code == 0, err
    return code, out


# ------------------------------------------------------------------ every kind of page: the software
@pytest.mark.parametrize("kind", KINDS)
def test_every_page_names_the_software_behind_its_numbers(rendered, kind):
    _, page = rendered[kind]
    rows = environment_rows(parse(page))
    for name in ("numpy", "scipy", "scikit-learn", "torch"):
        assert rows[name] == metadata_version(name), name
    assert rows["lidframe"] == metadata_version("lidframe").replace("not installed", "0+unknown")
    # the digest of the code this process loaded (computed once per process: the next test checks it by hand)
    assert rows["source digest"] == _source_digest()
    assert rows["python"] == ".".join(map(str, sys.version_info[:3]))
    if (ROOT / ".git").exists() and shutil.which("git"):
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
        if head.returncode == 0:
            dirty = subprocess.run(
                ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
            ).stdout.strip()
            assert rows["git commit"].split()[0] == head.stdout.strip()
            assert ("uncommitted changes" in rows["git commit"]) == bool(dirty)
    else:
        assert "git commit" not in rows


def test_the_source_digest_is_the_digest_of_the_code_files():
    _source_digest.cache_clear()  # computed now, not when this process first asked
    before = code_digest()
    digest = lidframe.report.environment().source_digest
    if code_digest() != before:  # a file was edited meanwhile (a shared checkout): nothing to compare
        pytest.skip("lidframe's source changed during the test")
    assert digest == before and len(digest) == 64


@pytest.mark.slow
def test_building_a_report_does_not_import_torch():
    """The versions come from package metadata: neither lidframe nor its report imports torch to state them."""
    code = (
        "import sys, lidframe\n"
        "from lidframe.data.simulate import simulate_system\n"
        "from lidframe.report import report_from_results\n"
        "dev, ev = simulate_system(leakage=0.5, seed=0, n_enrolled=5, trials_per_speaker=3)\n"
        "report = report_from_results({'a': lidframe.evaluate(dev, ev)})\n"
        "assert dict(report.provenance.environment.packages)['numpy']\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("kind", KINDS)
def test_every_page_has_the_provenance_sections(rendered, kind):
    """The ids H4's same-sections test also checks: command line, software, attackers, calibrators, intervals, inputs."""
    root = parse(rendered[kind][1])
    section = root.find("section", id="provenance")
    ids = {h.attrs.get("id") for h in section.find_all("h3")}
    assert {
        "provenance-software",
        "provenance-attackers",
        "provenance-systems",
        "provenance-calibrators",
        "provenance-intervals",
        "provenance-inputs",
    } <= ids
    settings = provenance_settings(root)
    assert settings["command line"] and settings["working folder"] == os.getcwd()
    for node in section.find_all("dt") + section.find_all("th") + section.find_all("h3") + section.find_all("caption"):
        assert not DOUBLED.search(node.text()), node.text()
    for dd in section.find_all("dd"):  # a name and its value as one line: never "calibrator calibrator = ..."
        line = f"{dd.parent.find('dt').text()} {dd.text()}"
        assert not DOUBLED.search(line), line


# ------------------------------------------------------------------ the command line and the names
@pytest.fixture()
def scores(tmp_path):
    dev, ev = simulate_system(leakage=0.5, seed=2, n_enrolled=12, trials_per_speaker=4)
    folder = tmp_path / "my scores"  # a space: the command line must quote it
    folder.mkdir()
    dev.save(folder / "dev.npz")
    ev.save(folder / "eval.npz")
    (folder / "model.ckpt").write_bytes(b"weights of an attacker")
    return folder


@pytest.mark.slow
def test_evaluate_page_cites_the_full_command_line_the_names_and_the_checkpoint(scores, monkeypatch, capsys):
    monkeypatch.chdir(scores)
    argv = ["evaluate", "--dev", scores / "dev.npz", "--eval", "eval.npz", "--no-bootstrap"]
    argv += ["--name", "anon X", "--attacker", "ecapa?checkpoint=model.ckpt&device=cpu", "--report", "audit"]
    _, out = run_main(argv, monkeypatch, capsys)
    root = parse((scores / "audit" / "report.html").read_text(encoding="utf-8"))
    settings = provenance_settings(root)
    assert shlex.split(settings["command line"]) == ["lidframe", *map(str, argv)]
    assert settings["working folder"] == str(scores)
    # the system is named by --name, not by the file: card, comparison table, console table
    assert [c.find("h3").text() for c in root.find_all("article")] == ["anon X"]
    rows = root.find("table", id="comparison-table").find("tbody").find_all("tr")
    assert [r.find_all("td")[0].text() for r in rows] == ["anon X"]
    assert any(line.startswith("anon X ") for line in out.splitlines())
    assert "eval" not in [h.text() for h in root.find_all("h2")]
    # the attacker: its name, its settings as a table, the checkpoint with its digest
    table = root.find("table", id="attacker-1")
    assert table.attrs["data-attacker"] == "ecapa"
    found = {
        tr.attrs["data-key"]: [td.text() for td in tr.find_all("td")]
        for tr in table.find_all("tr")
        if "data-key" in tr.attrs
    }
    want = hashlib.sha256(b"weights of an attacker").hexdigest()
    assert found == {"checkpoint": ["model.ckpt", want], "device": ["cpu", ""]}


def test_a_malformed_attacker_spec_is_refused_before_any_work(scores, capsys):
    argv = ["evaluate", "--dev", scores / "dev.npz", "--eval", scores / "missing.npz", "--attacker", "ecapa?checkpoint"]
    assert_refused(argv, capsys, expect=["--attacker", "key=value"], watch=[scores])
    argv = ["evaluate", "--dev", scores / "dev.npz", "--eval", scores / "missing.npz", "--name", " "]
    assert_refused(argv, capsys, expect=["--name", "non-empty"], watch=[scores])


def test_the_command_line_of_a_python_script_is_the_interpreters():
    from lidframe.report import command_line

    assert shlex.split(command_line(["evaluate", "--dev", "a b.npz"])) == ["lidframe", "evaluate", "--dev", "a b.npz"]
    assert shlex.split(command_line()) == list(sys.orig_argv)  # pytest's own: not a lidframe command


# ------------------------------------------------------------------ the fitted calibrator as a table
@pytest.mark.parametrize("calibrator", ["logistic", "isotonic", "gaussian"])
def test_fitted_calibrator_table_holds_the_json_record(scores, tmp_path, capsys, calibrator):
    from lidframe.cli import main

    argv = ["evaluate", "--dev", scores / "dev.npz", "--eval", scores / "eval.npz", "--calibrator", calibrator]
    argv += ["--no-bootstrap", "--json", tmp_path / "s.json", "--report", tmp_path / "audit"]
    assert main([str(a) for a in argv]) == 0
    capsys.readouterr()
    fit = json.loads((tmp_path / "s.json").read_text())["calibrator_fit"]
    root = parse((tmp_path / "audit" / "report.html").read_text(encoding="utf-8"))
    (table,) = root.find_all("table", **{"class": "calibrator-fit"})
    module, _, name = fit["calibrator"].rpartition(":")
    assert f"{name} ({module})" in table.find("caption").text()
    rows = {tr.attrs["data-key"]: tr for tr in table.find_all("tr") if "data-key" in tr.attrs}
    want = {("parameter", k): v for k, v in fit["params"].items()} | {
        ("fitted", k): v for k, v in fit["fitted"].items()
    }
    assert {(tr.attrs["data-group"], key) for key, tr in rows.items()} == set(want)
    for (_, key), value in want.items():
        row = rows[key]
        cell = row.find("td")
        assert json.loads(cell.attrs["data-value"]) == value, key  # whole, as the JSON has it
        label = row.find("th").text()
        assert not label.endswith("_") and not DOUBLED.search(label), label
        assert label != key or "_" not in key, key
        if isinstance(value, float) and math.isfinite(value):
            assert float(cell.text()) == pytest.approx(value, rel=1e-5), key
        if isinstance(value, bool):
            assert cell.text() == ("yes" if value else "no")
        if isinstance(value, list) and len(value) > 4:  # summarised by its length and range
            assert cell.text() == f"{len(value)} values, from {min(value):.6g} to {max(value):.6g}", key
    if calibrator == "logistic":
        names = {key: rows[key].find("th").text() for key in rows}
        assert names["slope_"] == "slope" and names["intercept_"] == "intercept" and names["clamped_"] == "clamped"


# ------------------------------------------------------------------ attackers, engines, counts
def test_attackers_and_synthesis_engines_given_by_the_caller_are_shown(tmp_path):
    from lidframe.report import AttackerSettings, render_html, report_from_results

    checkpoint = tmp_path / "ge2e.ckpt"
    checkpoint.write_bytes(b"adapted")
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=5, trials_per_speaker=3)
    attacker = AttackerSettings.of("ge2e", {"epochs": 3, "adapted": True, "rate": 0.001}, {"checkpoint": checkpoint})
    report = report_from_results(
        {"a": lidframe.evaluate(dev, ev)},
        attackers=[attacker],
        engines={"espeak": "eSpeak NG text-to-speech: 1.51", "flite": "flite-2.2"},
        created=CREATED,
    )
    root = parse(render_html(report))
    table = root.find("table", id="attacker-1")
    rows = {
        tr.attrs["data-key"]: [td.text() for td in tr.find_all("td")]
        for tr in table.find_all("tr")
        if "data-key" in tr.attrs
    }
    assert rows == {
        "epochs": ["3", ""],
        "adapted": ["yes", ""],
        "rate": ["0.001", ""],
        "checkpoint": [str(checkpoint), hashlib.sha256(b"adapted").hexdigest()],
    }
    engines = root.find("table", id="engines-table")
    assert {tr.attrs["data-key"]: tr.find("td").text() for tr in engines.find("tbody").find_all("tr")} == {
        "espeak": "eSpeak NG text-to-speech: 1.51",
        "flite": "flite-2.2",
    }


def test_an_attacker_without_a_name_is_refused(tmp_path):
    from lidframe.errors import InputError
    from lidframe.report import AttackerSettings

    with pytest.raises(InputError, match="non-empty name"):
        AttackerSettings.of(" ")
    with pytest.raises(InputError, match="no such file"):
        AttackerSettings.of("ecapa", files={"checkpoint": tmp_path / "none.ckpt"})


def meta(page: str) -> str:
    return parse(page).find("p", **{"class": "meta"}).text()


def test_the_header_counts_systems_not_rows_or_attackers(rendered):
    from tests.report.conftest import GRID_SPEC

    systems = len(SYSTEMS)
    assert f"· {systems} systems ·" in meta(rendered["systems"][1])
    assert "· 1 system ·" in meta(rendered["evaluate"][1])
    n_grid_systems = len(re.findall(r"^\[systems\.\w+\]$", GRID_SPEC, flags=re.M))
    cells = len(rendered["grid"][0].report.systems)
    assert f"· {n_grid_systems} systems, {cells} cells ·" in meta(rendered["grid"][1])
    mus = len(rendered["dp-audit"][0].sources["record"].rows)
    assert f"· {mus} systems, {2 * mus} rows ·" in meta(rendered["dp-audit"][1])


def test_a_system_with_several_calibrators_and_attackers_counts_once(tmp_path):
    """The real-voice demo's layout: labels system/attacker/rung grouped by system; "N systems" counts systems."""
    from lidframe.report import render_html, report_from_results

    results, systems = {}, {}
    for seed, (system, attacker) in enumerate([("pitch", "ge2e"), ("pitch", "ecapa"), ("plain", "ge2e")]):
        dev, ev = simulate_system(leakage=0.4, seed=seed, n_enrolled=5, trials_per_speaker=3)
        results[f"{system}/{attacker}"] = lidframe.evaluate(dev, ev)
        systems[f"{system}/{attacker}"] = system
    page = render_html(report_from_results(results, systems=systems, created=CREATED))
    assert f"· {len(set(systems.values()))} systems, {len(results)} rows ·" in meta(page)


# ------------------------------------------------------------------ the binary metrics the CLI prints
def test_min_cllr_and_dsys_are_on_the_page_as_in_the_json(cli_runs):
    run = cli_runs["evaluate"]
    root = parse(run.page.read_text(encoding="utf-8"))
    table = root.find("table", id="comparison-table")
    headers = [th.text() for th in table.find("thead").find_all("th")]
    (row,) = [tr.find_all("td") for tr in table.find("tbody").find_all("tr")]
    for title, key in (("minCllr", "min_cllr"), ("D_sys", "dsys"), ("minDCF", "min_dcf"), ("actDCF", "act_dcf")):
        if key in run.record and run.record[key] is not None:
            assert float(row[headers.index(title)].attrs["data-sort"]) == run.record[key], title
        else:  # a lidframe without the detection costs: named as not computed, never a blank column
            assert title not in headers and title in table.find("caption").text()
    assert f"D_sys {run.record['dsys']:.3f}" in run.stdout


def test_detection_costs_show_where_the_summary_has_them():
    """min_dcf / act_dcf of a summary (the binary view's, issue 27) go into the comparison table, 3 decimals."""
    import attrs

    from lidframe.data.simulate import simulate_system
    from lidframe.report import Headline, Provenance, Report, ReportSystem
    from lidframe.report.sections.comparison import comparison_table

    summary = lidframe.evaluate(*simulate_system(leakage=0.5, seed=2, n_enrolled=4)).summary
    headline = attrs.evolve(Headline.from_summary(summary), min_dcf=0.3125, act_dcf=0.40625)
    system = ReportSystem("s", "s", "logistic", "uniform", headline, np.array([1.0]), 2.0)
    report = Report("t", "evaluate", [system], Provenance("v", "v", "now", []))
    table = comparison_table(report)
    titles = [c.title for c in table.columns]
    (row,) = table.rows
    assert row[titles.index("minDCF")].text == "0.312" and row[titles.index("minDCF")].sort == repr(0.3125)
    assert row[titles.index("actDCF")].text == "0.406" and row[titles.index("actDCF")].sort == repr(0.40625)


# ------------------------------------------------------------------ the packages a page names where used (issue 41)
def test_the_software_names_resemblyzer_the_recogniser_and_the_pitch_tracker_where_used():
    from lidframe.report import AttackerSettings, report_from_results
    from lidframe.report.sections.environment import environment_table
    from tests.report.conftest import utility_record

    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=5, trials_per_speaker=3)
    result = lidframe.evaluate(dev, ev)

    def used(**options) -> dict[str, str]:
        report = report_from_results({"a": result}, created=CREATED, **options)
        rows = {key: value for key, _, value in environment_table(report.provenance.environment)}
        return {name: rows[name] for name in ("resemblyzer", "pocketsphinx", "praat-parselmouth") if name in rows}

    assert used() == {}  # nothing of them behind the numbers: not on the page
    assert used(attackers=[AttackerSettings.from_spec("ge2e?device=cpu")]) == {
        "resemblyzer": metadata_version("resemblyzer")
    }
    with_rho = utility_record(0.2, rho_f0=0.8, recogniser="pocketsphinx (en-us, the wheel's model)")
    assert used(utility={"a": with_rho}) == {
        "pocketsphinx": metadata_version("pocketsphinx"),
        "praat-parselmouth": metadata_version("praat-parselmouth"),
    }
    assert used(utility={"a": utility_record(0.2, recogniser="pocketsphinx")}) == {
        "pocketsphinx": metadata_version("pocketsphinx")
    }  # no ρ_F0 measured: no pitch tracker
    assert used(utility={"a": utility_record(0.2, recogniser="my-asr?beam=4")}) == {}


def test_a_score_file_scored_by_ge2e_puts_resemblyzer_on_the_page(tmp_path):
    from lidframe.data.provenance import AttackerRecord, ScoreFile, ScoreProvenance
    from lidframe.report import render_html, report_from_results

    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=5, trials_per_speaker=3)
    record = ScoreProvenance.make(AttackerRecord.of("ge2e", spec="ge2e"), [], command=None)
    ev.save(tmp_path / "eval.npz", provenance=record)
    report = report_from_results(
        {"a": lidframe.evaluate(dev, ev)}, created=CREATED, score_files=[ScoreFile.of("eval", tmp_path / "eval.npz")]
    )
    rows = environment_rows(parse(render_html(report)))
    assert rows["resemblyzer"] == metadata_version("resemblyzer")
