import json
import subprocess
import sys
from pathlib import Path

import privopt
import pytest
from privopt._cli_support import SUMMARY_KEYS
from privopt.cli import main


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert privopt.__version__ in capsys.readouterr().out


def test_help_lists_demo(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "demo" in capsys.readouterr().out


def test_console_script_entry_point_runs():
    # The module form uses the same entry point as the installed `privopt` script.
    out = subprocess.run(
        [sys.executable, "-m", "privopt", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("privopt ")


def test_demo_writes_report_with_plots(tmp_path: Path, capsys):
    assert main(["demo", "--out", str(tmp_path), "--seed", "1"]) == 0
    summary = json.loads(capsys.readouterr().out)  # the shape every subcommand's summary has
    assert list(summary)[: len(SUMMARY_KEYS)] == list(SUMMARY_KEYS)
    assert summary["command"] == "demo" and "seed 1" in summary["guarantee_text"]
    assert str(tmp_path / "report.md") in summary["files"]
    report = (tmp_path / "report.md").read_text()
    pngs = sorted(tmp_path.glob("*.png"))
    assert pngs, "the demo must write at least one plot"
    for png in pngs:
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.name in report
