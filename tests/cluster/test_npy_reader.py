"""NpyRows: an .npy file read a block of rows at a time gives the file's array, in either
layout and byte order, pickled to another process or not; a file it cannot read is named."""

from __future__ import annotations

import pickle

import dask.array as da
import numpy as np
import pytest
from privopt.cluster._npy_reader import NpyRows
from privopt.errors import InvalidInput

_X = np.random.default_rng(0).normal(size=(1001, 3))

STORED = {
    "row-major float64": _X,
    "column-major float64": np.asfortranarray(_X),
    "row-major big-endian": _X.astype(">f8"),
    "column-major big-endian": np.asfortranarray(_X.astype(">f4")),
    "int32": (_X * 100).astype(np.int32),
    "one column (1-D)": _X[:, 0],
}


@pytest.mark.parametrize("stored", list(STORED.values()), ids=list(STORED))
def test_row_blocks_read_back_the_array(stored, tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, stored)
    expected = np.asarray(stored).reshape(len(stored), -1)
    rows = NpyRows(path)
    assert rows.shape == expected.shape and rows.dtype == expected.dtype.newbyteorder("=")
    assert rows.fortran_order == (stored.ndim == 1 or np.isfortran(stored))
    np.testing.assert_array_equal(rows[17:400, :], expected[17:400])
    np.testing.assert_array_equal(rows[5:9, expected.shape[1] - 1], expected[5:9, -1])
    np.testing.assert_array_equal(rows[0:0, :], expected[:0])
    # As a worker gets it: pickled without its descriptor, reopened by path.
    again = pickle.loads(pickle.dumps(rows))
    np.testing.assert_array_equal(again[990:1001, :], expected[990:])
    # As a Dask array of uneven row chunks, the way `privopt cluster --workers` reads it.
    lazy = da.from_array(rows, chunks=(128, rows.shape[1]), asarray=False)
    np.testing.assert_array_equal(lazy.compute(scheduler="threads"), expected)
    rows.close()


@pytest.mark.parametrize("stored", list(STORED.values()), ids=list(STORED))
@pytest.mark.parametrize("cols", [0, -1, slice(None), slice(1, None), slice(None, None, -1)])
def test_columns_read_back_the_array(stored, cols, tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, stored)
    expected = np.asarray(stored).reshape(len(stored), -1)
    rows = NpyRows(path)
    np.testing.assert_array_equal(rows[3:700, cols], expected[3:700, cols])
    # A Dask column, as the split width's pass asks for it.
    lazy = da.from_array(rows, chunks=(128, rows.shape[1]), asarray=False)
    np.testing.assert_array_equal(lazy[:, cols].compute(scheduler="threads"), expected[:, cols])
    rows.close()


def test_a_column_of_a_column_major_file_reads_only_its_bytes(tmp_path, monkeypatch):
    stored = np.asfortranarray(_X)
    path = tmp_path / "x.npy"
    np.save(path, stored)
    rows = NpyRows(path)
    read: list[int] = []
    inner = NpyRows._read_into
    monkeypatch.setattr(
        NpyRows,
        "_read_into",
        lambda self, buf, off: (read.append(buf.nbytes), inner(self, buf, off)),
    )
    lazy = da.from_array(rows, chunks=(128, rows.shape[1]), asarray=False)
    np.testing.assert_array_equal(lazy[:, 1].compute(scheduler="sync"), _X[:, 1])
    assert sum(read) == _X.shape[0] * _X.itemsize  # one column's bytes, not the whole file's
    rows.close()


BAD = {
    "bool": (np.array([[True, False]]), "must hold real numbers (integers or floats), got bool"),
    "text": (np.array([["a", "b"]]), "must hold real numbers"),
    "complex": (np.ones((2, 2), dtype=complex), "got complex128"),
    "object": (np.array([[1, None]], dtype=object), "got object"),
    "no rows": (np.zeros((0, 2)), "must hold a non-empty (n, d) array, got shape (0, 2)"),
    "3-D": (np.zeros((2, 2, 2)), "must hold an (n, d) array, got shape (2, 2, 2)"),
}


@pytest.mark.parametrize(("stored", "fragment"), list(BAD.values()), ids=list(BAD))
def test_an_array_of_the_wrong_kind_is_named(stored, fragment, tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, stored, allow_pickle=True)
    with pytest.raises(InvalidInput, match=r"INPUT '.*x\.npy'") as err:
        NpyRows(path)
    assert fragment in str(err.value)


def test_a_truncated_or_garbled_file_is_named(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, _X)
    with open(path, "r+b") as f:
        f.truncate(1000)
    with pytest.raises(InvalidInput, match=r"is truncated: its header says 1001 × 3 values"):
        NpyRows(path)
    path.write_bytes(b"x,y\n1,2\n" * 20)
    with pytest.raises(InvalidInput, match=r"--data '.*' is not a valid \.npy array file"):
        NpyRows(path, "--data")
    with pytest.raises(InvalidInput, match=r"INPUT '.*missing\.npy'"):
        NpyRows(tmp_path / "missing.npy")
