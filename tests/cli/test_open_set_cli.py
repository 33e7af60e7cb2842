"""``lidframe evaluate`` in the open set: every number printed and written, checked by hand.

The printed open-set section and the ``--json`` summary are compared with
``lidframe.evaluate`` run here, and both with hand computations from the ``--per-trial``
CSV (the ALID of a group is the mean of its rows' ``lid_bits``, the misattribution rate
the share of outsider rows whose ``top_posterior`` exceeds the threshold).  The closed-set
output does not change with the new flag.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import lidframe
from lidframe import ScoreSet
from lidframe.cli import main
from lidframe.core.summary import OPEN_SET_INTERVALS
from lidframe.data.simulate import simulate_system
from tests.cli.test_cli import run

OPEN = "uniform?outside=0.2"


def with_outsiders(data: ScoreSet, n_dropped: int) -> ScoreSet:
    """*data* with its last *n_dropped* enrolled speakers removed: their trials become outsider trials."""
    return ScoreSet(data.scores[:, :-n_dropped], data.enrolled[:-n_dropped], data.trial_speakers, data.trial_ids)


@pytest.fixture(scope="module")
def sets(tmp_path_factory):
    folder = tmp_path_factory.mktemp("open-set-cli")
    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=10, trials_per_speaker=6)
    dev, ev = with_outsiders(dev, 3), with_outsiders(ev, 3)
    dev.save(folder / "dev.npz")
    ev.save(folder / "eval.npz")
    return folder, dev, ev


def base(folder):
    return ["evaluate", "--dev", folder / "dev.npz", "--eval", folder / "eval.npz"]


def group_numbers(lid: np.ndarray) -> dict[str, float]:
    """ALID, PDR, LID+, LID-, LIDmax of *lid* by hand (NaN for an empty side)."""
    positive, rest = lid[lid > 0], lid[lid <= 0]
    return {
        "n_trials": lid.size,
        "alid": float(np.mean(lid)),
        "pdr": positive.size / lid.size,
        "lid_pos": float(np.mean(positive)) if positive.size else math.nan,
        "lid_neg": float(np.mean(rest)) if rest.size else math.nan,
        "lid_max": float(np.max(lid)),
    }


def printed_rows(out: str, first: str, n_rows: int) -> dict[str, list[str]]:
    """The rows of the printed text table whose header starts with *first*: title -> cells."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    rows = {}
    for line in lines[start + 1 : start + 1 + n_rows]:
        cells = line.split()
        numbers = [i for i, c in enumerate(cells) if c[0].isdigit() or c[0] == "-"]
        rows[" ".join(cells[: numbers[0]])] = cells[numbers[0] :]
    return rows


def fmt(value) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def test_open_set_prints_and_writes_every_number(sets, capsys):
    folder, dev, ev = sets
    argv = [*base(folder), "--prior", OPEN, "--json", folder / "s.json", "--per-trial", folder / "p.csv"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    summary = json.loads((folder / "s.json").read_text())
    want = lidframe.evaluate(dev, ev, prior=OPEN).to_dict()
    assert summary["open_set"] == want["open_set"]  # the JSON is evaluate's, number for number
    for key in ("alid", "pdr", "lid_pos", "lid_neg", "lid_max", "n_enrolled_trials", "n_outsider_trials"):
        assert summary[key] == want[key]
    o = summary["open_set"]
    assert (o["outside"], o["outside_source"], o["misattribution_threshold"]) == (0.2, "given", 0.9)

    # by hand from the per-trial CSV: every trial has a LID
    table = pd.read_csv(folder / "p.csv")
    assert list(table.columns) == [
        "trial_id", "trial_spk", "outsider", "lid_bits", "posterior_true", "membership_bits", "top_posterior",
        "p_link_2",
    ]  # fmt: skip
    assert len(table) == ev.n_trials and np.isfinite(table["lid_bits"]).all()
    outsider = table["outsider"].to_numpy() == 1
    assert outsider.sum() == ev.n_outsider_trials == 18
    assert set(table["trial_spk"][outsider]) == set(ev.trial_speakers) - set(ev.enrolled)
    lid = table["lid_bits"].to_numpy()
    groups = {
        "all trials": (summary, lid),
        "enrolled": (o["enrolled"], lid[~outsider]),
        "outsider": (o["outsider"], lid[outsider]),
        "membership of enrolled": (o["membership_enrolled"], table["membership_bits"].to_numpy()[~outsider]),
    }
    for name, (stored, values) in groups.items():
        for key, hand in group_numbers(values).items():
            if key == "n_trials":
                assert stored.get(key, len(values)) == hand, name
            else:
                assert stored[key] == pytest.approx(hand, abs=1e-9), (name, key)
    # an outsider's membership disclosure is its LID
    np.testing.assert_allclose(table["membership_bits"][outsider], lid[outsider], atol=1e-12)
    top = table["top_posterior"].to_numpy()[outsider]
    assert o["misattribution_rate"] == pytest.approx(np.mean(top > 0.5), abs=1e-12)
    assert o["misattribution_rate_at_threshold"] == pytest.approx(np.mean(top > 0.9), abs=1e-12)

    # printed: the section, each group's numbers and the rates, as the JSON holds them
    assert "18 outsider trials each with its membership disclosure" in out
    assert "outside = pi_0 = 0.2 (given)" in out
    rows = printed_rows(out, "trials  ", 4)
    assert list(rows) == list(groups)
    for name, (stored, values) in groups.items():
        n = len(values)
        assert rows[name] == [str(n)] + [fmt(stored[k]) for k in ("alid", "pdr", "lid_pos", "lid_neg", "lid_max")]
    assert (
        f"misattribution rate: {fmt(o['misattribution_rate'])} of the 18 outsider trials have a top enrolled "
        "posterior above 0.5"
    ) in out
    assert f"{fmt(o['misattribution_rate_at_threshold'])} above 0.9" in out
    # the ceilings under the uniform prior: log2(N / (1 - 0.2)) for an enrolled trial, -log2 0.2 for an outsider
    assert f"= {math.log2(7 / 0.8):.3f} bit (enrolled trial), -log2 pi_0 = {-math.log2(0.2):.3f} bit" in out


def test_the_threshold_flag_sets_the_second_rate(sets, capsys):
    folder, dev, ev = sets
    argv = [*base(folder), "--prior", OPEN, "--misattribution-threshold", "0.6"]
    code, out, err = run([*argv, "--json", folder / "t.json", "--per-trial", folder / "t.csv"], capsys)
    assert code == 0, err
    o = json.loads((folder / "t.json").read_text())["open_set"]
    table = pd.read_csv(folder / "t.csv")
    top = table["top_posterior"][table["outsider"] == 1].to_numpy()
    assert o["misattribution_threshold"] == 0.6
    assert o["misattribution_rate_at_threshold"] == pytest.approx(np.mean(top > 0.6), abs=1e-12)
    want = lidframe.evaluate(dev, ev, prior=OPEN, misattribution_threshold=0.6).summary.open_set
    assert o["misattribution_rate_at_threshold"] == want.misattribution_rate_at_threshold
    assert f"{fmt(o['misattribution_rate_at_threshold'])} above 0.6" in out


def test_outside_auto_is_the_dev_share_of_outsider_trials(sets, capsys):
    folder, dev, ev = sets
    code, out, err = run([*base(folder), "--prior", "uniform?outside=auto", "--json", folder / "a.json"], capsys)
    assert code == 0, err
    o = json.loads((folder / "a.json").read_text())["open_set"]
    assert o["outside"] == 18 / 60 and o["outside_source"] == "auto"
    assert "outside = pi_0 = 0.3 (auto from dev: the dev set's share of outsider trials" in out
    assert "its 18 outsider trials calibrated as non-mated pairs" in out


@pytest.mark.parametrize("value", ["1.0", "0.4", "-0.9", "1.5", "nan", "inf", "x", ""])
def test_a_bad_threshold_is_one_line_exit_2_and_writes_nothing(sets, capsys, value):
    folder, _, _ = sets
    out_json = folder / "bad.json"
    argv = [*base(folder), "--prior", OPEN, "--json", out_json, f"--misattribution-threshold={value}"]
    code, out, err = run(argv, capsys)
    assert code == 2 and out == ""
    assert err.startswith("lidframe: error: argument --misattribution-threshold:") and err.count("\n") == 1, err
    assert "[0.5, 1)" in err and not out_json.exists()


def test_help_names_outside_and_the_threshold(capsys):
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "outside=P (e.g. uniform?outside=0.2)" in text and "outside=auto" in text
    assert "--misattribution-threshold P" in text and "(default 0.9;" in text


def test_closed_set_output_does_not_change_with_the_threshold_flag(sets, capsys):
    folder, _, ev = sets
    code, plain, _ = run([*base(folder), "--per-trial", folder / "c1.csv"], capsys)
    assert code == 0
    code, flagged, _ = run(
        [*base(folder), "--misattribution-threshold", "0.7", "--per-trial", folder / "c2.csv"], capsys
    )
    assert code == 0 and flagged.replace("c2.csv", "c1.csv") == plain
    assert (folder / "c1.csv").read_bytes() == (folder / "c2.csv").read_bytes()
    assert "18 outsider trials excluded" in plain and "open set" not in plain and "pi_0" not in plain
    table = pd.read_csv(folder / "c1.csv")
    assert list(table.columns) == ["trial_id", "trial_spk", "outsider", "lid_bits", "posterior_true", "p_link_2"]
    assert table["lid_bits"][table["outsider"] == 1].isna().all()
    assert table["p_link_2"][table["outsider"] == 1].isna().all()  # an outsider has no speaker to link to


def test_bootstrap_intervals_of_the_open_set_are_printed_and_written(sets, capsys):
    folder, dev, ev = sets
    argv = [*base(folder), "--prior", OPEN, "--bootstrap", "--n-boot", "100", "--json", folder / "b.json"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    summary = json.loads((folder / "b.json").read_text())
    want = lidframe.evaluate(dev, ev, prior=OPEN, bootstrap=lidframe.Bootstrap(n_boot=100)).to_dict()
    assert summary["intervals"] == want["intervals"]
    assert set(OPEN_SET_INTERVALS) <= set(summary["intervals"])
    o = summary["open_set"]
    estimates = {
        "ALID enrolled": o["enrolled"]["alid"],
        "ALID outsider": o["outsider"]["alid"],
        "membership enrolled": o["membership_enrolled"]["alid"],
        "misattributed >0.5": o["misattribution_rate"],
        "misattributed >threshold": o["misattribution_rate_at_threshold"],
    }
    keys = dict(zip(estimates, OPEN_SET_INTERVALS, strict=True))
    rows = printed_rows(out, "metric  ", len(summary["intervals"]))
    for name, estimate in estimates.items():
        low, high = summary["intervals"][keys[name]]
        assert rows[name] == [fmt(estimate), fmt(low), fmt(high)], name


def test_per_speaker_csv_has_the_outsider_speakers(sets, capsys):
    folder, dev, ev = sets
    argv = [*base(folder), "--prior", OPEN, "--per-trial", folder / "t.csv", "--per-speaker", folder / "s.csv"]
    code, _, err = run(argv, capsys)
    assert code == 0, err
    trials = pd.read_csv(folder / "t.csv")
    speakers = pd.read_csv(folder / "s.csv")
    assert list(speakers.columns)[-3:] == ["outsider", "membership_bits", "misattribution_rate"]
    assert len(speakers) == ev.n_enrolled + 3
    for row in speakers.to_dict("records"):
        own = trials[trials["trial_spk"] == row["speaker"]]
        assert row["outsider"] == bool(own["outsider"].iloc[0])
        assert row["n_trials"] == len(own)
        assert row["alid"] == pytest.approx(own["lid_bits"].mean(), abs=1e-9)
        assert row["membership_bits"] == pytest.approx(own["membership_bits"].mean(), abs=1e-9)
        if row["outsider"]:
            assert row["misattribution_rate"] == pytest.approx((own["top_posterior"] > 0.5).mean())
    assert list(speakers["outsider"]) == [False] * ev.n_enrolled + [True] * 3  # the enrolled speakers first


@pytest.mark.slow
def test_compare_reads_open_set_tables_with_their_outsider_trials_and_refuses_a_mix(sets, capsys):
    folder, _, ev = sets
    for name, options in {"open_log": ["--prior", OPEN], "open_iso": ["--prior", OPEN, "--calibrator", "isotonic"],
                          "closed": []}.items():  # fmt: skip
        code, _, err = run([*base(folder), *options, "--per-trial", folder / f"{name}.csv"], capsys)
        assert code == 0, err
    from lidframe.cli.compare import read_per_trial

    ids, speakers, lid = read_per_trial(folder / "open_log.csv")
    assert ids.size == ev.n_trials and np.isfinite(lid).all()
    assert read_per_trial(folder / "closed.csv")[0].size == ev.n_trials - ev.n_outsider_trials
    tables = [folder / "open_log.csv", folder / "open_iso.csv"]
    code, out, err = run(["compare", *tables, "--n-boot", "200", "--permutations", "200"], capsys)
    assert code == 0, err
    assert f"paired comparison on {ev.n_trials} trials" in out
    code, out, err = run(["compare", folder / "open_log.csv", folder / "closed.csv"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "open_log.csv (open_log) is an open-set table" in err and "closed.csv (closed) is not" in err


@pytest.mark.parametrize("command", ["nsweep", "longitudinal"])
def test_closed_set_analyses_refuse_a_prior_naming_why(sets, capsys, command):
    folder, _, _ = sets
    argv = [command, "--dev", folder / "dev.npz", "--eval", folder / "eval.npz", "--prior", OPEN]
    code, out, err = run(argv, capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"lidframe: error: lidframe {command} takes no --prior ('{OPEN}')")
    assert "closed-set analysis" in err and "use lidframe evaluate" in err


def test_an_open_prior_on_a_set_without_outsiders(tmp_path, capsys):
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=6, trials_per_speaker=4)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    argv = [*base(tmp_path), "--prior", "uniform?outside=0.1", "--json", tmp_path / "s.json"]
    code, out, err = run(argv, capsys)
    assert code == 0, err
    o = json.loads((tmp_path / "s.json").read_text())["open_set"]
    assert o["outsider"] is None and o["misattribution_rate"] is None
    assert "misattribution rate: none (the eval set has no outsider trial)" in out
    rows = printed_rows(out, "trials  ", 3)
    assert list(rows) == ["all trials", "enrolled", "membership of enrolled"]
    assert rows["all trials"] == rows["enrolled"]  # every trial is enrolled
