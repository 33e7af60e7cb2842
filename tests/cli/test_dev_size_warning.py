"""``lidframe evaluate`` says what its intervals cover and warns of a dev set too small to calibrate on (issue 41)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lidframe.cli import main
from lidframe.core.devsize import MIN_DEV_MATED_PAIRS, MIN_DEV_SPEAKERS
from lidframe.data.simulate import simulate_scoreset

WARNING = "lidframe: warning: the dev set is too small to calibrate on: "


def _sets(tmp_path, dev_speakers: int, trials: int):
    """dev.npz (*dev_speakers* enrolled, *trials* each) and eval.npz (24 speakers) in *tmp_path*."""
    dev = simulate_scoreset(leakage=0.5, n_enrolled=dev_speakers, trials_per_speaker=trials, prefix="d", rng=1)
    ev = simulate_scoreset(leakage=0.5, n_enrolled=24, trials_per_speaker=4, prefix="e", rng=2)
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    return ["evaluate", "--dev", str(tmp_path / "dev.npz"), "--eval", str(tmp_path / "eval.npz")]


@pytest.mark.parametrize(
    ("speakers", "trials", "warned"),
    [
        (MIN_DEV_SPEAKERS, MIN_DEV_MATED_PAIRS // MIN_DEV_SPEAKERS, False),  # 20 speakers, 100 mated pairs: enough
        (MIN_DEV_SPEAKERS - 1, 10, True),  # 19 speakers (190 mated pairs)
        (MIN_DEV_SPEAKERS, MIN_DEV_MATED_PAIRS // MIN_DEV_SPEAKERS - 1, True),  # 20 speakers, 80 mated pairs
    ],
)
def test_a_dev_set_too_small_to_calibrate_on_is_warned_about_once(tmp_path, capsys, speakers, trials, warned):
    assert main(_sets(tmp_path, speakers, trials)) == 0
    err = capsys.readouterr().err
    lines = err.splitlines()
    if warned:
        assert len(lines) == 1 and lines[0].startswith(WARNING), err
        assert f"{speakers} enrolled speakers and {speakers * trials} mated pairs" in lines[0]
    else:
        assert err == ""


def test_the_console_and_the_json_say_what_the_intervals_cover(tmp_path, capsys):
    argv = _sets(tmp_path, 8, 5) + ["--bootstrap", "--n-boot", "100"]
    assert main([*argv, "--json", str(tmp_path / "refit.json")]) == 0
    out = capsys.readouterr().out
    assert "covering: eval and dev speakers resampled, the calibrator refitted on each dev resample" in out
    assert json.loads((tmp_path / "refit.json").read_text())["bootstrap"]["resample"] == "dev+eval"
    assert main([*argv, "--bootstrap-resample", "eval", "--json", str(tmp_path / "fixed.json")]) == 0
    out = capsys.readouterr().out
    assert "covering: eval speakers resampled, the calibrator held fixed" in out
    fixed = json.loads((tmp_path / "fixed.json").read_text())
    refit = json.loads((tmp_path / "refit.json").read_text())
    assert fixed["bootstrap"]["resample"] == "eval"
    widths = {name: np.subtract(*reversed(r["intervals"]["alid"])) for name, r in (("fixed", fixed), ("refit", refit))}
    assert widths["refit"] > widths["fixed"]  # 8 dev speakers: the calibrator's uncertainty shows


def test_the_page_warns_of_a_small_dev_set_on_the_card(tmp_path, capsys):
    pytest.importorskip("jinja2", reason="the report needs jinja2")
    from tests.report.htmltree import parse

    argv = _sets(tmp_path, 6, 5) + ["--report", str(tmp_path / "audit"), "--n-boot", "100"]
    assert main(argv) == 0
    page = parse((tmp_path / "audit" / "report.html").read_text())
    warning = page.find("p", **{"class": "dev-warning"})
    assert warning is not None and "6 enrolled speakers and 30 mated pairs" in warning.text()
    assert WARNING in capsys.readouterr().err
