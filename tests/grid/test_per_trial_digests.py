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


#: The columns of store layout 2, the layout before per-trial digests (and before scenarios).
LAYOUT_2_COLUMNS = (
    "cell_id, system, attacker, mechanism, calibrator, prior, seed, spec_digest, status, error, summary, per_trial, "
    "seconds, finished_at, inputs_digest, inputs"
)


def to_layout_2(path) -> None:
    """Rewrite a store as layout 2 wrote it: its table without per_trial_sha256 and scenario, user_version 2."""
    connection = sqlite3.connect(path)
    connection.execute("ALTER TABLE cells RENAME TO newer")
    connection.execute(
        "CREATE TABLE cells (cell_id TEXT PRIMARY KEY, system TEXT NOT NULL, attacker TEXT NOT NULL, "
        "mechanism TEXT NOT NULL, calibrator TEXT NOT NULL, prior TEXT NOT NULL, seed INTEGER NOT NULL, "
        "spec_digest TEXT, status TEXT, error TEXT, summary TEXT, per_trial TEXT, seconds REAL, finished_at REAL, "
        "inputs_digest TEXT, inputs TEXT, UNIQUE (system, attacker, mechanism, calibrator, prior, seed))"
    )
    connection.execute(f"INSERT INTO cells SELECT {LAYOUT_2_COLUMNS} FROM newer")
    connection.execute("DROP TABLE newer")
    connection.execute("PRAGMA user_version = 2")
    connection.commit()
    connection.close()


def test_each_cell_stores_the_sha256_of_its_per_trial_file(tmp_path, capsys):
    _, out = make_grid(tmp_path, capsys)
    rows = stored(out)
    assert len(rows) == 8
    for per_trial, digest in rows:
        assert digest == hashlib.sha256((out / per_trial).read_bytes()).hexdigest()


def test_a_store_without_per_trial_digests_is_reported_as_not_checked_and_its_cells_recomputed(tmp_path, capsys):
    spec, out = make_grid(tmp_path, capsys)
    to_layout_2(out / "results.sqlite")
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
