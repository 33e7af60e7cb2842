"""The VoicePrivacy readers: the recipe's embedding cache and score files, read back exactly, every id checked.

Folders are built by :mod:`tests.data.vpc_folders` in exactly the recipe's layout (tensors
written here with ``torch.save``); what lidframe reads is compared with the arrays that
were saved, never with lidframe's own output.
"""

from __future__ import annotations

import pickle
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lidframe.data.voiceprivacy import (
    embedding_set,
    read_enrolment,
    read_scores,
    read_trials,
    read_vectors,
)
from lidframe.data.voiceprivacy_runs import find_systems
from lidframe.errors import InputError
from tests.data.vpc_folders import GENDERS, cosines, torch, write_exp, write_level


class RunsCode:
    """Unpickling this calls ``open(path, "w")``: the marker file appears if pickled code ever runs."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def level(tmp_path: Path, n: int = 4, d: int = 3, **kwargs) -> Path:
    """A good utt-level folder of *n* utterances of two speakers (one f, one m), with *kwargs* for :func:`write_level`."""
    folder = tmp_path / "ds" / "utt-level"
    ids = [f"u{i}" for i in range(n)]
    speakers = ["a" if i % 2 else "b" for i in range(n)]
    write_level(
        folder, ids, speakers, np.arange(n * d, dtype=np.float32).reshape(n, d) + 1, {"a": "f", "b": "m"}, **kwargs
    )
    return folder


# ------------------------------------------------------------------------- reading back


@given(
    n=st.integers(1, 12),
    d=st.integers(1, 5),
    dtype=st.sampled_from([np.float32, np.float64]),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_level_folder_reads_back_exactly_with_each_id_on_its_own_row(n, d, dtype, seed):
    rng = np.random.default_rng(seed)
    ids = [f"utt{rng.integers(10**6)}-{i}" for i in range(n)]  # id2idx sorted by id: not the row order
    speakers = [f"s{rng.integers(3)}" for _ in range(n)]
    gender_of = {s: rng.choice(GENDERS) for s in set(speakers)}
    vectors = rng.normal(size=(n, d)).astype(dtype)
    with tempfile.TemporaryDirectory() as folder:
        write_level(Path(folder) / "x", ids, speakers, vectors, gender_of)
        got = read_vectors(Path(folder) / "x")
    assert got.identifiers.tolist() == ids and got.speakers.tolist() == speakers
    assert got.vectors.dtype == dtype and np.array_equal(got.vectors, vectors)
    assert got.gender_of == gender_of


def test_the_exp_tree_reads_back_and_splits_by_gender(tmp_path):
    exp = write_exp(tmp_path)
    emb = exp.root / "asv_ssl/cosine_out/emb_xvect"
    enrol_saved = exp.get("asv_ssl/cosine_out", "libri_test_enrolls")
    enrol = read_enrolment(emb / "libri_test_enrolls")
    assert enrol.identifiers.tolist() == enrol_saved.identifiers and np.array_equal(enrol.vectors, enrol_saved.vectors)
    trials = {g: exp.get("asv_ssl/cosine_out", f"libri_test_trials_{g}") for g in GENDERS}
    for gender in GENDERS:
        one = embedding_set(emb / "libri_test_enrolls", [emb / f"libri_test_trials_{gender}"], gender=gender)
        rows = enrol_saved.rows(gender)
        assert one.enrolled.tolist() == [enrol_saved.speakers[i] for i in rows]
        assert {enrol_saved.gender_of[s] for s in one.enrolled} == {gender}
        assert np.array_equal(one.enrol_vectors, enrol_saved.vectors[rows])
        assert one.trial_ids.tolist() == trials[gender].identifiers
        assert one.trial_speakers.tolist() == trials[gender].speakers
        assert np.array_equal(one.trial_vectors, trials[gender].vectors)
        assert one.n_outsider_trials == 3  # the one speaker of the gender who is not enrolled, 3 trials
    pooled = embedding_set(emb / "libri_test_enrolls", [emb / "libri_test_trials_f", emb / "libri_test_trials_m"])
    assert pooled.enrolled.tolist() == enrol_saved.speakers
    assert pooled.trial_ids.tolist() == trials["f"].identifiers + trials["m"].identifiers
    assert np.array_equal(pooled.trial_vectors, np.concatenate([trials["f"].vectors, trials["m"].vectors]))
    assert pooled.n_outsider_trials == 6


def test_find_systems_finds_each_suffix_of_each_results_folder_and_names_what_it_leaves(tmp_path):
    exp = write_exp(tmp_path, scores=True)
    for source in ("embeddings", "scores"):
        runs = find_systems(exp.root, source=source)
        assert [s.label for s in runs.systems] == [
            "original [asv_ssl/cosine_out]",
            "mcadams [asv_anon_mcadams/cosine_out]",
            "mcadams [asv_ssl/cosine_out]",
        ]
    assert find_systems(exp.root).ignored == [
        "asv_ssl/cosine_out/emb_xvect/libri_dev_trials_mixed",
        "asv_ssl/cosine_out/emb_xvect/train-clean-360",
    ]
    for below in ("asv_ssl", "asv_ssl/cosine_out", "asv_ssl/cosine_out/emb_xvect"):
        assert [s.label for s in find_systems(exp.root / below).systems] == [
            "original [asv_ssl/cosine_out]",
            "mcadams [asv_ssl/cosine_out]",
        ]


def test_a_partial_system_is_refused_naming_what_it_lacks(tmp_path):
    exp = write_exp(tmp_path, scores=True)
    gone = exp.root / "asv_anon_mcadams/cosine_out/emb_xvect/libri_test_trials_m_mcadams"
    for name in ("speaker_vectors.pt", "id2idx", "idx2spk", "spk2gender"):
        (gone / "utt-level" / name).unlink()
    (gone / "utt-level").rmdir()
    gone.rmdir()
    with pytest.raises(
        InputError,
        match=r"asv_anon_mcadams/cosine_out: a partial VoicePrivacy system '_mcadams': .*'libri_test_trials_m_mcadams'",
    ):
        find_systems(exp.root)
    (exp.root / "asv_ssl/cosine_out/libri_dev_enrolls-libri_dev_trials_f/scores").unlink()
    with pytest.raises(
        InputError,
        match=r"asv_ssl/cosine_out: a partial VoicePrivacy system 'original': no score files .*'libri_dev_trials_f'",
    ):
        find_systems(exp.root, source="scores")


def test_a_folder_without_results_is_one_line(tmp_path):
    with pytest.raises(InputError, match="no VoicePrivacy results found"):
        find_systems(tmp_path)
    with pytest.raises(InputError, match="does not exist; expected a VoicePrivacy exp/ folder"):
        find_systems(tmp_path / "nothing")


# ------------------------------------------------------------------------- refused folders


@pytest.mark.parametrize("name", ["speaker_vectors.pt", "id2idx", "idx2spk", "spk2gender"])
def test_a_partial_folder_names_each_missing_file(tmp_path, name):
    folder = level(tmp_path, skip=(name,))
    with pytest.raises(InputError, match=rf"{folder}: a partial VoicePrivacy embedding folder: no {name}; expected"):
        read_vectors(folder)


def test_a_folder_of_an_extraction_that_did_not_finish_says_so(tmp_path):
    folder = level(tmp_path, skip=("speaker_vectors.pt",))
    (folder / "temp_0").mkdir()
    with pytest.raises(InputError, match="temp.* folders: an extraction that did not finish"):
        read_vectors(folder)


def rewrite(folder: Path, name: str, text: str) -> Path:
    (folder / name).write_text(text)
    return folder


BAD_MAPPINGS = {
    # name: (file, its text, words of the message)
    "a_row_without_an_id": ("id2idx", "u0 0\nu1 1\nu2 2\n", r"names 3 of the 4 rows .* rows without an identifier: '3'"),
    "an_index_out_of_range": ("id2idx", "u0 0\nu1 1\nu2 2\nu3 4\n", r"line 4: index 4 is out of range: speaker_vectors.pt has 4 rows"),
    "an_index_that_is_no_number": ("id2idx", "u0 0\nu1 1\nu2 2\nu3 x3\n", r"line 4: index 'x3' is not a row number"),
    "a_negative_index": ("id2idx", "u0 0\nu1 1\nu2 2\nu3 -3\n", r"line 4: index '-3' is not a row number"),
    "an_id_listed_twice": ("id2idx", "u0 0\nu1 1\nu1 2\nu3 3\n", r"line 3: identifier 'u1' is listed again \(line 2\)"),
    "a_row_given_twice": ("id2idx", "u0 0\nu1 1\nu2 1\nu3 3\n", r"line 3: row 1 is given to 'u2' and to 'u1' \(line 2\)"),
    "a_line_of_three_fields": ("id2idx", "u0 0\nu1 1 x\nu2 2\nu3 3\n", r"line 2 has 3 field\(s\); expected exactly 2"),
    "a_row_without_a_speaker": ("idx2spk", "0 b\n1 a\n2 b\n", r"idx2spk: disagrees with id2idx: no speaker for the identifiers 'u3'"),
    "a_speaker_for_a_row_that_is_not_there": ("idx2spk", "0 b\n1 a\n2 b\n3 a\n7 a\n", r"disagrees with id2idx: rows that id2idx does not name: '7'"),
    "a_row_given_two_speakers": ("idx2spk", "0 b\n1 a\n1 b\n2 b\n3 a\n", r"idx2spk: line 3: row 1 is listed again"),
    "a_speaker_without_a_gender": ("spk2gender", "a f\n", r"spk2gender: disagrees with idx2spk: no gender for the speakers 'b'"),
    "a_gender_for_a_speaker_not_there": ("spk2gender", "a f\nb m\nc f\n", r"speakers idx2spk does not name: 'c'"),
    "a_gender_that_is_not_f_or_m": ("spk2gender", "a female\nb m\n", r"line 1: speaker 'a' has gender 'female'; expected f or m"),
    "a_speaker_given_two_genders": ("spk2gender", "a f\nb m\na m\n", r"line 3: speaker 'a' is listed again"),
    "an_empty_mapping_file": ("id2idx", "", r"id2idx: empty id2idx file"),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD_MAPPINGS)
def test_ids_that_do_not_agree_are_one_line_naming_file_and_line(tmp_path, case):
    name, text, words = BAD_MAPPINGS[case]
    folder = rewrite(level(tmp_path), name, text)
    with pytest.raises(InputError, match=words) as caught:
        read_vectors(folder)
    assert str(folder / name) in str(caught.value) and "\n" not in str(caught.value)


def test_a_speaker_level_row_named_by_another_speaker_is_refused(tmp_path):
    folder = tmp_path / "enrol" / "spk-level"
    write_level(folder, ["a", "b"], ["a", "c"], np.ones((2, 3)), {"a": "f", "c": "m"})
    with pytest.raises(InputError, match=r"idx2spk: row 1 belongs to speaker 'c' but id2idx names it 'b'"):
        read_enrolment(tmp_path / "enrol")


BAD_TENSORS = {
    "one_dimensional": (lambda: torch.ones(4), r"holds a tensor of shape \(4,\); expected one float tensor \(n, d\)"),
    "three_dimensional": (lambda: torch.ones(4, 3, 1), r"holds a tensor of shape \(4, 3, 1\)"),
    "no_columns": (lambda: torch.ones(4, 0), r"holds a tensor of shape \(4, 0\)"),
    "integers": (lambda: torch.ones(4, 3, dtype=torch.int64), r"holds a tensor of torch.int64"),
    "a_list_of_tensors": (lambda: [torch.ones(3)] * 4, r"holds a list of 4 items; expected one float tensor"),
    "a_dict": (lambda: {"vectors": torch.ones(4, 3)}, r"holds a dict of 1 items"),
    "sparse": (lambda: torch.ones(4, 3).to_sparse(), r"holds a torch.sparse_coo tensor"),
    "more_rows_than_ids": (lambda: torch.ones(5, 3), r"id2idx: names 4 of the 5 rows"),
    "fewer_rows_than_ids": (lambda: torch.ones(3, 3), r"id2idx: line 4: index 3 is out of range: speaker_vectors.pt has 3 rows"),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD_TENSORS)
def test_a_tensor_of_the_wrong_kind_or_shape_is_one_line(tmp_path, case):
    make, words = BAD_TENSORS[case]
    folder = level(tmp_path, tensor=make())
    with pytest.raises(InputError, match=words):
        read_vectors(folder)


def test_half_precision_is_read_as_float32(tmp_path):
    folder = level(tmp_path, tensor=torch.arange(12, dtype=torch.bfloat16).reshape(4, 3) + 1)
    got = read_vectors(folder)
    assert got.vectors.dtype == np.float32 and np.array_equal(got.vectors, np.arange(12).reshape(4, 3) + 1)


REFUSED_PICKLES = {
    # how the object is written: what the one line says
    "pickle_protocol_2": r"refused: the speaker-vector file pickles (builtins|io).open, not only tensors; .*never runs pickled code",
    "torch_save": r"refused: the speaker-vector file pickles (builtins|io).open, not only tensors",
    "pickle_protocol_5": r"not a weights-only torch speaker-vector file \(torch.save\(tensor\)\), or a corrupt one",
}  # fmt: skip


@pytest.mark.parametrize("how", REFUSED_PICKLES)
def test_a_pickle_where_the_tensor_should_be_is_refused_and_never_runs(tmp_path, how):
    marker = tmp_path / "ran.txt"
    folder = level(tmp_path, skip=("speaker_vectors.pt",))
    with open(folder / "speaker_vectors.pt", "wb") as handle:
        if how == "torch_save":
            torch.save({"vectors": RunsCode(marker)}, handle)
        else:
            pickle.dump(RunsCode(marker), handle, protocol=int(how[-1]))
    with pytest.raises(InputError, match=r"speaker_vectors.pt: " + REFUSED_PICKLES[how]) as caught:
        read_vectors(folder)
    assert "weights_only=False" not in str(caught.value)  # torch's advice to load it unsafely is not passed on
    assert not marker.exists(), "pickled code ran"


def test_a_file_that_is_not_a_torch_file_is_one_line(tmp_path):
    folder = level(tmp_path)
    (folder / "speaker_vectors.pt").write_bytes(b"not a torch file at all")
    with pytest.raises(InputError, match=r"speaker_vectors.pt: not a .*speaker-vector file"):
        read_vectors(folder)
    (folder / "speaker_vectors.pt").write_bytes(b"")
    with pytest.raises(InputError, match=r"empty file \(0 bytes\)"):
        read_vectors(folder)


def test_a_fifo_is_named_and_never_opened(tmp_path):
    folder = level(tmp_path, skip=("speaker_vectors.pt",))
    import os

    os.mkfifo(folder / "speaker_vectors.pt")
    with pytest.raises(InputError, match=r"is a FIFO \(named pipe\), not a regular file"):
        read_vectors(folder)


def test_a_tensor_over_the_cap_is_refused_before_it_is_read(tmp_path, monkeypatch):
    import lidframe.data.voiceprivacy as vpc

    folder = level(tmp_path)
    monkeypatch.setattr(vpc, "MAX_VECTORS_BYTES", 100)
    with pytest.raises(InputError, match=r"more than the 100 bytes lidframe reads as a speaker-vector file"):
        read_vectors(folder)


def test_a_trial_speaker_of_the_other_gender_is_refused(tmp_path):
    exp = write_exp(tmp_path)
    emb = exp.root / "asv_ssl/cosine_out/emb_xvect"
    with pytest.raises(InputError, match=r"libri_test_trials_m/utt-level/spk2gender: speakers .* are not 'f'"):
        embedding_set(emb / "libri_test_enrolls", [emb / "libri_test_trials_m"], gender="f")
    with pytest.raises(InputError, match=r"trial utterance .* is also a trial of"):
        embedding_set(emb / "libri_test_enrolls", [emb / "libri_test_trials_f", emb / "libri_test_trials_f"])


def test_read_trials_reads_the_utterance_level(tmp_path):
    exp = write_exp(tmp_path)
    got = read_trials(exp.root / "asv_ssl/cosine_out/emb_xvect/libri_dev_trials_f")
    saved = exp.get("asv_ssl/cosine_out", "libri_dev_trials_f")
    assert got.identifiers.tolist() == saved.identifiers and np.array_equal(got.vectors, saved.vectors)


# ------------------------------------------------------------------------- score files


def test_score_files_read_as_the_full_per_gender_grid(tmp_path):
    exp = write_exp(tmp_path, scores=True)
    results = "asv_anon_mcadams/cosine_out"
    for gender in GENDERS:
        enrol = exp.get(results, "libri_test_enrolls_mcadams")
        trials = exp.get(results, f"libri_test_trials_{gender}_mcadams")
        scores = read_scores(
            exp.root / results / f"libri_test_enrolls_mcadams-libri_test_trials_{gender}_mcadams" / "scores",
            exp.data / f"libri_test_trials_{gender}" / "trials",
        )
        want, speakers = cosines(enrol, trials, gender)
        columns = [scores.enrolled.tolist().index(s) for s in speakers]
        rows = [scores.trial_ids.tolist().index(u) for u in trials.identifiers]
        assert np.array_equal(scores.scores[np.ix_(rows, columns)], want)  # the file's repr of each float64
        enrolled = set(speakers)
        expected_speakers = [s if s in enrolled else f"?{u}" for s, u in zip(trials.speakers, trials.identifiers)]
        assert scores.trial_speakers[rows].tolist() == expected_speakers
        assert scores.n_outsider_trials == 3


def test_a_score_file_that_disagrees_with_its_trial_list_is_refused(tmp_path):
    exp = write_exp(tmp_path, scores=True)
    scores = exp.root / "asv_ssl/cosine_out/libri_dev_enrolls-libri_dev_trials_f/scores"
    listing = exp.data / "libri_dev_trials_f" / "trials"
    lines = scores.read_text().splitlines(keepends=True)
    scores.write_text("".join(lines[1:]))
    with pytest.raises(InputError, match=r"disagrees with the trial list .*: listed, not scored: "):
        read_scores(scores, listing)
    enrolled, trial, _ = lines[0].split()
    scores.write_text("".join(lines[1:]) + f"{enrolled} other-utt 0.5\n")
    with pytest.raises(InputError, match=r"scored, not in the trial list: '.* other-utt'"):
        read_scores(scores, listing)
    listing_lines = listing.read_text().splitlines(keepends=True)
    listing.write_text("".join(listing_lines) + listing_lines[0])
    with pytest.raises(InputError, match=r"trials: line .*: the pair .* is listed again"):
        read_scores(scores, listing)


def test_the_peer_reads_the_same_vectors_speakers_and_genders(tmp_path):
    vpc = pytest.importorskip("legal_eval.vpc", reason="the peer voice-anonymization-legal-eval is in the test extra")
    exp = write_exp(tmp_path)
    emb = exp.root / "asv_anon_mcadams/cosine_out/emb_xvect"
    for dataset, level_name in (
        ("libri_dev_enrolls_mcadams", "spk-level"),
        ("libri_test_trials_m_mcadams", "utt-level"),
    ):
        ours = read_vectors(emb / dataset / level_name)
        peer = vpc.load_vpc_embeddings(emb / dataset / level_name)
        assert set(peer.embeddings) == set(ours.identifiers.tolist())
        for row, identifier in enumerate(ours.identifiers.tolist()):
            assert np.array_equal(np.asarray(peer.embeddings[identifier], dtype=ours.vectors.dtype), ours.vectors[row])
            assert peer.identifier2speaker[identifier] == ours.speakers[row]
        assert peer.spk2gender == ours.gender_of
