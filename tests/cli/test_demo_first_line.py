"""The real-voice demo's first line says what a busy machine does to its time, and the load it starts under (issue 41)."""

from __future__ import annotations

import os

import lidframe.demo as demo
from lidframe.cli import main


def test_the_first_line_states_the_busy_machine_time_and_the_load_now(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(demo, "voice_demo_unavailable", lambda: None)  # as where engines and torch are installed
    monkeypatch.setattr(demo, "run_voice_demo", lambda out, **kwargs: ("the table", {}))  # not the 4-minute run
    monkeypatch.setattr(demo, "report_unavailable", lambda: "not here")
    monkeypatch.setattr(os, "getloadavg", lambda: (7.25, 6.0, 5.0))
    assert main(["demo", "--out", str(tmp_path / "out")]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("lidframe demo: real voices")
    assert "about 4 minutes on 2 quiet cores" in first and "34 minutes measured on 2 cores busy" in first
    assert f"here now: load 7.2 on {os.cpu_count() or 1} cores" in first
