"""What the bench scripts share; it imports no other bench module, so every script may import it.

* **Child processes**: :func:`run_json` runs one measurement in a fresh process (its peak memory
  is then its own) and reads back the JSON line it prints.
* **Memory**: :func:`peak_rss_mib`, :func:`reset_peak_rss` and :func:`measured`, from Linux's
  VmHWM, which starts afresh at ``exec`` (``ru_maxrss`` keeps the parent's high-water mark);
  :func:`memory_write_gbps`, what a fresh process pays to write into new memory.
* **Another revision**: :func:`package_at` and :func:`use_package` import the package sources of
  a git revision with this build's compiled core (valid while the C++ is the same, no build);
  :func:`interpreter_at` builds a revision whole into its own virtual environment.
* **Fits and files**: :func:`log_log_slope` (the exponent a of y ∝ n^a),
  :func:`write_atomically` and :func:`save_figure` (temp + rename), :func:`data_root`.

The scripts import privopt inside their child functions, not at the top: a child may first
point the import at another revision (:func:`use_package`), and a parent that only starts
children stays small.
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import shutil
import site
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent


# ----------------------------------------------------------------------- child processes
def run_json(
    cmd: list[str], *, timeout: float | None = 3600.0, env: dict[str, str] | None = None
) -> dict[str, Any]:
    """Run ``cmd`` in a fresh process; the last line of its stdout that is a JSON object.

    A failed child comes back as ``{"error": <its last stderr line>}`` and one stopped after
    ``timeout`` seconds as ``{"error": "stopped after N s"}``, so that a table can print the
    row and go on.
    """
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"stopped after {timeout:.0f} s"}
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = proc.stderr.strip().splitlines()
        return {"error": (tail[-1] if tail else f"exit status {proc.returncode}")[:200]}
    return json.loads(lines[-1])


def print_json(record: dict[str, Any]) -> None:
    """A child's result: one JSON line on stdout (what :func:`run_json` reads back)."""
    print(json.dumps(record, default=float), flush=True)


# ----------------------------------------------------------------------- memory (Linux)
def _status_mib(key: str, pid: int | str = "self") -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def peak_rss_mib(pid: int | None = None) -> float:
    """High-water mark of the resident set (MiB) of this process, or of process ``pid``,
    since it started or since the last :func:`reset_peak_rss`; this process's ``ru_maxrss``
    where /proc is absent."""
    peak = _status_mib("VmHWM:", "self" if pid is None else pid)
    if peak is not None or pid is not None:
        return float("nan") if peak is None else peak
    scale = 1 if sys.platform == "darwin" else 1024  # bytes on macOS, KiB on Linux
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / scale / 1024


def reset_peak_rss() -> float:
    """Reset the high-water mark to the current RSS (Linux ``clear_refs`` 5); returns that RSS
    in MiB (the peak so far where the reset is not available)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return peak_rss_mib()
    return _status_mib("VmRSS:") or 0.0


def measured(run: Callable[[], Any]) -> dict[str, float]:
    """Seconds of ``run()``, its own peak memory (the high-water mark above the resident set
    just before it) and the process's peak, in MiB."""
    before = reset_peak_rss()
    start = time.perf_counter()
    run()
    seconds = time.perf_counter() - start
    peak = peak_rss_mib()
    return {"seconds": seconds, "own_mib": peak - before, "peak_mib": peak}


_WRITE_RATES = """
import sys, time
import numpy as np
n = int(sys.argv[1]) * 2**20
t = time.perf_counter(); a = np.empty(n, np.uint8); a.fill(1); first = time.perf_counter() - t
t = time.perf_counter(); a.fill(2); again = time.perf_counter() - t
print(n / first / 1e9, n / again / 1e9)
"""


def memory_write_gbps(mib: int = 512) -> tuple[float, float]:
    """GB/s of a first write into ``mib`` MiB new to a fresh process, and of a second write into
    the same memory (numpy's own allocation: huge pages where the system gives them). A fan-out's
    tasks run in fresh worker processes, so the first figure is what their first writes cost; the
    ratio of the two says how much of a first round's task time is new memory."""
    out = subprocess.run(
        [sys.executable, "-c", _WRITE_RATES, str(mib)], capture_output=True, text=True, check=True
    )
    first, again = (float(x) for x in out.stdout.split())
    return first, again


def memory_write_text(mib: int = 512) -> str:
    """:func:`memory_write_gbps` as one line of text for a bench's header."""
    first, again = memory_write_gbps(mib)
    return (
        f"memory writes on this machine ({mib} MiB in a fresh process): first {first:.2f} GB/s, "
        f"again {again:.2f} GB/s"
    )


# ----------------------------------------------------------------------- another revision
def git(*args: str) -> str:
    """``git -C <repository> ARGS``'s stdout."""
    return subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True
    ).stdout


def package_at(rev: str, into: Path) -> Path:
    """The ``python/`` folder of git revision ``rev``, extracted under ``into``, with this
    build's compiled ``privopt._core`` copied in; pass it to :func:`use_package`.

    No build: valid for comparing Python changes while the C++ is the same (else use
    :func:`interpreter_at`).
    """
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", rev, "python/privopt"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    core = importlib.util.find_spec("privopt._core")
    if core is None or core.origin is None:
        raise SystemExit("the compiled privopt._core is not installed")
    shutil.copy(core.origin, into / "python" / "privopt")
    return into / "python"


def use_package(folder: str | Path) -> None:
    """Import privopt from ``folder`` (made by :func:`package_at`) instead of the installed
    one; call it before anything imports privopt. Refuses to go on if privopt would still
    come from elsewhere (a run would then measure the current code and call it the baseline)."""
    # An editable install's import hook would find the working tree first: drop it.
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]
    sys.path.insert(0, str(folder))
    spec = importlib.util.find_spec("privopt")
    origin = Path(spec.origin).resolve() if spec is not None and spec.origin else None
    if origin is None or not origin.is_relative_to(Path(folder).resolve()):
        raise SystemExit(f"privopt still imports from {origin}, not from {folder}")


def interpreter_at(rev: str) -> tuple[str, dict[str, str]]:
    """An interpreter with privopt built from git revision ``rev`` and the environment to run
    it in (``PYTHONPATH`` without this tree's ``python/``).

    Cached under ``build/baseline-<sha>``: a virtual environment whose other packages come from
    this one (a .pth line), the revision's sources from ``git archive``, built without
    isolation (minutes, for the C++ core).
    """
    sha = git("rev-parse", rev).strip()
    root = REPO / "build" / f"baseline-{sha[:12]}"
    python = root / "venv" / "bin" / "python"
    if not (root / "built").exists():
        print(
            f"building privopt at {rev} ({sha[:12]}) into {root} (minutes: the C++ core)",
            file=sys.stderr,
            flush=True,
        )
        src = root / "src"
        src.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", sha], capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
        subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True)
        purelib = subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        # the build and run dependencies of this environment (the editable privopt's .pth
        # file in them is not read: only site directories' .pth files are)
        Path(purelib, "privopt_baseline_deps.pth").write_text("\n".join(site.getsitepackages()))
        env = {**os.environ, "PATH": f"{sysconfig.get_path('scripts')}:{os.environ['PATH']}"}
        pip = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
        subprocess.run([*pip, str(src)], check=True, env=env)
        (root / "built").touch()
    # A run from the source tree puts this tree's python/ on PYTHONPATH, which would shadow
    # REV's installed privopt in the baseline interpreter and its children: drop it.
    own = (REPO / "python").resolve()
    paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    kept = [p for p in paths if p and Path(p).resolve() != own]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(kept)}
    where = subprocess.run(
        [str(python), "-c", "import privopt; print(privopt.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.strip()
    if Path(where).resolve().is_relative_to(own):
        raise RuntimeError(f"the interpreter built at {rev} imports this tree's privopt ({where})")
    return str(python), env


# ----------------------------------------------------------------------- fits and files
def log_log_slope(x: list[float], y: list[float]) -> float:
    """Least-squares slope of log y against log x: the exponent a of y ∝ x^a."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def _temporary(path: Path) -> Path:
    """A name beside ``path`` for its temporary file (created with the umask's permissions,
    unlike ``mkstemp``'s 0600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.with_name(f".{path.name}.{os.getpid()}.partial{path.suffix}")


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in its folder and a rename."""
    tmp = _temporary(path)
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def save_figure(fig: Any, out: str | Path, dpi: int = 100) -> Path:
    """Save a matplotlib figure as PNG to ``out`` atomically (temp + rename) and close it."""
    import matplotlib.pyplot as plt  # here, not above: children that draw nothing stay small

    out = Path(out)
    tmp = _temporary(out)
    try:
        fig.savefig(tmp, format="png", dpi=dpi)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
        plt.close(fig)
    return out


def data_root() -> Path | None:
    """The real data sets (not shipped): ``$PRIVOPT_DATA``, else ``<repo>/../shared/data``;
    None when that folder is absent."""
    env = os.environ.get("PRIVOPT_DATA")
    root = Path(env) if env else REPO.parent / "shared" / "data"
    return root if root.is_dir() else None
