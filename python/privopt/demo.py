"""``privopt demo``: run every mechanism that exists on embedded default data and write a report.

Each capability contributes one *demo section*: a function ``(out_dir, seed) -> Section`` that
runs on generated or bundled data (never downloaded), saves its PNG plots into ``out_dir`` and
returns a :class:`privopt.report.Section`. Sections are listed in :data:`DEMO_SECTIONS`; a new
mechanism adds one import path there.
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Callable
from pathlib import Path

from privopt._validation import check_bool, check_int
from privopt.report import GLOSSARY_NOTE, Report, Section, format_number, release_header

__all__ = ["DEMO_PRIVACY", "DEMO_SECTIONS", "run_demo"]

#: "module:function" paths of the demo sections, in report order.
DEMO_SECTIONS: list[str] = [
    "privopt.dp.demo:demo_section",
    "privopt.lp.demo:demo_section",
    "privopt.mdp.demo:demo_section",
    "privopt.geo.report:demo_section",
    "privopt.kanon.demo:demo_section",
    "privopt.census.demo:demo_section",
    "privopt.cluster.demo:demo_section",
]


#: The privacy parameters the demo chooses (the one command where privopt picks them): each
#: section runs at these and states its guarantee in its own header.
DEMO_PRIVACY = (
    "noise samplers at epsilon = 0.5; metric DP at epsilon = 2 per km within 2 km; "
    "location obfuscation (LR-Geo) at epsilon = 5 per km within 0.6 km; k-anonymity with "
    "k = 3; census counts at epsilon = 1; clustering at epsilon = 1, 10 and 100 with "
    "delta = 1/n^1.5 for n points"
)


def _load(path: str) -> Callable[[Path, int], Section]:
    module, func = path.split(":")
    return getattr(importlib.import_module(module), func)


def run_demo(out_dir: str | Path = "demo", seed: int = 0, *, verbose: bool = True) -> Path:
    """Run all demo sections and write ``<out_dir>/report.md`` with its plots.

    Parameters
    ----------
    out_dir : directory for ``report.md`` and the PNG figures (created if missing).
    seed : seed (an int >= 0) of every random draw, so that the report is reproducible.

    Returns
    -------
    Path of the written ``report.md``.
    """
    seed = check_int("seed", seed, minimum=0)  # before anything is written
    verbose = check_bool("verbose", verbose)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    report = Report("privopt demo")
    head = release_header(
        "demonstration releases of every mechanism, on small generated or bundled data",
        f"chosen by the demo: {DEMO_PRIVACY}; each section states its mechanism's guarantee",
        f"for testing only: every random draw came from seed {seed}, so anyone can recompute it",
    )
    report.add(Section("About this report", head + _INTRO.format(seed=seed)))
    for path in DEMO_SECTIONS:
        start = time.perf_counter()
        section = _load(path)(out, seed)
        elapsed = time.perf_counter() - start
        section.body += (
            f"\n_Section ran in {format_number(elapsed, 3)} s, including one-off compilation "
            "and imports on first use._\n"
        )
        report.add(section)
        if verbose:  # progress: stderr, so that stdout carries results only
            print(f"[demo] {section.title}: {elapsed:.2f} s", file=sys.stderr, flush=True)
    report.sections[-1].body += "\n" + GLOSSARY_NOTE + "\n"
    return report.write(out)


_INTRO = (
    "Every mechanism of privopt run once on small generated or bundled data, with seed "
    "{seed} for every random draw. Times are wall-clock seconds on this machine.\n"
)
