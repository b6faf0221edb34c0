"""bench/README.md lists every benchmark script and suite module (issue 16 item 4): a script
added without saying what it measures, or a listed one that is gone, fails here."""

from __future__ import annotations

import re
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def test_every_bench_file_is_listed_and_every_listed_file_exists():
    readme = (BENCH / "README.md").read_text()
    files = {p.name for p in BENCH.glob("*.py")}
    listed = set(re.findall(r"`([a-z0-9_]+\.py)`", readme))
    assert files - listed == set(), f"bench/README.md does not list {sorted(files - listed)}"
    # Scripts folded into the suite are named on the one line that says so.
    former = set().union(
        *(
            re.findall(r"`([a-z0-9_]+\.py)`", line)
            for line in readme.splitlines()
            if "former" in line
        )
    )
    gone = listed - files - former
    assert gone == set(), f"bench/README.md lists files that do not exist: {sorted(gone)}"
