"""LR-Geo's result as a release (:class:`LRGeoResult`): what a saved one holds (not the users'
true locations), what a loaded one can still do, and what its ``verify()`` catches."""

from __future__ import annotations

import itertools
import json

import matplotlib.pyplot as plt
import numpy as np
import privopt
import pytest
from privopt.cli import main
from privopt.errors import InvalidInput, PrivacyViolation
from privopt.geo import GeoParams, LRGeoResult, TravelCosts, grid_geography, run_lrgeo
from privopt.geo.demo import example
from privopt.perturbation import PerturbationMatrix


@pytest.fixture(scope="module")
def result() -> LRGeoResult:
    return example()


@pytest.fixture(scope="module")
def saved(result, tmp_path_factory):
    path = tmp_path_factory.mktemp("geo") / "release"
    result.save(path)
    return path


def test_rows_are_sorted_and_each_matrix_verifies_alone(result) -> None:
    for lr, user, pm in zip(result.lr_sets, result.users, result.matrices, strict=True):
        assert np.all(np.diff(lr) > 0) and user in lr  # no row stands out as the user's own
        assert pm.kind == "(epsilon, gamma)-Geo-Ind" and pm.edges is not None
        assert pm.verify() is pm
    assert result.verify() is result
    assert result.shared_entry_violation() <= 1e-12
    # The solution's matrices are the users' matrices, rows in the same order.
    for z, pm in zip(result.solution.matrices, result.matrices, strict=True):
        np.testing.assert_array_equal(z, pm.matrix)


def test_a_saved_release_holds_no_true_location(result, saved) -> None:
    document = json.loads((saved / "release.json").read_text())
    users = document["state"]["users"]
    assert [sorted(u) for u in users] == [["expected_loss", "id", "info"]] * 2
    assert [u["id"] for u in users] == ["user0", "user1"]  # the opaque ids of the uploads
    with np.load(saved / "data.npz") as data:
        assert "users" not in data.files
        offsets, stacked = data["lr_offsets"], data["lr_sets"]
    for a, b in itertools.pairwise(offsets):
        assert np.all(np.diff(stacked[a:b]) > 0)  # sorted: no row marks the user's own
    loaded = privopt.load(saved)
    assert loaded.users is None
    with pytest.raises(InvalidInput, match="true locations"):
        loaded.real_row_cost()
    assert result.real_row_cost() == pytest.approx(0.675024, abs=1e-3)  # spec 001 §17 A


def test_a_loaded_release_evaluates_as_the_original(result, saved) -> None:
    loaded = privopt.load(saved)
    assert isinstance(loaded, LRGeoResult) and loaded == result
    assert loaded.geography.fingerprint() == result.geography.fingerprint()
    assert loaded.cost() == result.cost()
    assert loaded.prop45_bound() == result.prop45_bound()
    np.testing.assert_array_equal(loaded.exponential_mass(), result.exponential_mass())
    assert loaded.rows_without_neighbours() == result.rows_without_neighbours()
    a, b = loaded.violations(), result.violations()
    assert (a.n_checked, a.n_violated, a.max_gve) == (b.n_checked, b.n_violated, b.max_gve)
    assert loaded.relaxed_bound() == pytest.approx(result.relaxed_bound(), rel=1e-9)
    assert loaded.solution.objective == result.solution.objective
    np.testing.assert_array_equal(loaded.solution.y_tilde, result.solution.y_tilde)
    for up, original in zip(loaded.uploads, result.uploads, strict=True):
        np.testing.assert_array_equal(up.pair_distances, original.pair_distances)
        np.testing.assert_array_equal(up.column_distances, original.column_distances)
        np.testing.assert_array_equal(up.cost, original.cost)
    ax = loaded.plot_user(1)  # without the true location: the mean over the LR rows
    assert "true location (v_m)" not in [t.get_text() for t in ax.get_legend().get_texts()]
    ax = result.plot_user(1)
    assert "true location (v_m)" in [t.get_text() for t in ax.get_legend().get_texts()]
    plt.close("all")


def _tampered(saved, tmp_path, change) -> LRGeoResult:
    document = json.loads((saved / "release.json").read_text())
    data = dict(np.load(saved / "data.npz"))
    change(document["state"], data)
    (tmp_path / "r").mkdir(parents=True)
    (tmp_path / "r" / "release.json").write_text(json.dumps(document))
    np.savez_compressed(tmp_path / "r" / "data.npz", **data)
    return privopt.load(tmp_path / "r")


def _one_row_reports_itself(meta, data) -> None:
    """Row 0 of user 0 reports its own location: a neighbour's row cannot match that."""
    z = data["matrices"]
    z[0] = 0.0
    z[0, data["lr_sets"][0]] = 1.0


def _exponential_radius_shrunk(meta, data) -> None:
    """The release now claims Thm 4.4 for entries within r_exp = 0.5 km, the users' free
    entries, which the solver never tied to the shared ỹ."""
    meta["params"]["r_exp"] = 0.5


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (_one_row_reports_itself, "user 0's matrix is not"),
        (_exponential_radius_shrunk, "across users"),
    ],
)
def test_verify_finds_a_tampered_release(saved, tmp_path, change, match) -> None:
    with pytest.raises(PrivacyViolation, match=match):
        _tampered(saved, tmp_path, change).verify()


def test_a_damaged_saved_release_is_refused_on_loading(saved, tmp_path) -> None:
    def outside(meta, data) -> None:
        data["lr_sets"][0] = 99

    with pytest.raises(InvalidInput, match="outside the map"):
        _tampered(saved, tmp_path / "a", outside)

    def unsorted_offsets(meta, data) -> None:
        data["lr_offsets"][1] = 0

    with pytest.raises(InvalidInput, match="lr_offsets"):
        _tampered(saved, tmp_path / "b", unsorted_offsets)

    def no_map(meta, data) -> None:
        del data["map_road_indptr"]

    with pytest.raises(InvalidInput, match="map"):
        _tampered(saved, tmp_path / "c", no_map)


def test_unseeded_runs_state_so_and_one_stream_serves_all_users(monkeypatch) -> None:
    from privopt.dp.randomness import GeneratorSource

    geo = grid_geography(4, 4)
    params = GeoParams(epsilon=1.0, gamma=1.0, lr_radius=2.0, r_exp=1.5, r_obf=2.5)
    res = run_lrgeo(geo, params, [0, 15], TravelCosts(geo), progress=False)
    assert res.seeded is False and res.guarantee.seeded is False
    made = []
    original = GeneratorSource.__init__

    def counted(self, *args, **kwargs) -> None:
        made.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(GeneratorSource, "__init__", counted)
    seeded = run_lrgeo(geo, params, [0, 5, 15], TravelCosts(geo), rng=4, progress=False)
    assert seeded.guarantee.seeded is True and len(made) == 1  # one stream, not one per user


def test_cli_out_is_a_loadable_release(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    argv = [
        *("geo", "--grid", "6x6", "--cell-km", "0.5", "--epsilon", "2", "--gamma", "0.6"),
        *("--gamma-graph", "50", "--lr-radius", "2", "--r-obf", "1.5", "--r-exp", "1"),
        *("--lr-max-size", "5", "-M", "2", "--targets", "5", "--baselines", "none"),
        *("--seed", "1", "--quiet", "--out", str(out)),
    ]
    assert main(argv) == 0
    printed = json.loads(capsys.readouterr().out)
    loaded = privopt.load(out)
    assert isinstance(loaded, LRGeoResult) and loaded.verify() is loaded
    assert loaded.guarantee.seeded and loaded.n_users == 2
    summary = loaded.summary()
    assert {k: printed[k] for k in summary} == summary  # the release's summary, as printed
    assert {"real_row_cost_km", "relaxed_lower_bound_km", "baselines"} <= set(printed)
    for m, pm in enumerate(loaded.matrices):
        alone = privopt.load(out / f"user{m}.npz")  # each user's matrix, loadable alone
        assert isinstance(alone, PerturbationMatrix) and alone == pm and alone.verify() is alone
    assert "**Released:**" in (out / "report.md").read_text()


def test_the_cr_table_takes_rng_and_its_former_name_seed_warns() -> None:
    from privopt.geo import CostReferenceTable

    geo = grid_geography(4, 4, 0.5, metric="haversine")
    table = CostReferenceTable(geo, 3, cell_km=0.5, rng=5)
    with pytest.warns(DeprecationWarning, match="now rng"):
        old = CostReferenceTable(geo, 3, cell_km=0.5, seed=5)
    np.testing.assert_array_equal(old.targets, table.targets)
    again = CostReferenceTable(geo, 3, cell_km=0.5, rng=np.random.default_rng(5))
    assert again.targets.size == 3 and np.all(np.diff(again.targets) > 0)
