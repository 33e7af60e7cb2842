"""The PLDA back end of embedding attackers (issue 42): wired through EmbeddingAttacker.compare, on simulated voices.

Embeddings come from lidframe.data.simulate's generative model (identity N(0, I), an
anonymiser's leakage, within-speaker noise), written to files that a ``precomputed``
attacker looks up; the expected scores are computed here from a PLDA fitted in the test
and profiles averaged in the test.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from lidframe.attackers import PrecomputedEmbeddings
from lidframe.cli import main
from lidframe.core.plda import PLDA
from lidframe.data.simulate import _embeddings
from lidframe.data.utterance import Utterance
from lidframe.errors import InputError

DIM = 12


class Voices:
    """Training speakers, enrolled speakers (enrolment and trial utterances) and their embeddings."""

    def __init__(self, folder: Path, *, seed=0, leakage=0.8, within_sd=0.7, nuisance=0.0, enrol_counts=(1, 2, 3, 5)):
        rng = np.random.default_rng(seed)
        # a nuisance direction (a channel, say) that varies within speakers: cosine cannot tell it from the speaker
        channel = np.zeros(DIM)
        channel[:2] = nuisance
        self.table: dict[str, np.ndarray] = {}

        def speak(prefix, identity, n):
            rows = _embeddings(np.repeat(identity[None], n, axis=0), np.full(n, leakage), within_sd, rng)
            rows = rows + rng.standard_normal((n, 1)) * channel
            ids = [f"{prefix}-{i}" for i in range(n)]
            self.table.update(zip(ids, rows))
            return ids

        self.train_ids, self.train_speakers = [], []
        for s in range(150):
            ids = speak(f"train{s:03d}", rng.standard_normal(DIM), 4)
            self.train_ids += ids
            self.train_speakers += [f"train{s:03d}"] * len(ids)
        self.enrolment: dict[str, list[Utterance]] = {}
        self.trials: list[Utterance] = []
        for s in range(24):
            speaker, identity = f"spk{s:03d}", rng.standard_normal(DIM)
            n = enrol_counts[s % len(enrol_counts)]
            self.enrolment[speaker] = [Utterance(u, speaker) for u in speak(f"{speaker}-e", identity, n)]
            self.trials += [Utterance(u, speaker) for u in speak(f"{speaker}-t", identity, 5)]
        self.embeddings = folder / "emb.npz"
        np.savez(self.embeddings, utt_ids=np.array(list(self.table)), vectors=np.stack(list(self.table.values())))
        self.train = folder / "train.npz"
        np.savez(
            self.train,
            vectors=np.stack([self.table[u] for u in self.train_ids]),
            speakers=np.array(self.train_speakers),
            utt_ids=np.array(self.train_ids),
        )

    def write_dir(self, folder: Path, ids, speakers) -> Path:
        folder.mkdir()
        (folder / "wav.scp").write_text("".join(f"{u} {u}.wav\n" for u in ids))
        (folder / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in zip(ids, speakers)))
        return folder


def _auc(scores) -> float:
    """P(mated score > non-mated score): the separation of speakers, by ranks (ties half)."""
    matrix, true = scores.scores, scores.true_index
    mated = np.zeros(matrix.shape, dtype=bool)
    mated[np.arange(len(true)), true] = True
    positive, negative = matrix[mated], matrix[~mated]
    order = np.argsort(np.concatenate([positive, negative]), kind="stable")
    ranks = np.empty(order.size)
    ranks[order] = np.arange(1, order.size + 1)
    values = np.concatenate([positive, negative])
    for value in np.unique(values):  # average ranks of ties
        tied = values == value
        ranks[tied] = ranks[tied].mean()
    return (ranks[: positive.size].sum() - positive.size * (positive.size + 1) / 2) / (positive.size * negative.size)


def test_plda_scores_are_the_llr_of_a_plda_fitted_on_the_training_set_with_each_profiles_count(tmp_path):
    voices = Voices(tmp_path)
    attacker = PrecomputedEmbeddings(path=voices.embeddings, backend="plda", plda_train=voices.train)
    scores = attacker.score(voices.trials, voices.enrolment)
    train = np.load(voices.train)
    expected_plda = PLDA().fit(train["vectors"], train["speakers"])
    unit = {u: v / np.linalg.norm(v) for u, v in voices.table.items()}
    profiles = np.stack([np.mean([unit[u.utt_id] for u in utts], axis=0) for utts in voices.enrolment.values()])
    counts = [len(utts) for utts in voices.enrolment.values()]
    expected = expected_plda.score(np.stack([voices.table[u.utt_id] for u in voices.trials]), profiles, counts)
    np.testing.assert_allclose(scores.scores, expected, atol=1e-9)
    # the counts matter: scoring the profiles as single embeddings gives other LLRs
    assert (
        np.abs(
            expected_plda.score(np.stack([voices.table[u.utt_id] for u in voices.trials]), profiles) - expected
        ).max()
        > 0.1
    )
    assert list(scores.enrolled) == list(voices.enrolment)


def test_compare_is_the_one_scorer_and_counts_default_to_one(tmp_path):
    voices = Voices(tmp_path)
    cosine = PrecomputedEmbeddings(path=voices.embeddings)
    trial = np.stack([voices.table[u.utt_id] for u in voices.trials[:7]])
    profiles = np.stack([voices.table[u] for u in voices.train_ids[:5]])
    expected = (trial / np.linalg.norm(trial, axis=1, keepdims=True)) @ (
        profiles / np.linalg.norm(profiles, axis=1, keepdims=True)
    ).T
    np.testing.assert_allclose(cosine.compare(trial, profiles, counts=np.array([1, 2, 3, 4, 5])), expected, atol=1e-12)
    plda = PrecomputedEmbeddings(path=voices.embeddings, backend="plda", plda_train=voices.train)
    np.testing.assert_array_equal(plda.compare(trial, profiles), plda.compare(trial, profiles, counts=np.ones(5, int)))


def test_a_training_data_dir_is_embedded_by_the_attacker_and_gives_the_files_scores(tmp_path):
    voices = Voices(tmp_path)
    folder = voices.write_dir(tmp_path / "train_dir", voices.train_ids, voices.train_speakers)
    from_dir = PrecomputedEmbeddings(path=voices.embeddings, backend="plda", plda_train=folder)
    from_file = PrecomputedEmbeddings(path=voices.embeddings, backend="plda", plda_train=voices.train)
    np.testing.assert_allclose(
        from_dir.score(voices.trials, voices.enrolment).scores,
        from_file.score(voices.trials, voices.enrolment).scores,
        atol=1e-9,
    )


@pytest.mark.parametrize(("nuisance", "margin"), [(0.0, -0.02), (3.0, 0.1)])
def test_plda_separates_simulated_speakers_at_least_as_well_as_cosine(tmp_path, nuisance, margin):
    """On the simulator's isotropic model cosine is near optimal (PLDA within noise of it); with a within-speaker
    nuisance direction PLDA, which learns it from the training speakers, separates clearly better."""
    voices = Voices(tmp_path, nuisance=nuisance, seed=4)
    cosine = PrecomputedEmbeddings(path=voices.embeddings).score(voices.trials, voices.enrolment)
    plda = PrecomputedEmbeddings(path=voices.embeddings, backend="plda", plda_train=voices.train).score(
        voices.trials, voices.enrolment
    )
    assert _auc(plda) >= _auc(cosine) + margin, (_auc(plda), _auc(cosine))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"backend": "lda"}, "backend must be one of cosine, plda, got 'lda'"),
        ({"backend": "plda"}, "backend=plda needs plda_train"),
        ({"backend": "plda", "plda_train": "missing.npz"}, "plda_train 'missing.npz': no such data dir or file"),
        ({"plda_train": "x.npz"}, "plda_train applies only to backend=plda"),
    ],
)
def test_bad_backend_options_are_refused_when_the_attacker_is_made(tmp_path, options, message):
    with pytest.raises(InputError) as caught:
        PrecomputedEmbeddings(path=tmp_path / "emb.npz", **options)
    assert message in str(caught.value)


def test_bad_training_sets_are_refused_naming_plda_train(tmp_path):
    voices = Voices(tmp_path)
    one = tmp_path / "one.npz"
    np.savez(one, vectors=np.ones((4, DIM)) + np.eye(4, DIM), speakers=np.array(["a"] * 4))
    with pytest.raises(InputError, match=rf"^plda_train {one}: a PLDA training set needs at least 2 speakers, got 1"):
        PrecomputedEmbeddings(path=voices.embeddings, backend="plda", plda_train=one).score(
            voices.trials, voices.enrolment
        )
    narrow = tmp_path / "narrow.npz"
    train = np.load(voices.train)
    np.savez(narrow, vectors=train["vectors"][:, :5], speakers=train["speakers"])
    with pytest.raises(InputError, match="embeddings have dimension 12, the PLDA was trained on dimension 5"):
        PrecomputedEmbeddings(path=voices.embeddings, backend="plda", plda_train=narrow).score(
            voices.trials, voices.enrolment
        )
    with pytest.raises(InputError, match=r"lda_dim 200 is more than the data allows: at most .* = 12"):
        PrecomputedEmbeddings(path=voices.embeddings, backend="plda", plda_train=voices.train, plda_dim=200).score(
            voices.trials, voices.enrolment
        )


def test_a_training_set_with_enrolled_speakers_is_refused(tmp_path):
    voices = Voices(tmp_path)
    enrolled = [u for utts in voices.enrolment.values() if len(utts) > 1 for u in utts]
    ids = voices.train_ids + [u.utt_id for u in enrolled]
    speakers = voices.train_speakers + [u.speaker for u in enrolled]
    leaky = tmp_path / "leaky.npz"
    np.savez(leaky, vectors=np.stack([voices.table[u] for u in ids]), speakers=np.array(speakers))
    attacker = PrecomputedEmbeddings(path=voices.embeddings, backend="plda", plda_train=leaky, enrolment="mean")
    with pytest.raises(InputError, match=r"holds enrolled speakers 'spk001', 'spk002', 'spk003', 'spk005'"):
        attacker.score(voices.trials, voices.enrolment)


def _cli(argv, capsys) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def test_lidframe_score_records_the_backend_and_the_training_sets_digest(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    voices = Voices(tmp_path)
    enrol = voices.write_dir(
        tmp_path / "enrol",
        [u.utt_id for utts in voices.enrolment.values() for u in utts],
        [u.speaker for utts in voices.enrolment.values() for u in utts],
    )
    trials = voices.write_dir(
        tmp_path / "trials", [u.utt_id for u in voices.trials], [u.speaker for u in voices.trials]
    )
    common = [
        "score",
        "--attacker",
        "precomputed",
        "--embeddings",
        voices.embeddings,
        "--enrol",
        enrol,
        "--trials",
        trials,
    ]
    code, err = _cli([*common, "--out", "plda.npz", "--backend", "plda", "--plda-train", voices.train], capsys)
    assert code == 0, err
    with np.load(tmp_path / "plda.npz") as archive:
        record = json.loads(archive["provenance"].item())
    assert ["backend", "plda"] in record["attacker"]["settings"]
    files = {f["role"]: f for f in record["attacker"]["files"]}
    assert files["plda_train"]["sha256"] == hashlib.sha256(voices.train.read_bytes()).hexdigest()
    # a training data dir: its tables are digested and it is a data dir of the record, role plda_train
    folder = voices.write_dir(tmp_path / "train_dir", voices.train_ids, voices.train_speakers)
    code, err = _cli([*common, "--out", "dir.npz", "--backend", "plda", "--plda-train", folder], capsys)
    assert code == 0, err
    with np.load(tmp_path / "dir.npz") as archive:
        record = json.loads(archive["provenance"].item())
    (train_dir,) = [d for d in record["data_dirs"] if d["role"] == "plda_train"]
    assert train_dir["path"] == str(folder)
    digests = {f["path"]: f["sha256"] for f in record["attacker"]["files"]}
    assert digests[str(folder / "utt2spk")] == hashlib.sha256((folder / "utt2spk").read_bytes()).hexdigest()
    # bad input: one line, exit 2, nothing written
    one = tmp_path / "one.npz"
    np.savez(one, vectors=np.ones((4, DIM)) + np.eye(4, DIM), speakers=np.array(["a"] * 4))
    code, err = _cli([*common, "--out", "bad.npz", "--backend", "plda", "--plda-train", one], capsys)
    assert code == 2 and "at least 2 speakers" in err and "Traceback" not in err
    assert not (tmp_path / "bad.npz").exists()
    code, err = _cli([*common, "--out", "bad.npz", "--plda-train", voices.train], capsys)
    assert code == 2 and "plda_train applies only to backend=plda" in err


def test_a_mechanisms_released_trials_are_scored_by_the_attackers_back_end(tmp_path):
    """A grid's system transform (a Gaussian mechanism) scores through compare: PLDA there too, not cosine."""
    from lidframe.privacy.audit import released_scoreset
    from lidframe.privacy.mechanism import GaussianSpeakerMechanism

    voices = Voices(tmp_path)
    attacker = PrecomputedEmbeddings(path=voices.embeddings, backend="plda", plda_train=voices.train)
    spec = "gaussian?mu=5&seed=3"
    scores = released_scoreset(attacker, spec, voices.enrolment, voices.trials)
    released = GaussianSpeakerMechanism.from_spec(spec).anonymise(
        np.stack([voices.table[u.utt_id] for u in voices.trials])
    )
    unit = {u: v / np.linalg.norm(v) for u, v in voices.table.items()}
    profiles = np.stack([np.mean([unit[u.utt_id] for u in utts], axis=0) for utts in voices.enrolment.values()])
    train = np.load(voices.train)
    expected = (
        PLDA()
        .fit(train["vectors"], train["speakers"])
        .score(released, profiles, [len(utts) for utts in voices.enrolment.values()])
    )
    np.testing.assert_allclose(scores.scores, expected, atol=1e-9)


def test_labelled_embeddings_are_read_from_either_layout_and_bad_ones_refused(tmp_path):
    from lidframe.data.embedset import EmbeddingSet, read_labelled_embeddings

    vectors = np.arange(12.0).reshape(4, 3) + 1
    np.savez(tmp_path / "labelled.npz", vectors=vectors, speakers=np.array(["a", "a", "b", "b"]))
    got, speakers = read_labelled_embeddings(tmp_path / "labelled.npz")
    np.testing.assert_array_equal(got, vectors)
    assert list(speakers) == ["a", "a", "b", "b"]
    EmbeddingSet(vectors, vectors[:2], ["a", "b"], ["a", "a", "b", "b"]).save(tmp_path / "set.npz")
    got, speakers = read_labelled_embeddings(tmp_path / "set.npz")
    np.testing.assert_array_equal(got, vectors)
    assert list(speakers) == ["a", "a", "b", "b"]
    cases = {
        "train.npy": (None, "labelled embeddings are read from an .npz"),
        "short.npz": (
            {"vectors": vectors, "speakers": np.array(["a"])},
            "vectors (4, 3) and speakers (1,) do not match",
        ),
        "nan.npz": (
            {
                "vectors": np.where(vectors == 5, np.nan, vectors),
                "speakers": speakers,
                "utt_ids": np.array(list("wxyz")),
            },
            "labelled embeddings hold NaN or inf: 'x'",
        ),
        "extra.npz": ({"vectors": vectors, "speakers": speakers, "weights": np.ones(4)}, "weights"),
        "nolabels.npz": ({"vectors": vectors}, "speakers"),
    }
    for name, (arrays, message) in cases.items():
        path = tmp_path / name
        if arrays is None:
            np.save(path, vectors)
        else:
            np.savez(path, **arrays)
        with pytest.raises(InputError) as caught:
            read_labelled_embeddings(path)
        assert str(caught.value).startswith(str(path)) and message in str(caught.value), str(caught.value)


def test_plda_with_as_norm_normalises_its_own_llrs_with_the_cohorts_and_profiles_counts(tmp_path):
    """The two scoring options compose (issue 42: PLDA 'with the same cohort options'): AS-norm of the PLDA LLRs.

    Written out here: the trial's top-K LLRs against the cohort speakers' profiles (each with its
    utterance count) and each enrolled profile's top-K LLRs with the cohort profiles standing as
    trials (the profile with its count), their means and standard deviations (ddof 1), and
    s' = ((s - mu_e)/sd_e + (s - mu_t)/sd_t) / 2.
    """
    voices = Voices(tmp_path)
    cohort_ids = [u for u, s in zip(voices.train_ids, voices.train_speakers) if int(s[5:]) < 20]
    cohort_speakers = [s for s in voices.train_speakers if int(s[5:]) < 20]
    cohort = voices.write_dir(tmp_path / "cohort", cohort_ids, cohort_speakers)
    k = 7
    attacker = PrecomputedEmbeddings(
        path=voices.embeddings,
        backend="plda",
        plda_train=voices.train,
        score_norm="asnorm",
        cohort=cohort,
        cohort_top_k=k,
    )
    got = attacker.score(voices.trials, voices.enrolment).scores
    train = np.load(voices.train)
    plda = PLDA().fit(train["vectors"], train["speakers"])
    unit = {u: v / np.linalg.norm(v) for u, v in voices.table.items()}
    profiles = np.stack([np.mean([unit[u.utt_id] for u in utts], axis=0) for utts in voices.enrolment.values()])
    counts = np.array([len(utts) for utts in voices.enrolment.values()])
    names = list(dict.fromkeys(cohort_speakers))
    cohort_profiles = np.stack(
        [np.mean([unit[u] for u, s in zip(cohort_ids, cohort_speakers) if s == name], axis=0) for name in names]
    )
    cohort_counts = np.array([cohort_speakers.count(name) for name in names])
    trials = np.stack([voices.table[u.utt_id] for u in voices.trials])
    raw = plda.score(trials, profiles, counts)
    trial_side = plda.score(trials, cohort_profiles, cohort_counts)
    enrolled_side = plda.score(cohort_profiles, profiles, counts).T

    def stats(rows):
        top = np.sort(rows, axis=1)[:, -k:]
        return top.mean(axis=1), top.std(axis=1, ddof=1)

    (mu_t, sd_t), (mu_e, sd_e) = stats(trial_side), stats(enrolled_side)
    expected = 0.5 * ((raw - mu_e[None, :]) / sd_e[None, :] + (raw - mu_t[:, None]) / sd_t[:, None])
    np.testing.assert_allclose(got, expected, atol=1e-9)
    assert np.abs(got - raw).max() > 0.1  # the normalisation did something
