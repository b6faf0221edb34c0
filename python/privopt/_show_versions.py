"""The versions a bug report needs: privopt, its C++ core build, its dependencies, the platform.

:func:`show_versions` prints them (as scikit-learn's ``sklearn.show_versions`` does); ``privopt
--version --verbose`` prints the same. Nothing here imports a solver: the dependency versions
come from the installed distributions' metadata. ``privopt.show_versions`` imports this module
on first use (it loads numpy, whose BLAS thread pools it reports).
"""

from __future__ import annotations

import importlib.metadata
import platform
import sys
from pathlib import Path
from typing import Any

import numpy  # noqa: F401  (loads the BLAS library that threadpoolctl reports)

import privopt

try:  # a broken build is exactly what a bug report must show
    from privopt import _core
except ImportError as exc:
    _core, _CORE_ERROR = None, str(exc)
try:
    from threadpoolctl import threadpool_info
except ImportError:  # scikit-learn's dependency: present unless installed without it
    threadpool_info = None

__all__ = ["show_versions", "versions"]

#: Distributions whose versions a report lists, in this order: the required dependencies, then
#: the optional ones (extras ``dask``, ``census``, ``test``).
DEPENDENCIES: tuple[str, ...] = (
    "numpy",
    "scipy",
    "numba",
    "llvmlite",
    "highspy",
    "pandas",
    "scikit-learn",
    "matplotlib",
    "tqdm",
    "dask",
    "distributed",
    "clarabel",
    "pyarrow",
    "threadpoolctl",
    "pip",
)


def _distribution_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _system_info() -> dict[str, Any]:
    return {
        "python": sys.version.replace("\n", " "),
        "executable": sys.executable,
        "machine": platform.platform(),
        "processor": platform.machine(),
    }


def _privopt_info() -> dict[str, Any]:
    return {
        "privopt": privopt.__version__,
        "location": str(Path(privopt.__file__).parent),
        # highspy's releases follow HiGHS's, so the distribution's version is the solver's.
        "HiGHS": _distribution_version("highspy"),
    }


def _core_info() -> dict[str, Any]:
    if _core is None:
        return {"error": f"privopt._core does not import: {_CORE_ERROR}"}
    info = dict(_core.build_info())
    if info.get("openmp") is None:
        info["openmp"] = "not used"
    return info


def _threadpool_info() -> dict[str, Any]:
    """BLAS/OpenMP thread pools loaded so far (numpy's BLAS at least), via threadpoolctl."""
    if threadpool_info is None:
        return {}
    return {
        f"{pool['internal_api']} ({pool['user_api']})": (
            f"{pool.get('version')}, {pool['num_threads']} threads"
        )
        for pool in threadpool_info()
    }


def versions() -> dict[str, dict[str, Any]]:
    """The sections that :func:`show_versions` prints, as nested dicts.

    Returns
    -------
    dict of str to dict
        ``"System"`` (Python, executable, platform), ``"privopt"`` (version, location),
        ``"C++ core"`` (compiler, flags, C++ standard, OpenMP, threads: see
        ``privopt._core.build_info``), ``"Python dependencies"`` (installed version or ``None``
        per distribution in :data:`DEPENDENCIES`), ``"Thread pools"`` (BLAS/OpenMP libraries).

    Examples
    --------
    >>> from privopt._show_versions import versions
    >>> info = versions()
    >>> info["privopt"]["privopt"] == info["C++ core"]["version"]
    True
    """
    return {
        "System": _system_info(),
        "privopt": _privopt_info(),
        "C++ core": _core_info(),
        "Python dependencies": {name: _distribution_version(name) for name in DEPENDENCIES},
        "Thread pools": _threadpool_info(),
    }


def show_versions() -> None:
    """Print the versions to attach to a bug report.

    Prints, on stdout, privopt's version and location, how its C++ core was compiled (compiler,
    flags, C++ standard, OpenMP, threads), the versions of HiGHS (highspy), numpy, numba, scipy,
    pandas, scikit-learn, dask and the other dependencies, the BLAS thread pools and the
    platform. ``privopt --version --verbose`` prints the same.

    Examples
    --------
    >>> import privopt
    >>> privopt.show_versions()  # doctest: +ELLIPSIS
    <BLANKLINE>
    System:
    ...
    C++ core:
    ...
    """
    for section, entries in versions().items():
        print(f"\n{section}:")
        width = max((len(key) for key in entries), default=0)
        for key, value in entries.items():
            shown = "not installed" if value is None and section == "Python dependencies" else value
            print(f"{key:>{width + 4}}: {shown}")
