"""Run options (``--device``, ``--precision``, ``--batch-size``, ``--cache-dir``) by contract.

An attacker takes the run options that apply to it as constructor parameters
(:data:`lidframe.attackers.base.RUN_OPTIONS`); ``lidframe score`` passes each only to an
attacker that takes it and says on one line that it does not apply to the others (the
random and precomputed attackers have no model to place, batch or cache).
"""

from __future__ import annotations

import numpy as np
import pytest

from lidframe import registry
from lidframe.cli import main
from lidframe.errors import InputError
from tests.bad_input.audio_dirs import score_argv, scoring_dirs

pytest.importorskip("soundfile")  # the data dirs hold written voices

SMALL = {
    "ecapa": "ecapa?channels=16,16,16,16,48&attention_channels=8&se_channels=8&lin_neurons=8",
    "xvector": "xvector?tdnn_channels=16,16,16,16,48&lin_neurons=8",
}
#: flag, the parameter it sets, and the value given on the command line (the cache folder is made per test)
OPTIONS = [("--device", "device", "cpu"), ("--precision", "precision", "fp32"), ("--batch-size", "batch_size", 2)]
OPTIONS += [("--cache-dir", "cache_dir", None)]
#: The built-in attackers and whether they take the run options (the neural encoders take all of them).
ATTACKERS = {"random": False, "precomputed": False, "ecapa": True, "xvector": True}


def attacker_spec(name: str, root) -> str:
    if name in SMALL:
        pytest.importorskip("torch")
        return SMALL[name]
    if name == "precomputed":  # one vector per utterance of scoring_dirs: e0, e1 (enrolment), t0, t1 (trials)
        ids = ["e0", "e1", "t0", "t1"]
        np.savez(root / "emb.npz", utt_ids=np.array(ids), vectors=np.random.default_rng(0).normal(size=(4, 8)))
        return f"precomputed?path={root / 'emb.npz'}"
    return name


@pytest.mark.parametrize(("flag", "param", "value"), OPTIONS, ids=[o[0] for o in OPTIONS])
@pytest.mark.parametrize("name", list(ATTACKERS))
def test_every_builtin_attacker_takes_or_ignores_every_run_option(
    name, flag, param, value, tmp_path, capsys, monkeypatch
):
    enrol, trials = scoring_dirs(tmp_path / "data")
    spec = attacker_spec(name, tmp_path)
    if value is None:
        value = tmp_path / "cache"
    built = []
    create = registry.create

    def recording_create(*args, **kwargs):
        built.append(create(*args, **kwargs))
        return built[-1]

    monkeypatch.setattr(registry, "create", recording_create)
    out = tmp_path / "scores.npz"
    code = main([str(a) for a in score_argv(enrol, trials, out, flag, value, attacker=spec)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert out.is_file()
    warnings = [line for line in captured.err.splitlines() if line.strip()]
    if ATTACKERS[name]:
        assert warnings == [], warnings
        assert str(getattr(built[0], param)) == str(value)  # passed through
    else:
        assert len(warnings) == 1, warnings
        line = warnings[0]
        assert line.startswith("lidframe: warning: ") and flag in line and f"attacker {name!r}" in line, line
        assert "does not apply" in line and "ignored" in line, line
        assert not hasattr(built[0], param)
    if param == "cache_dir":
        assert (tmp_path / "cache").exists() == ATTACKERS[name]


@pytest.mark.parametrize(("flag", "param"), [("--checkpoint", "checkpoint"), ("--embeddings", "path")])
def test_an_input_an_attacker_does_not_read_is_refused_naming_the_flag(flag, param, tmp_path, capsys):
    """Unlike a run option, an input changes what is computed: giving it to an attacker that reads none is an error."""
    enrol, trials = scoring_dirs(tmp_path / "data")
    given = tmp_path / "given.bin"
    given.write_bytes(b"x")
    out = tmp_path / "scores.npz"
    code = main([str(a) for a in score_argv(enrol, trials, out, flag, given, attacker="random")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert f"{flag}: attacker 'random' takes no {param!r} parameter" in err, err
    assert not out.exists()


def test_accepted_params_lists_what_a_spec_takes():
    assert "device" not in registry.accepted_params("attacker", "random")
    assert {"dim", "seed", "enrolment"} <= set(registry.accepted_params("attacker", "random"))
    with pytest.raises(InputError, match="has no parameter 'colour'"):
        registry.accepted_params("attacker", "random?colour=red")


def test_the_conformance_check_wants_the_run_options_an_attacker_takes_named():
    from lidframe.attackers import RandomAttacker
    from lidframe.attackers.base import SCORING_OPTIONS, Attacker
    from lidframe.testing import ConformanceError, check_attacker

    class Opaque(Attacker):
        """Takes any keyword and forwards it nowhere lidframe can see: which run options apply is unknown."""

        def __init__(self, **options):
            self.options = options
            self.inner = RandomAttacker()

        def embed(self, utterances):
            return self.inner.embed(utterances)

        def score(self, trials, enrolment):
            return self.inner.score(trials, enrolment)

    class Named(RandomAttacker):
        """Names the run option it takes and forwards the rest to its base class."""

        def __init__(self, *, device: str = "cpu", **options):
            super().__init__(**options)
            self.device = device

    with pytest.raises(ConformanceError, match="run options named in the constructor: .*device, precision"):
        check_attacker(Opaque())
    assert registry.accepted_params("attacker", Named) == ("device", "dim", "seed", "enrolment", *SCORING_OPTIONS)
    assert "run options named in the constructor" in check_attacker(Named())
    assert "run options named in the constructor" in check_attacker(RandomAttacker())
