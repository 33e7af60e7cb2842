"""Hand-made ``.npz`` archives for the bad-input tests: forged headers, bad CRCs, zip bombs.

:mod:`zipfile` only writes honest archives, so these are written byte by byte from the
PKWARE APPNOTE layout (local file header, data, central directory, end record), which
lets a test say exactly what is wrong with a file.
"""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import numpy as np
from numpy.lib import format as npy_format

STORED, DEFLATED = 0, 8
CHUNK = 1 << 24  # 16 MiB of zeros per repeated deflate block of a bomb


def npy_bytes(array: np.ndarray) -> bytes:
    """The ``.npy`` serialisation of *array* (what ``np.save`` writes)."""
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue()


def npy_header(shape: tuple[int, ...], dtype: str = "<f8") -> bytes:
    """A version 1.0 ``.npy`` header declaring *shape* and *dtype* (no data)."""
    buffer = io.BytesIO()
    npy_format.write_array_header_1_0(buffer, {"descr": dtype, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def write_zip(path: Path, members: list[dict]) -> Path:
    """Write a zip archive whose members are given field by field.

    Each member is a dict with ``name``, ``data`` (the bytes stored: compressed already
    for DEFLATED) and optionally ``method`` (STORED), ``crc``, ``file_size`` and
    ``compress_size`` (default: those of the honest archive; ``crc`` and ``file_size``
    default to the stored data's for STORED, and must be given for DEFLATED).
    """
    out = io.BytesIO()
    central = []
    for member in members:
        name = member["name"].encode()
        data = member["data"]
        method = member.get("method", STORED)
        crc = member.get("crc", zlib.crc32(data) if method == STORED else None)
        file_size = member.get("file_size", len(data) if method == STORED else None)
        compress_size = member.get("compress_size", len(data))
        assert crc is not None and file_size is not None, "a deflated member needs crc and file_size"
        offset = out.tell()
        out.write(
            struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc, compress_size, file_size, len(name), 0)
        )
        out.write(name)
        out.write(data)
        central.append(
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                20,
                20,
                0,
                method,
                0,
                0x21,
                crc,
                compress_size,
                file_size,
                len(name),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + name
        )
    start = out.tell()
    for entry in central:
        out.write(entry)
    size = out.tell() - start
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(central), len(central), size, start, 0))
    path.write_bytes(out.getvalue())
    return path


def stored(name: str, array: np.ndarray) -> dict:
    """An honest stored member holding *array*."""
    return {"name": name, "data": npy_bytes(array)}


def deflated(name: str, raw: bytes) -> dict:
    """An honest deflated member holding the bytes *raw*."""
    packer = zlib.compressobj(6, zlib.DEFLATED, -15)
    data = packer.compress(raw) + packer.flush()
    return {"name": name, "data": data, "method": DEFLATED, "crc": zlib.crc32(raw), "file_size": len(raw)}


def zip_bomb_member(name: str, n_chunks: int, n_enrolled: int = 8) -> dict:
    """A deflated ``.npy`` member of n_chunks x 16 MiB of zero float64 scores, a few MB on disk.

    The deflate stream is one block of (header + 16 MiB of zeros) and then the same
    16 MiB-of-zeros block repeated, each ending on a byte boundary (``Z_SYNC_FLUSH``), and
    an empty final block: valid deflate that expands about 1000-fold, with an honest CRC
    and honest sizes -- exactly what a zip bomb is.
    """
    data_bytes = n_chunks * CHUNK
    header = npy_header((data_bytes // (8 * n_enrolled), n_enrolled))
    zeros = bytes(CHUNK)
    first = zlib.compressobj(6, zlib.DEFLATED, -15)
    block_a = first.compress(header + zeros) + first.flush(zlib.Z_SYNC_FLUSH)
    repeat = zlib.compressobj(6, zlib.DEFLATED, -15)
    block_b = repeat.compress(zeros) + repeat.flush(zlib.Z_SYNC_FLUSH)
    stream = block_a + block_b * (n_chunks - 1) + b"\x03\x00"  # b"\x03\x00": empty final fixed-Huffman block
    crc = zlib.crc32(header)
    for _ in range(n_chunks):
        crc = zlib.crc32(zeros, crc)
    return {"name": name, "data": stream, "method": DEFLATED, "crc": crc, "file_size": len(header) + data_bytes}
