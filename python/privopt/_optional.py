"""Heavy and optional dependencies, each imported on first use through one accessor here.

``import privopt`` and ``privopt --help`` need none of pandas, matplotlib, pyarrow or Clarabel:
pandas and pyplot alone take longer to import than the whole command line's parser. A function
that needs one asks its accessor, which imports it once (Python keeps it in ``sys.modules``) and,
for an optional extra, says which extra to install when it is missing.

These are the package's only function-local imports besides Dask (:mod:`privopt.cluster._dask`,
reached only with a Dask array; :func:`distributed` and :func:`dask_array`, reached only by
``--workers`` and ``--scheduler``), the web server (:mod:`privopt.geo.http_server`, reached only by
``privopt geo serve``), pyrosm (:func:`privopt.geo.load_osm_pbf`) and the console script's
start (:mod:`privopt._launch`); ``tests/test_layers.py`` holds the count.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from privopt.errors import InvalidInput

__all__ = [
    "pandas",
    "pyplot",
    "matplotlib",
    "is_axes",
    "pyarrow",
    "has_clarabel",
    "clarabel",
    "distributed",
]


def pandas() -> Any:
    """The ``pandas`` module (a dependency of privopt, imported where a table is used)."""
    import pandas as pd

    return pd


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend: figures are written to files,
    no display is needed (a figure privopt makes is saved, then closed)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def matplotlib() -> Any:
    """The ``matplotlib`` package with ``patches`` and ``ticker`` loaded, the backend left as
    it is: for drawing on an Axes that a caller may have made in its own session."""
    import matplotlib.patches
    import matplotlib.ticker

    return matplotlib


def is_axes(value: Any) -> bool:
    """Whether ``value`` is a matplotlib ``Axes``, without importing matplotlib: a caller who
    holds an Axes has imported it already."""
    axes = sys.modules.get("matplotlib.axes")
    return axes is not None and isinstance(value, axes.Axes)


def pyarrow() -> Any | None:
    """``pyarrow`` with its ``csv`` and ``parquet`` modules loaded, or None where it is not
    installed (the ``census`` extra; tables are then written as CSV by pandas)."""
    try:
        import pyarrow.csv  # type: ignore[import-untyped]
        import pyarrow.parquet  # type: ignore[import-untyped]
    except ImportError:
        return None
    return pyarrow


def clarabel() -> Any:
    """The Clarabel interior-point solver (the ``census`` extra).

    Raises
    ------
    InvalidInput
        Clarabel is not installed (the message names the extra).
    """
    return _import_or_refuse(
        "clarabel",
        "the Clarabel QP solver is not installed: pip install 'privopt[census]', or use "
        "qp_solver='highs'",
    )


def has_clarabel() -> bool:
    """Whether :func:`clarabel` finds the solver."""
    try:
        clarabel()
    except InvalidInput:
        return False
    return True


def dask_array() -> Any:
    """``dask.array`` (the ``dask`` extra): arrays larger than memory, in chunks.

    Raises
    ------
    InvalidInput
        It is not installed (the message names the extra).
    """
    return _import_or_refuse(
        "dask.array",
        "reading the data in chunks needs Dask, which is not installed: "
        "pip install 'privopt[dask]'",
    )


def distributed() -> Any:
    """Dask's ``distributed`` package (the ``dask`` extra): clusters and clients.

    Raises
    ------
    InvalidInput
        It is not installed (the message names the extra).
    """
    return _import_or_refuse(
        "distributed",
        "running on a Dask cluster needs Dask's distributed scheduler, which is not "
        "installed: pip install 'privopt[dask]'",
    )


def _import_or_refuse(name: str, message: str) -> Any:
    """Module ``name``, or :class:`InvalidInput` with ``message`` (which names the extra that
    installs it) where it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise InvalidInput(message) from None
