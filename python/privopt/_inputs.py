"""Reading users' input files, with one clear :class:`InvalidInput` per problem.

A missing, empty, binary, garbled or ragged file, an ``.npy`` of the wrong dtype, or NaN
cells are the user's mistakes, not privopt's: each gets a message naming the option, the file
and, where there is one, the line. Inputs are only ever opened for reading.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from privopt._validation import check_finite_array
from privopt.errors import InvalidInput

__all__ = ["check_input_file", "read_csv_table", "read_numeric_csv", "load_points_file"]


def check_input_file(path: str | os.PathLike[str], option: str) -> Path:
    """``path`` as a Path after checking it is an existing, readable, non-empty file."""
    p = Path(path)
    shown = f"{option} {str(p)!r}"
    if not p.exists():
        raise InvalidInput(f"{shown}: no such file")
    if p.is_dir():
        raise InvalidInput(f"{shown} is a directory, not a file")
    if not os.access(p, os.R_OK):
        raise InvalidInput(f"{shown} is not readable (permission denied)")
    if p.stat().st_size == 0:
        raise InvalidInput(f"{shown} is empty")
    return p


def _text_lines(p: Path, shown: str) -> list[tuple[int, str]]:
    """The non-blank lines of a text file with their 1-based line numbers."""
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput(f"{shown} is not a UTF-8 text (CSV) file") from None
    if "\x00" in text:
        raise InvalidInput(f"{shown} is not a text (CSV) file: it holds NUL bytes")
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines:
        raise InvalidInput(f"{shown} is empty (only blank lines)")
    return lines


def read_csv_table(path: str | os.PathLike[str], option: str, **read_csv: Any) -> Any:
    """A pandas DataFrame from a CSV file with a header row; ragged rows are refused.

    Parameters
    ----------
    path : the CSV file.
    option : the command-line option or argument that named it (for messages).
    read_csv : extra keyword arguments for ``pandas.read_csv``.

    Raises
    ------
    InvalidInput
        Missing, empty, binary or garbled file; a row with more or fewer cells than the header;
        no data rows.
    """
    import pandas as pd

    p = check_input_file(path, option)
    shown = f"{option} {str(p)!r}"
    if p.suffix.lower() in (".npy", ".npz"):
        raise InvalidInput(f"{shown} is a NumPy file; a CSV table with a header row is expected")
    _check_rectangular(_text_lines(p, shown), shown)
    try:
        frame = pd.read_csv(p, **read_csv)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InvalidInput(f"{shown} is not a valid CSV table: {first}") from None
    if len(frame) == 0:
        raise InvalidInput(f"{shown} has a header but no data rows")
    return frame


def _check_rectangular(lines: list[tuple[int, str]], shown: str) -> None:
    """Every row has the header's cell count (pandas would pad a short row with NaN)."""
    import csv

    rows = csv.reader(text for _, text in lines)
    width = len(next(rows))
    for (number, _), cells in zip(lines[1:], rows, strict=False):
        if len(cells) != width:
            raise InvalidInput(
                f"{shown} is ragged: line {number} has {len(cells)} cells, the header {width}"
            )


def read_numeric_csv(path: str | os.PathLike[str], option: str) -> tuple[list[str] | None, Any]:
    """(column names or None, float (n, d) array) from a comma-separated numeric file.

    A first line that is not all numbers is taken as the header. Every other line must have
    the same number of numeric cells; NaN, inf or empty cells are refused with their line.
    """
    p = check_input_file(path, option)
    shown = f"{option} {str(p)!r}"
    lines = _text_lines(p, shown)
    header = None
    first = [c.strip() for c in lines[0][1].split(",")]
    if not _all_numbers(first):
        header, lines = first, lines[1:]
        if not lines:
            raise InvalidInput(f"{shown} has a header but no data rows")
    width = len(first)
    try:
        values = np.loadtxt([t for _, t in lines], delimiter=",", ndmin=2, dtype=np.float64)
        ok = values.shape[1] == width and bool(np.all(np.isfinite(values)))
    except ValueError:
        ok = False
    if not ok:  # find the first bad cell, by line, for the message
        _raise_first_bad_cell(lines, width, shown)
    return header, values


def _raise_first_bad_cell(lines: list[tuple[int, str]], width: int, shown: str) -> None:
    for number, text in lines:
        cells = [c.strip() for c in text.split(",")]
        if len(cells) != width:
            raise InvalidInput(
                f"{shown} is ragged: line {number} has {len(cells)} cells, not {width}"
            )
        for c, cell in enumerate(cells):
            try:
                value = float(cell)
            except ValueError:
                raise InvalidInput(
                    f"{shown}: line {number}, column {c + 1} is not a number"
                ) from None
            if not np.isfinite(value):
                kind = "NaN" if np.isnan(value) else "infinite"
                raise InvalidInput(
                    f"{shown}: line {number}, column {c + 1} is {kind}, not a finite number"
                )
    raise InvalidInput(f"{shown} is not a numeric CSV table")


def _all_numbers(cells: list[str]) -> bool:
    try:
        [float(c) for c in cells]
    except ValueError:
        return False
    return True


def load_points_file(path: str | os.PathLike[str], option: str) -> np.ndarray:
    """A finite float (n, d) array from ``.npy`` or a numeric CSV (header line optional).

    Raises
    ------
    InvalidInput
        Missing, empty or garbled file; an ``.npy`` that is not a real numeric array (object,
        text, bool, complex, pickled) of 1 or 2 dimensions; NaN/inf values; no rows.
    """
    p = check_input_file(path, option)
    if p.suffix.lower() != ".npy":
        return read_numeric_csv(p, option)[1]
    shown = f"{option} {str(p)!r}"
    try:
        loaded = np.load(p, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InvalidInput(f"{shown} is not a valid .npy array file: {first}") from None
    if not isinstance(loaded, np.ndarray):
        loaded.close()
        raise InvalidInput(f"{shown} is an .npz archive; give one array as .npy")
    arr = check_finite_array(shown, loaded)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InvalidInput(f"{shown} must hold a non-empty (n, d) array, got shape {arr.shape}")
    return arr
