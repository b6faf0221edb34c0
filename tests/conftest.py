"""Shared pytest configuration."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import matplotlib
import pytest

# Plots in tests never need a display.
matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")

# The interrupt tests send SIGINT to this process and to the command-line processes it starts.
# A shell without job control starts its background jobs with SIGINT ignored (`pytest &`, a
# nohup'd CI script), and an ignored signal stays ignored in every child: Python would then
# raise no KeyboardInterrupt and those tests would fail for the way the suite was started.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def shared_data_root() -> Path | None:
    """The project's real data sets: ``$PRIVOPT_DATA``, else ``<repo>/../shared/data``."""
    env = os.environ.get("PRIVOPT_DATA")
    root = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"
    return root if root.is_dir() else None


@pytest.fixture(scope="session")
def shared_data() -> Callable[[str], Path]:
    """``shared_data("kanon")`` -> that folder of the real data sets, or a skip.

    Why a skip: the real data (Rome roads, census/FARS tables, IPUMS records, reference
    centres) is not shipped with privopt, so users' clones do not have it; the tests that need
    it cannot run there. CI keeps ``../shared`` beside its clone and sets
    ``PRIVOPT_REQUIRE_DATA=1``, so there they always run and a missing folder fails. The skip
    goes away wherever the data is present (or ``PRIVOPT_DATA`` points to it).
    """

    def folder(subdir: str) -> Path:
        root = shared_data_root()
        path = None if root is None else root / subdir
        if path is None or not path.exists():
            message = (
                f"real data folder {subdir!r} absent (not shipped with privopt; "
                "set PRIVOPT_DATA or put ../shared/data beside the clone)"
            )
            if os.environ.get("PRIVOPT_REQUIRE_DATA") == "1":
                # CI sets this: there the data must be present, so its absence is a failure,
                # never a silent skip.
                pytest.fail(message)
            # Skip only in users' clones, which have no data folder; it goes away as soon as
            # the data is there (or PRIVOPT_DATA points to it).
            pytest.skip(message)
        return path

    return folder
