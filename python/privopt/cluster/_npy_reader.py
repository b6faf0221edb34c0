"""An ``.npy`` file on disk read a block of rows at a time, for a Dask fit out of core.

:class:`NpyRows` looks like a read-only (n, d) array to ``dask.array.from_array(...,
asarray=False)``: each row chunk is read with positioned reads (``pread``) of exactly its
bytes, so the file's pages go through the page cache and not into the reading process's
resident memory (a memory map counts every touched page there). It pickles as its path, so a
Dask worker process, local or remote, opens the file itself: on a remote cluster the path must
name the same file on every worker.

Both layouts of ``numpy.save`` are read: column-major (Fortran order: one read per column of a
block) and row-major (C order, the default: one read per block of whole rows).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from privopt._inputs import check_input_file
from privopt.errors import InvalidInput

__all__ = ["NpyRows"]

#: Bytes of one positioned read at most (Linux returns at most about 2 GiB per call).
_MAX_READ = 1 << 30


class NpyRows:
    """Read-only (n, d) view of a real numeric ``.npy`` file, read on demand.

    Parameters
    ----------
    path : an ``.npy`` file holding an (n, d) or (n,) array (n ≥ 1, d ≥ 1; a 1-D array is one
        column) of integers or floats, in either byte order and either memory layout.
    option : the name of the file in error messages (e.g. ``"INPUT"``).

    Attributes
    ----------
    path : the absolute path (what a worker process opens).
    shape : (n, d).
    dtype : the stored dtype in this machine's byte order (what reads return; the fit converts
        it to float64).
    fortran_order : True when the file is column-major.

    Raises
    ------
    InvalidInput
        Missing or not a regular file; not an ``.npy`` file; a header that does not parse; an
        array of 0 or more than 2 dimensions, without rows or columns; a dtype that is not a
        real number (object, text, bool, complex, structured); a file shorter than its header
        says.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> path = tempfile.mkdtemp() + "/x.npy"
    >>> np.save(path, np.arange(12.0).reshape(4, 3))
    >>> rows = NpyRows(path)
    >>> rows.shape, rows[1:3, :].tolist()
    ((4, 3), [[3.0, 4.0, 5.0], [6.0, 7.0, 8.0]])
    """

    ndim = 2

    def __init__(self, path: str | os.PathLike[str], option: str = "INPUT") -> None:
        checked = check_input_file(path, option)
        self.path = str(checked.resolve())
        self.option = option
        self.shape, self._stored, self.fortran_order, self.offset = _read_header(
            self.path, f"{option} {str(path)!r}"
        )
        self.dtype = self._stored.newbyteorder("=")  # what reads return
        self._fd: int | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ pickling
    def __getstate__(self) -> dict[str, Any]:
        # The descriptor and the lock belong to this process; a worker opens its own.
        state = self.__dict__.copy()
        state["_fd"], state["_lock"] = None, None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __dask_tokenize__(self) -> tuple[Any, ...]:
        # The same file unchanged gives the same Dask keys; a rewritten one new keys.
        info = os.stat(self.path)
        return (type(self).__name__, self.path, info.st_size, info.st_mtime_ns)

    def close(self) -> None:
        """Close this process's descriptor (reading again reopens it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # ------------------------------------------------------------------ reading
    def __getitem__(self, key: Any) -> np.ndarray:
        """Rows and columns by slices (step 1) or a column by an int; what Dask asks for."""
        rows, cols = key if isinstance(key, tuple) else (key, slice(None))
        if isinstance(rows, (int, np.integer)):
            return self[slice(int(rows), int(rows) + 1), cols][0]
        if not isinstance(rows, slice) or rows.step not in (None, 1):
            raise TypeError(f"NpyRows reads rows by a slice of step 1, not {rows!r}")
        r0, r1, _ = rows.indices(self.shape[0])
        if self.fortran_order and isinstance(cols, (int, np.integer, slice)):
            # Column-major: only the asked columns are read (a pass over one column, such as
            # the split width's, reads 1/d of the file, not all of it).
            picked = range(self.shape[1])[cols]
            wanted = [picked] if isinstance(picked, int) else list(picked)
            block = self.read_rows(r0, max(r0, r1), wanted)
            return block[:, 0] if isinstance(picked, int) else block
        block = self.read_rows(r0, max(r0, r1))
        return block[:, cols]

    def read_rows(self, start: int, stop: int, columns: list[int] | None = None) -> np.ndarray:
        """Rows ``start`` to ``stop`` (exclusive) of ``columns`` (default all d, in order) as a
        (stop − start, len(columns)) array of the stored dtype (native byte order); one read per
        column (column-major) or one in all (row-major: whole rows, then the columns picked)."""
        n, d = self.shape
        if not 0 <= start <= stop <= n:
            raise IndexError(f"rows {start}:{stop} outside the {n} rows of {self.path}")
        if not self.fortran_order and columns is not None:
            return self.read_rows(start, stop)[:, columns]
        columns = list(range(d)) if columns is None else columns
        rows, size = stop - start, self._stored.itemsize
        shape = (rows, len(columns))
        out = np.empty(shape, dtype=self._stored, order="F" if self.fortran_order else "C")
        if self.fortran_order:  # each column's rows are contiguous in the file and in out
            for j, k in enumerate(columns):
                self._read_into(out[:, j].view(np.uint8), self.offset + (k * n + start) * size)
        else:  # the rows are contiguous
            self._read_into(out.reshape(-1).view(np.uint8), self.offset + start * d * size)
        return out if self._stored.isnative else out.astype(self.dtype)

    def _read_into(self, buffer: np.ndarray, offset: int) -> None:
        """Fill the byte array ``buffer`` from the file at ``offset``."""
        view = buffer.data  # a byte memoryview of the array
        done = 0
        while done < len(view):
            part = view[done : done + _MAX_READ]
            got = self._read_at(part, offset + done)
            if got == 0:
                raise InvalidInput(f"{self.option} {self.path!r} ended early (truncated?)")
            done += got

    def _read_at(self, part: memoryview, offset: int) -> int:
        if self._fd is None:
            with self._lock:
                if self._fd is None:
                    self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        if hasattr(os, "preadv"):  # positioned: threads of one worker share the descriptor
            return os.preadv(self._fd, [part], offset)
        with self._lock:  # no positioned read (Windows): seek and read under the lock
            os.lseek(self._fd, offset, os.SEEK_SET)
            data = os.read(self._fd, len(part))
        part[: len(data)] = data
        return len(data)


def _read_header(path: str, shown: str) -> tuple[tuple[int, int], np.dtype, bool, int]:
    """(shape (n, d), dtype, Fortran order, data offset) of an ``.npy`` file, checked."""
    fmt = np.lib.format
    with open(path, "rb") as f:
        try:
            version = fmt.read_magic(f)
            reader = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, fortran, dtype = reader(f)
        except (ValueError, OSError, SyntaxError, EOFError) as err:
            text = str(err).splitlines()[0] if str(err) else type(err).__name__
            raise InvalidInput(f"{shown} is not a valid .npy array file: {text}") from None
        offset = f.tell()
    dtype = np.dtype(dtype)
    if dtype.kind not in "iuf" or dtype.fields is not None:
        raise InvalidInput(f"{shown} must hold real numbers (integers or floats), got {dtype}")
    if len(shape) not in (1, 2):
        raise InvalidInput(f"{shown} must hold an (n, d) array, got shape {tuple(shape)}")
    n, d = (int(shape[0]), 1) if len(shape) == 1 else (int(shape[0]), int(shape[1]))
    if n == 0 or d == 0:
        raise InvalidInput(f"{shown} must hold a non-empty (n, d) array, got shape {(n, d)}")
    need = offset + n * d * dtype.itemsize
    have = Path(path).stat().st_size
    if have < need:
        raise InvalidInput(
            f"{shown} is truncated: its header says {n} × {d} values ({need} bytes), the file "
            f"has {have} bytes"
        )
    return (n, d), dtype, bool(fortran) or len(shape) == 1, offset
