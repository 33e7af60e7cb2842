"""Every stored cell carries the SHA-256 of its per-trial file; stores written before that still read.

The swapped-file refusals are in tests/bad_input/test_grid_state.py.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from lidframe.cli import main
from tests.grid.test_report_staleness import SPEC, save_system


def make_grid(folder: Path, capsys) -> tuple[Path, Path]:
    for seed, name in enumerate(("weak", "strong")):
        save_system(folder, name, seed)
    (folder / "grid.toml").write_text(SPEC)
    assert main(["grid", str(folder / "grid.toml"), "--out", str(folder / "out")]) == 0
    capsys.readouterr()
    return folder / "grid.toml", folder / "out"


def stored(out: Path) -> list[tuple]:
    connection = sqlite3.connect(out / "results.sqlite")
    try:
        columns = {row[1] for row in connection.execute("PRAGMA table_info(cells)")}
        digest = "per_trial_sha256" if "per_trial_sha256" in columns else "NULL"
        return connection.execute(f"SELECT per_trial, {digest} FROM cells").fetchall()
    finally:
        connection.close()


def test_each_cell_stores_the_sha256_of_its_per_trial_file(tmp_path, capsys):
    _, out = make_grid(tmp_path, capsys)
    rows = stored(out)
    assert len(rows) == 8
    for per_trial, digest in rows:
        assert digest == hashlib.sha256((out / per_trial).read_bytes()).hexdigest()


def test_a_store_without_per_trial_digests_is_reported_as_not_checked_and_its_cells_recomputed(tmp_path, capsys):
    spec, out = make_grid(tmp_path, capsys)
    connection = sqlite3.connect(out / "results.sqlite")
    connection.execute("ALTER TABLE cells DROP COLUMN per_trial_sha256")  # the layout before per-trial digests
    connection.execute("PRAGMA user_version = 2")
    connection.commit()
    connection.close()
    assert main(["report", str(out), "--no-figures"]) == 0
    captured = capsys.readouterr()
    warning = [line for line in captured.err.splitlines() if "per-trial" in line]
    assert len(warning) == 1 and warning[0].startswith("lidframe: warning: ")
    assert "were not checked against their cells" in warning[0] and "8 cells" in warning[0]
    assert "lidframe grid" in warning[0]
    assert "were not checked against their cells" in (out / "report" / "summary.md").read_text()
    assert main(["grid", str(spec), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "recomputing 8 cells: its per-trial file has no recorded digest" in said
    assert all(digest for _, digest in stored(out))
    assert main(["report", str(out), "--no-figures"]) == 0
    assert "per-trial" not in capsys.readouterr().err
