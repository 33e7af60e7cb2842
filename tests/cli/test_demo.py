"""The demo's systems behave as their generative model says."""

import math

import pytest

from lidframe.cli.simulated_demo import run_demo


def test_demo_is_deterministic_and_ordered():
    table, summaries = run_demo(seed=0)
    again, _ = run_demo(seed=0)
    assert table == again
    alid = {name: s["alid"] for name, s in summaries.items()}
    assert alid["plain"] > alid["anon-weak"] > alid["anon-strong"] > alid["random"]
    assert abs(alid["plain"] - math.log2(29)) < 0.01
    assert abs(alid["random"]) < 0.1
    # the point of the uneven system: EER near chance, yet some trials leak a bit or more
    uneven = summaries["uneven"]
    assert uneven["eer"] > 0.4 and uneven["lid_max"] > 1.0


def test_the_real_voice_demo_runs_where_engines_and_torch_are(monkeypatch):
    """With torch here and a (pretended) engine, nothing stops the real-voice demo; without an engine, that is why."""
    pytest.importorskip("torch", reason="the real-voice demo trains its attackers with torch")
    import lidframe.audio.corpus as corpus
    from lidframe.cli.demo import voice_demo_unavailable

    monkeypatch.setattr(corpus, "available_voices", lambda: ["a voice"])
    assert voice_demo_unavailable() is None
    monkeypatch.setattr(corpus, "available_voices", lambda: [])
    assert voice_demo_unavailable() == f"no speech engine here ({corpus.INSTALL_HINT})"
