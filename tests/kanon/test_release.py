"""KAnonResult as a release: save and load without the original data, verify on the released
table alone, the MILP's certificate as status, and what a damaged release looks like."""

from __future__ import annotations

import numpy as np
import pandas as pd
import privopt
import pytest
from privopt.errors import InvalidInput, PrivacyViolation
from privopt.kanon import KAnonResult, anonymize, datasets


@pytest.fixture(scope="module")
def greedy() -> KAnonResult:
    qis = ["AGE", "SEX", "INJ_SEV", "DRINKING"]
    return anonymize(datasets.fars_20().assign(note="x"), 3, qis, weights=[0.25] * 4)


def test_saved_release_holds_no_original_data(greedy, tmp_path):
    folder = greedy.save(tmp_path / "rel")
    assert {p.name for p in folder.iterdir()} >= {"release.json", "data.npz", "table.parquet"}
    with np.load(folder / "data.npz") as f:
        assert set(f.files) == {"classes", "lower", "upper"}
    loaded = privopt.load(folder)
    assert loaded.problem is None and loaded == greedy
    # The released table comes back as it was: text columns, the row index, every column.
    assert loaded.table.dtypes.equals(greedy.table.dtypes)
    assert isinstance(loaded.table.index, pd.RangeIndex) and loaded.table.equals(greedy.table)
    assert loaded.loss_table().equals(greedy.loss_table())
    assert loaded.partition() == greedy.partition()


def test_a_custom_index_survives(tmp_path):
    df = datasets.fars_20().set_axis([f"r{i}" for i in range(20)], axis=0)
    res = anonymize(df, 4, method="mondrian")
    loaded = privopt.load(res.save(tmp_path / "rel"))
    assert list(loaded.table.index) == list(df.index) and loaded == res
    assert list(loaded.lower.index) == list(df.index)


def test_status_is_the_milp_certificate_only(greedy):
    assert greedy.status is None and greedy.relative_gap is None
    exact = anonymize(datasets.fars_20(), 3, weights=[0.25] * 4, method="milp")
    assert exact.status == "optimal" and exact.relative_gap == pytest.approx(0.0, abs=1e-6)
    assert exact.summary()["status"] == "optimal"
    assert exact.guarantee.kind == "k-anonymity" and exact.guarantee.parameters == {"k": 3}
    assert not exact.guarantee.seeded


def test_verify_without_the_problem_catches_a_broken_table(greedy, tmp_path):
    folder = greedy.save(tmp_path / "rel")
    table = pd.read_parquet(folder / "table.parquet")
    table.loc[0, "AGE"] = "[0-1]"  # row 0 alone now: its class no longer shares its cells
    table.to_parquet(folder / "table.parquet")
    with pytest.raises(PrivacyViolation, match="only 1-anonymous"):
        privopt.load(folder).verify()


def test_verify_without_the_problem_catches_classes_that_disagree(greedy):
    # A row of a 4-row class shows another class's cells: the table stays 3-anonymous and the
    # boxes are untouched, but the table no longer shows the partition it claims.
    big = int(np.flatnonzero(greedy.class_sizes == 4)[0])
    other = int(np.flatnonzero(np.arange(len(greedy.class_sizes)) != big)[0])
    row, donor = (
        np.flatnonzero(greedy.classes == big)[0],
        np.flatnonzero(greedy.classes == other)[0],
    )
    qis = greedy.quasi_identifiers
    table = greedy.table.copy()
    table.loc[table.index[row], qis] = table.loc[table.index[donor], qis].to_numpy()
    moved = KAnonResult(
        table,
        greedy.classes,
        greedy.lower,
        greedy.upper,
        greedy.loss,
        greedy.method,
        greedy.k,
        quasi_identifiers=qis,
        weights=greedy.weights,
    )
    with pytest.raises(PrivacyViolation, match=f"rows of class {big} show different"):
        moved.verify()


def test_describe_repr_and_plot(greedy):
    text = greedy.describe()
    assert text.startswith("k-anonymous table of 20 rows in") and "method greedy" in text
    assert len(repr(greedy).splitlines()) <= 10
    summary = greedy.summary()
    assert summary["rows"] == 20 and summary["k"] == 3 and summary["smallest_class"] >= 3
    assert summary["objective"] == pytest.approx(greedy.objective)
    ax = greedy.plot()
    assert ax.get_xlabel() == "size of a group of indistinguishable rows (rows)"
    import matplotlib.pyplot as plt

    plt.close("all")


def test_a_column_parquet_cannot_hold_is_refused_on_save(tmp_path):
    pytest.importorskip("pyarrow")
    df = datasets.fars_20().assign(mixed=[1, "a"] * 10)  # numbers and text in one column
    res = anonymize(df, 3, ["AGE", "SEX"])
    with pytest.raises(InvalidInput, match="column 'mixed' of the released table cannot be") as e:
        res.save(tmp_path / "rel")
    assert "'a'" not in str(e.value)  # no cell of the data in the message
    assert not (tmp_path / "rel").exists()
