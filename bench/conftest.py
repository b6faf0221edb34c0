"""The pytest-benchmark suite of privopt: sizes, baselines measured in the same run, ratios.

    python -m pytest bench --benchmark-only                      # small settings (default)
    python -m pytest bench --benchmark-only --bench-size paper   # the papers' settings
    python -m pytest bench --benchmark-only --benchmark-autosave # save .benchmarks/<machine>/...
    python -m pytest bench --benchmark-only --benchmark-compare  # against the last saved run

Every benchmark times a privopt operation with pytest-benchmark and, interleaved with its rounds
(one baseline round before each privopt round, untimed by pytest-benchmark), a *baseline*: plain
HiGHS on the same model, the previous implementation, or a peer method on the same data. Both
see the same machine load, so their ratio ``privopt / baseline`` is what to compare between
runs and machines; absolute times move with the load. ``extra_info`` of each benchmark (in the
saved JSON) holds the setting, the baseline's times, the ratio, the peak RSS of both, the
paper's figure for the setting, and the quality figures asserted by the test. A summary table of
the ratios, with the compared run's ratios beside them under ``--benchmark-compare``, is printed
at the end; ``--bench-ratio-fail PCT`` fails the run when a ratio grew by more than PCT percent.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
import pytest

matplotlib.use("Agg")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench scripts' helpers
from harness import data_root, peak_rss_mib, reset_peak_rss

#: Sizes of ``--bench-size``: each benchmark module maps them to its settings (``SETTINGS``).
SIZES = ("small", "paper")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("privopt benchmarks")
    group.addoption(
        "--bench-size",
        choices=SIZES,
        default="small",
        help="small: the whole suite in a few minutes (default); paper: the papers' settings",
    )
    group.addoption(
        "--bench-rounds",
        type=int,
        default=None,
        metavar="N",
        help="rounds of every benchmark (default: each module's choice, 1-15); more rounds, "
        "less noise in the ratios",
    )
    group.addoption(
        "--bench-ratio-fail",
        type=float,
        default=None,
        metavar="PCT",
        help="with --benchmark-compare: fail when a privopt/baseline ratio grew by more than "
        "PCT percent over the compared run",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``setting`` with ``SETTINGS[test name][--bench-size]`` of the module; each
    setting's ``id`` names it, so a small and a paper run never compare as the same benchmark."""
    if "setting" not in metafunc.fixturenames:
        return
    size = metafunc.config.getoption("bench_size")
    settings = metafunc.module.SETTINGS[metafunc.function.__name__][size]
    metafunc.parametrize("setting", settings, ids=[s["id"] for s in settings])


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # --benchmark-compare warns when the saved run's machine differs (CPU clock, version); the
    # project's warnings-as-errors would turn that note into an internal error.
    from pytest_benchmark.logger import PytestBenchmarkWarning

    warnings.filterwarnings(
        "default", "Benchmark machine_info is different", PytestBenchmarkWarning
    )


def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict) -> None:
    """The size and the privopt version (the load goes into each benchmark's extra_info)."""
    import privopt

    machine_info["cpu_count"] = os.cpu_count()
    machine_info["bench_size"] = config.getoption("bench_size")
    machine_info["privopt"] = privopt.__version__


@pytest.fixture(scope="session")
def data_dir() -> Path | None:
    """The real data folder, or None: for benchmarks with a generated stand-in."""
    return data_root()


@pytest.fixture(scope="session")
def shared_data() -> Callable[[str], Path]:
    """``shared_data("rome")`` -> that folder of the real data, or a skip (a failure where
    ``PRIVOPT_REQUIRE_DATA=1``): the data is not part of privopt, so users' clones lack it.
    Benchmarks that have a generated stand-in use ``data_dir`` and fall back instead."""

    def folder(subdir: str) -> Path:
        root = data_root()
        path = None if root is None else root / subdir
        if path is None or not path.exists():
            message = f"real data folder {subdir!r} absent (set PRIVOPT_DATA)"
            if os.environ.get("PRIVOPT_REQUIRE_DATA") == "1":
                pytest.fail(message)
            pytest.skip(message)
        return path

    return folder


class PeakMemory:
    """Peak RSS of the rounds of one side: the process's high-water mark (data held
    included) and the growth above the RSS at the start of the round (the call's own)."""

    def __init__(self) -> None:
        self.peak = 0.0
        self.growth = 0.0
        self._start = 0.0

    def start(self) -> None:
        self._start = reset_peak_rss()

    def stop(self) -> None:
        peak = peak_rss_mib()
        self.peak = max(self.peak, peak)
        self.growth = max(self.growth, peak - self._start)


# ----------------------------------------------------------------------- privopt vs baseline
@dataclass
class Against:
    """Runs a privopt operation under pytest-benchmark and its baseline in the same rounds.

    Use through the ``against`` fixture::

        def test_x(against, setting):
            mine, base = against(run, baseline, baseline_name="plain HiGHS", paper="161.4 s")
    """

    benchmark: Any
    size: str
    rounds: int | None = None

    def __call__(
        self,
        target: Callable[[], Any],
        baseline: Callable[[], Any],
        *,
        baseline_name: str,
        paper: Any = None,
        rounds: int = 3,
        baseline_rounds: int | None = None,
        warmup: bool = True,
        setting: dict | None = None,
    ) -> tuple[Any, Any]:
        """Time ``target`` (``rounds`` rounds) and ``baseline`` (``baseline_rounds``, default
        ``rounds``, each just before a target round); returns the last results of both.

        ``warmup`` runs each once untimed first (JIT compilation, first HiGHS instance, caches).
        The ratio recorded is the median of the target over the median of the baseline.
        """
        rounds = self.rounds or rounds
        baseline_rounds = rounds if baseline_rounds is None else min(baseline_rounds, rounds)
        if warmup:
            target()
            baseline()
        base_times: list[float] = []
        memory = {"target": PeakMemory(), "baseline": PeakMemory()}
        last: dict[str, Any] = {}

        def before_round() -> None:
            if len(base_times) < baseline_rounds:
                memory["baseline"].start()
                start = time.perf_counter()
                last["baseline"] = baseline()
                base_times.append(time.perf_counter() - start)
                memory["baseline"].stop()
            memory["target"].start()

        result = self.benchmark.pedantic(
            target,
            setup=before_round,
            teardown=memory["target"].stop,
            rounds=rounds,
            iterations=1,
        )
        self.record(setting, baseline_name, base_times, paper, memory)
        return result, last.get("baseline")

    def record(
        self,
        setting: dict | None,
        baseline_name: str,
        base_times: list[float],
        paper: Any,
        memory: dict[str, PeakMemory],
    ) -> None:
        info = self.benchmark.extra_info
        info["size"] = self.size
        info["load_average"] = [round(x, 2) for x in os.getloadavg()]
        if setting is not None:
            info["setting"] = setting
        info["baseline"] = baseline_name
        info["baseline_median_s"] = statistics.median(base_times)
        info["baseline_min_s"] = min(base_times)
        info["baseline_rounds"] = len(base_times)
        info["paper"] = paper
        for side, prefix in (("target", ""), ("baseline", "baseline_")):
            info[f"{prefix}peak_rss_mib"] = round(memory[side].peak, 1)
            info[f"{prefix}rss_growth_mib"] = round(memory[side].growth, 1)
        stats = getattr(self.benchmark, "stats", None)
        if stats is not None and stats.stats.rounds:
            median = stats.stats.median
            info["median_s"] = median
            info["ratio"] = median / info["baseline_median_s"]


@pytest.fixture
def against(benchmark, request) -> Against:
    """The privopt-vs-baseline runner of one benchmark (see :class:`Against`)."""
    config = request.config
    return Against(benchmark, config.getoption("bench_size"), config.getoption("bench_rounds"))


# ----------------------------------------------------------------------- the ratio summary
def _ratios(config: pytest.Config) -> list[dict]:
    """One row per benchmark of this run: its ratio and the compared run's ratio, if any."""
    session = getattr(config, "_benchmarksession", None)
    if session is None:
        return []
    compared: dict[str, dict] = {}
    for mapping in (session.compared_mapping or {}).values():
        compared.update(mapping)
    rows = []
    for bench in session.benchmarks:
        info = bench.extra_info
        if "ratio" not in info:
            continue
        then = compared.get(bench.fullname, {}).get("extra_info", {}).get("ratio")
        rows.append(
            {
                "name": bench.name,
                "median": info["median_s"],
                "baseline": info["baseline"],
                "baseline_median": info["baseline_median_s"],
                "ratio": info["ratio"],
                "then": then,
                "paper": info.get("paper"),
            }
        )
    return rows


def _ratio_regressions(config: pytest.Config) -> list[str]:
    limit = config.getoption("bench_ratio_fail")
    if limit is None:
        return []
    return [
        f"{r['name']}: ratio {r['then']:.3g} -> {r['ratio']:.3g}"
        for r in _ratios(config)
        if r["then"] and r["ratio"] > r["then"] * (1 + limit / 100)
    ]


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _ratio_regressions(session.config) and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    rows = _ratios(config)
    if not rows:
        return
    tr = terminalreporter
    tr.section("privopt / baseline (same run; < 1: privopt faster)")
    width = max(len(r["name"]) for r in rows)
    tr.write_line(
        f"{'benchmark':<{width}}  {'privopt s':>10}  {'baseline s':>10}  {'ratio':>8}  "
        f"{'compared':>8}  {'change':>7}  baseline"
    )
    for r in rows:
        then = f"{r['then']:8.3g}" if r["then"] else f"{'':8}"
        change = f"{100 * (r['ratio'] / r['then'] - 1):+6.0f}%" if r["then"] else f"{'':7}"
        tr.write_line(
            f"{r['name']:<{width}}  {r['median']:10.4g}  {r['baseline_median']:10.4g}  "
            f"{r['ratio']:8.3g}  {then}  {change}  {r['baseline']}"
        )
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    tr.write_line(f"load average {load}, {os.cpu_count()} cores")
    for line in _ratio_regressions(config):
        tr.write_line(f"RATIO REGRESSION {line}", red=True)
