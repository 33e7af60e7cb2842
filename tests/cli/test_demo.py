"""The demos: their systems behave as their generative model says, and ``--out`` holds what docs/demo.md lists.

Both demos write ``summary.json``, ``table.txt``, ``per_trial.csv`` and ``report.html``
into ``--out`` and print the report's path last.  The per-trial LIDs are checked against
a dense float64 recomputation from the score files written beside them (row z-norm with
ddof 1, the logistic map fitted on dev as summary.json records it, softmax under the
uniform prior, log2(p_true * N)), and the page's numbers against summary.json.  The
simulated demo's open-set numbers (``summary.json``'s ``open_set`` and the table's last
two columns) are recomputed the same way over N + 1 hypotheses (docs/theory.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lidframe.data.fileio import json_clean
from lidframe.demo import DEMO_OPEN_SET_PRIOR, DEMO_OUTSIDERS, DEMO_SYSTEMS, run_demo
from tests.report.htmltree import parse
from tests.report.test_browser import browser, check_page  # noqa: F401 - browser is a fixture
from tests.report.test_cli_reports import COLUMN_KEYS, sort_value, table_rows


@pytest.mark.slow
def test_demo_is_deterministic_and_ordered():
    table, record = run_demo(seed=0)
    again, _ = run_demo(seed=0)
    assert table == again
    summaries = record["systems"]
    alid = {name: s["alid"] for name, s in summaries.items()}
    assert alid["plain"] > alid["anon-weak"] > alid["anon-strong"] > alid["random"]
    assert abs(alid["plain"] - math.log2(29)) < 0.01
    assert abs(alid["random"]) < 0.1
    # the point of the uneven system: EER near chance, yet some trials leak a bit or more
    uneven = summaries["uneven"]
    assert uneven["eer"] > 0.4 and uneven["lid_max"] > 1.0
    # every dev and eval set holds the outsider trials of DEMO_OUTSIDERS speakers, 20 each
    for s in summaries.values():
        assert s["n_outsider_trials"] == s["n_dev_outsider_trials"] == DEMO_OUTSIDERS * 20
        assert s.get("open_set") is None  # the table's first columns: the closed set
    # the open set: the plain attacker all but rules outsiders out (at most -log2 0.2 bits),
    # the random one learns exactly nothing about anyone
    assert record["open_set"]["prior"] == DEMO_OPEN_SET_PRIOR
    opened = {name: s["open_set"] for name, s in record["open_set"]["systems"].items()}
    assert list(opened) == list(DEMO_SYSTEMS)
    assert all(o["outside"] == 0.2 and o["outside_source"] == "given" for o in opened.values())
    assert math.log2(1 / 0.2) - 0.1 < opened["plain"]["outsider"]["alid"] <= math.log2(1 / 0.2)
    assert opened["plain"]["misattribution_rate"] < 0.05
    assert opened["random"]["outsider"]["alid"] == 0.0 and opened["random"]["enrolled"]["alid"] == 0.0
    assert opened["random"]["misattribution_rate"] == 0.0


def test_the_real_voice_demo_runs_where_engines_and_torch_are(monkeypatch):
    """With torch here and a (pretended) engine, nothing stops the real-voice demo; without an engine, that is why."""
    pytest.importorskip("torch", reason="the real-voice demo trains its attackers with torch")
    import lidframe.audio.corpus as corpus
    from lidframe.demo import voice_demo_unavailable

    monkeypatch.setattr(corpus, "available_voices", lambda: ["a voice"])
    assert voice_demo_unavailable() is None
    monkeypatch.setattr(corpus, "available_voices", lambda: [])
    assert voice_demo_unavailable() == f"no speech engine here ({corpus.INSTALL_HINT})"


# ---------------------------------------------------------------- what --out holds (both demos)
def dense_llr(scores_path: Path, fit: dict) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Trial ids, LLRs (T, N) and each trial's true column (-1: not enrolled) of an eval score file.

    Recomputed here in float64: row z-norm (ddof 1), then a logistic fit's slope and intercept.
    """
    from lidframe import ScoreSet

    ev = ScoreSet.load(scores_path)
    scores = np.asarray(ev.scores, dtype=np.float64)
    z = (scores - scores.mean(axis=1, keepdims=True)) / scores.std(axis=1, ddof=1, keepdims=True)
    column = {str(s): j for j, s in enumerate(ev.enrolled)}
    true = np.array([column.get(str(s), -1) for s in ev.trial_speakers])
    return [str(t) for t in ev.trial_ids], fit["slope_"] * z + fit["intercept_"], true


def dense_lid(scores_path: Path, fit: dict) -> tuple[list[str], np.ndarray]:
    """Trial ids and closed-set LID (bits; NaN for an outsider trial) of an eval score file, uniform prior."""
    ids, llr, true = dense_llr(scores_path, fit)
    llr = llr - llr.max(axis=1, keepdims=True)
    posterior = np.exp(llr) / np.exp(llr).sum(axis=1, keepdims=True)
    p_true = np.where(true >= 0, posterior[np.arange(len(true)), np.maximum(true, 0)], np.nan)
    return ids, np.log2(p_true * llr.shape[1])


def dense_open_set(scores_path: Path, fit: dict, outside: float) -> dict[str, np.ndarray]:
    """Every trial's open-set numbers of an eval score file: the posterior over N + 1 hypotheses, written out.

    Uniform prior given enrolment: p(j | s) = (1 - π_∅)/N e^{l_j} / Z, p(∅ | s) = π_∅ / Z.
    Returns the LID (bits; membership disclosure of an outsider trial), the enrolled
    trials' membership disclosure, the top enrolled posterior and the outsider flags.
    """
    from scipy.special import logsumexp

    _, llr, true = dense_llr(scores_path, fit)
    n_enrolled = llr.shape[1]
    log_pi = math.log((1 - outside) / n_enrolled)
    joint = np.concatenate([llr + log_pi, np.full((len(true), 1), math.log(outside))], axis=1)
    log_post = joint - logsumexp(joint, axis=1, keepdims=True)
    outsider = true < 0
    column = np.where(outsider, n_enrolled, true)
    log_prior_true = np.where(outsider, math.log(outside), log_pi)
    p_nobody = np.exp(log_post[:, n_enrolled])
    return {
        "lid": (log_post[np.arange(len(true)), column] - log_prior_true) / math.log(2),
        "membership": np.log2((1 - p_nobody) / (1 - outside)),
        "top": np.exp(log_post[:, :n_enrolled].max(axis=1)),
        "outsider": outsider,
    }


def check_demo_folder(out: Path, stdout: str, labels: list[str], eval_file) -> dict:
    """The checks every demo's --out passes; returns summary.json."""
    from lidframe import evaluate

    assert [line for line in stdout.splitlines() if line.strip()][
        -1
    ] == f"wrote the audit report to {out / 'report.html'}"
    table = (out / "table.txt").read_text(encoding="utf-8")
    assert table.endswith("\n") and table.rstrip("\n") in stdout  # the file holds the printed table
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert list(summary["systems"]) == labels and "seed" in summary
    trials = pd.read_csv(out / "per_trial.csv")
    assert list(trials.columns) == [
        "system", "trial_id", "trial_spk", "outsider", "lid_bits", "posterior_true", "p_link_2"
    ]  # fmt: skip
    assert list(dict.fromkeys(trials["system"])) == labels
    for label in labels:
        rows = trials[trials["system"] == label]
        record = summary["systems"][label]
        assert len(rows) == record["n_enrolled_trials"] + record["n_outsider_trials"]
        assert rows["lid_bits"].mean() == pytest.approx(record["alid"], abs=1e-10)
        dev, ev = eval_file(label, "dev"), eval_file(label, "eval")
        again = evaluate(dev, ev, calibrator=record["calibrator"])  # from the score files written beside them
        np.testing.assert_allclose(rows["lid_bits"], again.lid, rtol=0, atol=1e-10)
        if record["calibrator"] == "logistic":
            ids, lid = dense_lid(ev, record["calibrator_fit"]["fitted"])
            assert list(rows["trial_id"].astype(str)) == ids
            np.testing.assert_allclose(rows["lid_bits"], lid, rtol=0, atol=1e-9)
    # the page: a row per label with summary.json's numbers, a per-speaker section per label, the score files' digests
    root = parse((out / "report.html").read_text(encoding="utf-8"))
    headers, rows = table_rows(root, "comparison-table")
    assert len(rows) == len(labels)
    for row, label in zip(rows, labels):
        for title, key in COLUMN_KEYS.items():
            want = summary["systems"][label][key]
            assert sort_value(row[headers.index(title)].attrs["data-sort"]) == want, (label, title)
    per_speaker = [t for t in root.find_all("table") if t.attrs.get("id", "").startswith("per-speaker-")]
    assert len(per_speaker) == len(labels)
    for table in per_speaker:
        assert len(table.find("tbody").find_all("tr")) == summary["systems"][labels[0]]["n_enrolled"]
    _, inputs = table_rows(root, "inputs-table")
    digests = {r[1].text(): r[3].text() for r in inputs}
    for label in labels:
        for split in ("dev", "eval"):
            path = eval_file(label, split)
            assert digests[str(path)] == hashlib.sha256(path.read_bytes()).hexdigest()
    return summary


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    from lidframe.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    out = tmp_path_factory.mktemp("simulated") / "demo-out"
    code, stdout, stderr = run_cli(["demo", "--simulated", "--out", out])
    assert code == 0, stderr
    return out, stdout


@pytest.mark.slow
def test_simulated_demo_writes_summary_table_per_trial_csv_and_report(simulated):
    out, stdout = simulated
    summary = check_demo_folder(out, stdout, list(DEMO_SYSTEMS), lambda label, split: out / f"{label}_{split}.npz")
    table, record = run_demo(seed=0)
    assert (out / "table.txt").read_text(encoding="utf-8") == table + "\n"  # the table the docs embed, unchanged
    assert f"\n{table}\n" in stdout
    assert summary == json_clean(record)  # NaN written as null
    assert DEMO_OPEN_SET_PRIOR in stdout.splitlines()[0]  # the first line says what the last columns are


@pytest.mark.slow  # the simulated demo's run (the fixture) is most of it
def test_simulated_demo_open_set_numbers_are_the_dense_posterior_over_n_plus_one(simulated):
    """summary.json's open_set and the table's outALID / misattr, recomputed from the score files and the fit."""
    out, _ = simulated
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    header, *rows = (out / "table.txt").read_text(encoding="utf-8").splitlines()
    columns = header.split()
    table = {row.split()[0]: dict(zip(columns, row.split())) for row in rows}
    assert columns[-2:] == ["outALID", "misattr"]
    for name in DEMO_SYSTEMS:
        record = summary["open_set"]["systems"][name]
        view = record["open_set"]
        assert record["prior"] == "uniform(outside=0.2)" and view["outside"] == 0.2
        dense = dense_open_set(out / f"{name}_eval.npz", record["calibrator_fit"]["fitted"], 0.2)
        outsider, enrolled = dense["outsider"], ~dense["outsider"]
        assert view["outsider"]["n_trials"] == outsider.sum() == DEMO_OUTSIDERS * 20
        for got, want in (
            (record["alid"], dense["lid"].mean()),
            (view["enrolled"]["alid"], dense["lid"][enrolled].mean()),
            (view["outsider"]["alid"], dense["lid"][outsider].mean()),
            (view["outsider"]["lid_max"], dense["lid"][outsider].max()),
            (view["membership_enrolled"]["alid"], dense["membership"][enrolled].mean()),
        ):
            assert got == pytest.approx(want, abs=1e-9), name
        top = dense["top"][outsider]
        assert not np.any(np.abs(top - 0.5) < 1e-9) and not np.any(np.abs(top - 0.9) < 1e-9)  # no tie at a threshold
        assert view["misattribution_rate"] == np.mean(top > 0.5)
        assert view["misattribution_rate_at_threshold"] == np.mean(top > 0.9)
        # (a dense mean of -1e-17 formats as -0.000, the exact 0 of the random system as 0.000)
        assert table[name]["outALID"] == f"{dense['lid'][outsider].mean():.3f}".replace("-0.000", "0.000")
        assert table[name]["misattr"] == f"{np.mean(top > 0.5):.3f}"
        # the closed-set columns of the row are the closed-set summary's
        assert table[name]["ALID"] == f"{summary['systems'][name]['alid']:.3f}"
        assert table[name]["out"] == str(DEMO_OUTSIDERS * 20)


@pytest.mark.slow
@pytest.mark.browser
def test_simulated_demo_report_in_headless_chromium(browser, simulated, tmp_path):  # noqa: F811
    check_page(browser, simulated[0] / "report.html", "evaluate", tmp_path)


def test_demo_refuses_an_out_that_is_a_file_before_any_work(tmp_path):
    target = tmp_path / "taken"
    target.write_text("mine")
    code, stdout, stderr = run_cli(["demo", "--simulated", "--out", target])
    assert code == 2 and stdout == ""
    assert stderr.strip() == f"lidframe: error: --out {target}: exists and is not a folder"
    assert target.read_text() == "mine" and sorted(tmp_path.iterdir()) == [target]


@pytest.mark.slow
def test_a_failing_report_leaves_none_of_the_four_outputs(tmp_path, monkeypatch):
    """summary.json, table.txt, per_trial.csv and report.html are staged: all or none."""
    import lidframe.report

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(lidframe.report, "write_report", fail)
    with pytest.raises(OSError, match="No space left"):
        run_demo(tmp_path / "d", seed=0, log=lambda m: None)
    written = {p.name for p in (tmp_path / "d").iterdir()}
    assert not written & {"summary.json", "table.txt", "per_trial.csv", "report.html"}
    assert not [name for name in written if name.startswith(".")]  # no temporary file left behind


# ---------------------------------------------------------------- the real-voice demo (slow)
#: Ten espeak-ng voices and two flite ones (voices a word error rate holds for: the utility column is measured).
VOICES = [
    *(f"espeak-{a}-{v}" for a in ("en-us", "en-gb") for v in ("m1", "f2", "m3", "f4")),
    "espeak-en-029-m1",
    "espeak-en-029-f2",
    "flite-rms",
    "flite-slt",
]
needs_voices = pytest.mark.skipif(
    shutil.which("espeak-ng") is None or shutil.which("flite") is None,
    reason="espeak-ng or flite is not installed (apt-get install espeak-ng flite)",
)


@pytest.fixture(scope="module")
def voice_runs(tmp_path_factory):
    """``lidframe demo --out D --epochs 1`` (real voices: :data:`VOICES`), cold, then rerun in the same folder."""
    pytest.importorskip("torch")
    import lidframe.audio.corpus as corpus

    out = tmp_path_factory.mktemp("voice") / "demo-out"
    runs = []
    with pytest.MonkeyPatch.context() as patch:
        chosen = [v for v in corpus.available_voices() if v.speaker in VOICES]
        patch.setattr(corpus, "available_voices", lambda: chosen)
        for _ in range(2):
            code, stdout, stderr = run_cli(["demo", "--out", out, "--epochs", "1"])
            assert code == 0, stderr
            runs.append(stdout)
    return out, runs


@pytest.mark.slow
@needs_voices
def test_voice_demo_writes_the_simulated_demos_layout_and_a_rerun_says_what_it_reused(voice_runs):
    from lidframe.data.scenario import SCENARIOS
    from lidframe.demo.voice import (
        DEMO_OUTSIDERS,
        ECAPA_SYSTEMS,
        OPEN_SET_PRIOR,
        VOICE_DEMO_SYSTEMS,
        demo_rows,
        ge2e_unavailable,
    )

    out, runs = voice_runs
    n_utt = 12 * 8 + sum(DEMO_OUTSIDERS) * 5
    cold, rerun = (run.splitlines() for run in runs)
    ge2e = ge2e_unavailable() is None
    labels = [row.label for row in demo_rows(ge2e=ge2e)]
    summary = check_demo_folder(
        out, runs[1], labels, lambda label, split: out / "scores" / f"{label.replace('/', '_')}_{split}.npz"
    )
    # 12 voices of 8 sentences, and the outsiders' trials (5 each): speakers enrolled nowhere
    assert summary["epochs"] == 1 and summary["corpus"]["utterances"] == 12 * 8 + sum(DEMO_OUTSIDERS) * 5
    assert summary["open_set"]["prior"] == OPEN_SET_PRIOR and set(summary["open_set"]["systems"]) == set(labels)
    assert set(summary["sensitivity"]) == set(labels)
    assert (out / "lid_ccdf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # every row states its attacker, rung, sides and model; the rungs are the ladder's
    for label, row in summary["rows"].items():
        assert row["label"] == label and set(row) == {
            "label",
            "system",
            "attacker",
            "scenario",
            "enrolment",
            "trials",
            "model",
        }
        if row["scenario"] is not None:
            rung = SCENARIOS[row["scenario"]]
            assert (row["enrolment"], row["trials"]) == (rung.enrolment, rung.trials)
    if ge2e:
        anonymised = [name for name, params in VOICE_DEMO_SYSTEMS.items() if params]
        assert {label for label in labels if "/ge2e/" in label} == {
            f"{name}/ge2e/{rung}" for name in anonymised for rung in SCENARIOS
        }
        assert "ALID [95 % speaker-bootstrap interval] / LIDmax" in runs[1]
        _check_ladder_wiring(out)
    measured = _check_utility_column(out, runs)
    stages = [line for line in cold if line.startswith("[")]
    expected = [
        "[corpus]",
        "[systems]",
        *(["[utility]"] if measured else []),
        f"[attacker {ECAPA_SYSTEMS[0]}]",
        f"[scores {ECAPA_SYSTEMS[0]}/ecapa/semi-informed]",
    ]
    assert [s.split("]")[0] + "]" for s in stages][: len(expected)] == expected
    assert any(line.startswith(f"corpus: synthesized {n_utt} utterances") for line in cold)
    assert any(line.startswith(f"attacker {ECAPA_SYSTEMS[0]}: trained 1 epoch (") for line in cold)
    # the rerun trains nothing, synthesizes nothing, and says so
    assert not [line for line in rerun if line.startswith("corpus: synthesized") or ": trained 1 epoch" in line]
    assert not [line for line in rerun if line.startswith("attacker ") and ": reused" not in line]
    assert not [line for line in rerun if line.startswith("adapted the output layer")]
    assert any(line.startswith(f"corpus: reused {n_utt} utterances from {out / 'corpus'}") for line in rerun)
    for name in ECAPA_SYSTEMS:
        assert any(
            line.startswith(f"attacker {name}: reused checkpoint") and "(trained 1 epoch earlier;" in line
            for line in rerun
        )
        assert any(line.startswith(f"scores {name}/ecapa/semi-informed: reused every embedding") for line in rerun)
    for name, params in VOICE_DEMO_SYSTEMS.items():
        if params:
            assert f"system {name}: reused its 5 anonymised data dirs from {out / 'systems' / name}" in rerun
            if ge2e:
                assert any(line.startswith(f"attacker {name}/ge2e: reused checkpoint") for line in rerun)


def _check_utility_column(out: Path, runs: list[str]) -> bool:
    """The utility table printed (and in table.txt) holds the numbers of the records in ``utility/``; a rerun
    reuses them.  Returns whether the column was measured (the utility extra here, flite-rms an eval speaker)."""
    from lidframe.demo.voice import VOICE_DEMO_SYSTEMS, utility_unavailable
    from lidframe.utility import read_utility

    cold, rerun = runs
    eval_speakers = {line.split()[1] for line in (out / "corpus" / "eval_trials" / "utt2spk").read_text().splitlines()}
    unavailable = utility_unavailable()
    if unavailable is not None or "flite-rms" not in eval_speakers:
        why = unavailable or "none of the"
        assert any(line.startswith(f"the utility column is left out: {why}") for line in cold.splitlines())
        assert not (out / "utility").exists() or not list((out / "utility").glob("*.json"))
        return False
    import jiwer

    records = {name: read_utility(out / "utility" / f"{name}.json") for name in VOICE_DEMO_SYSTEMS}
    for name, record in records.items():
        assert record.utterances == len(record.rows) > 0 and record.speakers >= 1
        assert {row.utt_id.rsplit("-", 1)[0] for row in record.rows} <= {"flite-rms", "flite-slt"}
        # the counts are jiwer's on the normalised words the record keeps
        assert record.wer == pytest.approx(
            jiwer.wer([row.reference for row in record.rows], [row.hypothesis for row in record.rows]), abs=1e-12
        )
        assert (record.rho_f0 is None) == (name == "plain")
        assert f"utility {name}: reused {out / 'utility' / f'{name}.json'}" in rerun
    assert records["plain"].wer < 0.4  # pocketsphinx hears plain flite speech (measured: 9 % on flite-rms)
    assert any(line.startswith("[utility] WER of pocketsphinx") for line in cold.splitlines())
    table = (out / "table.txt").read_text(encoding="utf-8").splitlines()
    for stdout in (table, cold.splitlines(), rerun.splitlines()):
        start = next(k for k, line in enumerate(stdout) if line.startswith("Utility: WER of pocketsphinx"))
        assert "flite-rms" in stdout[start]
        assert stdout[start + 1].split() == ["system", "WER", "%", "rho_F0", "utterances", "speakers"]
        for line, (name, record) in zip(stdout[start + 2 :], records.items()):
            cells = re.split(r"\s{2,}", line.strip())
            intervals = record.intervals or {}
            wer = f"{100 * record.wer:.1f}"
            if "wer" in intervals:
                wer += f" [{100 * intervals['wer'].low:.1f}, {100 * intervals['wer'].high:.1f}]"
            rho = "-" if record.rho_f0 is None else f"{record.rho_f0:.3f}"
            if "rho_f0" in intervals:
                rho += f" [{intervals['rho_f0'].low:.3f}, {intervals['rho_f0'].high:.3f}]"
            assert cells == [name, wer, rho, str(record.utterances), str(record.speakers)]
    # summary.json holds the records of the systems that have rows (all of them with GE2E) and the table's sentence
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    with_rows = {row["system"] for row in summary["rows"].values()}
    assert set(summary["utility"]) == set(VOICE_DEMO_SYSTEMS) & with_rows
    for name, record in summary["utility"].items():
        assert record == json.loads((out / "utility" / f"{name}.json").read_text(encoding="utf-8"))
    assert summary["utility_note"] in table and summary["utility_note"].startswith("Utility: WER of pocketsphinx")
    return True


def _check_ladder_wiring(out: Path) -> None:
    """Each rung's eval score set is what its enrolment, trials and model give, scored here from the folders."""
    from lidframe.attackers.ge2e import Ge2e
    from lidframe.data.kaldi import read_data_dir
    from lidframe.data.scoreset import ScoreSet
    from lidframe.data.utterance import group_by_speaker

    def scored(attacker, enrol_dir: Path, trial_dir: Path) -> np.ndarray:
        # the demo's data dirs name their audio relative to themselves
        enrol = group_by_speaker(read_data_dir(enrol_dir / "eval_enrolls", wav_paths="data-dir"))
        return attacker.score(read_data_dir(trial_dir / "eval_trials", wav_paths="data-dir"), enrol).scores

    cache = out / "embedding-cache"
    pretrained = Ge2e(device="cpu", cache_dir=cache)
    system = out / "systems" / "mcadams"
    (adapted,) = (out / "attackers").glob("mcadams-ge2e-*.ckpt")
    expected = {
        "ignorant": scored(pretrained, out / "corpus", system),  # original enrolment, anonymised trials
        "lazy-informed": scored(pretrained, system, system),
        "semi-informed": scored(Ge2e(device="cpu", checkpoint=adapted, cache_dir=cache), system, system),
    }
    for rung, scores in expected.items():
        written = ScoreSet.load(out / "scores" / f"mcadams_ge2e_{rung}_eval.npz").scores
        np.testing.assert_allclose(written, scores, rtol=0, atol=1e-12, err_msg=rung)
    assert not np.allclose(expected["ignorant"], expected["lazy-informed"])
    assert not np.allclose(expected["lazy-informed"], expected["semi-informed"])


@pytest.mark.slow
@needs_voices
def test_voice_demo_summary_json_holds_each_rows_legal_criteria(voice_runs):
    """Each row's ``legal`` block is legal_criteria() of that row's score files, called here with the run's settings."""
    import lidframe
    from lidframe.analyses.legal_criteria import legal_criteria
    from lidframe.data.scoreset import ScoreSet
    from lidframe.demo.voice import CALIBRATOR

    out, _ = voice_runs
    summary = json.loads((out / "summary.json").read_text())
    boot = summary["bootstrap"]
    bootstrap = lidframe.Bootstrap(n_boot=boot["n_boot"], unit=boot["unit"], seed=summary["seed"])
    for label in ("random", next(label for label in summary["rows"] if label != "random")):
        dev, ev = (
            ScoreSet.load(out / "scores" / f"{label.replace('/', '_')}_{split}.npz") for split in ("dev", "eval")
        )
        result = lidframe.evaluate(dev, ev, calibrator=CALIBRATOR, bootstrap=bootstrap)
        want = legal_criteria(result, ev, bootstrap=bootstrap, seed=summary["seed"])
        assert summary["systems"][label]["legal"] == json.loads(json.dumps(want.to_dict())), label
    assert all("legal" in row for row in summary["systems"].values())
    section = parse((out / "report.html").read_text(encoding="utf-8")).find("section", id="legal")
    assert "Not computed" not in section.text()


@pytest.mark.slow
@pytest.mark.browser
@needs_voices
def test_voice_demo_report_in_headless_chromium(browser, voice_runs, tmp_path):  # noqa: F811
    check_page(browser, voice_runs[0] / "report.html", "evaluate", tmp_path)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seed", "-1", "--simulated"], "--seed must be a non-negative integer, got -1"),
        (["--epochs", "0"], "--epochs must be a positive integer, got 0"),
    ],
)
def test_demo_flags_out_of_range_are_one_line_naming_the_flag(argv, message, tmp_path):
    # a negative seed crashed with numpy's traceback before (the seed reached default_rng)
    code, _, err = run_cli(["demo", "--out", tmp_path / "out", *argv])
    assert code == 2 and err.strip() == f"lidframe: error: {message}"
    assert not (tmp_path / "out").exists()
