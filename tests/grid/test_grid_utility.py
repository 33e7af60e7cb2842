"""A grid's systems may name their utility (issue 29): ``[systems.NAME] utility = "U.json"``.

The file (the JSON of ``lidframe utility --json``) is checked when the spec is read, is no
input of any cell, and is read again by every ``lidframe report``: its WER and rho_F0 (with
their intervals) are the tidy table's last columns, the same on every row of the system,
and the page lists the file with its SHA-256.  The expected numbers are those of the
records the tests write, by hand, not what the code computed.
"""

import hashlib
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lidframe.cli import main
from lidframe.data.simulate import simulate_system
from lidframe.grid.report import UTILITY_COLUMNS, load_results, tidy_table, write_report
from lidframe.grid.report.columns import LEGAL_COLUMNS
from lidframe.grid.runner import run_grid
from lidframe.grid.spec import load_grid_spec
from lidframe.stats.bootstrap import Interval
from lidframe.utility import Utility, UtteranceUtility, read_utility

SPEC = """
[grid]
calibrators = ["logistic"]
priors = ["uniform"]
seeds = [0, 1]
{bootstrap}
[systems.weak]
dev = "weak_dev.npz"
eval = "weak_eval.npz"
{weak_utility}
[systems.strong]
dev = "strong_dev.npz"
eval = "strong_eval.npz"
"""

BOOTSTRAP = '[grid.bootstrap]\nn_boot = 100\nlevel = 0.9\nmethod = "percentile"\n'

#: The tidy table's columns of this spec (with [grid.bootstrap]) before utility existed: copied from
#: the tidy table that the code of commit d811e06, before grids took utility, made of it.
COLUMNS_BEFORE_UTILITY = [
    "system", "attacker", "mechanism", "calibrator", "prior", "seed", "n_enrolled_trials", "n_enrolled",
    "n_outsider_trials", "log2_n", "alid", "pdr", "ndr", "lid_pos", "lid_neg", "lid_max", "lid_min", "lid_q50",
    "lid_q90", "lid_q99", "cllr_mc", "rank1_rate", "rank_disclosure_bits", "eer", "eer_threshold", "cllr",
    "min_cllr", "min_dcf", "act_dcf", "dece_bits", "max_abs_llr_log10", "zebra_tag", "dsys", "dsys_method",
    "binary_metrics", "binary_method", "binary_bins", "binary_error_bounds", "calibrator_describe",
    "prior_describe", "znorm_ddof", "n_dev_enrolled_trials", "n_dev_enrolled", "n_dev_outsider_trials",
    "lidframe_version", "alid_low", "alid_high", "pdr_low", "pdr_high", "lid_pos_low",
    "lid_pos_high", "lid_neg_low", "lid_neg_high", "lid_q99_low", "lid_q99_high", "lid_max_low",
    "lid_max_high", "eer_low", "eer_high", "cllr_low", "cllr_high",
    *LEGAL_COLUMNS,  # the law's criteria (issue 40), in every cell of a grid by default
]  # fmt: skip


def utility_record(*, substitutions, deletions, insertions, words, rho=None, intervals=None) -> Utility:
    """A Utility written by hand: its WER is (substitutions + deletions + insertions) / words."""
    rows = [
        UtteranceUtility(
            utt_id="u1",
            reference="the cat sat",
            hypothesis="the cat sat",
            substitutions=substitutions,
            deletions=deletions,
            insertions=insertions,
            reference_words=words,
            rho_f0=rho,
        )
    ]
    return Utility(
        wer=(substitutions + deletions + insertions) / words,
        substitutions=substitutions,
        deletions=deletions,
        insertions=insertions,
        reference_words=words,
        rho_f0=rho,
        rho_f0_utterances=0 if rho is None else 1,
        utterances=1,
        recogniser="stand-in",
        resampled=0,
        normalisation="nfkc, case folded",
        data="/data/weak",
        reference=None if rho is None else "/data/plain",
        speakers=1,
        bootstrap=None if intervals is None else {"n_boot": 200, "level": 0.95, "unit": "speaker", "method": "bca"},
        intervals=intervals,
        rows=rows,
    )


#: WER 5/20 = 0.25, rho_F0 0.8, with intervals.
FIRST = utility_record(
    substitutions=3,
    deletions=1,
    insertions=1,
    words=20,
    rho=0.8,
    intervals={
        "wer": Interval(0.25, 0.15, 0.40, 0.95, "bca"),
        "rho_f0": Interval(0.8, 0.7, 0.9, 0.95, "bca"),
    },
)
#: WER 12/16 = 0.75, no reference (no rho_F0), no intervals.
SECOND = utility_record(substitutions=8, deletions=2, insertions=2, words=16)


def write_utility(path: Path, record: Utility) -> Path:
    path.write_text(json.dumps(record.to_dict()))
    return path


def make_grid(folder: Path, *, utility: str | None = "utility/weak.json", bootstrap: str = BOOTSTRAP) -> Path:
    """Two simulated systems; *utility* (relative to the spec) is given to weak, written with FIRST."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, leakage in (("weak", 0.5), ("strong", 0.2)):
        dev, ev = simulate_system(seed=len(name), leakage=leakage, n_enrolled=8, trials_per_speaker=6)
        dev.save(folder / f"{name}_dev.npz")
        ev.save(folder / f"{name}_eval.npz")
    line = ""
    if utility is not None:
        (folder / utility).parent.mkdir(parents=True, exist_ok=True)
        write_utility(folder / utility, FIRST)
        line = f'utility = "{utility}"\n'
    spec = folder / "grid.toml"
    spec.write_text(SPEC.format(bootstrap=bootstrap, weak_utility=line))
    return spec


def store_state(out: Path) -> dict[str, tuple[int, str]]:
    """mtime and SHA-256 of the store and every per-trial file: what a report must not touch."""
    files = [out / "results.sqlite", *sorted((out / "cells").iterdir())]
    return {f.name: (f.stat().st_mtime_ns, hashlib.sha256(f.read_bytes()).hexdigest()) for f in files}


# ------------------------------------------------------------------ the spec


def test_the_spec_reads_the_key_relative_to_the_toml(tmp_path, monkeypatch):
    make_grid(tmp_path / "spec")
    monkeypatch.chdir(tmp_path)  # not the spec's folder: the path is relative to the TOML
    systems = {s.name: s for s in load_grid_spec(Path("spec") / "grid.toml").systems}
    assert systems["weak"].utility == str((tmp_path / "spec" / "utility" / "weak.json").resolve())
    assert systems["strong"].utility is None


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "[systems.weak.utility] 'utility/weak.json': no such utility file"),
        ("not json", "[systems.weak.utility] 'utility/weak.json': "),
        ("no wer", "no key 'wer'"),
        ("not a path", "[systems.weak.utility] must be the path of a utility file"),
        ("a folder", "[systems.weak.utility] 'utility/weak.json': "),
        ("unknown key", "[systems.weak] needs exactly the keys dev and eval"),
    ],
)
def test_a_bad_utility_is_one_line_exit_2_and_nothing_written(tmp_path, capsys, case, message):
    spec = make_grid(tmp_path / "spec")
    file = tmp_path / "spec" / "utility" / "weak.json"
    if case == "missing":
        file.unlink()
    elif case == "not json":
        file.write_text("{not json")
    elif case == "no wer":
        record = json.loads(file.read_text())
        del record["wer"]
        file.write_text(json.dumps(record))
    elif case == "not a path":
        spec.write_text(spec.read_text().replace('utility = "utility/weak.json"', "utility = 3"))
    elif case == "a folder":
        file.unlink()
        file.mkdir()
    elif case == "unknown key":  # a misspelt key is refused as any unknown key is
        spec.write_text(spec.read_text().replace("utility =", "utilty ="))
    out = tmp_path / "out"
    code = main(["grid", str(spec), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith("lidframe: error: ") and str(spec) in err and message in err, err
    if case not in ("not a path", "unknown key"):
        assert str(file) in err  # the file itself, by its full path
    assert not out.exists()


def test_a_grid_without_utility_keeps_its_columns(tmp_path):
    spec = make_grid(tmp_path / "spec", utility=None)
    out = tmp_path / "out"
    run_grid(spec, out)
    write_report(out, figures=False)
    frame = pd.read_csv(out / "report" / "table.csv")
    assert list(frame.columns) == COLUMNS_BEFORE_UTILITY
    assert "WER" not in (out / "report" / "summary.md").read_text()
    assert "utility" not in json.loads((out / "grid.json").read_text())  # grid.json as before too


# ------------------------------------------------------------------ the table


def expected_columns(record: Utility | None) -> dict[str, float]:
    """The six utility columns of a system, from the record written by hand (NaN where it has none)."""
    if record is None:
        return dict.fromkeys(UTILITY_COLUMNS, math.nan)
    intervals = record.intervals or {}
    wer, rho = intervals.get("wer"), intervals.get("rho_f0")
    return {
        "wer": record.wer,
        "wer_low": wer.low if wer else math.nan,
        "wer_high": wer.high if wer else math.nan,
        "rho_f0": math.nan if record.rho_f0 is None else record.rho_f0,
        "rho_f0_low": rho.low if rho else math.nan,
        "rho_f0_high": rho.high if rho else math.nan,
    }


def assert_utility_columns(frame: pd.DataFrame, per_system: dict[str, Utility | None]) -> None:
    assert list(frame.columns[-len(UTILITY_COLUMNS) :]) == list(UTILITY_COLUMNS)
    for system, record in per_system.items():
        rows = frame[frame["system"] == system]
        assert len(rows) == 2  # one per seed: the same values on every row of the system
        for column, value in expected_columns(record).items():
            np.testing.assert_allclose(rows[column].to_numpy(dtype=float), value, rtol=0, atol=1e-12)


def test_the_tidy_table_carries_each_systems_utility(tmp_path):
    spec = make_grid(tmp_path / "spec")
    out = tmp_path / "out"
    run_grid(spec, out)
    assert FIRST.wer == 0.25 and SECOND.wer == 0.75  # 5/20 and 12/16, as written
    results = load_results(out)
    frame = tidy_table(results, utility={"weak": read_utility(tmp_path / "spec" / "utility" / "weak.json")})
    assert list(frame.columns[: -len(UTILITY_COLUMNS)]) == COLUMNS_BEFORE_UTILITY
    assert_utility_columns(frame, {"weak": FIRST, "strong": None})
    # a system without a reference or intervals: its WER, and NaN for the rest
    both = tidy_table(results, utility={"weak": FIRST, "strong": SECOND})
    assert_utility_columns(both, {"weak": FIRST, "strong": SECOND})
    assert list(tidy_table(results).columns) == COLUMNS_BEFORE_UTILITY  # none given: none added

    write_report(out, figures=False)
    assert_utility_columns(pd.read_csv(out / "report" / "table.csv"), {"weak": FIRST, "strong": None})
    summary = (out / "report" / "summary.md").read_text()
    assert "| system | N | EER | ALID | PDR | LID+ | LID- | LIDmax | WER | ρ_F0 |" in summary
    weak_row = next(line for line in summary.splitlines() if line.startswith("| weak |"))
    strong_row = next(line for line in summary.splitlines() if line.startswith("| strong |"))
    assert weak_row.endswith("| 0.25 [0.15, 0.40] | 0.80 [0.70, 0.90] |"), weak_row
    assert strong_row.endswith("| - | - |"), strong_row
    digest = hashlib.sha256((tmp_path / "spec" / "utility" / "weak.json").read_bytes()).hexdigest()
    assert digest[:12] in summary and "95% bootstrap intervals in brackets (bca, 200 resamples" in summary
    tex = (out / "report" / "table.tex").read_text()
    assert r"& LIDmax & WER & $\rho_{F0}$ \\" in tex and "0.25 [0.15, 0.40] & 0.80 [0.70, 0.90]" in tex
    assert "<th>wer</th>" in (out / "report" / "summary.html").read_text()


# ------------------------------------------------------------------ read fresh by every report


def test_a_changed_utility_changes_the_report_and_no_cell(tmp_path, capsys):
    spec = make_grid(tmp_path / "spec")
    out = tmp_path / "out"
    file = tmp_path / "spec" / "utility" / "weak.json"
    assert main(["grid", str(spec), "--out", str(out)]) == 0
    before = store_state(out)
    assert main(["report", str(out), "--no-figures"]) == 0
    assert_utility_columns(pd.read_csv(out / "report" / "table.csv"), {"weak": FIRST, "strong": None})

    write_utility(file, SECOND)  # the same path, new numbers
    capsys.readouterr()
    assert main(["report", str(out), "--no-figures"]) == 0
    printed = capsys.readouterr()
    assert "STALE" not in printed.out + printed.err  # no cell is stale for it
    assert_utility_columns(pd.read_csv(out / "report" / "table.csv"), {"weak": SECOND, "strong": None})
    assert store_state(out) == before  # the report computed and wrote no cell

    run = run_grid(spec, out)  # nor does the grid recompute one
    assert (run.cells, run.skipped, run.ok, run.recomputed) == (4, 4, 0, 0)
    assert store_state(out) == before


def test_a_utility_gone_or_broken_at_report_time_is_one_line(tmp_path, capsys):
    spec = make_grid(tmp_path / "spec")
    out = tmp_path / "out"
    file = tmp_path / "spec" / "utility" / "weak.json"
    run_grid(spec, out)
    assert main(["report", str(out), "--no-figures"]) == 0
    report = {p.name: p.read_bytes() for p in (out / "report").iterdir()}
    for damage in ("broken", "gone"):
        if damage == "broken":
            file.write_text('{"wer": "many"}')
        else:
            file.unlink()
        capsys.readouterr()
        assert main(["report", str(out), "--no-figures"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert str(spec.resolve()) in err and "[systems.weak.utility]" in err and str(file.resolve()) in err, err
        assert {p.name: p.read_bytes() for p in (out / "report").iterdir()} == report  # nothing rewritten


def test_without_its_spec_the_report_reads_the_utility_the_grid_recorded(tmp_path, capsys):
    spec = make_grid(tmp_path / "spec")
    out = tmp_path / "out"
    file = tmp_path / "spec" / "utility" / "weak.json"
    run_grid(spec, out)
    assert json.loads((out / "grid.json").read_text())["utility"] == {"weak": str(file.resolve())}
    os.replace(spec, tmp_path / "moved.toml")  # the spec is gone: the cells are "not checked"
    write_utility(file, SECOND)
    assert main(["report", str(out), "--no-figures"]) == 0
    assert_utility_columns(pd.read_csv(out / "report" / "table.csv"), {"weak": SECOND, "strong": None})
    file.unlink()
    capsys.readouterr()
    assert main(["report", str(out), "--no-figures"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(out / "grid.json") in err and "system 'weak'" in err, err
    assert str(file.resolve()) in err


@pytest.mark.slow
def test_the_page_gets_the_utility_and_lists_its_file(tmp_path, monkeypatch):
    """report.html: the builder is given each system's Utility, and the provenance lists the file with its digest.

    What the page draws of it (the privacy-utility chart) is lidframe.report's, tested in
    tests/report; here a wrapper records what the grid report passes to the builder and
    what the builder made of it.
    """
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    import lidframe.report

    spec = make_grid(tmp_path / "spec")
    out = tmp_path / "out"
    run_grid(spec, out)
    file = tmp_path / "spec" / "utility" / "weak.json"
    write_utility(file, SECOND)  # after the grid ran: the page shows the file as it is now
    passed = {}
    real = lidframe.report.report_from_grid

    def recording(*args, **kwargs):
        passed.update(kwargs)
        passed["report"] = real(*args, **kwargs)
        return passed["report"]

    monkeypatch.setattr(lidframe.report, "report_from_grid", recording)
    write_report(out)
    assert set(passed["utility"]) == {"weak"}  # keyed by the spec's system name; strong has none
    assert passed["utility"]["weak"].to_dict() == SECOND.to_dict()
    assert str(file.resolve()) in passed["utility_note"]
    made = passed["report"].utility
    assert [(u.system, u.utility.wer, len(u.labels)) for u in made] == [("weak", 0.75, 2)]  # one row per seed
    page = (out / "report" / "report.html").read_text()
    assert "utility of weak" in page and hashlib.sha256(file.read_bytes()).hexdigest() in page
