"""report.html as the command line writes it: ``evaluate --report``, ``lidframe report``, ``dp-audit --report``.

Every number the page shows is compared with what the same run wrote as JSON (the
``--json`` summary, the grid store's cell summaries, the audit's rows): exactly, through
the full-precision ``data-sort`` attributes, and as printed, formatted here.  Bad
targets are refused before any work with one line and nothing written
(:func:`tests.bad_input.conftest.assert_refused`), and a failure while writing leaves none
of the run's outputs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lidframe.data.simulate import simulate_system
from tests.bad_input.conftest import assert_refused
from tests.report.htmltree import parse

#: card title -> summary key (docs/report.md, "Headlines").
CARD_KEYS = {
    "N": "n_enrolled",
    "log2 N (bits)": "log2_n",
    "ALID (bits)": "alid",
    "LIDmax (bits)": "lid_max",
    "LID q99 (bits)": "lid_q99",
    "EER": "eer",
    "PDR": "pdr",
}
#: comparison-table header -> summary key.
COLUMN_KEYS = {
    "N": "n_enrolled",
    "log2 N": "log2_n",
    "trials": "n_enrolled_trials",
    "ALID": "alid",
    "PDR": "pdr",
    "LID+": "lid_pos",
    "LID−": "lid_neg",
    "LID q99": "lid_q99",
    "LIDmax": "lid_max",
    "EER": "eer",
    "Cllr": "cllr",
    "rank-1": "rank1_rate",
}
SHARES = {"eer", "pdr", "rank1_rate"}
#: What a card's brackets are, for speaker-bootstrap intervals that refit the calibrator (issue 41).
CI_LEVEL = "95 % speaker-bootstrap intervals in brackets (calibrator refitted on resampled dev speakers)"


def shown(key: str, value) -> str:
    """A summary value as the page prints it (docs/report.md, "Number formats")."""
    if value is None:
        return "—"
    if key in ("n_enrolled", "n_enrolled_trials", "n_trials"):
        return f"{int(value):,}"
    if key in SHARES:
        return f"{100 * value:.1f} %"
    return f"{value:.2f}"


def shown_interval(key: str, bounds) -> str:
    low, high = (shown(key, b) for b in bounds)
    if key in SHARES:
        return f"[{low[:-2]}, {high[:-2]}] %"
    return f"[{low}, {high}]"


def sort_value(text: str | None):
    return None if text in (None, "") else float(text)


def table_rows(root, table_id: str) -> tuple[list[str], list[list]]:
    table = root.find("table", id=table_id)
    headers = [th.text() for th in table.find("thead").find_all("th")]
    return headers, [r.find_all("td") for r in table.find("tbody").find_all("tr")]


def provenance_settings(root) -> dict[str, str]:
    block = root.find("dl", **{"class": "provenance"})
    return {d.find("dt").text(): d.find("dd").text() for d in block.find_all("div")}


def last_line(text: str) -> str:
    return [line for line in text.splitlines() if line.strip()][-1]


# ------------------------------------------------------------------ evaluate --report
def test_evaluate_report_shows_the_numbers_of_the_json_summary(cli_runs):
    run = cli_runs["evaluate"]
    record = run.record
    assert last_line(run.stdout) == f"wrote the audit report to {run.page}"  # the page's path is printed last
    root = parse(run.page.read_text(encoding="utf-8"))
    (card,) = root.find_all("article")
    items = {d.attrs["data-metric"]: d for d in card.find_all("div") if "data-metric" in d.attrs}
    assert set(items) == set(CARD_KEYS)
    for title, key in CARD_KEYS.items():
        assert sort_value(items[title].attrs["data-sort"]) == record[key], title  # full precision, exactly
        want = shown(key, record[key])
        if key in record["intervals"]:
            want += " " + shown_interval(key, record["intervals"][key])
            if key == "lid_max":  # the percentile interval of a maximum: marked biased low
                want += " †"
        assert items[title].find("dd").text() == want, title
    assert card.find("p", **{"class": "ci-level"}).text() == CI_LEVEL

    headers, rows = table_rows(root, "comparison-table")
    (row,) = rows
    assert row[0].text() == "dev/eval"  # the stems of dev.npz and eval.npz (issue 41), as in the printed table
    for title, key in COLUMN_KEYS.items():
        assert sort_value(row[headers.index(title)].attrs["data-sort"]) == record[key], title


def test_evaluate_report_has_the_per_speaker_table_of_the_same_run(cli_runs):
    run = cli_runs["evaluate"]
    root = parse(run.page.read_text(encoding="utf-8"))
    assert any(h.text() == "Per speaker" for h in root.find_all("h3"))
    headers, rows = table_rows(root, "per-speaker-1-1")
    csv = pd.read_csv(run.files["per_speaker"])
    assert [r[0].text() for r in rows] == list(csv["speaker"])  # same speakers, same order (most disclosed first)
    for title, column in (("trials", "n_trials"), ("ALID", "alid"), ("LIDmax", "lid_max"), ("PDR", "pdr")):
        page = np.array([sort_value(r[headers.index(title)].attrs["data-sort"]) for r in rows], dtype=float)
        np.testing.assert_allclose(page, csv[column].to_numpy(dtype=float), rtol=1e-10, atol=1e-12)
    # --bootstrap gives each speaker's ALID its within-speaker interval, printed in its cell
    alid_cells = [r[headers.index("ALID")] for r in rows]
    for cell, low, high in zip(alid_cells, csv["alid_low"], csv["alid_high"]):
        if not (math.isnan(low) or math.isnan(high)):
            assert cell.text().endswith(f"[{low:.2f}, {high:.2f}]")


def test_evaluate_report_provenance_names_the_inputs_their_digests_and_the_flags(cli_runs):
    run = cli_runs["evaluate"]
    root = parse(run.page.read_text(encoding="utf-8"))
    _, rows = table_rows(root, "inputs-table")
    found = {r[0].text(): (r[1].text(), r[3].text()) for r in rows}
    for role in ("dev", "eval"):
        path = run.files[role]
        assert found[role] == (str(path), hashlib.sha256(Path(path).read_bytes()).hexdigest())
    settings = provenance_settings(root)
    assert settings["--calibrator"] == "logistic" and settings["--prior"] == "uniform"
    assert settings["--znorm-ddof"] == "1"
    assert settings["intervals"] == "--bootstrap: level 0.95, bca, 120 resamples of speakers, seed 4"
    headers, (row,) = table_rows(root, "settings-table")
    assert row[headers.index("z-norm ddof")].text() == "1"
    assert row[headers.index("eval trials")].text() == f"{run.record['n_enrolled_trials']:,}"


def test_evaluate_report_without_per_speaker_flag_still_has_the_per_speaker_section(tmp_path, capsys):
    """The page's per-speaker numbers are the per-trial CSV's LIDs grouped by speaker (pandas, here).

    Two eval trials are relabelled to a speaker who is not enrolled: outsider trials, in no speaker's row.
    """
    from lidframe import ScoreSet
    from lidframe.cli import main

    dev, ev = simulate_system(leakage=0.4, seed=8, n_enrolled=7, trials_per_speaker=5)
    speakers = np.array(ev.trial_speakers, dtype=object)
    speakers[[0, 9]] = "stranger"
    ScoreSet(np.asarray(ev.scores), list(ev.enrolled), list(speakers), list(ev.trial_ids)).save(tmp_path / "eval.npz")
    dev.save(tmp_path / "dev.npz")
    argv = ["evaluate", "--dev", tmp_path / "dev.npz", "--eval", tmp_path / "eval.npz"]
    argv += ["--per-trial", tmp_path / "lid.csv", "--report", tmp_path / "new"]  # a new folder: made
    assert main([str(a) for a in argv]) == 0
    capsys.readouterr()
    root = parse((tmp_path / "new" / "report.html").read_text(encoding="utf-8"))
    headers, rows = table_rows(root, "per-speaker-1-1")
    trials = pd.read_csv(tmp_path / "lid.csv")
    closed = trials[~trials["outsider"].astype(bool)]
    assert len(closed) == len(trials) - 2
    by_hand = closed.groupby("trial_spk")["lid_bits"].agg(["mean", "max", "size"])
    assert sorted(r[0].text() for r in rows) == sorted(map(str, ev.enrolled))
    for row in rows:
        speaker = row[0].text()
        alid = sort_value(row[headers.index("ALID")].attrs["data-sort"])
        assert alid == pytest.approx(by_hand.loc[speaker, "mean"], abs=1e-10)
        lid_max = sort_value(row[headers.index("LIDmax")].attrs["data-sort"])
        assert lid_max == pytest.approx(by_hand.loc[speaker, "max"], abs=1e-10)
        assert int(row[headers.index("trials")].attrs["data-sort"]) == by_hand.loc[speaker, "size"]
    # 7 speakers: too few for --report's default speaker bootstrap, and the page says so
    why = (
        "the eval set has 7 speakers with trials, too few for a speaker bootstrap to mean much (--report computes "
        "one from 10; --bootstrap computes it anyway)"
    )
    assert provenance_settings(root)["intervals"] == f"none: {why}"
    assert root.find("p", **{"class": "ci-level"}).text() == f"no intervals: {why}"


# ------------------------------------------------------------------ lidframe report GRID_DIR
def test_grid_report_page_shows_the_numbers_of_the_store(cli_runs):
    run = cli_runs["grid"]
    assert last_line(run.stdout) == f"wrote the audit report to {run.page}"
    root = parse(run.page.read_text(encoding="utf-8"))
    headers, rows = table_rows(root, "comparison-table")
    cells = {(c["system"], c["calibrator"], c["prior"]): c["summary"] for c in run.record}
    assert len(rows) == len(cells) == 8
    for row in rows:
        key = (row[0].text(), row[headers.index("calibrator")].text(), row[headers.index("prior")].text())
        summary = cells[key]
        for title, metric in COLUMN_KEYS.items():
            assert sort_value(row[headers.index(title)].attrs["data-sort"]) == summary[metric], (key, title)
        alid = row[headers.index("ALID")]
        assert alid.text() == f"{shown('alid', summary['alid'])} {shown_interval('alid', summary['intervals']['alid'])}"
    # the figures of the page: CCDF and EER-vs-LID, one panel per calibrator x prior (4 here)
    captions = [f.text() for f in root.find_all("figcaption")]
    assert any(c.startswith("LID CCDF per system, one panel per calibrator × prior (4 combinations") for c in captions)
    report = run.files["out"] / "report"
    assert {"lid_ccdf.png", "eer_vs_lid.png", "summary.md", "report.html"} <= {p.name for p in report.iterdir()}


# ------------------------------------------------------------------ dp-audit --report
def test_dp_audit_report_shows_the_rows_of_the_json(cli_runs):
    run = cli_runs["dp-audit"]
    assert last_line(run.stdout) == f"wrote the audit report to {run.page}"
    rows_json = run.record["rows"]
    root = parse(run.page.read_text(encoding="utf-8"))
    headers, rows = table_rows(root, "dp-table")
    assert len(rows) == len(rows_json) == 2
    columns = {"mu": "mu", "sigma": "sigma", "EER bound": "eer_bound", "bayes EER": "bayes_eer"}
    columns |= {"cosine EER": "cosine_eer", "MI bound on ALID (bits)": "mi_bound_bits", "bayes ALID": "bayes_alid"}
    columns |= {"cosine ALID": "cosine_alid", "bayes LIDmax": "bayes_lid_max", "cosine LIDmax": "cosine_lid_max"}
    for row, want in zip(rows, rows_json):
        for title, key in columns.items():
            assert sort_value(row[headers.index(title)].attrs["data-sort"]) == want[key], title
        low, high = want["bayes_alid_low"], want["bayes_alid_high"]
        assert row[headers.index("bayes ALID")].text() == f"{want['bayes_alid']:.2f} [{low:.2f}, {high:.2f}]"
    for card in root.find_all("article"):
        attacker, mu = card.find("h3").text().split(" · mu ")
        want = next(r for r in rows_json if f"{r['mu']:g}" == mu)
        alid = next(d for d in card.find_all("div") if d.attrs.get("data-metric") == "ALID (bits)")
        assert sort_value(alid.attrs["data-sort"]) == want[f"{attacker}_alid"]
    settings = provenance_settings(root)
    assert settings["--mu"] == "0.5, 4" and settings["intervals"].startswith("level 0.95, bca, 100 resamples")


# ------------------------------------------------------------------ refusals: before any work, nothing written
@pytest.fixture()
def scores(tmp_path):
    dev, ev = simulate_system(leakage=0.5, seed=2, n_enrolled=6, trials_per_speaker=4)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    return tmp_path


def bad_report_targets(folder: Path) -> dict[str, tuple[list, list[str]]]:
    """case -> (extra flags, fragments of the error line); each made in *folder*."""
    (folder / "notes.txt").write_text("mine")
    (folder / "taken").mkdir()
    (folder / "taken" / "report.html").mkdir()
    (folder / "out").mkdir()
    return {
        "parent missing": (["--report", folder / "no" / "such"], ["--report", "no/such", "does not exist"]),
        "a file, not a folder": (["--report", folder / "notes.txt"], ["--report", "notes.txt", "not a folder"]),
        "report.html is a folder": (["--report", folder / "taken"], ["--report", "report.html", "is a folder"]),
        "the same file as --json": (
            ["--report", folder / "out", "--json", folder / "out" / "report.html"],
            ["--json", "report.html", "same file"],
        ),
        "its folder is the --json file": (
            ["--report", folder / "new.json", "--json", folder / "new.json"],
            ["--json", "new.json", "the folder of --report"],
        ),
    }


BAD_TARGETS = [
    "parent missing",
    "a file, not a folder",
    "report.html is a folder",
    "the same file as --json",
    "its folder is the --json file",
]


@pytest.mark.parametrize("case", BAD_TARGETS)
def test_evaluate_refuses_a_bad_report_target_before_reading_anything(scores, capsys, case):
    extra, expect = bad_report_targets(scores)[case]
    # the eval file does not exist: a check made after reading would name it instead
    argv = ["evaluate", "--dev", scores / "dev.npz", "--eval", scores / "missing.npz", *extra]
    assert_refused(argv, capsys, expect=expect, watch=[scores])
    assert not (scores / "no").exists()


@pytest.mark.parametrize("case", BAD_TARGETS)
def test_dp_audit_refuses_a_bad_report_target_before_computing(tmp_path, capsys, monkeypatch, case):
    import lidframe.privacy.audit as audit

    def must_not_run(*args, **kwargs):
        raise AssertionError("dp_audit ran before the outputs were checked")

    monkeypatch.setattr(audit, "dp_audit", must_not_run)
    extra, expect = bad_report_targets(tmp_path)[case]
    assert_refused(["dp-audit", "--mu", "1", *extra], capsys, expect=expect, watch=[tmp_path])
    assert not (tmp_path / "no").exists()


def test_dp_audit_checks_json_and_plot_like_the_other_commands(tmp_path, capsys, monkeypatch):
    import lidframe.privacy.audit as audit

    monkeypatch.setattr(audit, "dp_audit", lambda *a, **k: pytest.fail("computed before checking the outputs"))
    same = tmp_path / "out.png"
    assert_refused(
        ["dp-audit", "--mu", "1", "--json", same, "--plot", same],
        capsys,
        expect=["--plot", "out.png", "same file as --json"],
        watch=[tmp_path],
    )
    assert_refused(
        ["dp-audit", "--mu", "1", "--plot", tmp_path / "none" / "dp.png"],
        capsys,
        expect=["--plot", "does not exist"],
        watch=[tmp_path],
    )


def test_a_missing_renderer_is_refused_before_any_work(scores, capsys, monkeypatch):
    """Without jinja2 the page cannot be rendered: said first, with the extra to install, nothing written."""
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "jinja2" else real(name, *a))
    argv = ["evaluate", "--dev", scores / "dev.npz", "--eval", scores / "missing.npz", "--report", scores / "r"]
    assert_refused(argv, capsys, expect=["jinja2", "pip install 'lidframe[report]'"], watch=[scores])
    assert not (scores / "r").exists()


def test_a_failed_render_writes_none_of_the_outputs(scores, capsys, monkeypatch):
    """--json and --report are written together or not at all; the new report folder is not left behind."""
    from lidframe.errors import InputError
    from lidframe.report import render

    def broken(report):
        raise InputError("the page could not be rendered (test)")

    monkeypatch.setattr(render, "render_html", broken)
    argv = ["evaluate", "--dev", scores / "dev.npz", "--eval", scores / "eval.npz"]
    argv += ["--json", scores / "s.json", "--per-speaker", scores / "sp.csv", "--report", scores / "r"]
    assert_refused(argv, capsys, expect=["could not be rendered"], watch=[scores])
    assert not (scores / "r").exists() and not (scores / "s.json").exists()


def test_an_old_report_is_replaced_and_other_files_in_the_folder_kept(scores, capsys):
    from lidframe.cli import main

    folder = scores / "audit"
    folder.mkdir()
    (folder / "report.html").write_text("an old page")
    (folder / "notes.txt").write_text("mine")
    argv = ["evaluate", "--dev", scores / "dev.npz", "--eval", scores / "eval.npz", "--report", folder]
    assert main([str(a) for a in argv]) == 0
    capsys.readouterr()
    assert (folder / "report.html").read_text(encoding="utf-8").startswith("<!doctype html>")
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt", "report.html"]  # no temporary left


def test_grid_report_refuses_a_missing_renderer_with_the_report_folder_untouched(cli_runs, capsys, monkeypatch):
    out = cli_runs["grid"].files["out"]
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert_refused(["report", out], capsys, expect=["matplotlib", "lidframe[report]"], watch=[out])


def test_json_of_the_evaluate_run_is_what_the_page_was_built_from(cli_runs):
    """The page and the JSON come from one Result: the page's per-trial count and ceiling agree with it too."""
    run = cli_runs["evaluate"]
    root = parse(run.page.read_text(encoding="utf-8"))
    reading = root.find("p", **{"class": "reading"}).text()
    assert f"of {run.record['n_enrolled_trials']})" in reading
    assert reading.endswith(f"a possible {math.log2(run.record['n_enrolled']):.2f}.")
    assert json.loads(json.dumps(run.record))["lidframe_version"] in root.find("header").text()


def write_data_dir(folder: Path, utts: list[tuple[str, str]]) -> Path:
    folder.mkdir()
    (folder / "wav.scp").write_text("".join(f"{u} {u}.wav\n" for u, _ in utts))
    (folder / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utts))
    return folder


def test_dp_audit_report_on_embeddings_digests_every_file_it_read(tmp_path, capsys):
    """A .npy of embeddings with its .ids, and four data dirs: each file the audit read is in the page with its digest."""
    from lidframe.cli import main

    rng = np.random.default_rng(3)
    ids, vectors, dirs = [], [], {}
    for split in ("dev", "eval"):
        centroids = rng.normal(size=(5, 8))
        enrol = [(f"{split}-e{j}", f"{split}-spk{j}") for j in range(5)]
        trials = [(f"{split}-t{j}-{k}", f"{split}-spk{j}") for j in range(5) for k in range(4)]
        dirs[split] = (
            write_data_dir(tmp_path / f"{split}_enrol", enrol),
            write_data_dir(tmp_path / f"{split}_trials", trials),
        )
        ids += [u for u, _ in enrol + trials]
        vectors += [centroids[j] for j in range(5)] + [
            centroids[j] + 0.2 * rng.normal(size=8) for j in range(5) for _ in range(4)
        ]
    np.save(tmp_path / "emb.npy", np.array(vectors))
    (tmp_path / "emb.ids").write_text("\n".join(ids) + "\n")
    argv = ["dp-audit", "--mu", "1", "--n-boot", "100", "--embeddings", tmp_path / "emb.npy"]
    argv += ["--dev-enrol", dirs["dev"][0], "--dev-trials", dirs["dev"][1], "--enrol", dirs["eval"][0]]
    argv += ["--trials", dirs["eval"][1], "--report", tmp_path / "audit"]
    assert main([str(a) for a in argv]) == 0
    assert last_line(capsys.readouterr().out) == f"wrote the audit report to {tmp_path / 'audit' / 'report.html'}"
    root = parse((tmp_path / "audit" / "report.html").read_text(encoding="utf-8"))
    _, rows = table_rows(root, "inputs-table")
    digests = {Path(r[1].text()): r[3].text() for r in rows}
    read = [tmp_path / "emb.npy", tmp_path / "emb.ids"]
    read += [d / name for pair in dirs.values() for d in pair for name in ("wav.scp", "utt2spk")]
    assert sorted(digests) == sorted(read)
    for path in read:
        assert digests[path] == hashlib.sha256(path.read_bytes()).hexdigest(), path
    assert provenance_settings(root)["embeddings"] == str(tmp_path / "emb.npy")


# ------------------------------------------------------------------ intervals by default, and LIDmax's biased low
def card_items(card) -> dict:
    return {d.attrs["data-metric"]: d for d in card.find_all("div") if "data-metric" in d.attrs}


def test_evaluate_report_has_speaker_bootstrap_intervals_by_default(tmp_path, capsys):
    """No --bootstrap: --report bootstraps speakers with the flags' settings, as lidframe.evaluate does when asked."""
    import lidframe
    from lidframe.cli import main

    dev, ev = simulate_system(leakage=0.5, seed=6, n_enrolled=12, trials_per_speaker=5)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    argv = ["evaluate", "--dev", tmp_path / "dev.npz", "--eval", tmp_path / "eval.npz", "--n-boot", "200"]
    argv += ["--seed", "3", "--json", tmp_path / "s.json", "--report", tmp_path / "audit"]
    assert main([str(a) for a in argv]) == 0
    out = capsys.readouterr().out
    record = json.loads((tmp_path / "s.json").read_text())
    by_hand = lidframe.evaluate(
        tmp_path / "dev.npz", tmp_path / "eval.npz", bootstrap=lidframe.Bootstrap(n_boot=200, seed=3)
    ).summary
    assert record["bootstrap"] == {
        "n_boot": 200,
        "level": 0.95,
        "unit": "speaker",
        "method": "bca",
        "seed": 3,
        "resample": "dev+eval",
    }
    assert record["intervals"] == by_hand["intervals"]
    assert "(intervals computed for --report by default; --no-bootstrap skips them)" in out
    assert "95% bootstrap intervals (bca, 200 resamples of speakers, seed 3" in out
    root = parse((tmp_path / "audit" / "report.html").read_text(encoding="utf-8"))
    (card,) = root.find_all("article")
    alid = card_items(card)["ALID (bits)"].find("dd").text()
    assert alid == f"{shown('alid', record['alid'])} {shown_interval('alid', record['intervals']['alid'])}"
    assert card.find("p", **{"class": "ci-level"}).text() == CI_LEVEL
    assert (
        provenance_settings(root)["intervals"]
        == "--report's default: level 0.95, bca, 200 resamples of speakers, seed 3"
    )

    # --no-bootstrap: none, said so; without --report nothing changes (no intervals unless asked)
    argv = ["evaluate", "--dev", tmp_path / "dev.npz", "--eval", tmp_path / "eval.npz", "--no-bootstrap"]
    assert main([str(a) for a in [*argv, "--json", tmp_path / "n.json", "--report", tmp_path / "none"]]) == 0
    assert "intervals" not in json.loads((tmp_path / "n.json").read_text())
    root = parse((tmp_path / "none" / "report.html").read_text(encoding="utf-8"))
    assert root.find("p", **{"class": "ci-level"}).text() == "no intervals: --no-bootstrap given"
    assert main([str(a) for a in [*argv[:-1], "--json", tmp_path / "plain.json"]]) == 0
    assert "intervals" not in json.loads((tmp_path / "plain.json").read_text())
    capsys.readouterr()


def test_evaluate_report_says_when_the_set_is_too_small_for_intervals(tmp_path, capsys):
    from lidframe.cli import main

    dev, ev = simulate_system(leakage=0.5, seed=6, n_enrolled=9, trials_per_speaker=5)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    argv = ["evaluate", "--dev", tmp_path / "dev.npz", "--eval", tmp_path / "eval.npz", "--json", tmp_path / "s.json"]
    assert main([str(a) for a in [*argv, "--report", tmp_path / "audit"]]) == 0
    out = capsys.readouterr().out
    speakers = len(set(map(str, ev.trial_speakers)) & set(map(str, ev.enrolled)))
    assert speakers == 9
    why = f"the eval set has {speakers} speakers with trials, too few for a speaker bootstrap to mean much"
    assert f"\nno intervals: {why}" in out
    assert "intervals" not in json.loads((tmp_path / "s.json").read_text())
    root = parse((tmp_path / "audit" / "report.html").read_text(encoding="utf-8"))
    assert root.find("p", **{"class": "ci-level"}).text().startswith(f"no intervals: {why}")
    # --bootstrap computes them anyway
    assert main([str(a) for a in [*argv, "--bootstrap", "--n-boot", "100", "--report", tmp_path / "forced"]]) == 0
    capsys.readouterr()
    assert "intervals" in json.loads((tmp_path / "s.json").read_text())


def test_lidmax_intervals_are_marked_biased_low_wherever_they_show(cli_runs):
    run = cli_runs["evaluate"]
    root = parse(run.page.read_text(encoding="utf-8"))
    note = root.find("p", id="lidmax-note").text()
    assert "biased low" in note and "LID q99" in note
    (card,) = root.find_all("article")
    items = card_items(card)
    assert items["LIDmax (bits)"].find_all("span", **{"class": "biased"})
    assert not any(items[t].find_all("span", **{"class": "biased"}) for t in items if t != "LIDmax (bits)")
    headers, (row,) = table_rows(root, "comparison-table")
    marked = [headers[k] for k, cell in enumerate(row) if cell.find_all("span", **{"class": "biased"})]
    assert marked == ["LIDmax"]
    headers, rows = table_rows(root, "per-speaker-1-1")
    for cells in rows:
        flagged = [headers[k] for k, cell in enumerate(cells) if cell.find_all("span", **{"class": "biased"})]
        assert flagged in ([], ["LIDmax"])
    assert any(r[headers.index("LIDmax")].find_all("span", **{"class": "biased"}) for r in rows)


def test_without_intervals_there_is_no_biased_low_note():
    import lidframe
    from lidframe.report import render_html, report_from_results

    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=6, trials_per_speaker=4)
    root = parse(render_html(report_from_results({"a": lidframe.evaluate(dev, ev)})))
    assert not root.find_all("p", id="lidmax-note") and not root.find_all("span", **{"class": "biased"})


@pytest.mark.slow
def test_simulated_demo_headlines_carry_speaker_bootstrap_intervals(tmp_path):
    from lidframe.demo import DEMO_SYSTEMS, run_demo

    run_demo(tmp_path / "demo", log=lambda _: None)
    summary = json.loads((tmp_path / "demo" / "summary.json").read_text())
    root = parse((tmp_path / "demo" / "report.html").read_text(encoding="utf-8"))
    cards = {c.find("h3").text(): c for c in root.find_all("article")}
    assert list(cards) == list(DEMO_SYSTEMS)
    for name, card in cards.items():
        record = summary["systems"][name]
        assert record["bootstrap"]["unit"] == "speaker" and record["bootstrap"]["n_boot"] == 1000
        alid = card_items(card)["ALID (bits)"].find("dd").text()
        assert alid == f"{shown('alid', record['alid'])} {shown_interval('alid', record['intervals']['alid'])}", name
        assert card.find("p", **{"class": "ci-level"}).text() == CI_LEVEL
