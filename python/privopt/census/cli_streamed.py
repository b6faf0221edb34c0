"""``privopt census --streamed-synthetic FANOUTS``: M_H^dp on a regular synthetic hierarchy
generated, solved and written one top-level region at a time
(:func:`privopt.census.streamed.m_h_dp_streamed`), so that no process holds the hierarchy: how
large a release a machine or a Dask cluster can do, from the command line.

The noise is drawn from the seed (the same release on any number of workers), so the output is
a capacity run on synthetic data, marked SEEDED, not a private release. The output folder holds
``root.npy`` (N,) and ``subtree_<i>.npy`` (R_i, N) released counts, ``report.md`` and
``census_l1_per_level.png``; the spilled measurements are removed once the release is checked.
"""

from __future__ import annotations

import argparse
import shutil
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from privopt._cli_support import (
    SUMMARY_KEYS,
    emit_summary,
    executor_from_args,
    reserve_outputs,
)
from privopt.census.hierarchy import MAX_COUNT
from privopt.census.release import PROTECTS
from privopt.census.report import checks_text, l1_per_level_figure, ledger_table
from privopt.census.streamed import RegularSyntheticSource, StreamedRelease, m_h_dp_streamed
from privopt.errors import InvalidInput
from privopt.release import Guarantee
from privopt.report import (
    GLOSSARY_NOTE,
    Report,
    Section,
    close_figure,
    format_number,
    markdown_table,
    save_figure,
)

__all__ = ["parse_fanouts", "run_streamed"]

#: Households per leaf when ``--groups`` is not given (the scale benches' hierarchies).
GROUPS_PER_LEAF = 100


def parse_fanouts(text: str) -> tuple[int, ...]:
    """``"100,1000,1000"`` → (100, 1000, 1000): children per region of each level below the
    root, top first; each a whole number ≥ 1."""
    parts = [p.strip() for p in text.split(",")]
    out = []
    for p in parts:
        if not p.isdigit() or int(p) < 1:
            raise InvalidInput(
                f"--streamed-synthetic: {p!r} is not a fan-out (give whole numbers ≥ 1 "
                "separated by commas, the top level first, e.g. 100,1000,1000)"
            )
        out.append(int(p))
    return tuple(out)


def run_streamed(args: argparse.Namespace) -> int:
    """Run the streamed release the flags describe; print its summary; 0 when every check of
    the released counts holds."""
    fanouts = parse_fanouts(args.streamed_synthetic)
    n_leaves = int(np.prod(fanouts, dtype=object))
    groups = args.groups if args.groups is not None else GROUPS_PER_LEAF * n_leaves
    if groups > MAX_COUNT:
        raise InvalidInput(
            f"--streamed-synthetic: {groups:,} households is more than the counts hold (2^61); "
            "give fewer leaves or --groups"
        )
    source = RegularSyntheticSource(
        fanouts, groups, N=args.max_size or 20, seed=0 if args.seed is None else args.seed
    )
    with reserve_outputs(args) as outputs:
        out = outputs.add(args.out)
        # The tasks write into the staging folder, which is published (renamed) when the
        # release is checked: an interrupted run leaves nothing at --out.
        with outputs.publish() as staged, executor_from_args(args) as executor:
            folder = staged[out]
            # no option: the tasks run one after another in this process
            with ThreadPoolExecutor(1) if executor is None else nullcontext(executor) as where:
                rel = m_h_dp_streamed(source, args.epsilon, where, folder)
            shutil.rmtree(folder / "measurements")
            checks = rel.check()
            _write_report(folder, source, rel, checks)
    ok = all(checks.values())
    emit_summary(_summary(out, source, rel, checks, ok))
    return 0 if ok else 1


def _guarantee(epsilon: float) -> Guarantee:
    return Guarantee("epsilon-DP", {"epsilon": float(epsilon)}, PROTECTS, seeded=True)


def _summary(
    out: Path, source: RegularSyntheticSource, rel: StreamedRelease, checks: dict, ok: bool
) -> dict[str, Any]:
    """The summary line: the keys every subcommand's starts with, then this run's own."""
    g = _guarantee(_epsilon(rel))
    shared = {
        "command": "census",
        "mechanism": "M_H^dp",
        "guarantee": g.to_json(),
        "guarantee_text": g.describe(),
        "status": rel.info["status"],
        "relative_gap": rel.info["relative_gap"],
        "out": str(out),
        # the folder's own marker (a dot file) is privopt's bookkeeping, not a result
        "files": sorted(str(p) for p in out.iterdir() if p.is_file() and p.name[0] != "."),
        "time_s": rel.timings["total"],
    }
    head = {key: shared[key] for key in SUMMARY_KEYS}
    timings = rel.timings
    return {
        **head,
        "streamed": True,
        "fanouts": list(source.fanouts),
        "subtrees": source.fanouts[0],
        "regions": rel.info["regions"],
        "G": rel.info["G"],
        "N": source.N,
        "cost": rel.info["cost"],
        "certified": rel.info["certified"],
        "rounds": rel.info["rounds"],
        "l1_per_level": rel.l1_per_level.tolist(),
        "fan_out_s": timings["fan_out_s"],
        "driver_s": timings["driver_s"],
        "checks": checks,
        "ok": ok,
    }


def _epsilon(rel: StreamedRelease) -> float:
    """The ε the ledger charged (ε/L per level, summed)."""
    return float(sum(entry.epsilon for entry in rel.ledger))


def _write_report(
    folder: Path, source: RegularSyntheticSource, rel: StreamedRelease, checks: dict
) -> None:
    """report.md and the plot of the L1 error per level, into ``folder``."""
    fig = l1_per_level_figure(
        [{"ok": True, "l1": rel.l1_per_level, "mechanism": "M_H^dp", "epsilon": _epsilon(rel)}],
        ["root", *(f"level {lev}" for lev in range(1, source.n_levels))],
    )
    save_figure(fig, folder / "census_l1_per_level.png", dpi=110)
    close_figure(fig)
    t = rel.timings
    up, down = np.asarray(t["up_task_s"]), np.asarray(t["down_task_s"])
    tasks = markdown_table(
        ["pass", "tasks", "mean s", "longest s", "sum s"],
        [
            [name, str(x.size), *(format_number(v, 3) for v in (x.mean(), x.max(), x.sum()))]
            for name, x in (("bottom-up", up), ("top-down", down))
            if x.size
        ],
    )
    fan = " × ".join(str(f) for f in source.fanouts)
    body = (
        f"A regular synthetic hierarchy ({fan} regions below the root: {rel.info['regions']:,} "
        f"regions, {source.n_leaves:,} leaves), {rel.info['G']:,} households of sizes 1 to "
        f"{source.N}, generated, solved and written one top-level region at a time.\n\n"
        f"Guarantee: {_guarantee(_epsilon(rel)).describe()}.\n\n"
        f"Certified exact (M_H^dp): the released counts are the closest consistent "
        f"non-negative integers to the measurements (cost {rel.info['cost']:,}) after "
        f"{rel.info['rounds']} round(s).\n\n"
        + checks_text(checks)
        + f"\n\nRuntime: {format_number(t['total'], 3)} s, of which "
        f"{format_number(t['fan_out_s'], 3)} s waiting for the tasks and "
        f"{format_number(t['driver_s'], 3)} s in this process.\n\n"
        f"Each task's own seconds:\n\n{tasks}\n\n"
        "**Error against the generated truth** (evaluation of a synthetic run), summed over "
        "regions and sizes: "
        + ", ".join(f"level {lev}: {format_number(v, 4)}" for lev, v in enumerate(rel.l1_per_level))
        + ".\n\n**Privacy spent (the ledger).** Each line is one noisy measurement:\n\n"
        + ledger_table(rel.ledger)
        + "\n"
        + GLOSSARY_NOTE
        + "\n"
    )
    report = Report("privopt census (streamed)")
    report.add(
        Section(
            "Streamed M_H^dp on synthetic data (SEEDED: a capacity run, not a private release)",
            body,
            ["census_l1_per_level.png"],
        )
    )
    report.write(folder)
