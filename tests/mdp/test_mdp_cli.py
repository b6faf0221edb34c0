"""``privopt mdp`` CLI and the demo section."""

from __future__ import annotations

import json

import numpy as np
import pytest
from privopt.cli import main
from privopt.mdp import PerturbationMatrix


def test_cli_csv_latlon(tmp_path, capsys) -> None:
    pts = tmp_path / "pts.csv"
    rng = np.random.default_rng(0)
    lat = 41.9 + rng.uniform(0, 0.03, 15)
    lon = 12.5 + rng.uniform(0, 0.03, 15)
    pts.write_text(
        "lon,lat\n" + "\n".join(f"{b},{a}" for a, b in zip(lat, lon, strict=True)) + "\n"
    )
    out = tmp_path / "out"
    rc = main(
        [
            "mdp",
            str(pts),
            "--metric",
            "haversine",
            "--epsilon",
            "2",
            "--eta",
            "1.0",
            "-k",
            "5",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    info = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    pm = PerturbationMatrix.load(out / "perturbation_matrix.npz")
    assert pm.matrix.shape == (15, 5)
    # The --out folder is itself the saved release: privopt.load reads it back, and it verifies.
    import privopt

    assert privopt.load(out) == pm and privopt.load(out).verify() is not None
    assert info["expected_loss"] == pytest.approx(pm.expected_loss)
    assert (out / "report.md").is_file() and (out / "mdp_row.png").is_file()
    assert -1e-12 <= info["relative_gap"] <= 1e-6
    # Polished and unpolished solves agree to their certified gaps.
    for polish in ("yes", "no"):
        assert (
            main(
                [
                    "mdp",
                    str(pts),
                    "--metric",
                    "haversine",
                    "--epsilon",
                    "2",
                    "--eta",
                    "1.0",
                    "-k",
                    "5",
                    "--polish",
                    polish,
                    "--out",
                    str(tmp_path / polish),
                ]
            )
            == 0
        )
        other = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert other["lower_bound"] <= info["expected_loss"] * (1 + 1e-12)
        assert info["lower_bound"] <= other["expected_loss"] * (1 + 1e-12)


def test_cli_npy_benders_and_bad_input(tmp_path, capsys) -> None:
    f = tmp_path / "pts.npy"
    np.save(f, np.arange(9, dtype=float)[:, None] * np.ones((1, 2)) * 0.7)
    assert (
        main(
            [
                "mdp",
                str(f),
                "--method",
                "benders",
                "--subsets",
                "3",
                "--epsilon",
                "1",
                "--eta",
                "1",
                "--out",
                str(tmp_path / "o"),
            ]
        )
        == 0
    )
    assert main(["mdp", str(f), "--epsilon", "-1", "--out", str(tmp_path / "o2")]) == 2
    assert "epsilon" in capsys.readouterr().err
    assert main(["mdp", str(tmp_path / "missing.csv")]) == 2


def test_demo_section(tmp_path) -> None:
    from privopt.mdp.demo import demo_section

    sec = demo_section(tmp_path, 0)
    assert "ExpMech" in sec.body
    for fig in sec.figures:
        assert (tmp_path / fig).stat().st_size > 0
