"""Bad embeddings: embedding-set ``.npz`` files (``evaluate``) and precomputed embeddings (``score``).

Embedding sets hold trial vectors (T, d), enrolled profiles (N, d) and the ids; precomputed
embeddings (``--attacker precomputed --embeddings FILE``) hold one vector per utterance id.
Each broken file is refused with one line naming it and what is wrong; nothing is written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.bad_input.conftest import assert_refused
from tests.data.npz_craft import npy_header, stored, write_zip, zip_bomb_member

N, T, D = 5, 20, 8


def embedding_fields(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    enrol = rng.normal(size=(N, D))
    speaker = np.arange(T) % N
    return {
        "trial_vectors": enrol[speaker] + 0.8 * rng.normal(size=(T, D)),
        "enrol_vectors": enrol,
        "enrolled": np.array([f"s{j}" for j in range(N)]),
        "trial_speakers": np.array([f"s{k}" for k in speaker]),
        "trial_ids": np.array([f"u{i:02d}" for i in range(T)]),
    }


def changed(**changes) -> dict[str, np.ndarray]:
    out = embedding_fields(1)
    out.update(changes)
    return {k: v for k, v in out.items() if v is not None}


def savez(path: Path, arrays: dict, **kwargs) -> Path:
    np.savez(path, **arrays, **kwargs)
    return path


# ------------------------------------------------------------------- embedding-set cases
def set_missing_enrol_vectors(d):
    return savez(d / "e.npz", changed(enrol_vectors=None)), ["e.npz", "missing key(s) enrol_vectors", "embedding set"]


def set_missing_ids(d):
    return savez(d / "e.npz", changed(trial_speakers=None)), ["e.npz", "missing key(s) trial_speakers"]


def set_dimensions_differ(d):
    return savez(d / "e.npz", changed(enrol_vectors=np.ones((N, D - 2)))), [
        "e.npz",
        "(T, d) and enrol_vectors (N, d)",
        f"({T}, {D}) and ({N}, {D - 2})",
    ]


def set_vectors_1d(d):
    return savez(d / "e.npz", changed(trial_vectors=np.ones(T))), ["e.npz", "trial_vectors (T, d)"]


def set_zero_trial_vector(d):
    vectors = embedding_fields(1)["trial_vectors"]
    vectors[4] = 0.0
    return savez(d / "e.npz", changed(trial_vectors=vectors)), [
        "e.npz",
        "non-zero vectors",
        "zero trial vectors",
        "'u04'",
    ]


def set_zero_profile(d):
    vectors = embedding_fields(1)["enrol_vectors"]
    vectors[2] = 0.0
    return savez(d / "e.npz", changed(enrol_vectors=vectors)), ["e.npz", "zero enrolled speaker vectors", "'s2'"]


def set_nan_trial(d):
    vectors = embedding_fields(1)["trial_vectors"]
    vectors[7, 3] = np.nan
    return savez(d / "e.npz", changed(trial_vectors=vectors)), ["e.npz", "trial vectors hold nan or inf", "'u07'"]


def set_inf_profile(d):
    vectors = embedding_fields(1)["enrol_vectors"]
    vectors[0, 0] = -np.inf
    return savez(d / "e.npz", changed(enrol_vectors=vectors)), ["e.npz", "enrolled speaker vectors hold nan", "'s0'"]


def set_object_ids(d):
    ids = np.array([f"s{j}" for j in range(N)], dtype=object)
    return savez(d / "e.npz", changed(enrolled=ids), allow_pickle=True), ["e.npz", "enrolled.npy", "python objects"]


def set_vectors_as_text(d):
    return savez(d / "e.npz", changed(enrol_vectors=embedding_fields(1)["enrol_vectors"].astype(str))), [
        "e.npz",
        "enrol_vectors has dtype <U",
        "real numbers",
    ]


def set_vectors_complex(d):
    return savez(d / "e.npz", changed(trial_vectors=embedding_fields(1)["trial_vectors"] * 1j)), [
        "e.npz",
        "trial_vectors has dtype complex128",
    ]


def set_extra_key(d):
    return savez(d / "e.npz", changed(labels=np.zeros(T))), ["e.npz", "unexpected key", "'labels'", "embedding set"]


def set_also_holds_scores(d):
    return savez(d / "e.npz", changed(scores=np.zeros((T, N)))), ["e.npz", "unexpected key", "'scores'"]


def set_enrolled_too_short(d):
    return savez(d / "e.npz", changed(enrolled=np.array(["s0", "s1"]))), ["e.npz", "enrolled has shape (2,)"]


def set_one_enrolled(d):
    arrays = changed(enrol_vectors=np.ones((1, D)), enrolled=np.array(["s0"]))
    return savez(d / "e.npz", arrays), ["e.npz", "N >= 2"]


def set_duplicate_enrolled(d):
    return savez(d / "e.npz", changed(enrolled=np.array(["s0", "s1", "s2", "s3", "s1"]))), [
        "e.npz",
        "enrolled speaker id 's1' appears more than once",
    ]


def set_duplicate_trial_ids(d):
    ids = embedding_fields(1)["trial_ids"]
    ids[3] = ids[0]
    return savez(d / "e.npz", changed(trial_ids=ids)), ["e.npz", "trial id 'u00' appears more than once"]


def set_forged_header(d):
    members = [stored(f"{k}.npy", v) for k, v in embedding_fields(1).items() if k != "trial_vectors"]
    members.insert(0, {"name": "trial_vectors.npy", "data": npy_header((10**9, 192), "<f4") + bytes(256)})
    return write_zip(d / "e.npz", members), ["e.npz", "trial_vectors.npy", "(1000000000, 192) float32", "truncated"]


def set_zip_bomb(d):
    members = [zip_bomb_member("trial_vectors.npy", 70)]
    members += [stored(f"{k}.npy", v) for k, v in embedding_fields(1).items() if k != "trial_vectors"]
    return write_zip(d / "e.npz", members), ["e.npz", "zip bomb"]


def set_identical_profiles(d):
    # every enrolled profile the same vector: each trial's N cosines are equal, z-norm undefined
    return savez(d / "e.npz", changed(enrol_vectors=np.ones((N, D)))), ["e.npz (eval)", "z-norm is undefined", "'u00'"]


def set_all_outsiders(d):
    speakers = np.array([f"x{i}" for i in range(T)])
    return savez(d / "e.npz", changed(trial_speakers=speakers)), ["e.npz (eval)", "no trial's speaker is enrolled"]


SET_CASES: list[Callable] = [
    set_missing_enrol_vectors,
    set_missing_ids,
    set_dimensions_differ,
    set_vectors_1d,
    set_zero_trial_vector,
    set_zero_profile,
    set_nan_trial,
    set_inf_profile,
    set_object_ids,
    set_vectors_as_text,
    set_vectors_complex,
    set_extra_key,
    set_also_holds_scores,
    set_enrolled_too_short,
    set_one_enrolled,
    set_duplicate_enrolled,
    set_duplicate_trial_ids,
    set_forged_header,
    set_zip_bomb,
    set_identical_profiles,
    set_all_outsiders,
]


@pytest.mark.parametrize("case", SET_CASES, ids=[c.__name__ for c in SET_CASES])
@pytest.mark.parametrize("binary", [True, False], ids=["materialised", "streamed"])
def test_bad_embedding_set_is_refused(case, binary, tmp_path, capsys):
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    savez(data / "dev.npz", embedding_fields(0))
    bad, expect = case(data)
    argv = ["evaluate", "--dev", data / "dev.npz", "--eval", bad, "--device", "cpu", "--json", out / "s.json"]
    assert_refused([*argv, *([] if binary else ["--no-binary-metrics"])], capsys, expect=expect, watch=[data, out])


# ------------------------------------------------------------------- precomputed embeddings
def kaldi_dirs(root: Path) -> tuple[Path, Path]:
    """Enrolment (2 utterances of each of N speakers) and trial (T) data dirs; the audio is never read."""
    enrol, trials = root / "enrol", root / "trials"
    for folder, utts in (
        (enrol, [(f"e{j}{k}", f"s{j}") for j in range(N) for k in range(2)]),
        (trials, [(f"u{i:02d}", f"s{i % N}") for i in range(T)]),
    ):
        folder.mkdir()
        (folder / "wav.scp").write_text("".join(f"{u} {u}.wav\n" for u, _ in utts))
        (folder / "utt2spk").write_text("".join(f"{u} {s}\n" for u, s in utts))
    return enrol, trials


def utterance_ids() -> list[str]:
    return [f"e{j}{k}" for j in range(N) for k in range(2)] + [f"u{i:02d}" for i in range(T)]


def vectors(seed: int = 3) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(len(utterance_ids()), D))


def npy_with_ids(d: Path, array: np.ndarray, ids: list[str] | None = None, **kwargs) -> Path:
    np.save(d / "emb.npy", array, **kwargs)
    (d / "emb.ids").write_text("\n".join(utterance_ids() if ids is None else ids) + "\n")
    return d / "emb.npy"


def pre_npy_of_objects(d):
    array = np.empty(len(utterance_ids()), dtype=object)
    array[:] = list(vectors())
    return npy_with_ids(d, array, allow_pickle=True), ["emb.npy", "python objects", "does not unpickle"]


def pre_npy_without_ids(d):
    np.save(d / "emb.npy", vectors())
    return d / "emb.npy", ["emb.npy", "needs its ids in emb.ids"]


def pre_npy_ids_count_differs(d):
    return npy_with_ids(d, vectors(), utterance_ids()[:-3]), ["emb.npy", f"({len(utterance_ids())}, {D}) array", "ids"]


def pre_npy_repeated_id(d):
    ids = utterance_ids()
    ids[5] = ids[4]
    return npy_with_ids(d, vectors(), ids), ["emb.npy", "utterance ids repeated", f"'{ids[4]}'"]


def pre_npy_truncated(d):
    path = npy_with_ids(d, vectors())
    path.write_bytes(path.read_bytes()[:-100])
    return path, ["emb.npy", "truncated"]


def pre_npy_forged_header(d):
    path = npy_with_ids(d, vectors())
    path.write_bytes(npy_header((4_500_000_000, 1)) + bytes(64))
    return path, ["emb.npy", "(4500000000, 1) float64", "36.0 GB", "truncated"]


def pre_npy_not_npy(d):
    path = npy_with_ids(d, vectors())
    path.write_text("0.1 0.2 0.3\n")
    return path, ["emb.npy", "not a .npy array"]


def pre_npy_text_vectors(d):
    return npy_with_ids(d, vectors().astype(str)), ["emb.npy", "has dtype <U", "real numbers"]


def pre_npz_vectors_without_ids(d):
    return savez(d / "emb.npz", {"vectors": vectors()}), ["emb.npz", "missing key(s) utt_ids"]


def pre_npz_rows_differ(d):
    return savez(d / "emb.npz", {"utt_ids": np.array(utterance_ids()), "vectors": vectors()[:-1]}), [
        "emb.npz",
        "utt_ids",
        "do not match",
    ]


def pre_npz_object_ids(d):
    arrays = {"utt_ids": np.array(utterance_ids(), dtype=object), "vectors": vectors()}
    return savez(d / "emb.npz", arrays, allow_pickle=True), ["emb.npz", "utt_ids.npy", "python objects"]


def pre_npz_extra_key(d):
    arrays = {"utt_ids": np.array(utterance_ids()), "vectors": vectors(), "speakers": np.zeros(3)}
    return savez(d / "emb.npz", arrays), ["emb.npz", "unexpected key", "'speakers'"]


def pre_npz_repeated_id(d):
    ids = utterance_ids()
    ids[-1] = ids[0]
    return savez(d / "emb.npz", {"utt_ids": np.array(ids), "vectors": vectors()}), [
        "emb.npz",
        "utterance ids repeated",
        f"'{ids[0]}'",
    ]


def pre_npz_per_id_dimensions_differ(d):
    table = dict(zip(utterance_ids(), vectors()))
    table["u03"] = np.ones(D + 1)
    return savez(d / "emb.npz", table), ["emb.npz", "different dimensions", f"[{D}, {D + 1}]"]


def pre_npz_per_id_nan(d):
    table = dict(zip(utterance_ids(), vectors()))
    table["e11"][2] = np.nan
    return savez(d / "emb.npz", table), ["emb.npz", "non-finite embedding values", "'e11'"]


def pre_npz_per_id_matrix(d):
    table = dict(zip(utterance_ids(), vectors()))
    table["u01"] = np.ones((2, D))
    return savez(d / "emb.npz", table), ["emb.npz", "'u01'", "not vectors"]


def pre_npz_per_id_text(d):
    table = dict(zip(utterance_ids(), vectors()))
    table["u02"] = np.array(["a"] * D)
    return savez(d / "emb.npz", table), ["emb.npz", "u02 has dtype <U1", "real numbers"]


def pre_missing_utterance(d):
    ids = utterance_ids()
    keep = [i for i, u in enumerate(ids) if u != "u07"]
    return savez(d / "emb.npz", {"utt_ids": np.array(ids)[keep], "vectors": vectors()[keep]}), [
        "no embedding for utterance id(s) 'u07'"
    ]


def pre_zero_vector(d):
    v = vectors()
    v[utterance_ids().index("e20")] = 0.0
    return savez(d / "emb.npz", {"utt_ids": np.array(utterance_ids()), "vectors": v}), [
        "non-zero vectors",
        "zero enrolment embeddings",
        "'e20'",
    ]


def pre_bad_crc(d):
    path = savez(d / "emb.npz", {"utt_ids": np.array(utterance_ids()), "vectors": vectors()})
    raw = bytearray(path.read_bytes())
    raw[bytes(raw).index(vectors().tobytes()[:16]) + 9] ^= 0x01
    path.write_bytes(bytes(raw))
    return path, ["emb.npz", "vectors.npy", "crc"]


def pre_unknown_suffix(d):
    (d / "emb.txt").write_text("u00 0.1 0.2\n")
    return d / "emb.txt", ["emb.txt", "unknown embeddings format '.txt'"]


def pre_missing_file(d):
    return d / "absent.npz", ["absent.npz", "no such embeddings file"]


PRE_CASES: list[Callable] = [
    pre_npy_of_objects,
    pre_npy_without_ids,
    pre_npy_ids_count_differs,
    pre_npy_repeated_id,
    pre_npy_truncated,
    pre_npy_forged_header,
    pre_npy_not_npy,
    pre_npy_text_vectors,
    pre_npz_vectors_without_ids,
    pre_npz_rows_differ,
    pre_npz_object_ids,
    pre_npz_extra_key,
    pre_npz_repeated_id,
    pre_npz_per_id_dimensions_differ,
    pre_npz_per_id_nan,
    pre_npz_per_id_matrix,
    pre_npz_per_id_text,
    pre_missing_utterance,
    pre_zero_vector,
    pre_bad_crc,
    pre_unknown_suffix,
    pre_missing_file,
]


@pytest.mark.parametrize("case", PRE_CASES, ids=[c.__name__ for c in PRE_CASES])
def test_bad_precomputed_embeddings_are_refused(case, tmp_path, capsys):
    data, out = tmp_path / "data", tmp_path / "out"
    data.mkdir()
    out.mkdir()
    enrol, trials = kaldi_dirs(data)
    bad, expect = case(data)
    argv = ["score", "--attacker", "precomputed", "--embeddings", bad, "--enrol", enrol, "--trials", trials]
    assert_refused([*argv, "--out", out / "scores.npz"], capsys, expect=expect, watch=[data, out])


def test_good_precomputed_embeddings_score_as_cosines(tmp_path, capsys):
    """The same layouts, unbroken, give the cosine scores computed here by hand (the refusals are not blanket)."""
    from lidframe import ScoreSet
    from lidframe.cli import main

    enrol, trials = kaldi_dirs(tmp_path)
    table = dict(zip(utterance_ids(), vectors()))
    unit = {u: v / np.linalg.norm(v) for u, v in table.items()}
    profiles = np.array([(unit[f"e{j}0"] + unit[f"e{j}1"]) / 2 for j in range(N)])
    trial = np.array([unit[f"u{i:02d}"] for i in range(T)])
    want = (trial @ profiles.T) / np.linalg.norm(profiles, axis=1)
    for name, path in (("npy", npy_with_ids(tmp_path, vectors())), ("npz", savez(tmp_path / "emb.npz", table))):
        out = tmp_path / f"{name}.npz"
        argv = ["score", "--attacker", "precomputed", "--embeddings", path, "--enrol", enrol, "--trials", trials]
        assert main([str(a) for a in [*argv, "--out", out]]) == 0, capsys.readouterr().err
        np.testing.assert_allclose(ScoreSet.load(out).scores, want, rtol=0, atol=1e-12)
