"""Real ``privopt`` processes for the reliability tests, with a hook at a chosen moment.

:data:`LAUNCHER` is a script: it imports privopt and builds the parser (so two processes
started together race on the outputs, not on imports), installs one hook, touches a "ready"
file, waits for a "go" file and runs the command line, as the console script does.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

LAUNCHER = r"""
import os, signal, sys, time
from pathlib import Path

import privopt.cli
import privopt.mdp.cli
from privopt import _atomic
from privopt.report import Report

ready, go, hook, value, *argv = sys.argv[1:]
privopt.cli.build_parser()  # every subcommand imported now, before the race

if hook == "slow-publish":  # hold the outputs' locks a moment longer: the runs surely overlap
    real_publish = _atomic.RunOutputs.publish

    def publish_later(self):
        time.sleep(float(value))
        return real_publish(self)

    _atomic.RunOutputs.publish = publish_later
elif hook == "hang-in-report":  # stop while the staging directory is half written
    def hang(self, out_dir):
        Path(value).touch()
        time.sleep(120)

    Report.write = hang
elif hook == "signal-after-publication":  # the signal arrives once the output is in place
    real_emit = privopt.mdp.cli.emit_summary  # the runs here are mdp's

    def signal_then_emit(summary):
        os.kill(os.getpid(), signal.Signals[value])
        time.sleep(0.2)  # the handler runs meanwhile
        real_emit(summary)

    privopt.mdp.cli.emit_summary = signal_then_emit

Path(ready).touch()
while not Path(go).exists():
    time.sleep(0.001)
sys.argv = ["privopt", *argv]
code = privopt.cli.main()
if hook == "signal-after-exit":  # while the interpreter shuts down after a published run
    os.kill(os.getpid(), signal.Signals[value])
    time.sleep(0.2)
sys.exit(code)
"""


def launch(
    control: Path, name: str, argv: list[str], hook: str = "none", value: str = ""
) -> subprocess.Popen:
    """Start ``privopt *argv`` with ``hook``; it runs once :func:`go` is called. ``control``:
    a folder for the ready and go files (not the one the outputs go to)."""
    control.mkdir(exist_ok=True)
    ready = control / f"ready-{name}"
    return subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(ready), str(control / "go"), hook, value, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def go(control: Path, names: list[str], timeout: float = 120.0) -> None:
    """Wait until the launched processes ``names`` are ready, then let them all run."""
    for n in names:
        wait_for(control / f"ready-{n}", timeout)
    (control / "go").touch()


def wait_for(path: Path, timeout: float = 120.0) -> None:
    """Return once ``path`` exists (TimeoutError after ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear")
        time.sleep(0.01)
