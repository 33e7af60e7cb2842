"""Outputs that cannot be written: folders, missing parents, read-only folders, full disks.

Output targets are checked before any work (a folder given as a file, a missing or
read-only folder, two outputs or an output and an input that are the same file); a write
that fails anyway (ENOSPC, EROFS) is reported against the target's name, never the
temporary file's, and leaves no file behind -- not even the outputs written before it.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.bad_input.conftest import _snapshot, assert_refused

REPO = Path(__file__).resolve().parents[2]


def evaluate_argv(data: Path, *outputs: object) -> list[object]:
    return ["evaluate", "--dev", data / "dev.npz", "--eval", data / "eval.npz", *outputs]


# ---------------------------------------------------------------- checked before any work
TARGETS = {
    "json_is_a_folder": (lambda d, o: ["--json", o], ["--json", "is a folder; expected a file name"]),
    "json_with_trailing_slash": (lambda d, o: ["--json", f"{o / 'new'}/"], ["--json", "is a folder"]),
    "per_trial_is_a_folder": (lambda d, o: ["--per-trial", d], ["--per-trial", "is a folder"]),
    "json_parent_missing": (
        lambda d, o: ["--json", o / "no" / "s.json"],
        ["--json", "s.json", "folder", "does not exist"],
    ),
    "per_trial_parent_missing": (lambda d, o: ["--per-trial", o / "x" / "p.csv"], ["--per-trial", "does not exist"]),
    "json_parent_is_a_file": (
        lambda d, o: ["--json", d / "dev.npz" / "s.json"],
        ["--json", "dev.npz is not a folder"],
    ),
    "json_and_per_trial_the_same_file": (
        lambda d, o: ["--json", o / "r.out", "--per-trial", o / "r.out"],
        ["--per-trial", "r.out", "the same file as --json"],
    ),
    "per_trial_overwrites_eval": (
        lambda d, o: ["--per-trial", d / "eval.npz"],
        ["--per-trial", "eval.npz", "is an input of this run"],
    ),
    "json_overwrites_dev_by_another_name": (
        lambda d, o: ["--json", d / ".." / "data" / "dev.npz"],
        ["--json", "dev.npz", "is an input"],
    ),
}


@pytest.mark.parametrize("name", list(TARGETS))
def test_unwritable_target_is_refused_before_any_work(name, folders, capsys, monkeypatch):
    data, out = folders
    outputs, expect = TARGETS[name]

    def no_work(*args, **kwargs):
        raise AssertionError("the target is checked before the sets are read")

    monkeypatch.setattr("lidframe.data.embedset.load_set", no_work)
    assert_refused(evaluate_argv(data, *outputs(data, out)), capsys, expect=expect, watch=[data, out])


OTHER_COMMANDS = {
    "sensitivity_json_folder": (
        lambda d, o: ["sensitivity", "--dev", d / "dev.npz", "--eval", d / "eval.npz", "--json", o],
        ["--json", "is a folder"],
    ),
    "nsweep_plot_parent_missing": (
        lambda d, o: ["nsweep", "--dev", d / "dev.npz", "--eval", d / "eval.npz", "--plot", o / "p" / "n.png"],
        ["--plot", "does not exist"],
    ),
    "longitudinal_json_parent_is_a_file": (
        lambda d, o: ["longitudinal", "--dev", d / "dev.npz", "--eval", d / "eval.npz", "--json", d / "eval.npz" / "x"],
        ["--json", "is not a folder"],
    ),
    "longitudinal_json_and_plot_the_same": (
        lambda d, o: (
            ["longitudinal", "--dev", d / "dev.npz", "--eval", d / "eval.npz"]
            + ["--json", o / "l.png", "--plot", o / "l.png"]
        ),
        ["--plot", "the same file as --json"],
    ),
    "compare_json_folder": (
        lambda d, o: ["compare", d / "a.csv", d / "b.csv", "--json", f"{o}/"],
        ["--json", "is a folder"],
    ),
    "compare_json_overwrites_a_table": (
        lambda d, o: ["compare", d / "a.csv", d / "b.csv", "--json", d / "b.csv"],
        ["--json", "b.csv", "is an input"],
    ),
    "score_out_folder": (
        lambda d, o: ["score", "--attacker", "random", "--enrol", d, "--trials", d, "--out", f"{o}/s.npz/"],
        ["--out", "is a folder"],
    ),
    "score_out_parent_missing": (
        lambda d, o: ["score", "--attacker", "random", "--enrol", d, "--trials", d, "--out", o / "x" / "s.npz"],
        ["--out", "does not exist"],
    ),
    "anonymise_out_dir_is_a_file": (
        lambda d, o: ["anonymise", "--method", "resample", d, d / "dev.npz"],
        ["OUT_DIR", "dev.npz", "exists and is not a folder"],
    ),
    "anonymise_out_dir_parent_missing": (
        lambda d, o: ["anonymise", "--method", "resample", d, o / "a" / "b"],
        ["OUT_DIR", "does not exist"],
    ),
    "corpus_out_parent_missing": (
        lambda d, o: ["corpus", "synth", "--out", o / "a" / "b"],
        ["--out", "does not exist"],
    ),
    "dp_audit_json_folder": (lambda d, o: ["dp-audit", "--mu", "1", "--json", o], ["--json", "is a folder"]),
}


@pytest.mark.parametrize("name", list(OTHER_COMMANDS))
def test_other_commands_check_their_targets_first(name, folders, capsys):
    data, out = folders
    argv, expect = OTHER_COMMANDS[name]
    assert_refused(argv(data, out), capsys, expect=expect, watch=[data, out])


# ---------------------------------------------------------------- read-only folders
#: Root passes every permission check (CAP_DAC_OVERRIDE); with these capabilities dropped
#: (util-linux ``setpriv``) it is held to the mode bits like any user.
_WITHOUT_OVERRIDE = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all", "--"]


def _refused_read_only(argv: list[object], expect: list[str], watch: list[Path], capsys) -> None:
    """:func:`assert_refused`, in a child process without the override where this runs as root."""
    if os.geteuid() != 0:
        assert_refused(argv, capsys, expect=expect, watch=watch)
        return
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be made for this process")
    before = _snapshot(watch)
    proc = subprocess.run(
        [*_WITHOUT_OVERRIDE, sys.executable, "-m", "lidframe.cli", *map(str, argv)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and len(lines) == 1, proc.stderr
    assert lines[0].startswith("lidframe: error: ") and lines[0].count("lidframe:") == 1, lines[0]
    for fragment in expect:
        assert fragment.lower() in lines[0].lower(), (fragment, lines[0])
    assert _snapshot(watch) == before


@pytest.mark.slow  # as root: a child process (lidframe's import) without the override
def test_read_only_output_folder_is_refused_before_any_work(folders, capsys):
    data, out = folders
    out.chmod(0o555)
    try:
        argv = evaluate_argv(data, "--json", out / "s.json", "--per-trial", out / "p.csv")
        _refused_read_only(argv, ["--json", "s.json", "is not writable"], [data, out], capsys)
    finally:
        out.chmod(0o755)


@pytest.mark.slow
def test_read_only_existing_target_is_refused(folders, capsys):
    data, out = folders
    (out / "s.json").write_text("{}\n")
    (out / "s.json").chmod(0o444)
    argv = evaluate_argv(data, "--json", out / "s.json")
    _refused_read_only(argv, ["--json", "s.json", "read-only"], [data, out], capsys)


def test_read_only_file_system_at_write_time_names_the_target(folders, capsys, monkeypatch):
    """EROFS from creating the temporary file (the folder looked writable): the message names the target."""
    data, out = folders

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    line = assert_refused(
        evaluate_argv(data, "--json", out / "s.json"),
        capsys,
        expect=[str(out / "s.json"), "read-only file system"],
        watch=[data, out],
    )
    assert ".tmp" not in line


# ---------------------------------------------------------------- full disks
def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_disk_full_writing_json_names_the_target(folders, capsys, monkeypatch):
    data, out = folders
    monkeypatch.setattr(json, "dump", _disk_full)
    line = assert_refused(
        evaluate_argv(data, "--json", out / "s.json", "--per-trial", out / "p.csv"),
        capsys,
        expect=[str(out / "s.json"), "no space left on device"],
        watch=[data, out],
    )
    assert ".tmp" not in line and list(out.iterdir()) == []


def test_disk_full_on_the_second_output_leaves_neither(folders, capsys, monkeypatch):
    """--json is written first; the disk fills on --per-trial: the finished JSON is not left behind either."""
    data, out = folders
    monkeypatch.setattr(pd.DataFrame, "to_csv", _disk_full)
    assert_refused(
        evaluate_argv(data, "--json", out / "s.json", "--per-trial", out / "p.csv"),
        capsys,
        expect=[str(out / "p.csv"), "no space left on device"],
        watch=[data, out],
    )
    assert list(out.iterdir()) == []


def test_disk_full_on_flush_names_the_target(folders, capsys, monkeypatch):
    """ENOSPC often shows only when the buffered file is flushed at close."""
    data, out = folders
    real_dump = json.dump

    def dump_then_fail_on_close(record, handle, **kwargs):
        real_dump(record, handle, **kwargs)
        real_close = handle.close

        def close():
            real_close()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        handle.close = close

    monkeypatch.setattr(json, "dump", dump_then_fail_on_close)
    assert_refused(
        evaluate_argv(data, "--json", out / "s.json"),
        capsys,
        expect=[str(out / "s.json"), "no space left on device"],
        watch=[data, out],
    )


def test_disk_full_writing_scores_names_the_target(tmp_path, capsys, monkeypatch):
    data, out = tmp_path / "data", tmp_path / "out"
    for folder, utts in ((data / "enrol", ["e0", "e1"]), (data / "trials", ["t0", "t1", "t2"])):
        folder.mkdir(parents=True)
        (folder / "wav.scp").write_text("".join(f"{u} {u}.wav\n" for u in utts))
        (folder / "utt2spk").write_text("".join(f"{u} spk{i % 2}\n" for i, u in enumerate(utts)))
    out.mkdir()
    monkeypatch.setattr(np, "savez", _disk_full)
    argv = ["score", "--attacker", "random", "--enrol", data / "enrol", "--trials", data / "trials"]
    assert_refused(
        [*argv, "--out", out / "s.npz"],
        capsys,
        expect=[str(out / "s.npz"), "no space left on device"],
        watch=[data, out],
    )


def test_disk_full_writing_sensitivity_json_names_the_target(folders, capsys, monkeypatch):
    data, out = folders
    monkeypatch.setattr(json, "dump", _disk_full)
    argv = ["sensitivity", "--dev", data / "dev.npz", "--eval", data / "eval.npz", "--calibrators", "logistic"]
    assert_refused(
        [*argv, "--json", out / "s.json"],
        capsys,
        expect=[str(out / "s.json"), "no space left"],
        watch=[data, out],
    )
