"""unit_rows (the one row normaliser of every cosine scorer) and file_sha256 (the one file digest)."""

import hashlib
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lidframe.data.fileio import file_sha256
from lidframe.data.vectors import check_nonzero_rows, unit_rows
from lidframe.errors import InputError

row_matrices = st.tuples(st.integers(1, 8), st.integers(1, 6)).flatmap(
    lambda shape: arrays(
        np.float64,
        shape,
        elements=st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False).filter(lambda v: abs(v) > 1e-3),
    )
)


@given(row_matrices)
def test_unit_rows_matches_a_pure_python_reference(matrix):
    got = unit_rows(matrix, what="rows")
    for row, unit in zip(matrix.tolist(), got, strict=True):
        norm = math.sqrt(math.fsum(v * v for v in row))  # independent: exact-sum float64 norm
        np.testing.assert_allclose(unit, [v / norm for v in row], rtol=1e-14, atol=0)
    # the same bits as numpy.linalg.norm, the rule the callers used before
    assert np.array_equal(got, matrix / np.linalg.norm(matrix, axis=1, keepdims=True))


@given(row_matrices)
def test_unit_rows_on_torch_tensors_equals_numpy(matrix):
    torch = pytest.importorskip("torch")
    got = unit_rows(torch.from_numpy(matrix), what="rows")
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float64
    np.testing.assert_allclose(got.numpy(), unit_rows(matrix, what="rows"), rtol=1e-15, atol=0)


def test_zero_rows_are_named_by_id_or_index():
    matrix = np.ones((4, 3))
    matrix[[1, 3]] = 0.0
    with pytest.raises(InputError, match=r"^cosine scoring needs non-zero vectors; zero trial embeddings: 'u1', 'u3'$"):
        unit_rows(matrix, what="trial embeddings", ids=["u0", "u1", "u2", "u3"])
    with pytest.raises(InputError, match=r"zero enrolled rows: '1', '3'$"):
        unit_rows(matrix, what="enrolled")
    with pytest.raises(InputError, match=r"zero speaker vectors: 'b', 'd'$"):
        check_nonzero_rows(matrix, what="speaker vectors", ids=np.array(["a", "b", "c", "d"]))
    check_nonzero_rows(np.ones((2, 2)), what="rows")
    # squares that underflow give norm 0: unit_rows refuses rather than dividing by zero
    with pytest.raises(InputError, match="zero tiny rows: '0'"):
        unit_rows(np.full((1, 3), 1e-200), what="tiny")


def test_zero_rows_on_torch_tensors():
    torch = pytest.importorskip("torch")
    matrix = torch.ones(3, 2)
    matrix[2] = 0
    with pytest.raises(InputError, match="zero trial rows: '2'"):
        unit_rows(matrix, what="trial")


@given(st.binary(max_size=3 << 19))
def test_file_sha256_equals_hashlib_of_the_bytes(tmp_path_factory, content):
    path = tmp_path_factory.mktemp("digest") / "blob.bin"
    path.write_bytes(content)
    assert file_sha256(path) == hashlib.sha256(content).hexdigest()


def test_file_sha256_across_block_boundaries(tmp_path):
    content = bytes(range(256)) * ((3 << 20) // 256 + 7)  # over three 1 MiB blocks, a partial last one
    path = tmp_path / "big.bin"
    path.write_bytes(content)
    assert file_sha256(str(path)) == hashlib.sha256(content).hexdigest()
