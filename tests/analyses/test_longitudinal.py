"""The multi-utterance (longitudinal) attacker."""

import itertools
import json
import math

import numpy as np
import pytest

from lidframe import InputError, ScoreSet, evaluate
from lidframe.analyses.longitudinal import draw_groups, longitudinal
from lidframe.cli import main
from lidframe.data.simulate import simulate_system


def test_k1_reproduces_per_trial_lid_exactly():
    dev, ev = simulate_system(leakage=0.4, seed=2)
    row = longitudinal(dev, ev, [1], bootstrap=None).rows[0]
    per_trial = evaluate(dev, ev).summary
    for key in ("alid", "pdr", "lid_pos", "lid_neg", "lid_max", "lid_q99"):
        assert row[key] == pytest.approx(per_trial[key], abs=1e-12), key
    assert row["n_groups"] == ev.n_trials


def shifted_gaussian(rng, n_speakers, trials_per, mu, prefix):
    """Scores already on the LLR scale: mu * (mu 1[true] + eps), i.e. exact per-trial LLRs up to a row constant."""
    enrolled = np.array([f"{prefix}{j}" for j in range(n_speakers)])
    owner = np.repeat(np.arange(n_speakers), trials_per)
    s = rng.standard_normal((owner.size, n_speakers))
    s[np.arange(owner.size), owner] += mu
    return ScoreSet(mu * s, enrolled, enrolled[owner]), s, owner


def test_sum_rule_is_the_exact_posterior_of_independent_utterances_and_grows_with_k():
    rng = np.random.default_rng(0)
    mu, n = 0.8, 20
    dev, _, _ = shifted_gaussian(rng, n, 12, mu, "d")
    ev, s, owner = shifted_gaussian(rng, n, 12, mu, "e")
    row = longitudinal(dev, ev, [4], calibrator="identity", bootstrap=None, seed=5).rows[0]
    groups, _ = draw_groups(ev.trial_speakers, 4, np.random.default_rng(5))
    exact = []
    for g in groups:  # exact group posterior: softmax_j(mu * sum_i s_ij)
        a = mu * s[g].sum(axis=0)
        p = np.exp(a - a.max())
        p /= p.sum()
        exact.append(math.log2(n * p[owner[g[0]]]))
    assert row["alid"] == pytest.approx(np.mean(exact), abs=1e-10)
    dev, _, _ = shifted_gaussian(rng, n, 12, 1.2, "d")
    ev, _, _ = shifted_gaussian(rng, n, 12, 1.2, "e")
    rows = longitudinal(dev, ev, [1, 2, 4, 8, "all"], calibrator="identity", bootstrap=None).rows
    alid = [r["alid"] for r in rows]
    assert all(a < b for a, b in itertools.pairwise(alid))
    assert alid[-1] > 0.9 * math.log2(n)


def copies(rng, n_speakers, k, mu, prefix):
    """Every speaker has one utterance, repeated k times (perfectly correlated trials)."""
    enrolled = np.array([f"{prefix}{j}" for j in range(n_speakers)])
    base = rng.standard_normal((n_speakers, n_speakers))
    base[np.arange(n_speakers), np.arange(n_speakers)] += mu
    scores = np.repeat(base, k, axis=0)
    speakers = np.repeat(enrolled, k)
    ids = [f"{prefix}t{i}" for i in range(scores.shape[0])]
    return ScoreSet(scores, enrolled, speakers, ids)


def test_temperature_rule_undoes_the_over_count_of_repeated_utterances():
    rng = np.random.default_rng(1)
    k, n = 4, 60
    dev, ev = copies(rng, n, k, 2.0, "d"), copies(rng, n, k, 2.0, "e")
    single = longitudinal(dev, ev, [1], bootstrap=None).rows[0]
    summed = longitudinal(dev, ev, [k], fusion="sum", bootstrap=None).rows[0]
    tempered = longitudinal(dev, ev, [k], fusion="temperature", bootstrap=None).rows[0]
    # repeated evidence counted k times: far from the one-utterance disclosure
    assert abs(summed["alid"] - single["alid"]) > 0.3
    assert tempered["temperature"] == pytest.approx(1 / k, rel=0.35)
    # sampling error of ALID over 60 speakers: per-group LID sd / sqrt(60), about 0.15 bit here
    assert tempered["alid"] == pytest.approx(single["alid"], abs=0.15)


def test_k_larger_than_every_speaker_is_an_error_and_cli(tmp_path, capsys):
    dev, ev = simulate_system(leakage=0.5, seed=3, n_enrolled=8, trials_per_speaker=5)
    with pytest.raises(InputError, match=r"k = 6 exceeds the trial count of every speaker \(at most 5 trials"):
        longitudinal(dev, ev, [6])
    dev.save(tmp_path / "dev.npz")
    ev.save(tmp_path / "eval.npz")
    code = main(
        [
            "longitudinal",
            "--dev",
            str(tmp_path / "dev.npz"),
            "--eval",
            str(tmp_path / "eval.npz"),
            "--k",
            "1,2,all",
            "--n-boot",
            "200",
            "--dp-mu",
            "1",
            "--json",
            str(tmp_path / "l.json"),
            "--plot",
            str(tmp_path / "l.png"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "EERbnd" in out
    rows = json.loads((tmp_path / "l.json").read_text())["rows"]
    assert [r["k"] for r in rows] == [1, 2, "all"] and rows[1]["dp_mu_k"] == pytest.approx(math.sqrt(2))
    assert (tmp_path / "l.png").read_bytes()[:4] == b"\x89PNG"
    assert (
        main(["longitudinal", "--dev", str(tmp_path / "dev.npz"), "--eval", str(tmp_path / "eval.npz"), "--k", "9"])
        == 2
    )


def test_mean_fusion_can_be_more_confident_than_every_single_utterance():
    # N = 3, both utterances from the first speaker, LLRs used as they are (identity):
    # each row rules out one non-target speaker, their mean rules out both
    rows = np.array([[0.0, 0.0, -30.0], [0.0, -30.0, 0.0]])
    enrolled = ["a", "b", "c"]
    ev = ScoreSet(rows, enrolled, ["a", "a"], ["u0", "u1"])
    dev = ScoreSet(np.array([[1.0, 0.0, -1.0], [0.0, 1.0, -1.0]]), enrolled, ["a", "b"], ["d0", "d1"])
    single, fused = longitudinal(dev, ev, [1, "all"], fusion="mean", calibrator="identity", bootstrap=None).rows
    # one utterance: p_true = 1 / (1 + 1 + e^-30); mean [0, -15, -15]: p_true = 1 / (1 + 2 e^-15)
    one = math.log2(3.0 / (2.0 + math.exp(-30.0)))
    both = math.log2(3.0 / (1.0 + 2.0 * math.exp(-15.0)))
    assert one == pytest.approx(0.585, abs=5e-4) and both == pytest.approx(1.585, abs=5e-4)
    assert single["alid"] == pytest.approx(one, abs=1e-12) and single["lid_max"] == pytest.approx(one, abs=1e-12)
    assert fused["n_groups"] == 1 and fused["alid"] == pytest.approx(both, abs=1e-12)
    assert fused["alid"] > single["lid_max"] + 0.99
