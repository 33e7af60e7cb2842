"""The lidframe command line: output files, and one-line errors with exit status 2."""

import json
import subprocess
import sys

import numpy as np
import pytest

from lidframe import ScoreSet
from lidframe.cli import main
from lidframe.data.simulate import simulate_system


@pytest.fixture()
def pair(tmp_path):
    dev, ev = simulate_system(leakage=0.5, seed=2, n_enrolled=8, trials_per_speaker=6)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    return tmp_path, dev, ev


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_evaluate_prints_table_and_writes_json_and_per_trial(pair, capsys):
    folder, dev, ev = pair
    code, out, err = run(
        [
            "evaluate",
            "--dev",
            folder / "dev.npz",
            "--eval",
            folder / "eval.npz",
            "--json",
            folder / "s.json",
            "--per-trial",
            folder / "p.csv",
        ],
        capsys,
    )
    assert code == 0, err
    assert "N = 8 enrolled" in out and "log2 N = 3.000 bit" in out
    assert "ALID" in out and "LIDmax" in out
    summary = json.loads((folder / "s.json").read_text())
    assert summary["n_enrolled"] == 8 and summary["n_enrolled_trials"] == 48
    import pandas as pd

    table = pd.read_csv(folder / "p.csv")
    assert list(table.columns) == ["trial_id", "trial_spk", "outsider", "lid_bits", "posterior_true", "p_link_2"]
    assert table["lid_bits"].mean() == pytest.approx(summary["alid"], abs=1e-9)
    # each trial's linkability among 2 candidates averages to the legal block's pi_link(2)
    (two,) = [p for p in summary["legal"]["linkability"]["points"] if p["n_prime"] == 2]
    assert table["p_link_2"].mean() == pytest.approx(two["pi_link"], abs=1e-9)


def test_evaluate_reads_long_csv_like_npz(pair, capsys):
    folder, dev, ev = pair
    dev.save(folder / "dev.csv")
    ev.save(folder / "eval.csv")
    run(["evaluate", "--dev", folder / "dev.csv", "--eval", folder / "eval.csv", "--json", folder / "a.json"], capsys)
    run(["evaluate", "--dev", folder / "dev.npz", "--eval", folder / "eval.npz", "--json", folder / "b.json"], capsys)
    a, b = (json.loads((folder / n).read_text()) for n in ("a.json", "b.json"))
    assert a["alid"] == b["alid"] and a["eer"] == b["eer"]


def test_watchlist_and_explicit_priors(pair, capsys):
    folder, dev, ev = pair
    (folder / "watch.txt").write_text(f"{ev.enrolled[0]}\n{ev.enrolled[3]}\n")
    code, out, _ = run(
        [
            "evaluate",
            "--dev",
            folder / "dev.npz",
            "--eval",
            folder / "eval.npz",
            "--prior",
            f"watchlist?file={folder / 'watch.txt'}&weight=4",
            "--json",
            folder / "w.json",
        ],
        capsys,
    )
    assert code == 0 and "watchlist(2 ids, weight=4)" in out
    lines = ["enroll_spk,prior"] + [f"{x},{1 / 8}" for x in ev.enrolled]
    (folder / "prior.csv").write_text("\n".join(lines) + "\n")
    code, out, _ = run(
        [
            "evaluate",
            "--dev",
            folder / "dev.npz",
            "--eval",
            folder / "eval.npz",
            "--prior",
            f"explicit?file={folder / 'prior.csv'}",
            "--json",
            folder / "e.json",
        ],
        capsys,
    )
    uniform_code, _, _ = run(
        ["evaluate", "--dev", folder / "dev.npz", "--eval", folder / "eval.npz", "--json", folder / "u.json"], capsys
    )
    assert code == 0 and uniform_code == 0
    e, u = (json.loads((folder / n).read_text()) for n in ("e.json", "u.json"))
    assert e["alid"] == pytest.approx(u["alid"], abs=1e-12)


def bad_npz(folder, name, scores, enrolled, speakers, ids=None):
    fields = {"scores": np.asarray(scores, float), "enrolled": np.array(enrolled), "trial_speakers": np.array(speakers)}
    if ids is not None:
        fields["trial_ids"] = np.array(ids)
    np.savez(folder / name, **fields)
    return folder / name


def error_cases(folder, dev, ev):
    s = np.array(ev.scores)
    nan = s.copy()
    nan[4, 2] = np.nan
    flat = s.copy()
    flat[5] = 1.0
    yield (
        bad_npz(folder, "nan.npz", nan, ev.enrolled, ev.trial_speakers, ev.trial_ids),
        (f"trial '{ev.trial_ids[4]}' (row 4) against enrolled '{ev.enrolled[2]}' (column 2) is nan"),
    )
    dup_enrolled = list(ev.enrolled)
    dup_enrolled[1] = dup_enrolled[0]
    yield (
        bad_npz(folder, "dup.npz", s, dup_enrolled, ev.trial_speakers),
        (f"enrolled speaker id '{ev.enrolled[0]}' appears more than once"),
    )
    yield bad_npz(folder, "one.npz", s[:, :1], ev.enrolled[:1], ev.trial_speakers), "got N = 1"
    yield (
        bad_npz(folder, "flat.npz", flat, ev.enrolled, ev.trial_speakers, ev.trial_ids),
        (f"z-norm is undefined for 1 trials whose scores are all equal: '{ev.trial_ids[5]}'"),
    )
    yield (
        bad_npz(folder, "shape.npz", s, ev.enrolled[:-1], ev.trial_speakers),
        "enrolled has shape (7,) but scores has 8 columns",
    )
    long = ev.to_frame()
    long.loc[len(long)] = long.iloc[0]
    long.to_csv(folder / "dup_pair.csv", index=False)
    yield folder / "dup_pair.csv", f"duplicate pair (enroll_spk '{ev.enrolled[0]}', trial_id '{ev.trial_ids[0]}')"
    ev.to_frame().iloc[1:].to_csv(folder / "missing_pair.csv", index=False)
    yield folder / "missing_pair.csv", f"missing pair (enroll_spk '{ev.enrolled[0]}', trial_id '{ev.trial_ids[0]}')"
    yield folder / "absent.npz", f"no such file: {folder / 'absent.npz'}"


def test_bad_eval_files_give_one_line_exit_2_and_no_output(pair, capsys):
    folder, dev, ev = pair
    for path, message in list(error_cases(folder, dev, ev)):
        json_out, csv_out = folder / "out.json", folder / "out.csv"
        code, out, err = run(
            ["evaluate", "--dev", folder / "dev.npz", "--eval", path, "--json", json_out, "--per-trial", csv_out],
            capsys,
        )
        assert code == 2, path
        assert err.startswith("lidframe: error: ") and err.count("\n") == 1, err
        assert message in err, (message, err)
        assert not json_out.exists() and not csv_out.exists()
        assert not [p for p in folder.iterdir() if p.name.startswith(".out")]


def test_bad_options(pair, capsys):
    folder, dev, ev = pair
    base = ["evaluate", "--dev", folder / "dev.npz", "--eval", folder / "eval.npz"]
    code, _, err = run(base + ["--prior", "gaussian"], capsys)
    assert code == 2 and "unknown prior 'gaussian'; available: " in err  # the built-ins, and any installed plugin
    assert all(f" {name}" in err.partition("available:")[2] for name in ("explicit", "uniform", "watchlist"))
    (folder / "w.txt").write_text("nobody\n")
    code, _, err = run(base + ["--prior", f"watchlist?file={folder / 'w.txt'}"], capsys)
    assert code == 2 and "watch-list ids not among the 8 enrolled speakers: 'nobody'" in err
    code, _, err = run(base + ["--calibrator", "nope"], capsys)
    assert code == 2 and "unknown calibrator 'nope'" in err
    code, _, err = run(base + ["--json", folder / "no" / "dir" / "x.json"], capsys)
    assert code == 2 and "does not exist" in err
    code, out, err = run(base + ["--znorm-ddof", "2"], capsys)
    assert code == 2 and out == ""
    assert err == (
        "lidframe: error: argument --znorm-ddof: invalid choice: 2 (choose from 0, 1) (see lidframe evaluate --help)\n"
    )


def test_help_and_version_still_exit_zero(capsys):
    for argv in (["--help"], ["evaluate", "--help"], ["--version"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 0
    assert "usage: lidframe" in capsys.readouterr().out


def test_warnings_print_one_prefix(pair, capsys, monkeypatch):
    """Library warnings start with 'lidframe:' for Python users; the CLI prints that prefix once, not twice."""
    from importlib.metadata import EntryPoint

    from lidframe import registry
    from lidframe.registry import discovery

    folder, dev, ev = pair
    bogus = EntryPoint(name="broken", value="no-colon-here", group="lidframe.calibrators")
    monkeypatch.setattr(discovery, "entry_points", lambda group: [bogus] if group == "lidframe.calibrators" else [])
    registry.refresh()
    try:
        code, _, err = run(["evaluate", "--dev", folder / "dev.npz", "--eval", folder / "eval.npz"], capsys)
    finally:
        monkeypatch.undo()
        registry.refresh()
    small_dev = "lidframe: warning: the dev set is too small to calibrate on"  # this pair's dev set (issue 41)
    lines = [line for line in err.splitlines() if not line.startswith(small_dev)]
    assert code == 0 and len(lines) == 1, err
    assert lines[0].startswith("lidframe: warning: ignoring entry point 'broken'") and lines[0].count("lidframe:") == 1
    # an explicit prior that does not sum to 1 warns (and goes on), prefixed once
    rows = ["enroll_spk,prior"] + [f"{x},{1 / 9}" for x in ev.enrolled]
    (folder / "prior.csv").write_text("\n".join(rows) + "\n")
    prior = f"explicit?file={folder / 'prior.csv'}"
    code, _, err = run(
        ["evaluate", "--dev", folder / "dev.npz", "--eval", folder / "eval.npz", "--prior", prior], capsys
    )
    assert code == 0 and err.startswith("lidframe: warning: explicit prior sums to")
    assert sum(not line.startswith(small_dev) for line in err.splitlines()) == 1
    assert all(line.count("lidframe:") == 1 for line in err.splitlines())


def test_zero_variance_rows_are_named_with_file_and_split(pair, capsys):
    folder, dev, ev = pair
    for role in ("dev", "eval"):
        data = dev if role == "dev" else ev
        flat = np.array(data.scores)
        flat[3] = 0.5
        bad = bad_npz(folder, f"flat-{role}.npz", flat, data.enrolled, data.trial_speakers, data.trial_ids)
        sets = {"dev": folder / "dev.npz", "eval": folder / "eval.npz", role: bad}
        code, _, err = run(["evaluate", "--dev", sets["dev"], "--eval", sets["eval"]], capsys)
        assert code == 2
        assert err == (
            f"lidframe: error: {bad} ({role}): z-norm is undefined for 1 trials whose scores are all equal: "
            f"'{data.trial_ids[3]}'\n"
        )


@pytest.mark.slow
def test_console_script_has_no_traceback(pair):
    folder, dev, ev = pair
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "lidframe.cli",
            "evaluate",
            "--dev",
            str(folder / "dev.npz"),
            "--eval",
            str(folder / "nope.csv"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"lidframe: error: no such file: {folder / 'nope.csv'}"
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_demo_command(tmp_path, capsys):
    code, out, _ = run(["demo", "--simulated", "--out", tmp_path / "d"], capsys)
    assert code == 0
    for name in ("plain", "anon-weak", "anon-strong", "uneven", "random"):
        assert name in out
        ScoreSet.load(tmp_path / "d" / f"{name}_eval.npz")
    summary = json.loads((tmp_path / "d" / "summary.json").read_text())
    assert set(summary["systems"]) == {"plain", "anon-weak", "anon-strong", "uneven", "random"}


@pytest.mark.slow
def test_evaluate_bootstrap_prints_intervals_and_compare_prints_adjusted_p_values(tmp_path, capsys):
    dev, ev = simulate_system(leakage=0.3, seed=6, n_enrolled=10, trials_per_speaker=8)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    base = ["evaluate", "--dev", str(tmp_path / "dev.npz"), "--eval", str(tmp_path / "eval.npz")]
    code = main(
        base
        + [
            "--bootstrap",
            "--n-boot",
            "300",
            "--bootstrap-level",
            "0.9",
            "--json",
            str(tmp_path / "s.json"),
            "--per-trial",
            str(tmp_path / "log.csv"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "90% bootstrap intervals (bca, 300 resamples of speakers, seed 0" in out
    summary = json.loads((tmp_path / "s.json").read_text())
    low, high = summary["intervals"]["alid"]
    assert low <= summary["alid"] <= high and summary["bootstrap"]["unit"] == "speaker"
    assert main(base + ["--calibrator", "isotonic", "--per-trial", str(tmp_path / "iso.csv")]) == 0
    capsys.readouterr()
    code = main(
        [
            "compare",
            str(tmp_path / "log.csv"),
            str(tmp_path / "iso.csv"),
            "--n-boot",
            "200",
            "--permutations",
            "500",
            "--json",
            str(tmp_path / "c.json"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "p_holm" in out and "log" in out and "iso" in out
    rows = json.loads((tmp_path / "c.json").read_text())["rows"]
    assert {r["metric"] for r in rows} == {"alid", "pdr", "lid_q99"}
    (tmp_path / "bad.csv").write_text("trial_id,lid_bits\nx,1\n")
    code = main(["compare", str(tmp_path / "log.csv"), str(tmp_path / "bad.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "bad.csv: missing column(s) trial_spk" in err


@pytest.mark.slow
def test_compare_reads_per_trial_tables_with_the_outsider_column_or_the_old_impostor_column(pair, capsys):
    folder, dev, ev = pair
    speakers = ["stranger", "stranger", *ev.trial_speakers[2:]]  # two outsider trials
    ScoreSet(ev.scores, ev.enrolled, speakers, ev.trial_ids).save(folder / "outsiders.npz")
    data = ["--dev", folder / "dev.npz", "--eval", folder / "outsiders.npz"]
    for name, options in {"log": [], "iso": ["--calibrator", "isotonic"]}.items():
        code, _, err = run(["evaluate", *data, *options, "--per-trial", folder / f"{name}.csv"], capsys)
        assert code == 0, err
        text = (folder / f"{name}.csv").read_text()
        assert text.startswith("trial_id,trial_spk,outsider,lid_bits,posterior_true,p_link_2\n")
        # the same table as lidframe wrote it before the rename: the flag column named "impostor"
        (folder / f"old_{name}.csv").write_text(text.replace(",outsider,", ",impostor,", 1))
    from lidframe.cli.compare import read_per_trial

    new, old = read_per_trial(folder / "log.csv"), read_per_trial(folder / "old_log.csv")
    assert new[0].size == ev.n_trials - 2 and "stranger" not in new[1].tolist()
    for got, want in zip(old, new):
        np.testing.assert_array_equal(got, want)
    results = {}
    for kind, prefix in (("new", ""), ("old", "old_")):
        tables = [folder / f"{prefix}log.csv", folder / f"{prefix}iso.csv"]
        argv = ["compare", *tables, "--names", "log,iso", "--n-boot", "200", "--permutations", "300"]
        code, out, err = run([*argv, "--json", folder / f"{kind}.json"], capsys)
        assert code == 0, err
        assert f"paired comparison on {ev.n_trials - 2} trials" in out
        results[kind] = json.loads((folder / f"{kind}.json").read_text())["rows"]
    assert results["old"] == results["new"]
