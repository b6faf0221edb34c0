"""Smoke test of an installed privopt (a wheel or an sdist install), run outside the sources.

Used by ``tools/build_wheel.sh`` and by cibuildwheel's ``test-command``::

    python tools/smoke_test.py PROJECT_DIR [--skip-demo]

It checks that the compiled module imports from the installed package (not from the sources),
that its version equals the package metadata, runs ``privopt demo`` into a temporary folder, and
runs a pytest subset that exercises every C++ kernel family and a HiGHS solve. Needs ``pytest``
and ``hypothesis`` installed beside privopt. Progress goes to stderr; exits non-zero on failure.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: Test files and folders, relative to the project, that make up the smoke subset: the compiled
#: module and package files, then one per kernel family (graphs, census DPs, DPM split) and a
#: HiGHS solve. Each must exist: a renamed file fails here rather than silently shrinking the set.
SMOKE_TESTS: tuple[str, ...] = (
    "tests/test_core_module.py",
    "tests/test_packaging.py",
    "tests/graphs",
    "tests/census/test_solvers.py",
    "tests/cluster/test_kernel.py",
    "tests/lp/test_model_solve.py",
)


def _say(message: str) -> None:
    print(f"[smoke] {message}", file=sys.stderr, flush=True)


def check_installed_package(project: Path) -> None:
    """The package and its compiled module come from an installation, with matching versions."""
    import privopt
    from privopt import _core

    location = Path(privopt.__file__).resolve()
    if project.resolve() in location.parents:
        raise SystemExit(f"privopt was imported from the source tree ({location}), not installed")
    metadata_version = importlib.metadata.version("privopt")
    if not privopt.__version__ == metadata_version == _core.__version__:
        raise SystemExit(
            f"version mismatch: privopt.__version__={privopt.__version__!r}, "
            f"metadata={metadata_version!r}, _core.__version__={_core.__version__!r}"
        )
    _say(f"privopt {privopt.__version__} imported from {location.parent}")


def run_demo() -> None:
    """``privopt demo`` (the console script) writes its report and plots."""
    script = shutil.which("privopt")
    command = [script] if script else [sys.executable, "-m", "privopt"]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "demo"
        _say(f"running {' '.join(command)} demo --out {out}")
        subprocess.run([*command, "demo", "--out", str(out)], check=True, stdout=subprocess.DEVNULL)
        if not (out / "report.md").is_file() or not list(out.glob("*.png")):
            raise SystemExit(f"privopt demo wrote no report.md or no plot into {out}")


def run_pytest_subset(project: Path) -> None:
    """The smoke subset of the test suite, against the installed package."""
    missing = [path for path in SMOKE_TESTS if not (project / path).exists()]
    if missing:
        raise SystemExit(f"smoke test paths missing: {missing}; update SMOKE_TESTS in {__file__}")
    _say(f"pytest on {len(SMOKE_TESTS)} paths")
    # -p no:cacheprovider: the project folder may be read-only (cibuildwheel mounts it so).
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SMOKE_TESTS]
    subprocess.run(command, check=True, cwd=project)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("project", type=Path, help="the privopt source folder (for its tests)")
    parser.add_argument("--skip-demo", action="store_true", help="do not run privopt demo")
    args = parser.parse_args(argv)
    check_installed_package(args.project)
    if not args.skip_demo:
        run_demo()
    run_pytest_subset(args.project)
    _say("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
