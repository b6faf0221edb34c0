"""Small report writer shared by the demo and the mechanism CLIs: Markdown text plus PNG plots.

A :class:`Report` collects sections (a title, Markdown body, figure files) and writes
``report.md`` into an output directory. Plots are written by the mechanisms themselves with
matplotlib's non-interactive Agg backend (see :func:`new_figure`) and saved with
:func:`save_figure`. Every file is written atomically (:mod:`privopt._atomic`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from privopt import _optional
from privopt._atomic import atomic_file, write_text_atomic
from privopt._validation import check_int, check_real
from privopt.errors import InvalidInput

__all__ = [
    "Section",
    "Report",
    "new_figure",
    "save_figure",
    "close_figure",
    "markdown_table",
    "format_number",
    "release_header",
    "status_text",
    "GLOSSARY_NOTE",
]

#: The line a report ends with, pointing to where its notation is defined.
GLOSSARY_NOTE = (
    "_Terms and symbols used here are defined in the glossary of the privopt documentation "
    "(docs/glossary.md)._"
)


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


def format_number(value: Any, digits: int = 4) -> str:
    """A number as a reader wants it: ``digits`` significant digits, no trailing noise.

    Integers are printed in full (groups of three digits separated by a space from
    10 000 on); floats with ``digits`` significant digits (``0.000313014`` -> ``0.000313``,
    ``25.0317`` -> ``25.03``); NaN as ``n/a`` and infinities as ``∞``/``-∞``. Anything that is
    not a number is returned as ``str(value)``.

    Examples
    --------
    >>> format_number(0.000313014), format_number(25.031734), format_number(12345)
    ('0.000313', '25.03', '12 345')
    >>> format_number(float("nan")), format_number(float("inf")), format_number(2.0)
    ('n/a', '∞', '2')
    """
    digits = check_int("digits", digits, minimum=1, maximum=17)
    numeric = isinstance(value, (int, float)) or _is_numpy_number(value)
    if isinstance(value, bool) or not numeric:
        return str(value)
    if _is_integral_type(value):
        n = int(value)
        return f"{n:,}".replace(",", " ") if abs(n) >= 10_000 else str(n)
    x = float(value)
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    return f"{x:.{digits}g}"


def _is_numpy_number(value: Any) -> bool:
    kind = getattr(getattr(value, "dtype", None), "kind", "")
    return getattr(value, "ndim", None) == 0 and kind in "iuf" and kind != ""


def _is_integral_type(value: Any) -> bool:
    if isinstance(value, int):
        return True
    return getattr(getattr(value, "dtype", None), "kind", "") in ("i", "u")


def _table_cell(value: Any) -> str:
    """One cell: numbers through :func:`format_number`; a ``|`` (a size such as ``|E|``) is
    escaped so that it does not end the cell, and line breaks become spaces."""
    text = format_number(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table; numbers go through :func:`format_number` and every
    cell is escaped, so each row renders with the header's number of cells and no value is
    lost."""
    for i, row in enumerate(rows):
        if len(row) != len(header):
            raise InvalidInput(f"rows[{i}] has {len(row)} cells, the header {len(header)}")
    lines = ["| " + " | ".join(_table_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_table_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


#: The certification statuses (docs/certification.md) in plain words.
STATUS_WORDS = {
    "optimal": "certified optimal",
    "feasible": "valid, but not proven optimal",
    "time_limit": "stopped by its time or iteration limit before optimality was proven",
    "gap_not_closed": "finished without proving the requested gap to the optimum",
    "restricted": "optimal for a restricted model; the gap to the full model is stated",
}


def status_text(status: str | None, relative_gap: float | None = None) -> str:
    """A certification status in plain words, with the proven relative gap when there is one.

    Examples
    --------
    >>> status_text("optimal", 0.0)
    'certified optimal (optimal: the loss is proven within 0 % of the best possible)'
    >>> status_text(None)
    'nothing was optimized, so there is no optimality claim'
    """
    if status is not None and not isinstance(status, str):
        raise InvalidInput(f"status must be a string or None, got {status!r}")
    if relative_gap is not None:
        relative_gap = check_real("relative_gap", relative_gap, allow_inf=True)
        if relative_gap < 0:
            raise InvalidInput(f"relative_gap must be >= 0, got {relative_gap!r}")
    if status is None:
        text = "nothing was optimized, so there is no optimality claim"
    else:
        text = f"{STATUS_WORDS.get(status, status)}"
        if status in STATUS_WORDS:
            text += f" ({status}"
    if relative_gap is not None:
        gap = float(relative_gap)
        within = (
            "no bound was proven"
            if math.isinf(gap)
            else (f"the loss is proven within {format_number(100 * gap, 3)} % of the best possible")
        )
        text += f": {within})" if status in STATUS_WORDS else f" ({within})"
    elif status in STATUS_WORDS:
        text += ")"
    return text


def release_header(released: str, guarantee: str, status: str) -> str:
    """The opening of every report: what was released, under which guarantee, with what status.

    Parameters
    ----------
    released : one line, in plain words: what was released.
    guarantee : the privacy guarantee in plain words, with its units.
    status : whether the result is certified optimal, and how close it is proven to be.

    Returns
    -------
    Markdown: three bold-labelled paragraphs.
    """
    for name, text in (("released", released), ("guarantee", guarantee), ("status", status)):
        _check_text(name, text)
    return f"**Released:** {released}\n\n**Guarantee:** {guarantee}\n\n**Status:** {status}\n\n"
