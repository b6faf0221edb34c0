"""DPM's release (``DPM.release_``, :class:`ClusteringRelease`): what it holds, what it proves
about itself, and that a saved one labels points like the estimator that made it."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import privopt
import pytest
from privopt.cli import main
from privopt.cluster import DPM, ClusteringRelease
from privopt.dp import PrivacyAccountant
from privopt.errors import InvalidInput, PrivacyViolation


@pytest.fixture(scope="module")
def fitted(eight_blobs):
    X, _ = eight_blobs
    return X, DPM(bounds=(-100, 100), epsilon=2.0, delta=1e-6, random_state=3).fit(X)


def test_release_holds_the_fit_and_nothing_of_the_data(fitted) -> None:
    X, model = fitted
    r = model.release_
    assert isinstance(r, ClusteringRelease) and r.mechanism == "cluster"
    np.testing.assert_array_equal(r.centres, model.cluster_centers_)
    np.testing.assert_array_equal(r.sizes, model.cluster_sizes_)
    assert r.bounds == (-100.0, 100.0) and (r.epsilon, r.delta) == (2.0, 1e-6)
    assert r.guarantee.kind == "(epsilon, delta)-DP" and r.guarantee.seeded is model.seeded_
    assert r.status is None and r.relative_gap is None
    assert set(r.timings) == {"split_width", "tree", "averages", "total"}
    assert r.timings["total"] >= r.timings["tree"] >= 0
    assert len(r.ledger) == 17 == len(model.accountant_.entries)
    # Nothing with one entry per data point is part of the release.
    _, data = r._state()
    assert all(a.shape[0] != len(X) for a in data.values())
    assert r.verify() is r


def test_a_loaded_release_labels_points_as_the_estimator(fitted, tmp_path) -> None:
    X, model = fitted
    loaded = privopt.load(model.release_.save(tmp_path / "r"))
    assert loaded == model.release_
    np.testing.assert_array_equal(loaded.predict(X), model.labels_)
    np.testing.assert_array_equal(loaded.predict(X[:7], n_jobs=-1), model.predict(X[:7]))
    da = pytest.importorskip("dask.array")
    lazy = loaded.predict(da.from_array(X[:500], chunks=(128, 1)))
    np.testing.assert_array_equal(lazy.compute(), model.labels_[:500])
    with pytest.raises(InvalidInput, match="X has 3 features, but DPM is expecting 2"):
        loaded.predict(np.zeros((2, 3)))
    with pytest.raises(InvalidInput, match="n_jobs"):
        loaded.predict(X[:2], n_jobs=0)


def test_the_ledger_of_a_release_is_its_fit_only(eight_blobs) -> None:
    X, _ = eight_blobs
    acct = PrivacyAccountant(10.0, 1e-4)
    acct.spend(3.0, label="an earlier release")
    model = DPM(bounds=(-100, 100), epsilon=2.0, delta=1e-6, random_state=0)
    model.fit(X[:2000], accountant=acct)
    r = model.release_
    assert len(acct.entries) == 18 and len(r.ledger) == 17
    assert math.isclose(r.summary()["ledger_epsilon"], 2.0, rel_tol=1e-12)
    assert r.verify() is r


def _tampered(release: ClusteringRelease, path, change) -> ClusteringRelease:
    release.save(path)
    document = json.loads((path / "release.json").read_text())
    data = dict(np.load(path / "data.npz"))
    change(document["state"], data)
    (path / "release.json").write_text(json.dumps(document))
    np.savez_compressed(path / "data.npz", **data)
    return privopt.load(path)


def _raise_first_spend(meta, data) -> None:
    meta["ledger"][0]["epsilon"] += 0.01


def _hide_the_seed(meta, data) -> None:
    meta["seeded"] = False


def _centre_outside(meta, data) -> None:
    data["centres"][0, 0] = 100.5


def _negative_size(meta, data) -> None:
    data["sizes"][0] = -3.0


def _cut_outside(meta, data) -> None:
    data["tree_threshold"][0] = 150.0


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (_raise_first_spend, "exceeds the stated guarantee"),
        (_hide_the_seed, "seed"),
        (_centre_outside, "outside the public box"),
        (_negative_size, "size is not positive"),
        (_cut_outside, "cuts outside"),
    ],
)
def test_verify_finds_a_tampered_release(fitted, tmp_path, change, match) -> None:
    _, model = fitted
    with pytest.raises(PrivacyViolation, match=match):
        _tampered(model.release_, tmp_path / "r", change).verify()


def test_a_damaged_saved_release_is_refused_on_loading(fitted, tmp_path) -> None:
    _, model = fitted

    def loop(meta, data) -> None:  # a child before its parent: a walk down could loop
        data["tree_left"][0] = 0

    with pytest.raises(InvalidInput, match="tree left"):
        _tampered(model.release_, tmp_path / "a", loop)

    def short(meta, data) -> None:
        data["sizes"] = data["sizes"][:-1]

    with pytest.raises(InvalidInput, match="sizes"):
        _tampered(model.release_, tmp_path / "b", short)

    def no_ledger(meta, data) -> None:
        meta["ledger"] = {"epsilon": 1}

    with pytest.raises(InvalidInput, match="ledger"):
        _tampered(model.release_, tmp_path / "c", no_ledger)


def test_progress_is_validated_and_off_means_silent(eight_blobs, capsys) -> None:
    X, _ = eight_blobs
    with pytest.raises(InvalidInput, match="progress"):
        DPM(bounds=(-100, 100), epsilon=1.0, delta=1e-6, progress="loud").fit(X[:100])
    DPM(bounds=(-100, 100), epsilon=1.0, delta=1e-6, random_state=0, progress=False).fit(X[:500])
    assert capsys.readouterr().err == ""


def test_cli_out_is_a_loadable_release(tmp_path, eight_blobs, capsys) -> None:
    X, _ = eight_blobs
    np.save(tmp_path / "x.npy", X[:3000])
    out = tmp_path / "out"
    argv = [
        "cluster",
        "--epsilon",
        "1",
        "--delta",
        "0.01",
        str(tmp_path / "x.npy"),
        "--bounds",
        "-100",
        "100",
        "--seed",
        "2",
    ]
    assert main([*argv, "--epsilon", "5", "--out", str(out), "--quiet"]) == 0
    printed = json.loads(capsys.readouterr().out)
    loaded = privopt.load(out)
    assert isinstance(loaded, ClusteringRelease) and loaded.verify() is loaded
    files = sorted(str(out / name) for name in os.listdir(out) if not name.startswith("."))
    assert printed == {
        "command": "cluster",
        **loaded.summary(),
        "out": str(out),
        "files": files,
        "centres": str(out / "centres.csv"),
        "labels": str(out / "labels.csv"),
        "n": 3000,
    }
    np.testing.assert_allclose(np.loadtxt(out / "centres.csv", delimiter=","), loaded.centres)
    np.testing.assert_array_equal(np.loadtxt(out / "labels.csv"), loaded.predict(X[:3000]))
    assert "Privacy ledger" in (out / "report.md").read_text()
