"""The compiled module and the installed C++ package files."""

from pathlib import Path

import numpy as np
import privopt
from privopt import _core


def test_core_version_matches_package():
    assert _core.__version__ == privopt.__version__.split("+")[0]


def test_core_shortest_paths_on_path_graph():
    dist = _core.graphs.shortest_paths(
        np.array([0, 1, 2, 2]), np.array([1, 2]), np.array([1.0, 2.0]), np.array([0, 2]), np.inf
    )
    np.testing.assert_array_equal(dist, [[0.0, 1.0, 3.0], [np.inf, np.inf, 0.0]])


def test_headers_are_shipped_or_in_source_tree():
    # A wheel install ships the headers and CMake package under privopt/; an editable install
    # serves them from the source tree.
    include = Path(privopt.get_include())
    source_include = Path(__file__).parents[1] / "cpp" / "include"
    assert (include / "privopt" / "core.hpp").exists() or (
        source_include / "privopt" / "core.hpp"
    ).exists()
