"""Cohort score normalisation as a scoring option of every embedding attacker (issue 42).

The scores are checked against the formula computed here from the attacker's own
embeddings (cosines by ``numpy`` and the statistics by loops); the cohort is refused when
it holds an eval speaker or fewer speakers than K, before anything is embedded; a random
cohort leaves a random attacker random (LID ≈ 0 through lidframe's ``evaluate``); the
score file's provenance records the options and the cohort's digest.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from lidframe import evaluate, registry
from lidframe.attackers import PrecomputedEmbeddings, RandomAttacker, Utterance, group_by_speaker
from lidframe.data.embedset import EmbeddingSet
from lidframe.data.provenance import read_provenance
from lidframe.errors import InputError
from tests.bad_input.conftest import assert_refused
from tests.core.test_cohort import reference


def write_data_dir(folder: Path, utterances: list[Utterance]) -> Path:
    """A Kaldi data dir listing *utterances* (their audio need not exist for attackers that read none)."""
    folder.mkdir(parents=True)
    (folder / "wav.scp").write_text("".join(f"{u.utt_id} {folder}/{u.utt_id}.wav\n" for u in utterances))
    (folder / "utt2spk").write_text("".join(f"{u.utt_id} {u.speaker}\n" for u in utterances))
    return folder


def speakers(prefix: str, n_speakers: int, per_speaker: int, tag: str = "") -> list[Utterance]:
    return [Utterance(f"{tag or prefix}{s}_{k}", f"{prefix}{s}") for s in range(n_speakers) for k in range(per_speaker)]


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a / np.linalg.norm(a, axis=1, keepdims=True)) @ (b / np.linalg.norm(b, axis=1, keepdims=True)).T


def profiles_of(attacker, by_speaker) -> np.ndarray:
    """Mean of the L2-normalised embeddings of each speaker (the default enrolment), written out here."""
    rows = []
    for utts in by_speaker.values():
        emb = attacker.embed(utts)
        rows.append((emb / np.linalg.norm(emb, axis=1, keepdims=True)).mean(axis=0))
    return np.array(rows)


@pytest.fixture()
def eval_side():
    """(enrolment, trials): 5 enrolled speakers with 2 utterances, 3 trials each, and 2 outsider trials of 'x'."""
    enrol = group_by_speaker(speakers("s", 5, 2, tag="e"))
    trials = speakers("s", 5, 3, tag="t") + [Utterance("x_0", "x"), Utterance("x_1", "x")]
    return enrol, trials


def test_compare_is_the_cosine_of_every_pair():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 7)), rng.normal(size=(3, 7))
    np.testing.assert_allclose(RandomAttacker().compare(a, b), cosine(a, b), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize(("score_norm", "k"), [("snorm", None), ("asnorm", 4)])
def test_scores_are_the_formula_on_the_attackers_own_cosines(tmp_path, eval_side, score_norm, k):
    enrol, trials = eval_side
    cohort = group_by_speaker(speakers("c", 9, 2))
    path = write_data_dir(tmp_path / "cohort", [u for utts in cohort.values() for u in utts])
    attacker = RandomAttacker(dim=12, score_norm=score_norm, cohort=path, cohort_top_k=k)
    got = attacker.score(trials, enrol)

    plain = RandomAttacker(dim=12)
    trial_emb, enrolled, cohort_profiles = plain.embed(trials), profiles_of(plain, enrol), profiles_of(plain, cohort)
    raw = cosine(trial_emb, enrolled)
    expected = reference(raw, cosine(trial_emb, cohort_profiles), cosine(cohort_profiles, enrolled).T, k or 9)
    np.testing.assert_allclose(got.scores, expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(plain.score(trials, enrol).scores, raw, rtol=1e-12, atol=1e-12)  # "none": raw cosines


def test_an_embedding_set_cohort_is_its_enrolled_profiles(tmp_path, eval_side):
    enrol, trials = eval_side
    cohort = group_by_speaker(speakers("c", 7, 3))
    plain = RandomAttacker(dim=10)
    cohort_profiles = profiles_of(plain, cohort)
    EmbeddingSet(cohort_profiles[:1], cohort_profiles, list(cohort), ["c0"]).save(tmp_path / "cohort.npz")
    from_set = RandomAttacker(dim=10, score_norm="asnorm", cohort=tmp_path / "cohort.npz", cohort_top_k=3)
    from_dir = RandomAttacker(
        dim=10,
        score_norm="asnorm",
        cohort=write_data_dir(tmp_path / "dir", [u for utts in cohort.values() for u in utts]),
        cohort_top_k=3,
    )
    np.testing.assert_allclose(
        from_set.score(trials, enrol).scores, from_dir.score(trials, enrol).scores, rtol=1e-10, atol=1e-10
    )


def test_precomputed_embeddings_look_up_a_data_dir_cohort_too(tmp_path, eval_side):
    enrol, trials = eval_side
    cohort = speakers("c", 6, 2)
    every = [*[u for utts in enrol.values() for u in utts], *trials, *cohort]
    vectors = np.random.default_rng(3).normal(size=(len(every), 8))
    np.savez(tmp_path / "emb.npz", utt_ids=np.array([u.utt_id for u in every]), vectors=vectors)
    attacker = PrecomputedEmbeddings(
        path=tmp_path / "emb.npz", score_norm="snorm", cohort=write_data_dir(tmp_path / "c", cohort)
    )
    table = dict(zip([u.utt_id for u in every], vectors))

    def profile(utts):
        rows = np.array([table[u.utt_id] for u in utts])
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).mean(axis=0)

    trial_emb = np.array([table[u.utt_id] for u in trials])
    enrolled = np.array([profile(utts) for utts in enrol.values()])
    cohort_profiles = np.array([profile(utts) for utts in group_by_speaker(cohort).values()])
    expected = reference(
        cosine(trial_emb, enrolled), cosine(trial_emb, cohort_profiles), cosine(cohort_profiles, enrolled).T, 6
    )
    np.testing.assert_allclose(attacker.score(trials, enrol).scores, expected, rtol=1e-10, atol=1e-10)


class Counting(RandomAttacker):
    """A random attacker that counts the utterances it embeds."""

    def __init__(self, **options):
        super().__init__(**options)
        self.embedded = 0

    def embed(self, utterances):
        self.embedded += len(utterances)
        return super().embed(utterances)


@pytest.mark.parametrize(
    ("cohort_speakers", "words"),
    [
        (["c0", "c1", "s3", "s1"], "cohort '{path}': speaker 's3' is also an enrolled speaker"),
        (["c0", "x", "c2", "s4"], "cohort '{path}': speaker 'x' is also a trial speaker"),
        (["c0", "c1"], "cohort '{path}': 2 cohort speakers; asnorm needs at least cohort_top_k = 3 (given"),
    ],
    ids=["enrolled speaker", "outsider trial speaker", "smaller than k"],
)
def test_a_cohort_with_eval_speakers_or_too_few_is_refused_before_anything_is_embedded(
    tmp_path, eval_side, cohort_speakers, words
):
    enrol, trials = eval_side
    cohort = [Utterance(f"k{n}", speaker) for n, speaker in enumerate(cohort_speakers)]
    path = write_data_dir(tmp_path / "cohort", cohort)
    attacker = Counting(score_norm="asnorm", cohort=path, cohort_top_k=3)
    with pytest.raises(InputError) as info:
        attacker.score(trials, enrol)
    assert str(info.value).startswith(words.format(path=path)), str(info.value)
    assert attacker.embedded == 0


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"score_norm": "asnorm"}, "score_norm='asnorm' needs cohort="),
        ({"cohort": "c.npz"}, "cohort is given but score_norm='none'"),
        ({"cohort_top_k": 5}, "cohort_top_k is given but score_norm='none'"),
        (
            {"score_norm": "snorm", "cohort": "c.npz", "cohort_top_k": 5},
            "cohort_top_k=5 applies to score_norm='asnorm'",
        ),
        ({"score_norm": "tnorm", "cohort": "c.npz"}, "score_norm must be one of none, snorm, asnorm, got 'tnorm'"),
        ({"score_norm": "asnorm", "cohort": "c.npz", "cohort_top_k": 1}, "attacker 'random': cohort_top_k must be"),
    ],
)
def test_options_that_do_not_fit_are_refused_when_built(options, words):
    with pytest.raises(InputError, match=f"^{words}" if not words.startswith("attacker") else words):
        RandomAttacker(**options)


def test_a_cohort_of_another_dimension_or_kind_is_named(tmp_path, eval_side):
    enrol, trials = eval_side
    profiles = np.random.default_rng(4).normal(size=(5, 3))
    EmbeddingSet(profiles[:1], profiles, [f"c{j}" for j in range(5)], ["c0"]).save(tmp_path / "narrow.npz")
    with pytest.raises(InputError, match=r"cohort '.*narrow.npz': profiles of shape \(5, 3\); .* d = 8"):
        RandomAttacker(dim=8, score_norm="snorm", cohort=tmp_path / "narrow.npz").score(trials, enrol)
    (tmp_path / "list.txt").write_text("c0\n")
    with pytest.raises(InputError, match="expected a data dir .* or an embedding-set .npz"):
        RandomAttacker(score_norm="snorm", cohort=tmp_path / "list.txt").score(trials, enrol)


@pytest.mark.slow
def test_a_random_cohort_leaves_a_random_attacker_random(tmp_path):
    """LID of a random attacker, AS-normed against a random cohort, is ≈ 0 (lidframe's evaluate)."""
    cohort = write_data_dir(tmp_path / "cohort", speakers("c", 60, 2))
    attacker = RandomAttacker(dim=32, seed=5, score_norm="asnorm", cohort=cohort, cohort_top_k=20)
    sets = []
    for split in ("d", "v"):
        enrol = group_by_speaker(speakers(f"{split}s", 40, 2, tag=f"{split}e"))
        sets.append(attacker.score(speakers(f"{split}s", 40, 4, tag=f"{split}t"), enrol))
    result = evaluate(*sets)
    assert abs(result.summary.alid) < 0.05, result.summary.alid
    assert abs(float(np.mean(result.lid))) < 0.05
    # and the normalised scores rank the true speaker uniformly among the 40: mean rank 20.5 (s.e. 0.9)
    scores = sets[1].scores
    true = np.array([list(sets[1].enrolled).index(s) for s in sets[1].trial_speakers])
    ranks = 1 + (scores > scores[np.arange(len(true)), true][:, None]).sum(axis=1)
    assert abs(ranks.mean() - 20.5) < 3, ranks.mean()


def test_the_spec_declares_the_cohorts_files(tmp_path):
    folder = write_data_dir(tmp_path / "cohort", speakers("c", 3, 1))
    found = registry.spec_inputs("attacker", f"random?score_norm=snorm&cohort={folder}")
    assert {p.name for p in found.files} == {"wav.scp", "utt2spk"}
    assert registry.spec_inputs("attacker", "random?cohort_top_k=5").files == ()
    with pytest.raises(InputError, match="input file .*missing.npz.* does not exist"):
        registry.spec_inputs("attacker", f"random?score_norm=snorm&cohort={tmp_path / 'missing.npz'}")


def test_the_score_files_provenance_records_the_options_and_the_cohorts_digest(tmp_path, capsys):
    from lidframe.cli import main

    write_data_dir(tmp_path / "enrol", speakers("s", 4, 2, tag="e"))
    write_data_dir(tmp_path / "trials", speakers("s", 4, 2, tag="t"))
    plain = RandomAttacker()
    cohort = group_by_speaker(speakers("c", 6, 2))
    profiles = profiles_of(plain, cohort)
    EmbeddingSet(profiles[:1], profiles, list(cohort), ["c0"]).save(tmp_path / "cohort.npz")
    out = tmp_path / "scores.npz"
    argv = ["score", "--attacker", "random", "--enrol", tmp_path / "enrol", "--trials", tmp_path / "trials"]
    options = ["--score-norm", "asnorm", "--cohort", tmp_path / "cohort.npz", "--cohort-top-k", "4"]
    assert main([str(a) for a in [*argv, *options, "--out", out]]) == 0
    record = json.loads(read_provenance(out).to_json())["attacker"]
    assert dict(record["settings"]) == {
        "score_norm": "asnorm",
        "cohort": str(tmp_path / "cohort.npz"),
        "cohort_top_k": "4",
    }
    (entry,) = record["files"]
    assert entry["role"] == "cohort"
    assert entry["sha256"] == hashlib.sha256((tmp_path / "cohort.npz").read_bytes()).hexdigest()
    capsys.readouterr()


def test_the_command_refuses_a_cohort_with_an_enrolled_speaker_in_one_line(tmp_path, capsys):
    write_data_dir(tmp_path / "enrol", speakers("s", 4, 2, tag="e"))
    write_data_dir(tmp_path / "trials", speakers("s", 4, 2, tag="t"))
    write_data_dir(tmp_path / "cohort", [*speakers("c", 5, 1), Utterance("k", "s2")])
    (tmp_path / "out").mkdir()
    argv = ["score", "--attacker", "random?score_norm=snorm", "--cohort", tmp_path / "cohort"]
    argv += ["--enrol", tmp_path / "enrol", "--trials", tmp_path / "trials", "--out", tmp_path / "out" / "s.npz"]
    assert_refused(argv, capsys, expect=["cohort", "speaker 's2' is also an enrolled speaker"], watch=[tmp_path])
    inside = [*argv[:-1], tmp_path / "cohort" / "s.npz"]
    assert_refused(inside, capsys, expect=["--out", "lies inside", "an input folder"], watch=[tmp_path])


def test_a_data_dir_cohorts_tables_are_named_by_their_place_in_the_provenance(tmp_path, capsys):
    from lidframe.cli import main

    write_data_dir(tmp_path / "enrol", speakers("s", 4, 2, tag="e"))
    write_data_dir(tmp_path / "trials", speakers("s", 4, 2, tag="t"))
    write_data_dir(tmp_path / "cohort", speakers("c", 5, 2))
    out = tmp_path / "scores.npz"
    argv = ["score", "--attacker", f"random?score_norm=snorm&cohort={tmp_path / 'cohort'}", "--out", out]
    assert main([str(a) for a in [*argv, "--enrol", tmp_path / "enrol", "--trials", tmp_path / "trials"]]) == 0
    files = {f["role"]: f for f in json.loads(read_provenance(out).to_json())["attacker"]["files"]}
    assert set(files) == {"cohort wav.scp", "cohort utt2spk"}
    for name in ("wav.scp", "utt2spk"):
        assert (
            files[f"cohort {name}"]["sha256"] == hashlib.sha256((tmp_path / "cohort" / name).read_bytes()).hexdigest()
        )
    capsys.readouterr()
