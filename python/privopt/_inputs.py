"""Reading users' input files, with one clear :class:`InvalidInput` per problem.

A missing, empty, binary, garbled or ragged file, a symbolic link loop, a named pipe or a
device, an ``.npy`` of the wrong dtype, NaN cells, a header that is missing, repeats a column
name or leaves one blank, a cell over :data:`MAX_CELL_CHARS` characters and a number written
with "_" separators are the user's mistakes, not privopt's: each gets a message naming the
option, the file and, where there is one, the line. Inputs are only ever opened for reading.
"""

from __future__ import annotations

import csv
import errno
import os
import stat
import zipfile
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from privopt import _optional
from privopt._validation import check_finite_array
from privopt.errors import InvalidInput

__all__ = [
    "check_input_file",
    "read_csv_table",
    "read_numeric_csv",
    "load_points_file",
    "load_npy",
    "load_npz",
    "parse_number",
    "MAX_CELL_CHARS",
]

#: Longest CSV cell read, in characters (Python's csv module's limit): a longer one is a
#: garbled file or the wrong file, not a coordinate or a category.
MAX_CELL_CHARS = csv.field_size_limit()

_FILE_KINDS = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def parse_number(text: str) -> float:
    """``float(text)``, refusing what only Python reads as a number ("1_000").

    Raises
    ------
    ValueError
        ``text`` is not a number, or uses "_" digit separators (the message says so).

    Examples
    --------
    >>> parse_number(" 2.5e3 ")
    2500.0
    >>> parse_number("1_000")
    Traceback (most recent call last):
    ...
    ValueError: '1_000' uses '_' digit separators; write the number without them
    """
    if "_" in text:
        raise ValueError(f"{text!r} uses '_' digit separators; write the number without them")
    return float(text)


def _looks_numeric(cell: str) -> bool:
    """Whether Python would read ``cell`` as a number (separators, nan and inf included)."""
    try:
        float(cell)
    except ValueError:
        return False
    return True


def _shown_cell(cell: str) -> str:
    """``repr(cell)``, shortened: a message stays one readable line."""
    if len(cell) <= 40:
        return repr(cell)
    return f"{cell[:20]!r}... ({len(cell):,} characters)"


def check_input_file(path: str | os.PathLike[str], option: str) -> Path:
    """``path`` as a Path after checking it is an existing, readable, non-empty regular file.

    Raises
    ------
    InvalidInput
        Missing; a dangling or looping symbolic link; a directory, named pipe, socket or
        device; not readable; empty.
    """
    p = Path(path)
    shown = f"{option} {str(p)!r}"
    try:
        info = os.stat(p)
    except OSError as err:
        raise InvalidInput(_unreadable(p, shown, err)) from None
    if stat.S_ISDIR(info.st_mode):
        raise InvalidInput(f"{shown} is a directory, not a file")
    for is_kind, kind in _FILE_KINDS:
        if is_kind(info.st_mode):
            raise InvalidInput(
                f"{shown} is {kind}, not a regular file; save the data to a file first"
            )
    if not os.access(p, os.R_OK):
        raise InvalidInput(f"{shown} is not readable (permission denied)")
    if info.st_size == 0:
        raise InvalidInput(f"{shown} is empty")
    return p


def _unreadable(p: Path, shown: str, err: OSError) -> str:
    if err.errno == errno.ELOOP:
        return f"{shown} is a symbolic link that loops back on itself"
    if err.errno in (errno.ENOENT, errno.ENOTDIR):
        if os.path.islink(p):
            return f"{shown} is a symbolic link to {os.readlink(p)!r}, which does not exist"
        return f"{shown}: no such file"
    if err.errno == errno.EACCES:
        return f"{shown} is not readable (permission denied)"
    return f"{shown} cannot be read ({(err.strerror or type(err).__name__).lower()})"


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


def _csv_rows(lines: list[tuple[int, str]], shown: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of each CSV record, quotes removed; a csv error names its line."""
    reader = csv.reader(text for _, text in lines)
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            number = lines[min(reader.line_num, len(lines)) - 1][0]
            if "field limit" in str(err):
                raise InvalidInput(
                    f"{shown}: line {number} has a cell longer than {MAX_CELL_CHARS:,} characters"
                ) from None
            raise InvalidInput(f"{shown}: line {number} is not valid CSV ({err})") from None
        yield lines[reader.line_num - 1][0], cells


def _check_column_names(names: list[str], number: int, shown: str) -> None:
    """Every column named, and no name twice (pandas would invent or rename them)."""
    for c, name in enumerate(names):
        if not name.strip():
            raise InvalidInput(
                f"{shown}: column {c + 1} of the header (line {number}) has no name; "
                "name every column"
            )
    seen: dict[str, int] = {}
    for c, name in enumerate(names):
        if name in seen:
            raise InvalidInput(
                f"{shown}: the header (line {number}) names two columns {_shown_cell(name)} "
                f"(columns {seen[name] + 1} and {c + 1}); column names must be unique"
            )
        seen[name] = c


def read_csv_table(
    path: str | os.PathLike[str], option: str, *, refuse_separators: bool = True, **read_csv: Any
) -> Any:
    """A pandas DataFrame from a CSV file with a header row; ragged rows are refused.

    Parameters
    ----------
    path : the CSV file.
    option : the command-line option or argument that named it (for messages).
    refuse_separators : refuse a column of numbers where some are written with "_" separators
        (False where every column holds labels, such as census regions and group ids).
    read_csv : extra keyword arguments for ``pandas.read_csv``.

    Only an empty cell is a missing value: text such as ``NA``, ``None`` or ``null`` is read as
    written (a region or a category may be called "NA"; pandas would make it missing). In a
    column of numbers such a word is refused by line and column instead, since it would turn
    the column into text.

    Raises
    ------
    InvalidInput
        Missing, empty, binary or garbled file; no header (a first line of numbers only); a
        header with a blank or repeated column name; a row with more or fewer cells than the
        header; a cell over :data:`MAX_CELL_CHARS` characters; a column of numbers where some
        are written with "_" separators (read as text, the column would become categories;
        see ``refuse_separators``) or where a cell spells a missing value (``NA``, ``nan``,
        ``null``...); no data rows.
    """
    pd = _optional.pandas()

    p = check_input_file(path, option)
    shown = f"{option} {str(p)!r}"
    if p.suffix.lower() in (".npy", ".npz"):
        raise InvalidInput(f"{shown} is a NumPy file; a CSV table with a header row is expected")
    rows = _csv_rows(_text_lines(p, shown), shown)
    number, header = next(rows)
    if all(_looks_numeric(cell) for cell in header):
        raise InvalidInput(
            f"{shown}: the first line holds numbers, not column names; add a header line "
            "naming the columns"
        )
    _check_column_names(header, number, shown)
    data_lines = []
    for number, cells in rows:  # pandas would pad a short row with NaN
        if len(cells) != len(header):
            raise InvalidInput(
                f"{shown} is ragged: line {number} has {len(cells)} cells, the header {len(header)}"
            )
        data_lines.append(number)
    try:
        frame = pd.read_csv(p, **{"keep_default_na": False, "na_values": [""], **read_csv})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as err:
        raise InvalidInput(f"{shown} is not a valid CSV table: {_first_line(err)}") from None
    if len(frame) == 0:
        raise InvalidInput(f"{shown} has a header but no data rows")
    _refuse_text_among_numbers(frame, data_lines, shown, separators=refuse_separators)
    return frame


#: Words that spell a missing value (pandas' own list, compared in lower case).
_MISSING_WORDS = frozenset(
    [
        "na",
        "n/a",
        "nan",
        "-nan",
        "+nan",
        "null",
        "none",
        "#n/a",
        "#na",
        "<na>",
        "-1.#ind",
        "1.#ind",
        "-1.#qnan",
        "1.#qnan",
        "#n/a n/a",
    ]
)


def _refuse_text_among_numbers(
    frame: Any, data_lines: list[int], shown: str, *, separators: bool
) -> None:
    """A column of numbers with some cells that are not plain numbers is read as text, so the
    column would silently turn into categories: refuse the first such cell, by line. The
    cells are "1_000" (pandas, like every CSV reader, takes no separators; checked only with
    ``separators``, since labels such as "06_001" throughout are fine) and words that spell
    a missing value ("NA", "nan", "null"...; leave a missing value's cell empty)."""
    is_numeric_dtype = _optional.pandas().api.types.is_numeric_dtype

    for name in frame.columns:
        if is_numeric_dtype(frame[name]):
            continue
        cells = [(i, str(v)) for i, v in enumerate(frame[name]) if isinstance(v, str)]
        missing = [(i, v) for i, v in cells if v.strip().lower() in _MISSING_WORDS]
        numbers = [v for i, v in cells if v.strip().lower() not in _MISSING_WORDS]
        if not all(_looks_numeric(v) for v in numbers):
            continue  # a column of labels
        separated = [(i, v) for i, v in cells if "_" in v] if separators else []
        if separated and len(separated) == len(cells):
            separated = []  # labels such as "06_001" throughout
        if numbers and missing:
            row, cell = missing[0]
            reason = "spells a missing value, which turns a column of numbers into text; "
            reason += "leave the cell empty"
        elif separated:
            row, cell = separated[0]
            reason = "is a number written with '_' separators, which is read as text; "
            reason += "write it without them"
        else:
            continue
        line = data_lines[row] if len(data_lines) == len(frame) else row + 2
        raise InvalidInput(f"{shown}: line {line}, column {name!r}: {_shown_cell(cell)} {reason}")


def read_numeric_csv(path: str | os.PathLike[str], option: str) -> tuple[list[str] | None, Any]:
    """(column names or None, float (n, d) array) from a comma-separated numeric file.

    A first line with a cell that is not a number (quotes removed) is the header; its names
    must be present and unique. Every other line must have the same number of numeric cells;
    NaN, inf, empty cells, "_" separators and cells over :data:`MAX_CELL_CHARS` characters are
    refused with their line.
    """
    p = check_input_file(path, option)
    shown = f"{option} {str(p)!r}"
    lines = _text_lines(p, shown)
    _, first = next(_csv_rows(lines[:1], shown))
    header = None
    if any(cell.strip() and not _looks_numeric(cell) for cell in first):
        _check_column_names(first, lines[0][0], shown)
        header, lines = [c.strip() for c in first], lines[1:]
        if not lines:
            raise InvalidInput(f"{shown} has a header but no data rows")
    width = len(first)
    try:
        values = np.loadtxt([t for _, t in lines], delimiter=",", ndmin=2, dtype=np.float64)
        ok = values.shape[1] == width and bool(np.all(np.isfinite(values)))
    except ValueError:
        ok = False
    if not ok:  # quoted numbers, or a bad cell to find by line for the message
        values = _parse_cells(lines, width, shown)
    return header, values


def _parse_cells(lines: list[tuple[int, str]], width: int, shown: str) -> np.ndarray:
    """The cells read one by one (quotes removed): the array, or the first bad cell's line."""
    rows = []
    for number, cells in _csv_rows(lines, shown):
        if len(cells) != width:
            raise InvalidInput(
                f"{shown} is ragged: line {number} has {len(cells)} cells, not {width}"
            )
        row = []
        for c, cell in enumerate(cells):
            try:
                value = parse_number(cell)
            except ValueError:
                reason = (
                    "uses '_' digit separators; write the number without them"
                    if "_" in cell
                    else "is not a number"
                )
                raise InvalidInput(f"{shown}: line {number}, column {c + 1} {reason}") from None
            if not np.isfinite(value):
                kind = "NaN" if np.isnan(value) else "infinite"
                raise InvalidInput(
                    f"{shown}: line {number}, column {c + 1} is {kind}, not a finite number"
                )
            row.append(value)
        rows.append(row)
    return np.array(rows, dtype=np.float64).reshape(len(rows), width)


#: What numpy raises for a file that is not a valid .npy / .npz (wrong format, pickled objects,
#: truncated or corrupt data).
_NUMPY_FILE_ERRORS = (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def load_npy(path: str | os.PathLike[str], option: str) -> np.ndarray:
    """The array of an ``.npy`` file, stored without pickles.

    Raises
    ------
    InvalidInput
        A missing, empty or non-regular file; a file that is not an ``.npy`` array (garbled,
        truncated, pickled objects, an ``.npz`` archive).
    """
    p = check_input_file(path, option)
    shown = f"{option} {str(p)!r}"
    try:
        loaded = np.load(p, allow_pickle=False)
    except _NUMPY_FILE_ERRORS as err:
        raise InvalidInput(f"{shown} is not a valid .npy array file: {_first_line(err)}") from None
    if not isinstance(loaded, np.ndarray):
        loaded.close()
        raise InvalidInput(f"{shown} is an .npz archive; give one array as .npy")
    return loaded


def load_npz(
    path: str | os.PathLike[str], option: str, required: Sequence[str] = ()
) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive, stored without pickles, by name.

    Raises
    ------
    InvalidInput
        A missing, empty or non-regular file; a file that is not an ``.npz`` archive (garbled,
        truncated, a single ``.npy`` array, a member with pickled objects); an archive without
        one of the ``required`` arrays (all of them are named).
    """
    p = check_input_file(path, option)
    shown = f"{option} {str(p)!r}"
    try:
        loaded = np.load(p, allow_pickle=False)
    except _NUMPY_FILE_ERRORS as err:
        raise InvalidInput(f"{shown} is not a valid .npz archive: {_first_line(err)}") from None
    if isinstance(loaded, np.ndarray):
        raise InvalidInput(f"{shown} is a single .npy array, not an .npz archive")
    try:
        arrays = {name: loaded[name] for name in loaded.files}
    except _NUMPY_FILE_ERRORS as err:
        raise InvalidInput(f"{shown} holds an unreadable array: {_first_line(err)}") from None
    finally:
        loaded.close()
    missing = [name for name in required if name not in arrays]
    if missing:
        raise InvalidInput(f"{shown} lacks the array(s) {missing}; it holds {sorted(arrays)}")
    return arrays


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
    arr = check_finite_array(shown, load_npy(p, option))
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InvalidInput(f"{shown} must hold a non-empty (n, d) array, got shape {arr.shape}")
    return arr
