"""Loaders for the reference data (skipped cleanly when the shared data folder is absent)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from privopt.errors import InvalidInput
from privopt.kanon import anonymize, datasets

ROOT = Path(os.environ.get("PRIVOPT_DATA", Path(__file__).parents[3] / "shared" / "data"))
KANON = ROOT / "kanon"
needs_data = pytest.mark.skipif(not KANON.is_dir(), reason="shared reference data not present")


def test_fixtures_shape():
    assert datasets.fars_20().shape == (20, 4)
    assert datasets.table1_ehr().shape == (7, 5)


def test_missing_path_is_invalid_input(tmp_path):
    with pytest.raises(InvalidInput, match="not a file"):
        datasets.load_census(tmp_path / "nope.csv")


@needs_data
def test_fars_file_equals_embedded_fixture():
    import pandas as pd

    assert pd.read_csv(KANON / "fars_20.csv").equals(datasets.fars_20())


@needs_data
def test_census_8attr_with_categorical_attributes():
    attrs = datasets.read_attribute_file(KANON / "census_8attr_attributes.txt")
    df = datasets.load_census(KANON / "census_1k_8attr.csv", n=300)
    res = anonymize(df, 3, attrs["names"], categorical=attrs["categorical"])
    assert res.class_sizes.min() >= 3
    gcp_per_row = res.gcp / len(df)
    assert 0 < gcp_per_row < len(attrs["names"])
    cell = res.table.loc[0, "MARST"]
    assert all(v.isdigit() for v in cell.split("|"))


@needs_data
def test_census_4attr_greedy_beats_initial():
    df = datasets.load_census(KANON / "census" / "20k_4attr.csv", n=3000)
    assert anonymize(df, 3).objective < anonymize(df, 3, method="initial").objective
