"""``lidframe voiceprivacy``: a VoicePrivacy exp/ folder in, the evaluation and report per gender and pooled out.

The folders are written by :mod:`tests.data.vpc_folders` in exactly the recipe's layout;
each number of the command's JSON is compared with ``lidframe.evaluate`` on sets the
test builds from the arrays it saved (not from lidframe's readers), and each system's
``legal`` block with ``legal_criteria`` of that evaluation, bit for bit.
"""

from __future__ import annotations

import json
import math
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from lidframe import Bootstrap, EvaluateOptions, evaluate
from lidframe.analyses.legal_criteria import legal_criteria
from lidframe.cli import main
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.scoreset import ScoreSet
from tests.bad_input.conftest import assert_refused
from tests.data.vpc_folders import GENDERS, Exp, cosines, write_exp
from tests.report.htmltree import parse

pytest.importorskip("jinja2", reason="the report renders with jinja2 (pip install -e '.[report]')")
pytest.importorskip("matplotlib", reason="the report's figures need matplotlib (pip install -e '.[report]')")

#: The numbers compared with lidframe.evaluate (JSON null where NaN).
KEYS = (
    "n_enrolled", "n_enrolled_trials", "n_outsider_trials", "n_dev_enrolled", "n_dev_enrolled_trials",
    "alid", "pdr", "lid_pos", "lid_neg", "lid_max", "lid_q99", "cllr_mc", "rank1_rate", "eer", "cllr", "min_cllr",
)  # fmt: skip
SYSTEMS = {  # label: (results folder, suffix)
    "original [asv_ssl/cosine_out]": ("asv_ssl/cosine_out", ""),
    "mcadams [asv_anon_mcadams/cosine_out]": ("asv_anon_mcadams/cosine_out", "_mcadams"),
    "mcadams [asv_ssl/cosine_out]": ("asv_ssl/cosine_out", "_mcadams"),
}


def built_embedding_set(exp: Exp, results: str, suffix: str, split: str, view: str) -> EmbeddingSet:
    """The set the command should read, built here from the saved arrays."""
    enrol = exp.get(results, f"{split}_enrolls{suffix}")
    rows = enrol.rows(None if view == "pooled" else view)
    parts = [exp.get(results, f"{split}_trials_{g}{suffix}") for g in (GENDERS if view == "pooled" else (view,))]
    return EmbeddingSet(
        np.concatenate([p.vectors for p in parts]),
        enrol.vectors[rows],
        [enrol.speakers[i] for i in rows],
        [s for p in parts for s in p.speakers],
        [u for p in parts for u in p.identifiers],
    )


def built_score_set(exp: Exp, results: str, suffix: str, split: str, gender: str) -> ScoreSet:
    """The recipe's per-gender score set, built here from the saved arrays (outsider trials named '?<utterance>')."""
    enrol = exp.get(results, f"{split}_enrolls{suffix}")
    trials = exp.get(results, f"{split}_trials_{gender}{suffix}")
    scores, speakers = cosines(enrol, trials, gender)
    known = set(speakers)
    truth = [s if s in known else f"?{u}" for s, u in zip(trials.speakers, trials.identifiers)]
    return ScoreSet(scores, speakers, truth, trials.identifiers)


def assert_same_numbers(got: dict, want: dict) -> None:
    for key in KEYS:
        value = want[key]
        if value is None or (isinstance(value, float) and math.isnan(value)):
            assert got[key] is None, key
        else:
            assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key


def want_legal(dev, test, bootstrap: Bootstrap | None, seed: int) -> dict:
    """The legal block ``lidframe evaluate --seed SEED`` writes for *test* calibrated on *dev*, as JSON reads it back."""
    result = evaluate(dev, test, options=EvaluateOptions(bootstrap=bootstrap))
    return json.loads(json.dumps(legal_criteria(result, test, bootstrap=bootstrap, seed=seed).to_dict()))


def assert_same_legal(got: dict, want: dict) -> None:
    """*got* is *want* bit for bit; a reason for an absent criterion the same but for the set it names (its files)."""
    assert {k: v for k, v in got.items() if k != "absent"} == {k: v for k, v in want.items() if k != "absent"}
    assert list(got["absent"]) == list(want["absent"])
    for key, why in want["absent"].items():
        assert why.startswith("eval: ") and got["absent"][key].endswith(f" (eval): {why.removeprefix('eval: ')}"), key


def legal_items(page: str) -> dict[tuple[str, str], float]:
    """(system, data-metric) -> data-sort of every number of the page's section "Singling out, linkability, inference".

    Its cards (one or two systems) or its compact table's rows (more: each ``tr`` a system,
    each number a ``td``); a criterion not computed has no number.
    """
    section = parse(page).find("section", id="legal")
    return {
        (holder.attrs["data-system"], item.attrs["data-metric"]): float(item.attrs["data-sort"])
        for holder in section.find_all()
        if "data-system" in holder.attrs
        for item in holder.find_all()
        if "data-metric" in item.attrs and item.attrs.get("data-sort")
    }


@pytest.mark.slow
def test_every_view_has_the_legal_criteria_of_each_system(tmp_path, capsys):
    exp = write_exp(tmp_path, trials={"f": 1, "m": 3})  # the female speakers heard once: no singling out there
    out = tmp_path / "out"
    assert main(["voiceprivacy", str(exp.root), "--out", str(out), "--n-boot", "200", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    for view in ("pooled", *GENDERS):
        bootstrap = Bootstrap(n_boot=200, seed=3) if view == "pooled" else None  # 10 speakers with trials, or 5
        record = json.loads((out / view / "summary.json").read_text())
        items = legal_items((out / view / "report.html").read_text())
        for label, (results, suffix) in SYSTEMS.items():
            dev = built_embedding_set(exp, results, suffix, "libri_dev", view)
            test = built_embedding_set(exp, results, suffix, "libri_test", view)
            legal = record["systems"][label]["summary"]["legal"]
            assert_same_legal(legal, want_legal(dev, test, bootstrap, seed=3))
            points = legal["linkability"]["points"]
            assert items[label, "pi_link_2"] == points[0]["pi_link"] and points[0]["n_prime"] == 2
            assert items[label, "pi_link_n"] == points[-1]["pi_link"] and points[-1]["n_prime"] == 5 * (
                1 + (view == "pooled")
            )
            if view == "m":
                assert items[label, "pi_sing"] == legal["singling_out"]["pi_sing"]
            else:  # a female speaker has one trial: absent, saying why, on the page and the console
                assert legal["singling_out"] is None and (label, "pi_sing") not in items
                assert "need at least 2 trials of every speaker" in legal["absent"]["singling_out"]
    assert printed.count("singling out: not computed") == 6 and printed.count("pi_link N'=2") == 3
    for view in ("pooled", "f"):
        page = (out / view / "report.html").read_text()
        # once a system in the summary's table (the cell's title), once on its card in the appendix
        assert page.count("need at least 2 trials of every speaker") == 2 * len(SYSTEMS)


@pytest.mark.slow
def test_the_command_writes_every_view_with_the_numbers_of_evaluate(tmp_path, capsys):
    exp = write_exp(tmp_path)
    out = tmp_path / "out"
    assert main(["voiceprivacy", str(exp.root), "--out", str(out), "--no-bootstrap"]) == 0
    printed = capsys.readouterr().out
    assert "not read" in printed and "libri_dev_trials_mixed" in printed
    for view in ("pooled", *GENDERS):
        record = json.loads((out / view / "summary.json").read_text())
        assert record["view"] == view and record["source"] == "embeddings"
        assert list(record["systems"]) == list(SYSTEMS)
        page = (out / view / "report.html").read_text()
        for label, (results, suffix) in SYSTEMS.items():
            assert label in page
            entry = record["systems"][label]
            trials = ["trials_f", "trials_m"] if view == "pooled" else [f"trials_{view}"]
            assert entry["eval"] == [f"libri_test_{part}{suffix}" for part in ("enrolls", *trials)]
            dev = built_embedding_set(exp, results, suffix, "libri_dev", view)
            test = built_embedding_set(exp, results, suffix, "libri_test", view)
            assert_same_numbers(entry["summary"], evaluate(dev, test).summary.to_dict())
    assert sorted(p.name for p in out.iterdir()) == ["f", "m", "pooled"]


def test_the_score_files_give_the_gender_views_with_the_numbers_of_evaluate(tmp_path, capsys):
    exp = write_exp(tmp_path, scores=True)
    out = tmp_path / "out"
    argv = ["voiceprivacy", str(exp.root), "--out", str(out), "--scores", str(exp.data), "--no-bootstrap"]
    assert main(argv) == 0
    assert "pooled view: none from the score files" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == ["f", "m"]
    for gender in GENDERS:
        record = json.loads((out / gender / "summary.json").read_text())
        assert record["source"] == "scores" and list(record["systems"]) == list(SYSTEMS)
        for label, (results, suffix) in SYSTEMS.items():
            dev = built_score_set(exp, results, suffix, "libri_dev", gender)
            test = built_score_set(exp, results, suffix, "libri_test", gender)
            summary = record["systems"][label]["summary"]
            assert_same_numbers(summary, evaluate(dev, test).summary.to_dict())
            assert_same_legal(summary["legal"], want_legal(dev, test, None, seed=0))
            # the trial lists name no outsider's speaker: each outsider trial is a speaker heard once
            assert summary["legal"]["singling_out"] is None and summary["legal"]["linkability"] is not None
            assert f"'?test{gender}5-0'" in summary["legal"]["absent"]["singling_out"]


def test_intervals_by_default_where_the_view_has_enough_speakers(tmp_path):
    exp = write_exp(tmp_path)
    out = tmp_path / "out"
    argv = ["voiceprivacy", str(exp.root / "asv_anon_mcadams"), "--out", str(out), "--n-boot", "200", "--seed", "3"]
    assert main(argv) == 0
    label = "mcadams [asv_anon_mcadams/cosine_out]"
    pooled = json.loads((out / "pooled" / "summary.json").read_text())["systems"][label]["summary"]
    options = EvaluateOptions(bootstrap=Bootstrap(n_boot=200, seed=3))
    results, suffix = SYSTEMS[label]
    want = evaluate(
        built_embedding_set(exp, results, suffix, "libri_dev", "pooled"),
        built_embedding_set(exp, results, suffix, "libri_test", "pooled"),
        options=options,
    ).summary.to_dict()
    assert set(pooled["intervals"]) == set(want["intervals"]) and "alid" in want["intervals"]  # 10 speakers
    for metric, bounds in want["intervals"].items():
        assert pooled["intervals"][metric] == pytest.approx(bounds, rel=1e-12, abs=1e-12), metric
    legal = want_legal(
        built_embedding_set(exp, results, suffix, "libri_dev", "pooled"),
        built_embedding_set(exp, results, suffix, "libri_test", "pooled"),
        options.bootstrap,
        seed=3,
    )
    assert pooled["legal"] == legal and legal["singling_out"]["low"] is not None  # intervals: the view's bootstrap
    female = json.loads((out / "f" / "summary.json").read_text())["systems"][label]["summary"]

    assert "intervals" not in female  # 5 speakers: none, and the page says why
    assert "the eval set has 5 speakers with trials, too few" in (out / "f" / "report.html").read_text()


# ------------------------------------------------------------------------- refused folders


class RunsCode:
    """Unpickling this calls ``open(path, "w")``: the marker file appears if pickled code ever runs."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def _remove_dataset(exp: Exp) -> list[str]:
    shutil.rmtree(exp.root / "asv_anon_mcadams/cosine_out/emb_xvect/libri_dev_trials_f_mcadams")
    return ["asv_anon_mcadams/cosine_out", "partial VoicePrivacy system '_mcadams'", "libri_dev_trials_f_mcadams"]


def _remove_mapping(exp: Exp) -> list[str]:
    (exp.root / "asv_ssl/cosine_out/emb_xvect/libri_test_enrolls/spk-level/idx2spk").unlink()
    return ["libri_test_enrolls/spk-level", "partial VoicePrivacy embedding folder: no idx2spk"]


def _drop_a_speaker(exp: Exp) -> list[str]:
    path = exp.root / "asv_ssl/cosine_out/emb_xvect/libri_dev_trials_m/utt-level/idx2spk"
    path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))
    return [str(path), "disagrees with id2idx: no speaker for the identifiers"]


def _pickle_the_tensor(exp: Exp) -> list[str]:
    path = exp.root / "asv_ssl/cosine_out/emb_xvect/libri_dev_enrolls/spk-level/speaker_vectors.pt"
    path.write_bytes(pickle.dumps(RunsCode(exp.root.parent / "ran.txt"), protocol=2))
    return [str(path), "refused", "never runs pickled code"]


def _no_results(exp: Exp) -> list[str]:
    shutil.rmtree(exp.root)
    exp.root.mkdir()
    return ["no VoicePrivacy results found"]


BAD_FOLDERS = {
    "a_partial_system": _remove_dataset,
    "a_partial_level_folder": _remove_mapping,
    "ids_in_one_mapping_file_not_the_other": _drop_a_speaker,
    "a_pickle_where_the_tensor_should_be": _pickle_the_tensor,
    "no_results": _no_results,
}


@pytest.mark.parametrize("case", BAD_FOLDERS)
def test_a_bad_folder_is_one_line_and_nothing_is_written(tmp_path, capsys, case):
    exp = write_exp(tmp_path)
    words = BAD_FOLDERS[case](exp)
    assert_refused(["voiceprivacy", exp.root, "--out", tmp_path / "out"], capsys, expect=words, watch=[tmp_path])
    assert not (tmp_path / "out").exists() and not (tmp_path / "ran.txt").exists()


def test_bad_command_lines_are_one_line(tmp_path, capsys):
    exp = write_exp(tmp_path, scores=True)
    (tmp_path / "file").write_text("")
    out = tmp_path / "out"
    for argv, words in (
        (["voiceprivacy", tmp_path / "nothing", "--out", out], ["does not exist; expected a VoicePrivacy exp/ folder"]),
        (["voiceprivacy", exp.root, "--out", tmp_path / "file"], ["--out", "exists and is not a folder"]),
        (["voiceprivacy", exp.root, "--out", tmp_path / "no" / "out"], ["--out", "does not exist"]),
        (
            ["voiceprivacy", exp.root, "--out", out, "--scores", tmp_path / "nodata"],
            ["nodata/libri_dev_trials_f/trials"],
        ),
    ):
        assert_refused(argv, capsys, expect=words, watch=[tmp_path])


@pytest.mark.slow  # a Python of its own, with torch blocked
def test_without_torch_the_command_says_what_to_install(tmp_path):
    from tests.cli.test_without_torch import one_line, run_without_torch

    exp = write_exp(tmp_path)
    proc = run_without_torch(tmp_path, ["voiceprivacy", exp.root, "--out", tmp_path / "out"])
    assert proc.returncode == 2, proc.stderr
    line = one_line(proc.stderr)
    assert "speaker_vectors.pt: reading a speaker-vector file needs PyTorch, which is not installed" in line
    assert "pip install torch" in line and not (tmp_path / "out").exists()


def test_an_existing_out_keeps_what_else_it_holds(tmp_path):
    exp = write_exp(tmp_path)
    out = tmp_path / "out"
    (out / "f").mkdir(parents=True)
    (out / "f" / "notes.txt").write_text("mine")
    shutil.rmtree(exp.root / "asv_ssl")
    shutil.rmtree(exp.root / "asv_anon_mcadams/cosine_out/emb_xvect/libri_test_trials_m_mcadams/utt-level")
    (exp.root / "asv_anon_mcadams/cosine_out/emb_xvect/libri_test_trials_m_mcadams/utt-level").mkdir()
    assert main(["voiceprivacy", str(exp.root), "--out", str(out)]) == 2
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == ["f", "f/notes.txt"]
    assert Path(out / "f" / "notes.txt").read_text() == "mine"
