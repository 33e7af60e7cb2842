"""When the GDP bounds hold: trial speakers from the prior, one trial release, any enrolment knowledge."""

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import norm

from lidframe import Bootstrap, InputError
from lidframe.cli import main
from lidframe.core.lid import lid_from_llr
from lidframe.metrics.detection import eer_rocch
from lidframe.privacy.audit import EmbeddingSplit, dp_audit, trial_balance
from lidframe.privacy.mechanism import GaussianSpeakerMechanism, compose_mu, gdp_eer_bound, gdp_mi_bound_bits

# ---------------------------------------------------------------------------------------
# the trial-speaker condition of dp-audit's bounds


def unit_centroid_split(rng, prefix, trials_per_speaker, n=12, d=32):
    """Speakers at random unit centroids; trial j of speaker s is its centroid (counts per speaker given)."""
    c = rng.normal(size=(n, d))
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    speakers = [f"{prefix}{j}" for j in range(n)]
    owner = np.repeat(np.arange(n), trials_per_speaker)
    return EmbeddingSplit(
        {s: c[j][None, :] for j, s in enumerate(speakers)},
        c[owner],
        np.array(speakers)[owner],
        np.array([f"{prefix}t{i}" for i in range(owner.size)]),
    )


def test_audit_on_trials_of_one_speaker_does_not_check_the_bounds_and_says_why():
    rng = np.random.default_rng(3)
    dev = unit_centroid_split(rng, "d", 10)
    one_speaker = [60] + [0] * 11  # all 60 eval trials from the first of 12 enrolled speakers
    ev = unit_centroid_split(rng, "e", one_speaker)
    # one speaker is one cluster: resample trials (the speaker bootstrap needs two speakers)
    rows = dp_audit(dev, ev, [0.5, 4.0], bootstrap=Bootstrap(n_boot=100, unit="trial", seed=0), seed=2).rows
    for row in rows:
        assert row["alid_bound_applies"] is False and row["eer_bound_applies"] is False
        assert "not balanced" in row["bounds_reason"] and "0 to 60 per speaker" in row["bounds_reason"]
        # KL(point mass || uniform over 12) = log2 12
        assert row["trial_prior_kl_bits"] == pytest.approx(math.log2(12), abs=1e-12)
        assert row["violations"] == []


def test_audit_on_balanced_trials_checks_the_bounds():
    rng = np.random.default_rng(3)
    dev, ev = unit_centroid_split(rng, "d", 10), unit_centroid_split(rng, "e", 5)
    row = dp_audit(dev, ev, [1.0], bootstrap=Bootstrap(n_boot=100, seed=0), seed=2).rows[0]
    assert row["alid_bound_applies"] is True and row["eer_bound_applies"] is True
    assert row["trial_prior_kl_bits"] == 0.0 and "balanced (5 per enrolled speaker)" in row["bounds_reason"]


@given(st.lists(st.integers(0, 6), min_size=2, max_size=8).filter(lambda c: sum(c) > 0))
def test_trial_balance_is_exact_balance_and_its_kl(counts):
    enrolled = [f"s{j}" for j in range(len(counts))]
    speakers = np.repeat(enrolled, counts)
    got = trial_balance(speakers, enrolled)
    n, total = len(counts), sum(counts)
    want_kl = sum(c / total * math.log2(c / total * n) for c in counts if c)
    assert got.balanced == (min(counts) == max(counts))
    assert got.kl_bits == pytest.approx(want_kl if not got.balanced else 0.0, abs=1e-12)
    assert (got.kl_bits == 0.0) == got.balanced  # unequal counts always have KL > 0


def test_a_non_enrolled_trial_speaker_is_named():
    rng = np.random.default_rng(0)
    dev, ev = unit_centroid_split(rng, "d", 2), unit_centroid_split(rng, "e", 2)
    speakers = ev.trial_speakers.astype(object)
    speakers[3] = "stranger"
    ev = EmbeddingSplit(ev.enrol, ev.trials, speakers, ev.trial_ids)
    with pytest.raises(InputError, match="eval trial et3: speaker stranger is not enrolled"):
        dp_audit(dev, ev, [1.0], bootstrap=Bootstrap(n_boot=100))


def write_data_dir(folder, utts):
    folder.mkdir()
    (folder / "wav.scp").write_text("".join(f"{u} {u}.wav\n" for u, _ in utts))
    (folder / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utts))
    return str(folder)


def test_dp_audit_cli_says_when_the_bounds_are_not_checked(tmp_path, capsys):
    rng = np.random.default_rng(5)
    ids, vectors, dirs = [], [], {}
    for split in ("dev", "eval"):
        centroids = rng.normal(size=(6, 16))
        enrol = [(f"{split}-e{j}", f"{split}-spk{j}") for j in range(6)]
        # dev trials balanced; eval trials from speakers 0 (20) and 1 (4) only (the CLI's
        # speaker bootstrap needs two speakers)
        owners = np.arange(6).repeat(4) if split == "dev" else np.r_[np.zeros(20, int), np.ones(4, int)]
        trials = [(f"{split}-t{i}", f"{split}-spk{j}") for i, j in enumerate(owners)]
        dirs[split] = (
            write_data_dir(tmp_path / f"{split}_enrol", enrol),
            write_data_dir(tmp_path / f"{split}_trials", trials),
        )
        ids += [u for u, _ in enrol + trials]
        vectors += [centroids[j] for j in range(6)] + [centroids[j] + 0.1 * rng.normal(size=16) for j in owners]
    np.savez(tmp_path / "emb.npz", utt_ids=np.array(ids), vectors=np.array(vectors))
    out = tmp_path / "audit.json"
    code = main(
        ["dp-audit", "--mu", "1", "--n-boot", "100", "--embeddings", str(tmp_path / "emb.npz"),
         "--dev-enrol", dirs["dev"][0], "--dev-trials", dirs["dev"][1],
         "--enrol", dirs["eval"][0], "--trials", dirs["eval"][1], "--json", str(out)]
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert code == 0
    assert "not checked (unbalanced trials)" in printed and "bounds NOT checked: eval trials not balanced" in printed
    row = json.loads(out.read_text())["rows"][0]
    assert row["alid_bound_applies"] is False and row["eer_bound_applies"] is False
    assert "not balanced" in row["bounds_reason"] and row["violations"] == []


def test_an_attacker_favouring_the_only_trial_speaker_beats_both_bounds_at_any_mu():
    # what the condition guards against: all T trials from speaker 0 of N, an attacker
    # that ignores the release and puts LLR L on speaker 0 (0 elsewhere)
    n_enrolled, n_trials, big = 8, 50, 30.0
    llr = np.zeros((n_trials, n_enrolled))
    llr[:, 0] = big
    lid = lid_from_llr(llr, np.full(n_enrolled, -math.log(n_enrolled)), np.zeros(n_trials, int))
    # LID = log2(N e^L / (e^L + N - 1)) on every trial, about log2 8 = 3 bits
    want = math.log2(n_enrolled * math.exp(big) / (math.exp(big) + n_enrolled - 1))
    np.testing.assert_allclose(lid, want, rtol=0, atol=1e-12)
    mu = 0.5
    assert lid.mean() > 10 * gdp_mi_bound_bits(mu)  # 3 bits against 0.18
    # the pairwise EER: mated pairs (trial, 0) all score L, non-mated pairs (trial, j != 0) all 0
    assert eer_rocch(llr[:, 0], llr[:, 1:].ravel()) == 0.0 < gdp_eer_bound(mu)


# ---------------------------------------------------------------------------------------
# enrolment averaging does not weaken the guarantee of linking one trial


def plug_in_eer(mu, k, clip_norm=1.0):
    """Exact EER of the nearest-centroid attacker with k-release enrolment means (1-d worst case).

    Speakers A and B sit at +U and -U (their distance is the sensitivity 2U), sigma = 2U / mu.
    The attacker averages k releases of each enrolment, e_A and e_B, and scores a trial
    release y by (y - (e_A + e_B) / 2) (e_A - e_B).  With u = n_A + n_B and v = n_A - n_B
    (independent, each N(0, 2 sigma^2 / k)) the two factors are independent normals,
    N(U, sigma^2 (1 + 1 / (2k))) and N(2U, 2 sigma^2 / k), and by the A <-> B symmetry the
    EER is P(score < 0 | y from A).
    """
    sigma = 2 * clip_norm / mu
    p_first_negative = norm.cdf(-clip_norm / (sigma * math.sqrt(1 + 1 / (2 * k))))
    p_second_negative = norm.cdf(-2 * clip_norm / (sigma * math.sqrt(2 / k)))
    return p_first_negative * (1 - p_second_negative) + (1 - p_first_negative) * p_second_negative


def test_averaged_enrolment_releases_leave_a_trial_mu_gdp():
    mu, k, n_trials = 1.0, 16, 20000
    mechanism = GaussianSpeakerMechanism(mu, clip_norm=1.0, seed=11)
    clean_a = np.full((n_trials, 1), 3.0)  # norm above U = 1: clipped to +1
    enrol_a = mechanism.anonymise(np.repeat(clean_a, k, axis=0)).reshape(n_trials, k).mean(1)
    enrol_b = mechanism.anonymise(np.repeat(-clean_a, k, axis=0)).reshape(n_trials, k).mean(1)
    trial_a, trial_b = mechanism.anonymise(clean_a)[:, 0], mechanism.anonymise(-clean_a)[:, 0]
    midpoint, direction = (enrol_a + enrol_b) / 2, enrol_a - enrol_b
    mated, non_mated = (trial_a - midpoint) * direction, (trial_b - midpoint) * direction
    # fresh enrolment releases per trial: 2 n independent errors at threshold 0
    measured = (np.mean(mated < 0) + np.mean(non_mated >= 0)) / 2
    exact = plug_in_eer(mu, k)
    tolerance = 4 * math.sqrt(exact * (1 - exact) / (2 * n_trials))  # 4 binomial standard errors
    assert measured == pytest.approx(exact, abs=tolerance)
    assert eer_rocch(mated, non_mated) == pytest.approx(exact, abs=tolerance)
    # the guarantee of the one trial release stands: 0.312 >= Phi(-1/2) = 0.3085 ...
    assert exact >= gdp_eer_bound(mu)
    assert exact == pytest.approx(0.3121, abs=5e-4)
    # ... and is nowhere near what mu sqrt(k) would allow, Phi(-2) = 0.023
    assert measured > gdp_eer_bound(compose_mu(mu, k)) + 25 * tolerance
    # with exact centroids (k -> infinity) the attacker reaches the bound itself
    assert plug_in_eer(mu, 10**12) == pytest.approx(gdp_eer_bound(mu), abs=1e-6)


def test_k_trial_releases_of_one_speaker_compose_to_mu_sqrt_k():
    # the longitudinal attacker: k releases of the same trial speaker, exact centroids +-U;
    # their mean is sufficient and the attacker reaches Phi(-mu sqrt(k) / 2)
    mu, k, n_groups = 1.0, 16, 20000
    mechanism = GaussianSpeakerMechanism(mu, clip_norm=1.0, seed=12)
    clean = np.full((n_groups * k, 1), 3.0)
    mean_a = mechanism.anonymise(clean).reshape(n_groups, k).mean(1)
    mean_b = mechanism.anonymise(-clean).reshape(n_groups, k).mean(1)
    measured = (np.mean(mean_a < 0) + np.mean(mean_b >= 0)) / 2
    want = gdp_eer_bound(compose_mu(mu, k))
    assert measured == pytest.approx(want, abs=4 * math.sqrt(want * (1 - want) / (2 * n_groups)))
