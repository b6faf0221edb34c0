"""privopt.show_versions() and `privopt --version --verbose`: what a bug report needs."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import privopt
import pytest
from privopt import _core
from privopt._show_versions import DEPENDENCIES, _distribution_version, versions
from privopt.cli import main

COMPILERS = ("GNU", "Clang", "AppleClang", "MSVC", "IntelLLVM", "Intel")


def test_sections_and_privopt_version():
    info = versions()
    assert list(info) == ["System", "privopt", "C++ core", "Python dependencies", "Thread pools"]
    assert info["privopt"]["privopt"] == importlib.metadata.version("privopt")
    assert info["privopt"]["HiGHS"] == importlib.metadata.version("highspy")
    assert info["System"]["executable"] == sys.executable


def test_core_build_info_describes_the_compiled_module():
    build = _core.build_info()
    assert build["version"] == privopt.__version__
    assert build["compiler"].split()[0] in COMPILERS
    assert build["cxx_standard"] >= 201703  # the kernels are C++17
    assert isinstance(build["cxx_flags"], str)
    assert build["openmp"] is None or build["openmp"] > 0
    assert build["threads"] == "std::thread"
    assert build["hardware_concurrency"] >= 0  # 0 means "unknown" in the standard
    assert build["pybind11"].count(".") == 2


def test_dependency_versions_come_from_the_installed_distributions():
    deps = versions()["Python dependencies"]
    assert list(deps) == list(DEPENDENCIES)
    for name in ("numpy", "scipy", "numba", "highspy", "pandas", "scikit-learn"):
        assert deps[name] == importlib.metadata.version(name)
    assert _distribution_version("surely-not-an-installed-distribution") is None


def test_show_versions_prints_every_section_on_stdout(capsys):
    privopt.show_versions()
    out, err = capsys.readouterr()
    assert err == ""
    for header in ("System:", "privopt:", "C++ core:", "Python dependencies:"):
        assert f"\n{header}\n" in out
    assert f"numpy: {importlib.metadata.version('numpy')}" in out


def test_cli_version_alone_is_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"privopt {privopt.__version__}\n"


def test_cli_version_verbose_prints_the_report(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version", "--verbose"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"privopt {privopt.__version__}\n")
    assert "C++ core:" in out and "compiler:" in out and "scikit-learn:" in out


def test_console_version_verbose_exits_cleanly():
    done = subprocess.run(
        [sys.executable, "-m", "privopt", "--version", "--verbose"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "Thread pools:" in done.stdout
