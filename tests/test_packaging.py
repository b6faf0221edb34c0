"""The installed distribution: one version everywhere, license and metadata, C++ package files.

These run against whatever is installed (editable, wheel or sdist install), so the wheel smoke
test (tools/smoke_test.py) runs them too.
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import privopt
import pytest
from privopt import _core

SOURCE_ROOT = Path(__file__).resolve().parents[1]
VERSION_HPP = SOURCE_ROOT / "cpp" / "include" / "privopt" / "version.hpp"


def header_version(text: str) -> str:
    """ "MAJOR.MINOR.PATCH" from the three ``#define PRIVOPT_VERSION_*`` lines of version.hpp."""
    parts = [
        re.search(rf"^#define PRIVOPT_VERSION_{part} (\d+)$", text, re.MULTILINE)
        for part in ("MAJOR", "MINOR", "PATCH")
    ]
    assert all(parts), "version.hpp must define PRIVOPT_VERSION_MAJOR/MINOR/PATCH"
    return ".".join(match.group(1) for match in parts if match)


def test_python_version_is_the_metadata_version():
    assert privopt.__version__ == importlib.metadata.version("privopt")


def test_compiled_core_reports_the_same_version():
    assert _core.__version__ == privopt.__version__


def test_installed_header_is_the_version_source():
    installed = Path(privopt.get_include()) / "privopt" / "version.hpp"
    assert header_version(installed.read_text()) == privopt.__version__


@pytest.mark.skipif(not VERSION_HPP.is_file(), reason="needs the source tree beside the tests")
def test_source_header_matches_installed_version():
    # A stale install (version.hpp bumped, package not rebuilt) shows up here.
    assert header_version(VERSION_HPP.read_text()) == privopt.__version__


def test_cmake_package_version_is_the_same():
    config = Path(privopt.get_cmake_dir()) / "privoptConfigVersion.cmake"
    match = re.search(r'set\(PACKAGE_VERSION "([^"]+)"\)', config.read_text())
    assert match, f"no PACKAGE_VERSION in {config}"
    assert match.group(1) == privopt.__version__


def test_cmake_package_files_are_installed():
    cmake_dir = Path(privopt.get_cmake_dir())
    for name in ("privoptConfig.cmake", "privoptConfigVersion.cmake", "privoptTargets.cmake"):
        assert (cmake_dir / name).is_file(), f"{name} missing from {cmake_dir}"


def test_license_file_is_in_the_distribution():
    dist = importlib.metadata.distribution("privopt")
    assert dist.metadata["License-Expression"] == "BSD-3-Clause"
    license_files = [f for f in dist.files or () if f.name == "LICENSE"]
    assert license_files, "LICENSE is not among the installed distribution files"
    assert "BSD 3-Clause License" in license_files[0].read_text()


def test_metadata_declares_supported_pythons_and_urls():
    metadata = importlib.metadata.metadata("privopt")
    classifiers = set(metadata.get_all("Classifier") or ())
    for minor in (10, 11, 12, 13):
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    assert metadata["Requires-Python"] == ">=3.10"
    assert metadata.get_all("Project-URL"), "project.urls is empty"
    assert metadata["Description-Content-Type"].startswith("text/markdown")
