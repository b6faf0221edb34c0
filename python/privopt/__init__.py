"""privopt: optimal privacy mechanisms by mathematical optimization.

Subpackages, one capability each:

- :mod:`privopt.dp` — exact noise samplers, the exponential mechanism, the privacy accountant.
- :mod:`privopt.lp` — vectorised LP/MILP building over HiGHS, and Benders decomposition.
- :mod:`privopt.graphs` — shortest paths on CSR graphs (C++ kernel).
- :mod:`privopt.release` — the release contract every mechanism's result meets
  (:class:`Release`, :class:`Guarantee`, :func:`load` reads any saved release back) and
  :mod:`privopt.registry`, their registry (:func:`mechanisms`).
- :mod:`privopt.perturbation` — perturbation matrices for metric privacy (the problem, the
  exact LP, the released matrix, its guarantee check and repair), shared by metric DP and LR-Geo.

Mechanisms (metric DP, LR-Geo, k-anonymity, census counts, DPM clustering) build on these.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError
from importlib.metadata import distribution as _distribution
from pathlib import Path
from typing import Any

from privopt import errors

try:
    # The version is written once, in cpp/include/privopt/version.hpp; the build copies it into
    # the package metadata, read here.
    __version__: str = _distribution("privopt").version
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = [
    "__version__",
    "errors",
    "get_include",
    "get_cmake_dir",
    "show_versions",
    "Release",
    "Guarantee",
    "load",
    "mechanisms",
]

#: Names imported on first use: ``import privopt`` stays light.
_LAZY = {
    "Release": ("privopt.release", "Release"),
    "Guarantee": ("privopt.release", "Guarantee"),
    "load": ("privopt.release", "load"),
    "mechanisms": ("privopt.registry", "mechanisms"),
    "show_versions": ("privopt._show_versions", "show_versions"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attribute = _LAZY[name]
        return getattr(importlib.import_module(module), attribute)
    raise AttributeError(f"module 'privopt' has no attribute {name!r}")


def _installed_dir(*parts: str) -> Path:
    """Folder ``privopt/<parts>`` as installed by the build (headers, CMake package).

    Next to this file in a wheel install; an editable install keeps the Python sources in the
    source tree and the installed files in site-packages, so the distribution's file list is
    asked too.
    """
    here = Path(__file__).parent.joinpath(*parts)
    if here.is_dir():
        return here
    try:
        dist = _distribution("privopt")
    except PackageNotFoundError:
        return here
    prefix = "/".join(("privopt", *parts)) + "/"
    for file in dist.files or ():
        if str(file).replace("\\", "/").startswith(prefix):
            return Path(str(dist.locate_file(prefix)))
    return here


def get_include() -> str:
    """Directory of the installed C++ headers (``#include <privopt/core.hpp>``).

    Returns
    -------
    str
        Absolute path to pass to the compiler as ``-I``.

    Examples
    --------
    >>> import os, privopt
    >>> os.path.isfile(os.path.join(privopt.get_include(), "privopt", "core.hpp"))
    True
    """
    return str(_installed_dir("include"))


def get_cmake_dir() -> str:
    """Directory holding ``privoptConfig.cmake``.

    Put it on ``CMAKE_PREFIX_PATH`` or pass it as ``-Dprivopt_DIR=...`` so that
    ``find_package(privopt)`` finds the installed ``privopt::core``.

    Returns
    -------
    str
        Absolute path of the CMake package directory.

    Examples
    --------
    >>> import os, privopt
    >>> os.path.isfile(os.path.join(privopt.get_cmake_dir(), "privoptConfig.cmake"))
    True
    """
    return str(_installed_dir("share", "cmake", "privopt"))
