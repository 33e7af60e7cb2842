"""Bad input, family "grid specs": every broken spec is refused before any cell runs, naming the file and the key."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from lidframe.data.simulate import simulate_system
from tests.bad_input.conftest import assert_refused

GOOD = """[grid]
calibrators = ["logistic"]
priors = ["uniform"]
seeds = [0]

[systems.alpha]
dev = "alpha_dev.npz"
eval = "alpha_eval.npz"
"""

DATA_DIRS = """[grid]
attackers = ["precomputed?path={folder}/emb.npz"]

[systems.beta]
dev = { enrol = "dev_enrolls", trials = ["dev_trials"] }
eval = { enrol = "eval_enrolls", trials = ["eval_trials"] }
"""


@pytest.fixture(scope="module")
def scores(tmp_path_factory) -> Path:
    """One simulated system's score files and a data-dir layout with embeddings, made once."""
    folder = tmp_path_factory.mktemp("inputs")
    dev, ev = simulate_system(leakage=0.5, seed=1, n_enrolled=8, trials_per_speaker=4)
    dev.save(folder / "alpha_dev.npz")
    ev.save(folder / "alpha_eval.npz")
    rng = np.random.default_rng(0)
    ids = []
    for split in ("dev", "eval"):
        for kind in ("enrolls", "trials"):
            d = folder / f"{split}_{kind}"
            d.mkdir()
            utts = [(f"{split}-{kind}-{s}-{k}", f"{split}spk{s}") for s in range(6) for k in range(2)]
            (d / "wav.scp").write_text("".join(f"{u} none.wav\n" for u, _ in utts))
            (d / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utts))
            ids += [u for u, _ in utts]
    np.savez(folder / "emb.npz", utt_ids=np.array(ids), vectors=rng.normal(size=(len(ids), 8)))
    return folder


def edit(old: str, new: str, base: str = GOOD) -> Callable[[Path], Path]:
    """A case: the good spec with *old* replaced by *new* (``{folder}`` filled in)."""

    def build(folder: Path) -> Path:
        text, was = base.replace("{folder}", str(folder)), old.replace("{folder}", str(folder))
        assert was in text, was
        (folder / "grid.toml").write_text(text.replace(was, new.replace("{folder}", str(folder))))
        return folder / "grid.toml"

    return build


def with_loop(name: str, then: Callable[[Path], Path]) -> Callable[[Path], Path]:
    """Make *name* in the case folder a symlink to itself (a loop), then build the spec."""

    def build(folder: Path) -> Path:
        os.symlink(name, folder / name)
        return then(folder)

    return build


def spec_text(text: str) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        (folder / "grid.toml").write_text(text.replace("{folder}", str(folder)))
        return folder / "grid.toml"

    return build


def with_file(name: str, content: str | bytes, then: Callable[[Path], Path]) -> Callable[[Path], Path]:
    """Write (or overwrite) *name* in the case folder, then build the spec."""

    def build(folder: Path) -> Path:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content.replace("{folder}", str(folder)))
        return then(folder)

    return build


def made(make: Callable[[Path], object], then: Callable[[Path], Path]) -> Callable[[Path], Path]:
    """Make something in the case folder (a folder, a FIFO), then build the spec."""

    def build(folder: Path) -> Path:
        make(folder)
        return then(folder)

    return build


def without(name: str, then: Callable[[Path], Path]) -> Callable[[Path], Path]:
    """Remove *name* from the case folder, then build the spec."""

    def build(folder: Path) -> Path:
        (folder / name).unlink()
        return then(folder)

    return build


def no_spec(name: str) -> Callable[[Path], Path]:
    def build(folder: Path) -> Path:
        return folder / name

    return build


def spec_folder(folder: Path) -> Path:
    (folder / "grid.toml").mkdir()
    return folder / "grid.toml"


ENROLLED_EVAL = "eval-spk000"  # an enrolled eval speaker of the simulated system

CASES: dict[str, tuple[Callable[[Path], Path], list[str]]] = {
    # -- the file itself
    "not TOML": (spec_text("[grid\ncalibrators = "), ["grid.toml", "not valid TOML"]),
    "not UTF-8": (
        with_file("grid.toml", b"[grid]\ncalibrators = ['\xff']\n", no_spec("grid.toml")),
        ["not valid TOML"],
    ),
    "no such spec": (no_spec("missing.toml"), ["missing.toml", "no such grid spec"]),
    "spec is a folder": (spec_folder, ["grid.toml", "is a folder"]),
    "duplicate system names": (
        spec_text(GOOD + '\n[systems.alpha]\ndev = "alpha_dev.npz"\neval = "alpha_eval.npz"\n'),
        ["grid.toml", "not valid TOML", "alpha"],
    ),
    # -- sections and keys
    "unknown section": (spec_text(GOOD + "\n[colour]\nx = 1\n"), ["grid.toml", "[colour]", "[grid] and [systems"]),
    "unknown grid key": (edit("[grid]", "[grid]\ncolour = 1"), ["grid.toml", "[grid.colour]", "unknown key"]),
    "grid not a table": (
        spec_text('grid = 1\n[systems.alpha]\ndev = "alpha_dev.npz"\neval = "alpha_eval.npz"\n'),
        ["[grid]", "must be a table"],
    ),
    # -- component lists
    "calibrators not strings": (
        edit('calibrators = ["logistic"]', "calibrators = [1]"),
        ["[grid.calibrators]", "strings"],
    ),
    "calibrators empty string": (
        edit('calibrators = ["logistic"]', 'calibrators = [""]'),
        ["[grid.calibrators]", "non-empty"],
    ),
    "calibrators empty list": (
        edit('calibrators = ["logistic"]', "calibrators = []"),
        ["[grid.calibrators]", "is empty"],
    ),
    "calibrators repeated": (
        edit('calibrators = ["logistic"]', 'calibrators = ["logistic", "logistic"]'),
        ["[grid.calibrators]", "repeated"],
    ),
    "priors empty list": (edit('priors = ["uniform"]', "priors = []"), ["[grid.priors]", "is empty"]),
    # -- one rule for every axis: a TOML list, even of one entry (a single value is refused, not taken as a list)
    "calibrators a single string": (
        edit('calibrators = ["logistic"]', 'calibrators = "logistic"'),
        ["grid.toml", "[grid.calibrators]", "list of", "'logistic'", '["logistic"]'],
    ),
    "priors a single string": (
        edit('priors = ["uniform"]', 'priors = "uniform"'),
        ["[grid.priors]", "list of", "'uniform'", '["uniform"]'],
    ),
    "priors a number": (edit('priors = ["uniform"]', "priors = 5"), ["[grid.priors]", "list of", "5"]),
    "attackers a single string": (
        edit(
            'attackers = ["precomputed?path={folder}/emb.npz"]',
            'attackers = "precomputed?path={folder}/emb.npz"',
            DATA_DIRS,
        ),
        ["[grid.attackers]", "list of", "precomputed?path="],
    ),
    "mechanisms a single string": (
        edit("[grid]\n", '[grid]\nmechanisms = "gaussian?mu=1"\n', DATA_DIRS),
        ["[grid.mechanisms]", "list of", "'gaussian?mu=1'"],
    ),
    "seeds a single integer": (edit("seeds = [0]", "seeds = 0"), ["[grid.seeds]", "list of", "[0]"]),
    "longitudinal k a single integer": (
        edit("seeds = [0]", "seeds = [0]\n[grid.longitudinal]\nk = 4"),
        ["[grid.longitudinal.k]", "list of", "4"],
    ),
    "longitudinal k a single string": (
        edit("seeds = [0]", 'seeds = [0]\n[grid.longitudinal]\nk = "all"'),
        ["[grid.longitudinal.k]", "list of", "'all'"],
    ),
    "longitudinal fusions a single string": (
        edit("seeds = [0]", 'seeds = [0]\n[grid.longitudinal]\nfusions = "sum"'),
        ["[grid.longitudinal.fusions]", "list of", "'sum'"],
    ),
    # -- component names and parameters (item 10: found before any cell runs)
    "unknown calibrator": (
        edit('calibrators = ["logistic"]', 'calibrators = ["logistic", "isotonc"]'),
        ["grid.toml", "[grid.calibrators[1]]", "unknown calibrator 'isotonc'"],
    ),
    "unknown calibrator parameter": (
        edit('calibrators = ["logistic"]', 'calibrators = ["isotonic?foo=1"]'),
        ["[grid.calibrators[0]]", "no parameter 'foo'"],
    ),
    "calibrator parameter not a number": (
        edit('calibrators = ["logistic"]', 'calibrators = ["logistic?C=abc"]'),
        ["grid.toml", "[grid.calibrators[0]]", "logistic?C=abc", "'C'", "'abc'"],
    ),
    "calibrator parameter out of range": (
        edit('calibrators = ["logistic"]', 'calibrators = ["logistic?C=-1"]'),
        ["grid.toml", "[grid.calibrators[0]]", "logistic?C=-1", "C must be a positive number"],
    ),
    "calibrator parameter not a choice": (
        edit('calibrators = ["logistic"]', 'calibrators = ["logistic?weighting=zz"]'),
        ["[grid.calibrators[0]]", "weighting", "'zz'"],
    ),
    "malformed parameters": (
        edit('calibrators = ["logistic"]', 'calibrators = ["logistic?C"]'),
        ["[grid.calibrators[0]]", "key=value"],
    ),
    "parameter given twice": (
        edit('calibrators = ["logistic"]', 'calibrators = ["logistic?C=1&C=2"]'),
        ["[grid.calibrators[0]]", "given twice"],
    ),
    "import target that does not load": (
        edit('calibrators = ["logistic"]', 'calibrators = ["no_such_module_xyz:Thing"]'),
        ["[grid.calibrators[0]]", "cannot load"],
    ),
    "unknown prior": (
        edit('priors = ["uniform"]', 'priors = ["uniformm"]'),
        ["[grid.priors[0]]", "unknown prior 'uniformm'"],
    ),
    "watch-list id not enrolled": (
        edit('priors = ["uniform"]', f'priors = ["uniform", "watchlist?ids={ENROLLED_EVAL},ghost"]'),
        ["grid.toml", "[grid.priors[1]]", "system 'alpha'", "'ghost'", "not among the 8 enrolled"],
    ),
    "watch-list file missing": (
        edit('priors = ["uniform"]', 'priors = ["watchlist?file={folder}/missing-ids.txt"]'),
        ["[grid.priors[0]]", "missing-ids.txt"],
    ),
    "watch-list file with an id not enrolled": (
        with_file(
            "ids.txt",
            "eval-spk001\nghost7\n",
            edit('priors = ["uniform"]', 'priors = ["watchlist?file={folder}/ids.txt"]'),
        ),
        ["[grid.priors[0]]", "'ghost7'"],
    ),
    "watch-list weight negative": (
        edit('priors = ["uniform"]', f'priors = ["watchlist?ids={ENROLLED_EVAL}&weight=-1"]'),
        ["[grid.priors[0]]", "weight must be positive"],
    ),
    "watch-list weight not a number": (
        edit('priors = ["uniform"]', f'priors = ["watchlist?ids={ENROLLED_EVAL}&weight=heavy"]'),
        ["[grid.priors[0]]", "'weight'", "'heavy'"],
    ),
    "watch-list without ids or file": (
        edit('priors = ["uniform"]', 'priors = ["watchlist"]'),
        ["[grid.priors[0]]", "exactly one of"],
    ),
    "explicit prior missing a speaker": (
        with_file(
            "prior.csv",
            "enroll_spk,prior\neval-spk000,0.5\neval-spk001,0.5\n",
            edit('priors = ["uniform"]', 'priors = ["explicit?file={folder}/prior.csv"]'),
        ),
        ["[grid.priors[0]]", "system 'alpha'", "no probability"],
    ),
    # -- seeds and settings
    "seeds not a list": (edit("seeds = [0]", "seeds = 3"), ["[grid.seeds]", "list of integers"]),
    "seeds empty": (edit("seeds = [0]", "seeds = []"), ["[grid.seeds]", "non-empty list"]),
    "seed a boolean": (edit("seeds = [0]", "seeds = [true]"), ["[grid.seeds]", "integers"]),
    "seed a float": (edit("seeds = [0]", "seeds = [1.5]"), ["[grid.seeds]", "integers"]),
    "seed negative": (edit("seeds = [0]", "seeds = [-1]"), ["[grid.seeds]", "non-negative"]),
    "seeds repeated": (edit("seeds = [0]", "seeds = [2, 2]"), ["[grid.seeds]", "repeated"]),
    "znorm_ddof 2": (edit("seeds = [0]", "seeds = [0]\nznorm_ddof = 2"), ["[grid.znorm_ddof]", "0 or 1"]),
    "legal a string": (edit("seeds = [0]", 'seeds = [0]\nlegal = "no"'), ["[grid.legal]", "true or false", "'no'"]),
    "legal a number": (edit("seeds = [0]", "seeds = [0]\nlegal = 0"), ["[grid.legal]", "true or false", "0"]),
    "legal a table": (edit("seeds = [0]", "seeds = [0]\n[grid.legal]\ndraws = 5"), ["[grid.legal]", "true or false"]),
    "ci unknown key": (edit("seeds = [0]", "seeds = [0]\n[grid.ci]\nlevels = 0.9"), ["[grid.ci]", "keys among"]),
    "ci level an integer": (edit("seeds = [0]", "seeds = [0]\n[grid.ci]\nlevel = 2"), ["[grid.ci.level]"]),
    "ci level above 1": (edit("seeds = [0]", "seeds = [0]\n[grid.ci]\nlevel = 1.5"), ["[grid.ci.level]"]),
    "ci n_boot zero": (edit("seeds = [0]", "seeds = [0]\n[grid.ci]\nn_boot = 0"), ["[grid.ci.n_boot]"]),
    "ci unknown unit": (edit("seeds = [0]", 'seeds = [0]\n[grid.ci]\nunit = "planet"'), ["[grid.ci.unit]", "planet"]),
    "bootstrap unknown resample": (
        edit("seeds = [0]", 'seeds = [0]\n[grid.bootstrap]\nresample = "dev"'),
        ["[grid.bootstrap.resample]", "'dev+eval'", "'dev'"],
    ),
    "longitudinal k zero": (
        edit("seeds = [0]", "seeds = [0]\n[grid.longitudinal]\nk = [0]"),
        ["[grid.longitudinal.k]"],
    ),
    "longitudinal unknown fusion": (
        edit("seeds = [0]", 'seeds = [0]\n[grid.longitudinal]\nfusions = ["max"]'),
        ["[grid.longitudinal.fusions]", "'max'"],
    ),
    "longitudinal groups zero": (
        edit("seeds = [0]", "seeds = [0]\n[grid.longitudinal]\ngroups = 0"),
        ["[grid.longitudinal.groups]"],
    ),
    # -- systems
    "no systems": (spec_text('[grid]\ncalibrators = ["logistic"]\n'), ["grid.toml", "[systems]", "at least one"]),
    "system not a table": (spec_text('[systems]\nalpha = "alpha_dev.npz"\n'), ["[systems.alpha]", "dev and eval"]),
    "system without eval": (edit('eval = "alpha_eval.npz"\n', ""), ["[systems.alpha]", "dev and eval"]),
    "system with an extra key": (
        edit('eval = "alpha_eval.npz"', 'eval = "alpha_eval.npz"\ntest = "x.npz"'),
        ["[systems.alpha]", "test"],
    ),
    "system with an empty name": (
        spec_text('[systems.""]\ndev = "alpha_dev.npz"\neval = "alpha_eval.npz"\n'),
        ["[systems.''", "non-empty"],
    ),
    "score file missing": (
        edit('dev = "alpha_dev.npz"', 'dev = "gone_dev.npz"'),
        ["[systems.alpha.dev]", "gone_dev.npz", "no such file"],
    ),
    "score file a folder": (
        made(lambda f: (f / "dev_folder.npz").mkdir(), edit('dev = "alpha_dev.npz"', 'dev = "dev_folder.npz"')),
        ["[systems.alpha.dev]", "dev_folder.npz", "is a folder", "score-set file"],
    ),
    "score file a FIFO": (
        made(lambda f: os.mkfifo(f / "dev_pipe.npz"), edit('dev = "alpha_dev.npz"', 'dev = "dev_pipe.npz"')),
        ["[systems.alpha.dev]", "dev_pipe.npz", "is a FIFO"],
    ),
    "score file of an unknown format": (
        with_file("alpha_dev.txt", "x", edit('dev = "alpha_dev.npz"', 'dev = "alpha_dev.txt"')),
        ["[systems.alpha.dev]", ".npz or .csv"],
    ),
    "score file not an archive": (
        with_file("alpha_eval.npz", b"not a zip archive", spec_text(GOOD)),
        ["grid.toml", "[systems.alpha.eval]", "alpha_eval.npz"],
    ),
    "score CSV with a missing pair": (
        with_file(
            "alpha_eval.csv",
            "enroll_spk,trial_spk,trial_id,score\na,a,t1,0.5\nb,a,t1,0.1\na,b,t2,0.2\n",
            edit('eval = "alpha_eval.npz"', 'eval = "alpha_eval.csv"'),
        ),
        ["[systems.alpha.eval]", "missing pair"],
    ),
    "score path not a string": (edit('dev = "alpha_dev.npz"', "dev = 3"), ["[systems.alpha.dev]", "score-set path"]),
    # -- data-dir systems
    "data dir without trials": (
        edit('dev = { enrol = "dev_enrolls", trials = ["dev_trials"] }', 'dev = { enrol = "dev_enrolls" }', DATA_DIRS),
        ["[systems.beta.dev]", "'enrol' and 'trials'"],
    ),
    "data dir missing": (
        edit('enrol = "dev_enrolls"', 'enrol = "no_such_dir"', DATA_DIRS),
        ["[systems.beta.dev.enrol]", "no such data directory"],
    ),
    "data dir a file": (
        edit('enrol = "dev_enrolls"', 'enrol = "alpha_dev.npz"', DATA_DIRS),
        ["[systems.beta.dev.enrol]", "alpha_dev.npz", "is a file", "expected a data directory"],
    ),
    "data dir a symlink loop": (
        with_loop("looped", edit('enrol = "dev_enrolls"', 'enrol = "looped"', DATA_DIRS)),
        ["[systems.beta.dev.enrol]", "looped", "is a symlink loop", "expected a data directory"],
    ),
    "data dir path not a string": (
        edit('trials = ["dev_trials"]', "trials = [4]", DATA_DIRS),
        ["[systems.beta.dev.trials[0]]", "path string"],
    ),
    "file and data dir mixed": (
        edit('eval = { enrol = "eval_enrolls", trials = ["eval_trials"] }', 'eval = "alpha_eval.npz"', DATA_DIRS),
        ["[systems.beta]", "both"],
    ),
    "data dirs without an attacker": (
        edit('attackers = ["precomputed?path={folder}/emb.npz"]', "", DATA_DIRS),
        ["[grid.attackers]", "at least one attacker"],
    ),
    "wav.scp with a pipe": (
        with_file("dev_trials/wav.scp", "dev-trials-0-0 sox a.flac -t wav - |\n", spec_text(DATA_DIRS)),
        ["[systems.beta.dev.trials[0]]", "piped command"],
    ),
    "wav.scp and utt2spk disagree": (
        with_file("dev_enrolls/utt2spk", "dev-enrolls-0-0 devspk0\n", spec_text(DATA_DIRS)),
        ["[systems.beta.dev.enrol]", "disagree"],
    ),
    "wav_paths not a convention": (
        edit(
            'eval = { enrol = "eval_enrolls", trials = ["eval_trials"] }',
            'eval = { enrol = "eval_enrolls", trials = ["eval_trials"], wav_paths = "kaldi" }',
            DATA_DIRS,
        ),
        ["[systems.beta.eval.wav_paths]", "'kaldi'", "cwd, data-dir"],
    ),
    "wav.scp empty": (
        with_file("eval_trials/wav.scp", "", spec_text(DATA_DIRS)),
        ["[systems.beta.eval.trials[0]]", "empty wav.scp"],
    ),
    "wav.scp missing": (
        without("eval_trials/wav.scp", spec_text(DATA_DIRS)),
        ["[systems.beta.eval.trials[0]]", "wav.scp", "no such"],
    ),
    "utt2spk missing": (
        without("dev_enrolls/utt2spk", spec_text(DATA_DIRS)),
        ["[systems.beta.dev.enrol]", "utt2spk", "no such"],
    ),
    "unknown attacker": (
        edit('attackers = ["precomputed?path={folder}/emb.npz"]', 'attackers = ["ecapaa"]', DATA_DIRS),
        ["[grid.attackers[0]]", "unknown attacker 'ecapaa'"],
    ),
    "attacker unknown parameter": (
        edit('attackers = ["precomputed?path={folder}/emb.npz"]', 'attackers = ["random?colour=red"]', DATA_DIRS),
        ["[grid.attackers[0]]", "no parameter 'colour'"],
    ),
    "attacker parameter its base class does not take": (
        edit('attackers = ["precomputed?path={folder}/emb.npz"]', 'attackers = ["ecapa?colour=red"]', DATA_DIRS),
        ["[grid.attackers[0]]", "attacker 'ecapa' has no parameter 'colour'", "checkpoint"],
    ),
    "attacker checkpoint missing": (
        edit(
            'attackers = ["precomputed?path={folder}/emb.npz"]', 'attackers = ["ecapa?checkpoint=gone.ckpt"]', DATA_DIRS
        ),
        ["[grid.attackers[0]]", "'gone.ckpt' does not exist"],
    ),
    "attacker parameter not a number": (
        edit('attackers = ["precomputed?path={folder}/emb.npz"]', 'attackers = ["random?dim=wide"]', DATA_DIRS),
        ["[grid.attackers[0]]", "'dim'", "'wide'"],
    ),
    "mechanism without data dirs": (
        edit("seeds = [0]", 'seeds = [0]\nmechanisms = ["gaussian?mu=1"]'),
        ["[grid.mechanisms]", "data-dir systems"],
    ),
    "mechanism with a bad mu": (
        edit("[grid]\n", '[grid]\nmechanisms = ["gaussian?mu=-1"]\n', DATA_DIRS),
        ["[grid.mechanisms[0]]", "mu"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_broken_spec_is_refused(case, scores, tmp_path, capsys):
    build, expect = CASES[case]
    if case in ("attacker parameter its base class does not take", "attacker checkpoint missing"):
        pytest.importorskip("torch", reason="ecapa's parameters are read from its class, which needs torch")
    folder = tmp_path / "case"
    shutil.copytree(scores, folder)
    spec = build(folder)
    assert_refused(["grid", spec, "--out", tmp_path / "out"], capsys, expect=expect, watch=[tmp_path])
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "bad",
    ['calibrators = ["logistic?C=-1"]', f'priors = ["watchlist?ids={ENROLLED_EVAL},ghost"]'],
    ids=["calibrator parameter", "watch-list id"],
)
def test_a_bad_component_after_a_finished_run_computes_nothing(bad, scores, tmp_path, capsys):
    """Item 10: found when the spec is validated -- no row, no per-trial or cache file is added to a store."""
    from lidframe.cli import main

    folder = tmp_path / "case"
    shutil.copytree(scores, folder)
    (folder / "grid.toml").write_text(GOOD)
    assert main(["grid", str(folder / "grid.toml"), "--out", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    key = "calibrators" if "calibrators" in bad else "priors"
    text = (
        GOOD.replace('calibrators = ["logistic"]', bad)
        if key == "calibrators"
        else GOOD.replace('priors = ["uniform"]', bad)
    )
    (folder / "grid.toml").write_text(text)
    line = assert_refused(
        ["grid", folder / "grid.toml", "--out", tmp_path / "out"],
        capsys,
        expect=["grid.toml", f"[grid.{key}[0]]"],
        watch=[tmp_path],
    )
    assert ("C must be" in line) if key == "calibrators" else ("'ghost'" in line)
