"""The embedding cache's entries (``lidframe.attackers.cache``), without torch: what is a hit, what is a miss.

Properties over drawn embeddings and drawn damage: an entry written by the cache reads
back bit for bit; a damaged one (truncated anywhere, any byte changed, replaced by drawn
bytes) reads as a miss or, where the damage missed the array, as the very same
embedding -- never as another array, never as an exception.
"""

from __future__ import annotations

import errno
import os
import tempfile

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lidframe.attackers.cache import EmbeddingCache, read_entry
from lidframe.errors import InputError

KEY = "a" * 64


@st.composite
def embeddings(draw) -> np.ndarray:
    """A finite float32 embedding of a drawn length."""
    dim = draw(st.integers(1, 64))
    return draw(hnp.arrays(np.float32, dim, elements=st.floats(-1e6, 1e6, width=32)))


def stored(folder, embedding) -> tuple[EmbeddingCache, bytes]:
    cache = EmbeddingCache(folder)
    cache.put(KEY, embedding)
    return cache, cache.path(KEY).read_bytes()


@given(embedding=embeddings())
def test_an_entry_reads_back_bit_for_bit(embedding):
    with tempfile.TemporaryDirectory() as folder:
        cache, _ = stored(folder, embedding)
        got = cache.get(KEY, embedding.shape[0])
        assert got is not None and got.dtype == np.float32
        np.testing.assert_array_equal(got, embedding)
        assert cache.bad == set() and cache.report() is None
        assert cache.get(KEY, embedding.shape[0] + 1) is None  # another encoder's length: a miss
        assert cache.get("b" * 64, embedding.shape[0]) is None and cache.bad == {KEY}  # a missing entry is no damage


@given(embedding=embeddings(), data=st.data())
def test_a_truncated_entry_is_a_miss(embedding, data):
    with tempfile.TemporaryDirectory() as folder:
        cache, content = stored(folder, embedding)
        cut = data.draw(st.integers(0, len(content) - 1), label="kept bytes")
        cache.path(KEY).write_bytes(content[:cut])
        assert read_entry(cache.path(KEY), embedding.shape[0]) is None


@given(embedding=embeddings(), data=st.data())
def test_a_changed_byte_gives_a_miss_or_the_same_embedding(embedding, data):
    with tempfile.TemporaryDirectory() as folder:
        cache, content = stored(folder, embedding)
        where = data.draw(st.integers(0, len(content) - 1), label="offset")
        value = data.draw(st.integers(0, 255).filter(lambda v: v != content[where]), label="new byte")
        cache.path(KEY).write_bytes(content[:where] + bytes([value]) + content[where + 1 :])
        got = read_entry(cache.path(KEY), embedding.shape[0])
        assert got is None or np.array_equal(got, embedding)  # zip metadata that numpy ignores, never the values


@given(content=st.binary(max_size=2048), dim=st.integers(1, 64))
def test_drawn_bytes_are_a_miss(content, dim):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, f"{KEY}.npz")
        with open(path, "wb") as handle:
            handle.write(content)
        assert read_entry(path, dim) is None


@pytest.mark.parametrize(
    "arrays",
    [
        {"embedding": np.ones(4, np.float64)},
        {"embedding": np.ones((1, 4), np.float32)},
        {"embedding": np.array([1, np.nan, 0, 0], np.float32)},
        {"embedding": np.array([1, np.inf, 0, 0], np.float32)},
        {"embedding": np.ones(4, np.int32)},
        {"emb": np.ones(4, np.float32)},
        {"embedding": np.ones(4, np.float32), "extra": np.ones(1)},
        {"embedding": np.array(["a", "b", "c", "d"])},
    ],
    ids=["float64", "2-d", "nan", "inf", "int", "other-name", "extra-member", "strings"],
)
def test_a_valid_npz_of_the_wrong_content_is_a_miss(tmp_path, arrays):
    np.savez(tmp_path / "e.npz", **arrays)
    assert read_entry(tmp_path / "e.npz", 4) is None


def test_pickled_objects_are_not_loaded(tmp_path):
    np.savez(tmp_path / "e.npz", embedding=np.array([object()], dtype=object))
    assert read_entry(tmp_path / "e.npz", 1) is None


def test_report_counts_each_bad_key_once_and_names_the_folder(tmp_path):
    (tmp_path / "c").mkdir()
    cache = EmbeddingCache(tmp_path / "c")
    for key in ("k1", "k2"):
        cache.path(key).write_bytes(b"junk")
    for key in ("k1", "k1", "k2"):
        assert cache.get(key, 3) is None
    cache.put("k1", np.zeros(3, np.float32))
    assert (
        cache.report()
        == f"embedding cache {tmp_path / 'c'}: 2 corrupt or unreadable entries ignored and recomputed (1 replaced)"
    )


def test_a_cache_folder_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "c").write_text("x")
    with pytest.raises(InputError, match="embedding cache folder is a file"):
        EmbeddingCache(tmp_path / "c")
    with pytest.raises(InputError, match=f"{tmp_path / 'c'} is a file"):
        EmbeddingCache(tmp_path / "c" / "below" / "deeper")


def test_the_folder_is_made_on_the_first_store_only(tmp_path):
    cache = EmbeddingCache(tmp_path / "new" / "cache")
    assert cache.get(KEY, 3) is None and not (tmp_path / "new").exists()  # a refused run leaves no folder
    cache.put(KEY, np.arange(3, dtype=np.float32))
    np.testing.assert_array_equal(cache.get(KEY, 3), np.arange(3, dtype=np.float32))


def test_an_entry_that_is_a_folder_is_refused(tmp_path):
    cache = EmbeddingCache(tmp_path)
    cache.path(KEY).mkdir()
    with pytest.raises(InputError, match="embedding cache entry is not a file"):
        cache.get(KEY, 3)


def test_a_folder_that_refuses_writes_is_used_read_only(tmp_path, monkeypatch):
    cache = EmbeddingCache(tmp_path)
    cache.put("old", np.ones(2, np.float32))

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    cache.put("new1", np.ones(2, np.float32))
    cache.put("new2", np.ones(2, np.float32))
    np.testing.assert_array_equal(cache.get("old", 2), np.ones(2, np.float32))  # hits still read
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.npz"]
    assert cache.report() == (
        f"embedding cache {tmp_path}: 2 new embeddings not stored (Permission denied): the folder is used read-only"
    )


@pytest.mark.permissions
def test_a_read_only_folder_by_permissions(tmp_path):
    cache = EmbeddingCache(tmp_path / "c")
    cache.put("old", np.ones(2, np.float32))
    (tmp_path / "c").chmod(0o555)
    try:
        cache.put("new", np.ones(2, np.float32))
        assert cache.get("old", 2) is not None
        assert cache.unstored == 1 and cache.write_error == "Permission denied"
        locked = EmbeddingCache(tmp_path / "c" / "sub")  # cannot be created: no cache, no error
        assert locked.get("old", 2) is None
        locked.put("new", np.ones(2, np.float32))
        assert locked.unstored == 1 and locked.write_error == "cannot create it: Permission denied"
    finally:
        (tmp_path / "c").chmod(0o755)
