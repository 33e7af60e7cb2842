"""The safe .npz/.npy reader against numpy.load (the reference on honest files) and on damaged ones.

Properties: every honest archive (stored or deflated, any dtype lidframe reads, any shape)
reads back exactly what numpy.load reads; every damaged archive (cut anywhere, a byte
flipped anywhere) either reads back exactly the original arrays or raises InputError --
never another exception, never different data.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays

from lidframe.data import npzfile
from lidframe.data.npzfile import memory_limit_bytes, npz_headers, read_npy, read_npz
from lidframe.errors import InputError
from tests.data.npz_craft import npy_header, stored, write_zip, zip_bomb_member

dtypes = st.sampled_from([np.float64, np.float32, np.int64, np.int32, np.uint8, "<U7", "S5", ">f8"])


@st.composite
def array_sets(draw):
    """{key: array} of 1-4 arrays of drawn dtypes and shapes (empty ones included)."""
    keys = draw(st.lists(st.from_regex(r"[a-z][a-z_0-9]{0,8}", fullmatch=True), min_size=1, max_size=4, unique=True))
    out = {}
    for key in keys:
        dtype = np.dtype(draw(dtypes))
        shape = draw(array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5))
        out[key] = draw(arrays(dtype, shape))
    return out


def save(arrays_by_key: dict, compressed: bool) -> bytes:
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays_by_key)
    return buffer.getvalue()


def assert_same(got: dict, want: dict) -> None:
    assert list(got) == list(want)
    for key in want:
        assert got[key].dtype == want[key].dtype and got[key].shape == want[key].shape, key
        assert got[key].tobytes() == want[key].tobytes(), key  # bit for bit (NaN payloads included)


@given(array_sets(), st.booleans())
def test_honest_archives_read_as_numpy_reads_them(tmp_path_factory, arrays_by_key, compressed):
    path = tmp_path_factory.mktemp("npz") / "a.npz"
    path.write_bytes(save(arrays_by_key, compressed))
    with np.load(path, allow_pickle=False) as reference:
        want = {k: reference[k] for k in reference.files}
    assert_same(read_npz(path), want)
    headers = npz_headers(path)
    assert {k: (h.shape, h.dtype) for k, h in headers.items()} == {k: (v.shape, v.dtype) for k, v in want.items()}
    assert all(h.data_bytes == want[k].nbytes for k, h in headers.items())


@given(array_sets(), st.booleans(), st.data())
def test_a_cut_archive_is_refused_with_input_error(tmp_path_factory, arrays_by_key, compressed, data):
    raw = save(arrays_by_key, compressed)
    cut = data.draw(st.integers(0, len(raw) - 1), label="cut at")
    path = tmp_path_factory.mktemp("npz") / "a.npz"
    path.write_bytes(raw[:cut])
    with pytest.raises(InputError, match=r"a\.npz"):
        read_npz(path)


@given(array_sets(), st.booleans(), st.data())
def test_a_flipped_byte_is_refused_or_harmless(tmp_path_factory, arrays_by_key, compressed, data):
    """A damaged byte never reaches the caller as data: InputError, or (a flip in unused metadata) the exact arrays."""
    raw = bytearray(save(arrays_by_key, compressed))
    at = data.draw(st.integers(0, len(raw) - 1), label="byte")
    raw[at] ^= data.draw(st.integers(1, 255), label="xor")
    path = tmp_path_factory.mktemp("npz") / "a.npz"
    path.write_bytes(bytes(raw))
    try:
        got = read_npz(path)
    except InputError as exc:
        assert "\n" not in str(exc) and str(path) in str(exc)
        return
    assert_same(got, arrays_by_key)


@given(arrays(np.float64, array_shapes(min_dims=1, max_dims=2, max_side=6)), st.data())
def test_npy_reads_as_numpy_and_refuses_cut_files(tmp_path_factory, array, data):
    path = tmp_path_factory.mktemp("npy") / "v.npy"
    np.save(path, array)
    assert read_npy(path).tobytes() == np.load(path).tobytes()
    raw = path.read_bytes()
    path.write_bytes(raw[: data.draw(st.integers(0, len(raw) - 1), label="cut at")])
    with pytest.raises(InputError, match=r"v\.npy"):
        read_npy(path)


def test_keys_required_optional_and_unexpected(tmp_path):
    path = tmp_path / "k.npz"
    np.savez(path, a=np.zeros(2), b=np.ones(3))
    assert set(read_npz(path, ["a"], ["b", "c"])) == {"a", "b"}
    with pytest.raises(InputError, match=r"missing key\(s\) c of a thing; expected a, c \[, b\] \(found 'a', 'b'\)"):
        read_npz(path, ["a", "c"], ["b"], what="thing")
    with pytest.raises(InputError, match=r"unexpected key\(s\) 'b' in a thing; expected only a"):
        read_npz(path, ["a"], what="thing")


@pytest.mark.parametrize(
    "array, kind, ok",
    [
        (np.zeros(3), "numbers", True),
        (np.arange(3), "numbers", True),
        (np.array([True]), "numbers", False),
        (np.array([1j]), "numbers", False),
        (np.array(["x"]), "numbers", False),
        (np.array(["x"]), "ids", True),
        (np.array([b"x"]), "ids", True),
        (np.arange(2), "ids", True),
        (np.zeros(2), "ids", False),
    ],
)
def test_kinds(tmp_path, array, kind, ok):
    path = tmp_path / "k.npz"
    np.savez(path, x=array)
    if ok:
        read_npz(path, ["x"], kinds={"x": kind})
    else:
        with pytest.raises(InputError, match=rf"x has dtype {array.dtype}; expected"):
            read_npz(path, ["x"], kinds={"x": kind})


def test_object_arrays_are_refused_without_unpickling(tmp_path, monkeypatch):
    import pickle

    path = tmp_path / "o.npz"
    np.savez(path, ids=np.array(["a", None], dtype=object), allow_pickle=True)
    monkeypatch.setattr(pickle, "load", lambda *a, **k: pytest.fail("unpickled"))
    with pytest.raises(InputError, match=r"member 'ids.npy': holds Python objects \(dtype object\)"):
        read_npz(path)
    np.save(tmp_path / "o.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(InputError, match="holds Python objects"):
        read_npy(tmp_path / "o.npy")


def test_header_and_member_size_must_agree(tmp_path):
    honest = stored("x.npy", np.arange(10.0))
    forged = dict(honest, data=npy_header((10**7,)) + honest["data"][128:])
    with pytest.raises(InputError, match=r"declares a \(10000000,\) float64 array \(80.0 MB\) but the member holds 80"):
        read_npz(write_zip(tmp_path / "f.npz", [forged]))
    padded = dict(honest, data=honest["data"] + b"\0" * 8)
    with pytest.raises(InputError, match="bytes after the array"):
        read_npz(write_zip(tmp_path / "p.npz", [padded]))


def test_total_size_beyond_memory_is_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "m.npz"
    np.savez(path, a=np.zeros(1000), b=np.zeros(3000))
    monkeypatch.setattr(npzfile, "memory_limit_bytes", lambda: 30_000)
    with pytest.raises(InputError, match=r"take 32.0 kB \(largest: 'b', a \(3000,\) float64 array \(24.0 kB\)\)"):
        read_npz(path)


def test_memory_limit_is_this_machines_memory():
    limit = memory_limit_bytes()
    with open("/proc/meminfo") as info:
        total_kib = int(next(line for line in info if line.startswith("MemTotal:")).split()[1])
    assert limit is not None and abs(limit - total_kib * 1024) < 1 << 26


def test_zip_bomb_rule(tmp_path, monkeypatch):
    """Expansion over MAX_EXPANSION x and over BOMB_MIN_BYTES is refused; either alone is not."""
    member = zip_bomb_member("x.npy", 2)  # 32 MiB of zeros in ~33 kB
    path = write_zip(tmp_path / "b.npz", [member])
    assert read_npz(path)["x"].shape == (2 * (1 << 24) // 64, 8)  # below BOMB_MIN_BYTES: read (and it is all zeros)
    monkeypatch.setattr(npzfile, "BOMB_MIN_BYTES", 1 << 20)
    with pytest.raises(InputError, match=r"expand to 33.6 MB \(\d+x\); refused as a suspected zip bomb"):
        read_npz(path)
    monkeypatch.setattr(npzfile, "MAX_EXPANSION", 2000)
    assert read_npz(path)["x"].any() == np.False_


def test_real_data_stays_far_below_the_expansion_limit(tmp_path):
    """Dense scores with long, repetitive id arrays (the most compressible real layout) expand a few fold at most."""
    rng = np.random.default_rng(0)
    speakers = np.repeat(np.array([f"spk{i:05d}" for i in range(100)]), 1000)
    path = tmp_path / "s.npz"
    np.savez_compressed(
        path,
        scores=rng.normal(size=(speakers.size, 2)),
        enrolled=np.array(["a", "b"]),
        trial_speakers=speakers,
        trial_ids=np.array([f"utt{i:07d}" for i in range(speakers.size)]),
    )
    total = sum(h.data_bytes for h in npz_headers(path).values())
    assert total / path.stat().st_size < npzfile.MAX_EXPANSION / 10


def test_damaged_zips(tmp_path):
    members = [stored("x.npy", np.arange(4.0))]
    with pytest.raises(InputError, match="appears twice"):
        read_npz(write_zip(tmp_path / "d.npz", members * 2))
    with pytest.raises(InputError, match=r"member 'x.txt' is not a .npy array"):
        read_npz(write_zip(tmp_path / "t.npz", [{"name": "x.txt", "data": b"hello"}]))
    wrong_crc = dict(members[0], crc=12345)
    with pytest.raises(InputError, match=r"Bad CRC-32 for file 'x.npy'; the archive is corrupt"):
        read_npz(write_zip(tmp_path / "c.npz", [wrong_crc]))
    with pytest.raises(InputError, match="empty file"):
        (tmp_path / "e.npz").write_bytes(b"")
        read_npz(tmp_path / "e.npz")
    with pytest.raises(InputError, match="is a folder"):
        read_npz(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        read_npz(tmp_path / "none.npz")


def test_zipfile_agrees_the_crafted_archives_are_valid(tmp_path):
    """The test archives are real zip files (zipfile's own check), so the refusals above are of content, not format."""
    path = write_zip(tmp_path / "ok.npz", [stored("x.npy", np.arange(3.0)), zip_bomb_member("y.npy", 1)])
    with zipfile.ZipFile(path) as archive:
        assert archive.testzip() is None
    got = read_npz(path)
    assert got["x"].tolist() == [0.0, 1.0, 2.0] and not got["y"].any()


def test_format_bytes():
    assert [npzfile.format_bytes(n) for n in (0, 999, 1000, 1_234_567, 288 * 10**9)] == [
        "0 bytes",
        "999 bytes",
        "1.0 kB",
        "1.2 MB",
        "288.0 GB",
    ]


def test_path_types(tmp_path):
    np.savez(tmp_path / "p.npz", a=np.ones(2))
    assert read_npz(str(tmp_path / "p.npz"))["a"].tolist() == read_npz(Path(tmp_path / "p.npz"))["a"].tolist()
