"""The k-anonymised table as ``pandas.Interval`` columns, and which columns are generalised:
a string is one column name, and ``sensitive`` columns are carried unchanged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import privopt
import pytest
from privopt.cli import main
from privopt.errors import InvalidInput
from privopt.kanon import anonymize, datasets

QIS = ["AGE", "SEX", "INJ_SEV", "DRINKING"]


def _table_with_text_and_floats() -> pd.DataFrame:
    """FARS with a categorical QI, a non-integral QI and a sensitive column."""
    rng = np.random.default_rng(3)
    df = datasets.fars_20()
    return df.assign(
        town=rng.choice(["north", "south", "east"], len(df)),
        weight_kg=np.round(rng.uniform(50.0, 90.0, len(df)), 1),
        diagnosis=rng.choice(["flu", "cold"], len(df)),
    )


def _assert_intervals_hold_the_data(res, df, qis, k):
    frame = res.interval_frame()
    assert frame.index.equals(res.table.index) and list(frame.columns) == list(res.table.columns)
    for name in qis:
        if name in (res.categorical or []):
            assert frame[name].equals(res.table[name])  # value sets stay text
            continue
        cells = frame[name]
        assert isinstance(cells.dtype, pd.IntervalDtype) and cells.dtype.closed == "both"
        # every original value lies in its row's interval
        assert all(v in cell for v, cell in zip(df[name], cells, strict=True))
        # the rendered "[y-z]" text and the interval give the same bounds (values are >= 0)
        for text, cell in zip(res.table[name], cells, strict=True):
            low, high = (float(v) for v in text.strip("[]").split("-"))
            assert (low, high) == (cell.left, cell.right)
    # each class: at least k rows, and all its rows hold identical cells
    for rows in res.partition():
        assert len(rows) >= k
        assert len(frame.iloc[rows][qis].astype(str).drop_duplicates()) == 1
    # columns that are not quasi-identifiers are the input's
    for name in set(df.columns) - set(qis):
        assert frame[name].equals(df[name])


@pytest.mark.parametrize("method", ["greedy", "mondrian", "split_carry"])
@pytest.mark.parametrize("k", [2, 5])
def test_interval_frame_holds_every_value_and_k_identical_rows(method, k):
    df = _table_with_text_and_floats()
    qis = [*QIS, "town", "weight_kg"]
    res = anonymize(df, k, qis, method=method)
    _assert_intervals_hold_the_data(res, df, qis, k)
    frame = res.interval_frame()
    assert frame["AGE"].dtype == pd.IntervalDtype("int64", "both")
    assert frame["weight_kg"].dtype == pd.IntervalDtype("float64", "both")
    assert res.categorical == ["town"]


def test_interval_frame_survives_save_and_load(tmp_path):
    df = _table_with_text_and_floats()
    qis = [*QIS, "town", "weight_kg"]
    res = anonymize(df, 3, qis)
    loaded = privopt.load(res.save(tmp_path / "rel"))
    assert loaded.problem is None and loaded.categorical == ["town"]
    pd.testing.assert_frame_equal(loaded.interval_frame(), res.interval_frame())


def test_a_string_is_one_column_name():
    df = datasets.fars_20()
    res = anonymize(df, 3, "AGE")
    assert res.quasi_identifiers == ["AGE"]
    assert res.table[["SEX", "INJ_SEV", "DRINKING"]].equals(df[["SEX", "INJ_SEV", "DRINKING"]])
    with pytest.raises(InvalidInput, match=r"\['age'\]"):
        anonymize(df, 3, "age")
    text = df.assign(town=np.where(df["AGE"] > 40, "old", "young"))
    assert anonymize(text, 3, ["AGE", "town"], categorical="town").categorical == ["town"]


def test_sensitive_columns_are_never_generalised():
    df = _table_with_text_and_floats()
    res = anonymize(df, 3, sensitive=["diagnosis", "weight_kg"])
    assert res.quasi_identifiers == [*QIS, "town"]
    assert res.table[["diagnosis", "weight_kg"]].equals(df[["diagnosis", "weight_kg"]])
    assert anonymize(df, 3, sensitive="diagnosis").table["diagnosis"].equals(df["diagnosis"])
    with pytest.raises(InvalidInput, match="both in quasi_identifiers and in sensitive"):
        anonymize(df, 3, ["AGE", "diagnosis"], sensitive="diagnosis")


def test_without_quasi_identifiers_every_column_is_generalised():
    """The documented default: every column not named in ``sensitive``."""
    df = _table_with_text_and_floats()
    res = anonymize(df, 3)
    assert res.quasi_identifiers == list(df.columns)
    assert res.categorical == ["town", "diagnosis"]


def test_cli_sensitive_column_is_carried_unchanged(tmp_path, capsys):
    src = tmp_path / "in.csv"
    df = _table_with_text_and_floats()
    df.to_csv(src, index=False)
    out = tmp_path / "anon"
    argv = ["kanon", str(src), "--anonymity", "3", "--sensitive", "diagnosis,weight_kg"]
    assert main([*argv, "--out", str(out), "--quiet"]) == 0
    table = pd.read_csv(out / "anonymized.csv")
    assert table["diagnosis"].equals(df["diagnosis"])
    assert table["weight_kg"].equals(df["weight_kg"])
    assert table["AGE"].str.startswith("[").all()
    assert "every column was generalised" not in capsys.readouterr().err


@pytest.mark.parametrize("columns", [None, ["--quasi-identifiers", "AGE,town"], ["--qi", "AGE"]])
def test_cli_names_the_columns_it_generalises_by_default(tmp_path, capsys, columns):
    """Without --quasi-identifiers or --sensitive every column is generalised, and the run
    says which on stderr; naming either keeps it quiet."""
    src = tmp_path / "in.csv"
    df = _table_with_text_and_floats()
    df.to_csv(src, index=False)
    argv = ["kanon", str(src), "--anonymity", "3", "--out", str(tmp_path / "o"), "--quiet"]
    assert main(argv + (columns or [])) == 0
    err = capsys.readouterr().err
    if columns is None:
        note = [line for line in err.splitlines() if "every column was generalised" in line]
        assert len(note) == 1 and all(str(c) in note[0] for c in df.columns)
        assert note[0].startswith("privopt kanon: note:") and "--sensitive" in note[0]
    else:
        assert "every column was generalised" not in err
