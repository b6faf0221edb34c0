"""``privopt cluster`` CLI and the DPM demo section."""

from __future__ import annotations

import numpy as np
from privopt.cli import main
from privopt.cluster.demo import demo_section


def test_cli_csv_with_header(tmp_path, eight_blobs, eight_centres):
    X, _ = eight_blobs
    path = tmp_path / "points.csv"
    np.savetxt(path, X[:4000], delimiter=",", header="x,y", comments="")
    out = tmp_path / "out"
    rc = main(
        [
            "cluster",
            "--epsilon",
            "1",
            "--delta",
            "0.01",
            str(path),
            "--bounds",
            "-100",
            "100",
            "--epsilon",
            "10",
            "--seed",
            "1",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    centres = np.loadtxt(out / "centres.csv", delimiter=",", ndmin=2)
    labels = np.loadtxt(out / "labels.csv", dtype=int)
    assert centres.shape[1] == 2 and labels.shape == (4000,)
    assert np.linalg.norm(centres[:, None] - eight_centres[None], axis=2).min(axis=1).max() < 5
    report = (out / "report.md").read_text()
    assert "Privacy ledger" in report and (out / "projection.png").stat().st_size > 0


def test_cli_npy_and_errors(tmp_path, capsys):
    path = tmp_path / "p.npy"
    np.save(path, np.random.default_rng(0).normal(0, 1, size=(500, 3)))
    assert (
        main(
            [
                "cluster",
                "--epsilon",
                "1",
                "--delta",
                "0.01",
                str(path),
                "--bounds",
                "-5",
                "5",
                "--seed",
                "0",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "cluster",
                "--epsilon",
                "1",
                "--delta",
                "0.01",
                str(path),
                "--bounds",
                "5",
                "-5",
                "--out",
                str(tmp_path / "o2"),
            ]
        )
        == 2
    )
    assert "bounds" in capsys.readouterr().err
    assert (
        main(
            [
                "cluster",
                "--epsilon",
                "1",
                "--delta",
                "0.01",
                str(tmp_path / "missing.csv"),
                "--bounds",
                "0",
                "1",
            ]
        )
        == 2
    )


def test_demo_section(tmp_path):
    section = demo_section(tmp_path, 0)
    assert "DPM" in section.title and len(section.figures) == 2
    for fig in section.figures:
        assert (tmp_path / fig).stat().st_size > 0
    assert "| 8 blobs (16000 × 2) | 10 | 8 | 8 | 1 |" in section.body
