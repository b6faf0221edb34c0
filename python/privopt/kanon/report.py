"""The k-anonymity report: a result's summary, its loss per attribute and its class sizes."""

from __future__ import annotations

from pathlib import Path

from privopt.kanon.api import KAnonResult
from privopt.report import Report, Section, close_figure, markdown_table, save_figure

__all__ = ["write_report", "report_section"]


def write_report(res: KAnonResult, out_dir: Path, title: str = "k-anonymity") -> Path:
    """Write ``report.md`` (summary, per-attribute loss, class sizes) and the histogram PNG."""
    report = Report(title)
    report.add(report_section(res, Path(out_dir), title="Result"))
    return report.write(out_dir)


def report_section(
    res: KAnonResult, out_dir: Path, title: str, stem: str = "kanon_class_sizes"
) -> Section:
    """A :class:`privopt.report.Section` describing one result, with its histogram saved."""
    out_dir.mkdir(parents=True, exist_ok=True)
    ax = res.plot()
    fig_name = f"{stem}.png"
    ax.figure.tight_layout()
    save_figure(ax.figure, out_dir / fig_name, dpi=110)
    close_figure(ax.figure)
    lt = res.loss_table()
    rows = [[str(a), float(r.weight), float(r.objective), float(r.ncp)] for a, r in lt.iterrows()]
    body = (
        res.report().body
        + "\n\nVerified k-anonymous. Information loss per attribute (objective: eq. 34; "
        "NCP: normalized certainty penalty):\n\n"
        + markdown_table(["attribute", "weight", "objective share", "NCP sum"], rows)
    )
    return Section(title=title, body=body, figures=[fig_name])
