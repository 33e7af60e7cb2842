"""The digest cache of input files (lidframe.data.digests): right digests, hashed only when a file changed."""

import hashlib
import os
import sqlite3
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lidframe.data import fileio
from lidframe.data.digests import RACY_SLACK_NS, DigestCache
from lidframe.errors import InputError


def settle(path, seconds_ago: float = 60.0) -> None:
    """Move the file's mtime into the past: an entry recorded now is then trusted (not racily clean)."""
    when = time.time_ns() - int(seconds_ago * 1e9)
    os.utime(path, ns=(when, when))


@pytest.fixture()
def counted(monkeypatch):
    """Count the files that are actually read and hashed."""
    calls = []
    real = fileio.file_sha256

    def counting(path):
        calls.append(os.path.abspath(path))
        return real(path)

    monkeypatch.setattr(fileio, "file_sha256", counting)
    return calls


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.binary(max_size=5000), other=st.binary(max_size=5000))
def test_digest_is_the_sha256_of_the_bytes_and_follows_every_change(tmp_path_factory, content, other):
    folder = tmp_path_factory.mktemp("d")
    path = folder / "f.bin"
    path.write_bytes(content)
    settle(path)
    with DigestCache(folder / "digests.sqlite") as cache:
        assert cache.digest(path) == hashlib.sha256(content).hexdigest()
    # replaced at the same path, even with the same size and the old mtime put back
    before = path.stat()
    replacement = (other + content)[: len(content)] if len(other) >= len(content) else other
    path.write_bytes(replacement)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert DigestCache(folder / "digests.sqlite").digest(path) == hashlib.sha256(replacement).hexdigest()


def test_an_unchanged_file_is_not_hashed_again_by_a_later_cache(tmp_path, counted):
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(3 << 20))
    settle(big)
    with DigestCache(tmp_path / "c.sqlite") as first:
        want = first.digest(big)
        assert first.digest(big) == want  # in memory too
    assert counted == [str(big)] and first.hashed == 1
    second = DigestCache(tmp_path / "c.sqlite")
    assert second.digest(big) == want == hashlib.sha256(big.read_bytes()).hexdigest()
    assert counted == [str(big)] and second.hashed == 0


def test_a_racily_clean_entry_is_hashed_once_more(tmp_path, counted):
    fresh = tmp_path / "fresh.txt"
    fresh.write_text("written just now")
    with DigestCache(tmp_path / "c.sqlite") as cache:
        cache.digest(fresh)
    entry = sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT mtime_ns, recorded_ns FROM digests").fetchone()
    assert entry[1] - entry[0] < RACY_SLACK_NS  # recorded within the same "tick" as the write
    with DigestCache(tmp_path / "c.sqlite") as again:
        again.digest(fresh)
    assert len(counted) == 2  # not trusted: a same-size rewrite in that tick would look unchanged


def test_a_file_that_changes_while_it_is_hashed_is_not_remembered(tmp_path, monkeypatch):
    path = tmp_path / "moving.txt"
    path.write_text("first")
    settle(path)
    real = fileio.file_sha256

    def racing(name):
        digest = real(name)
        path.write_text("second, longer")  # written while it was read
        return digest

    monkeypatch.setattr(fileio, "file_sha256", racing)
    with DigestCache(tmp_path / "c.sqlite") as cache:
        cache.digest(path)
    monkeypatch.setattr(fileio, "file_sha256", real)
    assert DigestCache(tmp_path / "c.sqlite").digest(path) == hashlib.sha256(b"second, longer").hexdigest()


def test_a_damaged_cache_file_is_rebuilt_not_trusted(tmp_path):
    data = tmp_path / "a.txt"
    data.write_text("abc")
    (tmp_path / "c.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.warns(UserWarning, match="unreadable digest cache"), DigestCache(tmp_path / "c.sqlite") as cache:
        assert cache.digest(data) == hashlib.sha256(b"abc").hexdigest()
    rows = sqlite3.connect(tmp_path / "c.sqlite").execute("SELECT path FROM digests").fetchall()
    assert rows == [(str(data),)]


def test_a_missing_file_is_an_input_error_naming_it(tmp_path):
    with pytest.raises(InputError, match=r"no such file: \S*nope\.bin"):
        DigestCache().digest(tmp_path / "nope.bin")
