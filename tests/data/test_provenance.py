"""A score file's provenance (lidframe.data.provenance, issue 41): written into the .npz, read back checked.

Every digest is compared with :mod:`hashlib` over the files written here, the document
with what :func:`json.loads` reads from the member through plain :func:`numpy.load`.
"""

from __future__ import annotations

import hashlib
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lidframe import ScoreSet
from lidframe.data.kaldi import read_data_dir
from lidframe.data.provenance import (
    FORMAT,
    NO_PROVENANCE,
    PROVENANCE_KEY,
    AttackerRecord,
    AudioDigests,
    DataDirRecord,
    ScoreFile,
    ScoreProvenance,
    audio_sha256,
    read_provenance,
)
from lidframe.data.provenance_parts import Fields
from lidframe.errors import InputError
from tests.data.provenance_dirs import sha256_of, write_audio_dir


@pytest.fixture()
def made(tmp_path):
    """(folder, provenance, score set): a data dir of tones, its provenance with a checkpoint, a 2 x 4 score set."""
    folder = write_audio_dir(tmp_path / "enrol", "e", speakers=4, per_speaker=2)
    (tmp_path / "model.ckpt").write_bytes(b"weights")
    utterances = read_data_dir(folder)
    attacker = AttackerRecord.of(
        "audio-bytes",
        spec="audio-bytes?dim=4",
        settings={"dim": 4},
        code="tests",
        files={"checkpoint": tmp_path / "model.ckpt"},
        weights_sha256=sha256_of(tmp_path / "model.ckpt"),
    )
    record = ScoreProvenance.make(
        attacker, [DataDirRecord.of("enrol", folder, utterances, audio=True)], command="lidframe score ..."
    )
    scores = ScoreSet(np.arange(8.0).reshape(2, 4), ["spk0", "spk1", "spk2", "spk3"], ["spk0", "spk9"])
    return folder, record, scores


def member_document(path: Path) -> dict:
    """The provenance member as numpy and json read it, without lidframe."""
    with np.load(path) as archive:
        return json.loads(archive[PROVENANCE_KEY].item())


def test_the_digests_are_those_of_the_files(made):
    folder, record, _ = made
    (data_dir,) = record.data_dirs
    assert {t.role: t.sha256 for t in data_dir.tables} == {
        name: sha256_of(folder / name) for name in ("wav.scp", "utt2spk", "spk2utt")
    }
    listed = [line.split() for line in (folder / "wav.scp").read_text().splitlines()]
    expected = [(utt, sha256_of(folder / wav)) for utt, wav in listed]
    assert data_dir.audio is not None and list(data_dir.audio.utterances or ()) == expected
    lines = "".join(f"{digest}  {utt}\n" for utt, digest in expected)  # sha256sum's layout, the id for the name
    assert data_dir.audio.sha256 == hashlib.sha256(lines.encode()).hexdigest()
    assert (data_dir.n_utterances, data_dir.n_speakers) == (8, 4)
    assert record.attacker.files[0].sha256 == hashlib.sha256(b"weights").hexdigest()


def test_the_score_file_holds_it_and_reads_back_the_same(made, tmp_path):
    _, record, scores = made
    path = tmp_path / "s.npz"
    scores.save(path, provenance=record)
    document = member_document(path)
    assert document["format"] == FORMAT and document == record.to_dict()
    assert read_provenance(path) == record
    again = ScoreSet.load(path)  # the scores are the scores: the provenance changes none of them
    assert again.equals(scores)
    with np.load(path) as archive:
        np.testing.assert_array_equal(archive["scores"], scores.scores)


def test_a_file_without_provenance_still_loads_and_says_so(made, tmp_path):
    _, _, scores = made
    scores.save(tmp_path / "old.npz")
    with np.load(tmp_path / "old.npz") as archive:
        assert PROVENANCE_KEY not in archive.files
    assert read_provenance(tmp_path / "old.npz") is None
    assert ScoreFile.of("eval", tmp_path / "old.npz").to_dict() == {
        "path": str(tmp_path / "old.npz"),
        "provenance": None,
        "note": NO_PROVENANCE,
    }
    assert ScoreSet.load(tmp_path / "old.npz").equals(scores)


def test_a_csv_has_no_room_for_it(made, tmp_path):
    _, record, scores = made
    with pytest.warns(UserWarning, match="holds no provenance"):
        scores.save(tmp_path / "s.csv", provenance=record)
    assert read_provenance(tmp_path / "s.csv") is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scores.save(tmp_path / "t.csv")  # without one: no warning


def test_an_oversized_provenance_keeps_one_audio_digest_per_dir(made, tmp_path, monkeypatch):
    import lidframe.data.provenance as provenance

    _, record, scores = made
    monkeypatch.setattr(provenance, "MAX_PROVENANCE_BYTES", len(record.to_json()) - 1)
    with pytest.warns(UserWarning, match="keeps one audio digest per data dir"):
        scores.save(tmp_path / "s.npz", provenance=record)
    audio = member_document(tmp_path / "s.npz")["data_dirs"][0]["audio"]
    assert audio["utterances"] is None and audio["sha256"] == record.data_dirs[0].audio.sha256
    assert read_provenance(tmp_path / "s.npz").data_dirs[0].audio.utterances is None


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=12), st.binary(min_size=32, max_size=32).map(bytes.hex)),
        max_size=12,
    )
)
def test_the_audio_digest_is_sha256_over_sha256sum_lines_and_reads_back(listed):
    text = "".join(f"{digest}  {utt}\n" for utt, digest in listed)
    assert audio_sha256(listed) == hashlib.sha256(text.encode("utf-8")).hexdigest()
    audio = AudioDigests(len(listed), audio_sha256(listed), tuple(listed))
    assert AudioDigests.from_dict(json.loads(json.dumps(audio.to_dict())), Fields("f.npz"), "audio") == audio


# ----------------------------------------------------------------------- damaged provenance
def with_member(path: Path, scores: ScoreSet, member: np.ndarray) -> Path:
    """*scores* in an .npz with *member* as its provenance, written with numpy."""
    arrays = {k: getattr(scores, k) for k in ("scores", "enrolled", "trial_speakers", "trial_ids")}
    np.savez(path, **arrays, **{PROVENANCE_KEY: member})
    return path


def edited(record: ScoreProvenance, edit) -> bytes:
    document = record.to_dict()
    edit(document)
    return json.dumps(document).encode()


DAMAGED = {
    "not JSON": (lambda r: b'{"format": ', "not JSON (line 1"),
    "not UTF-8": (lambda r: b'{"format": "\xff"}', "not UTF-8"),
    "a list": (lambda r: b"[1, 2]", "the document is list; expected an object"),
    "another format": (lambda r: edited(r, lambda d: d.update(format="other")), "its format is 'other'"),
    "a newer version": (lambda r: edited(r, lambda d: d.update(version=2)), "provenance version '2'"),
    "no attacker": (lambda r: edited(r, lambda d: d.pop("attacker")), "has no 'attacker'"),
    "a digest that is not one": (
        lambda r: edited(r, lambda d: d["data_dirs"][0]["tables"][0].update(sha256="abc")),
        "data_dirs[0].tables[0].sha256 is 'abc'",
    ),
    "an audio list that does not match its digest": (
        lambda r: edited(r, lambda d: d["data_dirs"][0]["audio"]["utterances"].pop()),
        "data_dirs[0].audio lists 7 files",
    ),
    "a count that is text": (
        lambda r: edited(r, lambda d: d["data_dirs"][0].update(n_utterances="8")),
        "data_dirs[0].n_utterances is '8'; expected a count",
    ),
    "an unknown scenario": (
        lambda r: edited(r, lambda d: d.update(scenario={"name": "informed", "code": "a-a", "stated": ""})),
        "scenario.name is 'informed'",
    ),
    "reads_audio as text": (
        lambda r: edited(r, lambda d: d["attacker"].update(reads_audio="yes")),
        "attacker.reads_audio is 'yes'; expected true or false",
    ),
}


@pytest.mark.parametrize("case", DAMAGED, ids=list(DAMAGED))
def test_a_damaged_provenance_is_one_line_naming_the_file_and_the_field(made, tmp_path, case):
    _, record, scores = made
    text, words = DAMAGED[case]
    path = with_member(tmp_path / "s.npz", scores, np.array(text(record)))
    with pytest.raises(InputError) as raised:
        read_provenance(path)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(str(path)), message
    assert words in message, message
    assert ScoreSet.load(path).equals(scores)  # the scores still load: only their provenance is refused


@pytest.mark.parametrize(
    ("member", "words"),
    [
        (np.zeros(3), "expected the provenance as one text"),
        (np.array([b"{}", b"{}"]), "expected the provenance as one text"),
    ],
    ids=["numbers", "two texts"],
)
def test_a_member_that_is_not_one_text_is_refused(made, tmp_path, member, words):
    _, _, scores = made
    path = with_member(tmp_path / "s.npz", scores, member)
    with pytest.raises(InputError, match=words):
        read_provenance(path)


def test_a_member_larger_than_the_cap_is_refused_before_it_is_read(made, tmp_path, monkeypatch):
    import lidframe.data.npzfile as npzfile
    import lidframe.data.provenance as provenance

    _, record, scores = made
    path = with_member(tmp_path / "s.npz", scores, np.array(record.to_json()))
    monkeypatch.setattr(provenance, "MAX_PROVENANCE_BYTES", 100)
    monkeypatch.setattr(npzfile, "_read_member", lambda *a: pytest.fail("the member was read"))
    with pytest.raises(InputError, match="more than the 100 bytes a provenance may"):
        read_provenance(path)
