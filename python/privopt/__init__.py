"""privopt: optimal privacy mechanisms by mathematical optimization.

Subpackages, one capability each:

- :mod:`privopt.dp` — exact noise samplers, the exponential mechanism, the privacy accountant.
- :mod:`privopt.lp` — vectorised LP/MILP building over HiGHS, and Benders decomposition.
- :mod:`privopt.graphs` — shortest paths on CSR graphs (C++ kernel).

Mechanisms (metric DP, LR-Geo, k-anonymity, census counts, DPM clustering) build on these.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _dist_version
from pathlib import Path

from privopt import errors

try:
    __version__ = _dist_version("privopt")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = ["__version__", "errors", "get_include", "get_cmake_dir"]


def get_include() -> str:
    """Directory of the installed C++ headers (``#include <privopt/core.hpp>``)."""
    return str(Path(__file__).parent / "include")


def get_cmake_dir() -> str:
    """Directory holding ``privoptConfig.cmake``; put it on ``CMAKE_PREFIX_PATH`` or pass it as
    ``-Dprivopt_DIR=...`` so that ``find_package(privopt)`` finds the installed
    ``privopt::core``."""
    return str(Path(__file__).parent / "share" / "cmake" / "privopt")
