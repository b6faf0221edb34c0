"""Every registered mechanism meets the release contract (privopt.release).

One parametrized test per mechanism of :func:`privopt.mechanisms`: its example release is
verified, saved, read back by :func:`privopt.load` as an equal object of the same type, has the
shared summary keys (JSON-safe), a repr of at most 10 lines, a report section that says what
was released under which guarantee, and a plot that can be written to a file. A new mechanism
joins by registering; this test then holds it to the contract.
"""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import privopt
import pytest
from privopt.errors import InvalidInput, PrivacyViolation
from privopt.registry import Mechanism, mechanism, register
from privopt.release import GUARANTEE_KINDS, Guarantee, Release

SHARED_KEYS = {"mechanism", "guarantee", "guarantee_text", "status", "relative_gap", "time_s"}
FIVE = {"mdp", "geo", "kanon", "census", "cluster"}


@pytest.fixture(scope="module", params=[m.name for m in privopt.mechanisms()])
def example(request) -> tuple[Mechanism, Release]:
    entry = mechanism(request.param)
    return entry, entry.example()


def test_example_is_the_registered_release_type(example) -> None:
    entry, release = example
    assert isinstance(release, Release) and type(release) is entry.release_class()
    assert release.mechanism == entry.name
    assert callable(entry.entry())


def test_verify_passes_and_returns_the_release(example) -> None:
    _, release = example
    assert release.verify() is release


def test_save_and_load_round_trip_equal(example, tmp_path) -> None:
    _, release = example
    path = release.save(tmp_path / "release")
    loaded = privopt.load(path)
    assert type(loaded) is type(release)
    assert loaded == release
    assert loaded.summary() == release.summary()
    assert type(release).load(path) == release
    loaded.verify()  # the guarantee still checks on what was read back


def test_summary_has_the_shared_keys_and_is_json(example) -> None:
    _, release = example
    summary = release.summary()
    assert set(summary) >= SHARED_KEYS
    assert summary["mechanism"] == release.mechanism
    assert Guarantee.from_json(summary["guarantee"]) == release.guarantee
    assert release.guarantee.kind in GUARANTEE_KINDS
    assert json.loads(json.dumps(summary, allow_nan=False)) == summary


def test_repr_is_short(example) -> None:
    _, release = example
    assert len(repr(release).splitlines()) <= 10


def test_report_begins_with_what_was_released(example) -> None:
    _, release = example
    body = release.report().body
    assert body.startswith("**Released:**")
    assert release.guarantee.describe() in body


def test_plot_writes_a_figure(example, tmp_path) -> None:
    _, release = example
    ax = release.plot()
    assert ax.get_title() and ax.get_xlabel() and ax.get_ylabel()
    ax.figure.savefig(tmp_path / "plot.png")
    assert (tmp_path / "plot.png").stat().st_size > 1000
    plt.close("all")


def test_all_five_mechanisms_are_registered() -> None:
    assert {m.name for m in privopt.mechanisms()} >= FIVE


def test_register_refuses_a_duplicate_or_a_stranger() -> None:
    with pytest.raises(InvalidInput, match="registered already"):
        register(mechanism("mdp"))
    with pytest.raises(InvalidInput, match="Mechanism"):
        register("mdp")  # type: ignore[arg-type]


def test_load_refuses_what_is_not_a_release(tmp_path) -> None:
    with pytest.raises(InvalidInput, match="not a saved privopt release"):
        privopt.load(tmp_path)
    (tmp_path / "release.json").write_text('{"privopt_release": 99}')
    with pytest.raises(InvalidInput, match="upgrade privopt"):
        privopt.load(tmp_path)
    (tmp_path / "release.json").write_text('{"privopt_release": 1, "mechanism": "nope"}')
    with pytest.raises(InvalidInput, match="does not know"):
        privopt.load(tmp_path)


def test_a_tampered_matrix_fails_verify(tmp_path) -> None:
    import numpy as np

    release = mechanism("mdp").example()
    release.save(tmp_path / "r")
    data = dict(np.load(tmp_path / "r" / "data.npz"))
    z = data["matrix"]
    z[0] = 0.0
    z[0, 0] = 1.0  # record 0 always reports itself: its neighbours' rows cannot match that
    np.savez_compressed(tmp_path / "r" / "data.npz", **data)
    with pytest.raises(PrivacyViolation, match="violates its guarantee"):
        privopt.load(tmp_path / "r").verify()


def test_save_never_replaces_a_folder_privopt_did_not_write(tmp_path) -> None:
    release = mechanism("mdp").example()
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("only copy")
    with pytest.raises(InvalidInput, match=r"privopt did not write|not written by privopt"):
        release.save(mine)
    assert (mine / "thesis.tex").read_text() == "only copy"
    (tmp_path / "file").write_text("x")
    with pytest.raises(InvalidInput):
        release.save(tmp_path / "file")
    first = release.save(tmp_path / "again")
    assert release.save(first) == first  # a release privopt wrote may be replaced
