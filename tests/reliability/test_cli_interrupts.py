"""Interrupts and stdout hygiene of the command line.

SIGINT / SIGTERM during the computation or while the output is being written end in exit
130 / 143 with one line on stderr; the previous complete output survives unchanged and no
temporary file or directory is left behind. Once the output is published, a signal no longer
turns the run into a failure: it exits as it would have, with one note on stderr. stdout of a
real process is one JSON line.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from privopt.cli import EXIT_SIGINT, EXIT_SIGTERM, main

from reliability.cli_runner import go, launch

SIGNALS = [
    (signal.SIGINT, EXIT_SIGINT, "interrupted (SIGINT)"),
    (signal.SIGTERM, EXIT_SIGTERM, "terminated (SIGTERM)"),
]


def points_file(folder: Path) -> Path:
    path = folder / "points.csv"
    pts = np.random.default_rng(0).uniform(0, 3, (12, 2))
    path.write_text("x,y\n" + "\n".join(f"{a},{b}" for a, b in pts) + "\n")
    return path


def tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def mdp_argv(src: Path, out: Path, *extra: str) -> list[str]:
    return ["mdp", str(src), "--epsilon", "1", "--eta", "1.5", "--out", str(out), "-q", *extra]


@pytest.fixture
def earlier_output(tmp_path, capsys):
    """A complete earlier output of `privopt mdp` and the snapshot of the whole folder."""
    src = points_file(tmp_path)
    out = tmp_path / "out"
    assert main(mdp_argv(src, out)) == 0
    capsys.readouterr()
    return src, out, tree(tmp_path)


def signal_self(sig: int) -> None:
    os.kill(os.getpid(), sig)


@pytest.mark.parametrize(("sig", "code", "text"), SIGNALS)
def test_signal_during_the_computation_keeps_the_earlier_output(
    sig, code, text, earlier_output, tmp_path, monkeypatch, capsys
):
    import privopt.mdp.cli

    src, out, before = earlier_output
    real_solve = privopt.mdp.solve

    def solve_then_signal(*args, **kwargs):
        result = real_solve(*args, **kwargs)
        signal_self(sig)
        return result

    monkeypatch.setattr(privopt.mdp.cli, "solve", solve_then_signal)
    assert main(mdp_argv(src, out, "--force")) == code
    err = capsys.readouterr()
    assert err.out == ""
    assert err.err.splitlines() == [
        f"privopt mdp: error: {text}; no output written, any earlier output kept"
    ]
    assert tree(tmp_path) == before  # nothing changed, no temporaries left


@pytest.mark.parametrize(("sig", "code", "text"), SIGNALS)
def test_signal_while_writing_keeps_the_earlier_output(
    sig, code, text, earlier_output, tmp_path, monkeypatch, capsys
):
    from privopt.report import Report

    src, out, before = earlier_output
    real_write = Report.write

    def write_half_then_signal(self, out_dir):
        (Path(out_dir) / "report.md").write_text("# half a rep")  # a partial file
        signal_self(sig)
        return real_write(self, out_dir)

    monkeypatch.setattr(Report, "write", write_half_then_signal)
    assert main(mdp_argv(src, out, "--force")) == code
    assert capsys.readouterr().err.count("\n") == 1
    assert tree(tmp_path) == before


def test_force_replaces_the_whole_output_as_a_unit(earlier_output, tmp_path, capsys):
    src, out, _ = earlier_output
    (out / "stale_plot.png").write_bytes(b"from an older run")
    assert main(mdp_argv(src, out, "--force", "--method", "expmech")) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["method"] == "expmech"
    assert not (out / "stale_plot.png").exists()  # no old file beside new ones
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "points.csv"]


def test_stdout_of_a_real_process_is_one_json_line(tmp_path):
    src = points_file(tmp_path)
    run = subprocess.run(
        [sys.executable, "-m", "privopt", *mdp_argv(src, tmp_path / "o")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 1  # HiGHS's banner and logs never reach stdout
    summary = json.loads(lines[0])
    assert summary["command"] == "mdp" and summary["records"] == 12
    assert "HiGHS" not in run.stderr  # silent without -v
    loud = subprocess.run(
        [sys.executable, "-m", "privopt", *mdp_argv(src, tmp_path / "o2"), "-v"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert loud.returncode == 0 and len(loud.stdout.splitlines()) == 1
    assert "Running HiGHS" in loud.stderr  # -v: the solver speaks, on stderr


def test_failure_of_a_real_process_is_one_line_and_debug_adds_the_traceback(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "privopt",
        "mdp",
        str(tmp_path / "none.csv"),
        "--out",
        str(tmp_path / "o"),
    ]
    quiet = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert quiet.returncode == 2 and quiet.stdout == ""
    assert quiet.stderr.splitlines() == [
        f"privopt mdp: error: POINTS {str(tmp_path / 'none.csv')!r}: no such file"
    ]
    debug = subprocess.run([*cmd, "--debug"], capture_output=True, text=True, check=False)
    assert debug.returncode == 2 and "Traceback" in debug.stderr
    assert debug.stderr.splitlines()[-1] == quiet.stderr.strip()


# ------------------------------------------------------------------ after the output is published


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_after_publication_of_a_real_run_keeps_its_success(sig, tmp_path):
    src = points_file(tmp_path)
    out = tmp_path / "o"
    control = tmp_path / "control"
    run = launch(control, "a", mdp_argv(src, out), "signal-after-publication", sig.name)
    go(control, ["a"])
    stdout, stderr = run.communicate(timeout=300)
    assert run.returncode == 0, stderr
    assert stderr.splitlines() == [
        f"privopt mdp: note: {sig.name} arrived after the output was published; the run "
        f"completed: {out}"
    ]
    summary = json.loads(stdout)  # the summary is printed all the same
    assert summary["out"] == str(out) and (out / "perturbation_matrix.npz").is_file()


def test_a_signal_while_the_interpreter_exits_after_publication_is_harmless(tmp_path):
    src = points_file(tmp_path)
    control = tmp_path / "control"
    run = launch(control, "a", mdp_argv(src, tmp_path / "o"), "signal-after-exit", "SIGTERM")
    go(control, ["a"])
    stdout, stderr = run.communicate(timeout=300)
    assert run.returncode == 0 and stderr == "" and len(stdout.splitlines()) == 1


def test_a_signal_during_the_swap_waits_for_it_and_the_run_completes(
    earlier_output, tmp_path, monkeypatch, capsys
):
    from privopt import _atomic

    src, out, _ = earlier_output
    real_publish = _atomic._StagedDir.publish

    def publish_and_signal(self, **kwargs):
        signal_self(signal.SIGTERM)  # held until every output is in place
        real_publish(self, **kwargs)

    monkeypatch.setattr(_atomic._StagedDir, "publish", publish_and_signal)
    assert main(mdp_argv(src, out, "--force", "--method", "expmech")) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["method"] == "expmech"
    assert captured.err.splitlines() == [
        f"privopt mdp: note: SIGTERM arrived after the output was published; the run "
        f"completed: {out}"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "points.csv"]
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # main() gave the handler back


# ------------------------------------------------------------- before the command line exists


@pytest.mark.parametrize(
    ("sig", "code", "what"),
    [(signal.SIGINT, 130, "interrupted (SIGINT)"), (signal.SIGTERM, 143, "terminated (SIGTERM)")],
    ids=["SIGINT", "SIGTERM"],
)
def test_a_signal_while_the_command_line_is_imported_is_one_line(sig, code, what, tmp_path):
    """The console script answers a signal from its first instant: one line and 130 / 143,
    not the traceback of the import it interrupted (a Ctrl-C) nor a silent death (SIGTERM)."""
    script = (
        "import builtins, os, sys\n"
        "from privopt import _launch\n"
        "real = builtins.__import__\n"
        "def importing(name, *args, **kwargs):\n"
        "    if name == 'privopt.cli':\n"
        f"        os.kill(os.getpid(), {int(sig)})\n"
        "    return real(name, *args, **kwargs)\n"
        "builtins.__import__ = importing\n"
        f"sys.argv = ['privopt', 'mdp', '--out', {str(tmp_path / 'o')!r}]\n"
        "sys.exit(_launch.main())\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.returncode == code, run.stderr
    assert run.stderr == f"privopt: error: {what}; no output written, any earlier output kept\n"
    assert run.stdout == "" and not (tmp_path / "o").exists()


def test_after_publication_the_process_ignores_both_signals_until_it_exits():
    """Python puts the default action back for each signal with a Python handler while it
    shuts down; a signal then would kill a run that succeeded. Ignoring both signals once the
    output is published keeps the exit code 0 through the interpreter's exit."""
    from privopt import _cli_support, cli

    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        _cli_support.run_state.published[:] = [Path("o")]
        with cli._signals_interrupt(keep_after_publication=True):
            pass
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        _cli_support.run_state.published.clear()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        with cli._signals_interrupt(keep_after_publication=True):
            pass  # nothing published: the handler in place before comes back
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        _cli_support.run_state.published.clear()
        for s, handler in saved.items():
            signal.signal(s, handler)
