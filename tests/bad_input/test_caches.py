"""The embedding cache through ``lidframe score --cache-dir``: refused paths, corrupt entries, read-only folders.

The policy (``lidframe.attackers.cache``): a cache folder that is a file (or has a file
in its path) and an entry path that is not a file are refused; a corrupt entry is a miss
(recomputed, replaced, one warning per run); a folder that cannot be written is used
read-only (one warning).  The runs that succeed must give the scores of a cache-less run.
"""

from __future__ import annotations

import errno
import os
import tempfile

import numpy as np
import pytest

pytest.importorskip("torch", reason="the embedding cache belongs to the torch attackers (pip install -e '.[audio]')")
pytest.importorskip("soundfile", reason="audio is read with soundfile (pip install -e '.[audio]')")

from lidframe.cli import main
from lidframe.data.scoreset import ScoreSet
from tests.bad_input.audio_dirs import SMALL_ECAPA, score_argv, scoring_dirs
from tests.bad_input.conftest import assert_refused

DIM = SMALL_ECAPA["lin_neurons"]
SPEAKERS = 3  # 3 enrolment + 3 trial utterances: 6 cache entries


def run_score(capsys, argv) -> tuple[str, list[str]]:
    """Run ``lidframe score``; return stdout and the warning lines of stderr (asserting success)."""
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert all(line.startswith("lidframe: warning: ") for line in lines), err
    return out, lines


@pytest.fixture
def setup(tmp_path, capsys):
    """Data dirs, the scores of a cache-less run, and a cache filled by one run."""
    enrol, trials = scoring_dirs(tmp_path / "data", speakers=SPEAKERS)
    run_score(capsys, score_argv(enrol, trials, tmp_path / "plain.npz"))
    cache = tmp_path / "cache"
    _, warned = run_score(capsys, score_argv(enrol, trials, tmp_path / "first.npz", "--cache-dir", cache))
    assert warned == []
    entries = sorted(cache.glob("*.npz"))
    assert len(entries) == 2 * SPEAKERS
    return {"enrol": enrol, "trials": trials, "cache": cache, "entries": entries, "plain": tmp_path / "plain.npz"}


def read_entry(path, dim):
    """The embedding in a cache entry as the cache writes it (one finite float32 (dim,) array), else None."""
    try:
        with np.load(path, allow_pickle=False) as members:
            if list(members.files) != ["embedding"]:
                return None
            embedding = members["embedding"]
    except Exception:
        return None
    ok = embedding.dtype == np.float32 and embedding.shape == (dim,) and np.isfinite(embedding).all()
    return embedding if ok else None


def assert_same_scores(path, reference):
    got, want = ScoreSet.load(path), ScoreSet.load(reference)
    np.testing.assert_array_equal(got.scores, want.scores)
    assert list(got.trial_ids) == list(want.trial_ids) and list(got.enrolled) == list(want.enrolled)


# ------------------------------------------------------------------ refused
def test_cache_folder_is_a_file(tmp_path, capsys):
    enrol, trials = scoring_dirs(tmp_path)
    (tmp_path / "cache").write_text("not a folder")
    assert_refused(
        score_argv(enrol, trials, tmp_path / "out.npz", "--cache-dir", tmp_path / "cache"),
        capsys,
        expect=[str(tmp_path / "cache"), "embedding cache folder is a file"],
        watch=[tmp_path],
    )


def test_cache_folder_below_a_file(tmp_path, capsys):
    enrol, trials = scoring_dirs(tmp_path)
    (tmp_path / "blocker").write_text("a file")
    assert_refused(
        score_argv(enrol, trials, tmp_path / "out.npz", "--cache-dir", tmp_path / "blocker" / "cache"),
        capsys,
        expect=["cannot create the embedding cache folder", f"{tmp_path / 'blocker'} is a file"],
        watch=[tmp_path],
    )


@pytest.mark.skipif(os.name != "posix", reason="symbolic links")
def test_cache_folder_is_a_dangling_link(tmp_path, capsys):
    enrol, trials = scoring_dirs(tmp_path)
    (tmp_path / "cache").symlink_to(tmp_path / "nowhere")
    assert_refused(
        score_argv(enrol, trials, tmp_path / "out.npz", "--cache-dir", tmp_path / "cache"),
        capsys,
        expect=[str(tmp_path / "cache"), "embedding cache folder is a link to nothing"],
        watch=[tmp_path],
    )


def test_an_entry_that_is_a_folder_is_refused_not_deleted(tmp_path, capsys, setup):
    entry = setup["entries"][0]
    entry.unlink()
    entry.mkdir()
    (entry / "keep.txt").write_text("someone's file")
    assert_refused(
        score_argv(setup["enrol"], setup["trials"], tmp_path / "out.npz", "--cache-dir", setup["cache"]),
        capsys,
        expect=[entry.name, "embedding cache entry is not a file"],
        watch=[tmp_path],
    )
    assert (entry / "keep.txt").read_text() == "someone's file"


# ------------------------------------------------------------------ corrupt entries: a miss, one warning
def _truncate(path):
    path.write_bytes(path.read_bytes()[:40])


def _garbage(path):
    path.write_bytes(b"\x00garbage\xff" * 50)


def _empty(path):
    path.write_bytes(b"")


def _wrong_shape(path):
    np.savez(path, embedding=np.ones(DIM + 3, np.float32))


def _wrong_member(path):
    np.savez(path, emb=np.ones(DIM, np.float32))


def _extra_member(path):
    np.savez(path, embedding=np.ones(DIM, np.float32), other=np.zeros(1))


def _wrong_dtype(path):
    np.savez(path, embedding=np.ones(DIM, np.float64))


def _nan(path):
    np.savez(path, embedding=np.full(DIM, np.nan, np.float32))


def _npy_not_npz(path):
    with open(path, "wb") as handle:
        np.save(handle, np.ones(DIM, np.float32))


def _flipped_byte(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 3] ^= 0xFF  # inside the stored .npy member: its CRC no longer matches
    path.write_bytes(bytes(data))


CORRUPTIONS = [_truncate, _garbage, _empty, _wrong_shape, _wrong_member, _extra_member, _wrong_dtype, _nan]
CORRUPTIONS += [_npy_not_npz, _flipped_byte]


@pytest.mark.slow
@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=lambda f: f.__name__.strip("_"))
def test_a_corrupt_entry_is_recomputed_and_replaced_with_one_warning(tmp_path, capsys, setup, corrupt):
    entry = setup["entries"][1]
    corrupt(entry)
    assert read_entry(entry, DIM) is None
    _, warned = run_score(
        capsys, score_argv(setup["enrol"], setup["trials"], tmp_path / "out.npz", "--cache-dir", setup["cache"])
    )
    assert len(warned) == 1, warned
    assert str(setup["cache"]) in warned[0] and "1 corrupt or unreadable entry" in warned[0] and "replaced" in warned[0]
    assert_same_scores(tmp_path / "out.npz", setup["plain"])
    assert all(read_entry(e, DIM) is not None for e in setup["entries"])  # replaced by a valid entry
    assert sorted(setup["cache"].iterdir()) == setup["entries"]  # no temporary file left
    _, again = run_score(
        capsys, score_argv(setup["enrol"], setup["trials"], tmp_path / "again.npz", "--cache-dir", setup["cache"])
    )
    assert again == []  # the replaced entry is a hit


@pytest.mark.slow
def test_several_corrupt_entries_give_one_warning_with_their_count(tmp_path, capsys, setup):
    """Enrolment and trial entries are damaged: two embed calls, one warning for the run."""
    for entry, corrupt in zip(setup["entries"][:4], (_truncate, _garbage, _wrong_shape, _wrong_member)):
        corrupt(entry)
    _, warned = run_score(
        capsys, score_argv(setup["enrol"], setup["trials"], tmp_path / "out.npz", "--cache-dir", setup["cache"])
    )
    assert len(warned) == 1, warned
    assert "4 corrupt or unreadable entries ignored and recomputed (replaced)" in warned[0]
    assert_same_scores(tmp_path / "out.npz", setup["plain"])
    assert all(read_entry(e, DIM) is not None for e in setup["entries"])


# ------------------------------------------------------------------ a folder that cannot be written
@pytest.mark.slow
def test_unwritable_cache_folder_is_used_read_only(tmp_path, capsys, setup, monkeypatch):
    """The OS refuses every new file in the folder (as for a read-only mount, and for root too)."""
    real_mkstemp = tempfile.mkstemp

    def refuse_in_cache(*args, **kwargs):
        if os.path.samefile(kwargs.get("dir") or ".", setup["cache"]):
            raise PermissionError(errno.EROFS, os.strerror(errno.EROFS), str(setup["cache"]))
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", refuse_in_cache)
    for entry in setup["entries"][:2]:
        entry.unlink()  # two misses
    _garbage(setup["entries"][2])  # and one corrupt entry, which cannot be replaced
    _, warned = run_score(
        capsys, score_argv(setup["enrol"], setup["trials"], tmp_path / "out.npz", "--cache-dir", setup["cache"])
    )
    assert len(warned) == 1, warned
    assert "1 corrupt or unreadable entry ignored and recomputed (0 replaced)" in warned[0]
    assert "3 new embeddings not stored (Read-only file system): the folder is used read-only" in warned[0]
    assert_same_scores(tmp_path / "out.npz", setup["plain"])
    assert sorted(setup["cache"].iterdir()) == setup["entries"][2:]  # nothing added


@pytest.mark.permissions
def test_read_only_cache_folder_by_permissions(tmp_path, capsys, setup):
    setup["entries"][0].unlink()
    setup["cache"].chmod(0o555)
    try:
        _, warned = run_score(
            capsys, score_argv(setup["enrol"], setup["trials"], tmp_path / "out.npz", "--cache-dir", setup["cache"])
        )
    finally:
        setup["cache"].chmod(0o755)
    assert len(warned) == 1 and "1 new embedding not stored (Permission denied)" in warned[0], warned
    assert_same_scores(tmp_path / "out.npz", setup["plain"])


@pytest.mark.permissions
def test_cache_folder_that_cannot_be_created_computes_without_caching(tmp_path, capsys, setup):
    parent = tmp_path / "locked"
    parent.mkdir(mode=0o555)
    try:
        _, warned = run_score(
            capsys, score_argv(setup["enrol"], setup["trials"], tmp_path / "out.npz", "--cache-dir", parent / "cache")
        )
    finally:
        parent.chmod(0o755)
    assert len(warned) == 1 and f"{2 * SPEAKERS} new embeddings not stored (cannot create it" in warned[0], warned
    assert_same_scores(tmp_path / "out.npz", setup["plain"])


def test_a_refused_run_creates_no_cache_folder(tmp_path, capsys):
    """The folder is made when the first embedding is stored, so a bad trial file leaves none behind."""
    (tmp_path / "junk.wav").write_bytes(b"not audio" * 100)
    enrol, trials = scoring_dirs(tmp_path, trial=tmp_path / "junk.wav")
    assert_refused(
        score_argv(enrol, trials, tmp_path / "out.npz", "--cache-dir", tmp_path / "new" / "cache"),
        capsys,
        expect=["junk.wav", "not audio"],
        watch=[tmp_path],
    )
    assert not (tmp_path / "new").exists()


@pytest.mark.slow
def test_an_encoder_without_lin_neurons_measures_its_embedding_length(tmp_path):
    """A plugin whose configuration does not name the length: measured once, then entries are checked against it."""
    from lidframe.attackers import EcapaTdnn, Utterance
    from lidframe.attackers.ecapa_model import EcapaTdnnModel

    class Unnamed(EcapaTdnn):
        def model_config(self):
            return {k: v for k, v in super().model_config().items() if k != "lin_neurons"}

        def build_model(self):
            return EcapaTdnnModel(**super().model_config())

    enrol, trials = scoring_dirs(tmp_path / "data")
    utterances = [Utterance("t0", "spk0", str(tmp_path / "data" / "wav" / "t0.wav"))]
    attacker = Unnamed(**SMALL_ECAPA, device="cpu", cache_dir=tmp_path / "cache")
    assert attacker.embedding_dim() == DIM
    first = attacker.embed(utterances)
    (entry,) = (tmp_path / "cache").glob("*.npz")
    _wrong_shape(entry)
    with pytest.warns(UserWarning, match="1 corrupt or unreadable entry"):
        again = Unnamed(**SMALL_ECAPA, device="cpu", cache_dir=tmp_path / "cache").embed(utterances)
    np.testing.assert_array_equal(again, first)
