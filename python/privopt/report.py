"""Small report writer shared by the demo and the mechanism CLIs: Markdown text plus PNG plots.

A :class:`Report` collects sections (a title, Markdown body, figure files) and writes
``report.md`` into an output directory. Plots are written by the mechanisms themselves with
matplotlib's non-interactive Agg backend (see :func:`new_figure`) and saved with
:func:`save_figure`. Every file is written atomically (:mod:`privopt._atomic`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from privopt import _optional
from privopt._atomic import atomic_file, write_text_atomic
from privopt.errors import InvalidInput

__all__ = ["Section", "Report", "new_figure", "save_figure", "close_figure", "markdown_table"]


def _check_text(name: str, value: Any, *, empty: bool = False) -> None:
    if not isinstance(value, str) or not (empty or value.strip()):
        raise InvalidInput(f"{name} must be a{'' if empty else ' non-empty'} string, got {value!r}")


@dataclass
class Section:
    """One part of a report: a heading, Markdown text, and figures (paths relative to it)."""

    title: str
    body: str = ""
    figures: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        _check_text("title", self.title)
        _check_text("body", self.body, empty=True)
        # A lone string would be read as one figure per character.
        if isinstance(self.figures, (str, Path)) or not all(
            isinstance(f, (str, Path)) for f in self.figures
        ):
            raise InvalidInput(f"figures must be a list of file names, got {self.figures!r}")


@dataclass
class Report:
    """A Markdown report made of sections; :meth:`write` saves it as ``<out_dir>/report.md``."""

    title: str
    sections: list[Section] = field(default_factory=list)

    def __post_init__(self) -> None:
        _check_text("title", self.title)
        for i, section in enumerate(self.sections):
            if not isinstance(section, Section):
                raise InvalidInput(f"sections[{i}] must be a Section, got {section!r}")

    def add(self, section: Section) -> None:
        """Append a section."""
        if not isinstance(section, Section):
            raise InvalidInput(f"section must be a Section, got {section!r}")
        self.sections.append(section)

    def to_markdown(self) -> str:
        """The report as Markdown: a title, then each section in order."""
        parts = [f"# {self.title}\n"]
        for s in self.sections:
            parts.append(f"## {s.title}\n")
            if s.body:
                parts.append(s.body.rstrip() + "\n")
            for fig in s.figures:
                parts.append(f"![{Path(fig).stem}]({fig})\n")
        return "\n".join(parts)

    def write(self, out_dir: str | Path) -> Path:
        """Write ``<out_dir>/report.md`` atomically (the directory is created if missing)."""
        out = Path(out_dir)
        if os.path.lexists(out) and not out.is_dir():
            raise InvalidInput(f"out_dir {str(out)!r} exists and is not a directory")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as err:  # a folder above it is a file, or not writable
            raise InvalidInput(f"out_dir {str(out)!r} cannot be created: {err.strerror}") from None
        return write_text_atomic(out / "report.md", self.to_markdown())


def new_figure(*args, **kwargs):
    """``matplotlib.pyplot.subplots`` on the Agg backend (no display needed); returns (fig, ax)."""
    return _optional.pyplot().subplots(*args, **kwargs)


def axes_or_new(ax: Any, figsize: tuple[float, float]) -> Any:
    """``ax`` when it is a matplotlib Axes, a new figure's Axes of ``figsize`` (inches) when it
    is None; anything else raises InvalidInput naming ``ax`` (for the ``plot_*(ax=None)``
    methods, which would otherwise fail deep inside matplotlib)."""
    if ax is None:
        return new_figure(figsize=figsize)[1]
    if not _optional.is_axes(ax):
        raise InvalidInput(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    return ax


def close_figure(fig: Any) -> None:
    """Free ``fig`` (every figure with ``"all"``) once it is saved: pyplot keeps each figure it
    made until it is closed.

    Raises
    ------
    InvalidInput
        ``fig`` is neither a matplotlib Figure nor ``"all"``.
    """
    plt = _optional.pyplot()
    if not (isinstance(fig, plt.Figure) or (isinstance(fig, str) and fig == "all")):
        raise InvalidInput(f"fig must be a matplotlib Figure or 'all', got {type(fig).__name__}")
    plt.close(fig)


def save_figure(fig: Any, path: str | Path, **savefig: Any) -> Path:
    """``fig.savefig(path, **savefig)``, atomically: a reader never sees a half-written image.

    The format follows ``path``'s suffix (e.g. ``.png``).
    """
    target = Path(path)
    fmt = target.suffix.lstrip(".").lower()
    if fmt not in fig.canvas.get_supported_filetypes():
        raise InvalidInput(
            f"path {str(target)!r}: the figure format {fmt!r} is not supported; use one of "
            f"{sorted(fig.canvas.get_supported_filetypes())}"
        )
    with atomic_file(target) as tmp:
        fig.savefig(tmp, format=fmt, **savefig)
    return target


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table; floats are printed with 6 significant digits."""

    def fmt(v: object) -> str:
        return f"{v:.6g}" if isinstance(v, float) else str(v)

    for i, row in enumerate(rows):
        if len(row) != len(header):
            raise InvalidInput(f"rows[{i}] has {len(row)} cells, the header {len(header)}")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"
