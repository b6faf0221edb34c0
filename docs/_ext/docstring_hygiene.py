"""Docstring fixes applied before numpydoc parses a docstring (no Sphinx import: tested alone).

Docstrings are written to read well in a terminal, where ``|E|`` is a set's size, not a
reStructuredText substitution, and where "Example" reads as well as numpydoc's "Examples". The
site escapes such bars and renames such section titles instead of failing the build on them.
"""

from __future__ import annotations

import re

# |x| with no space just inside the bars: what docutils would read as a substitution reference.
_BARS = re.compile(r"(?<![\\\w|])\|(?=\S)([^|`]*?\S)\|(?![\w|])")
# Inline literals and interpreted text (roles, math), which keep their bars as written.
_LITERAL_SPANS = re.compile(r"(``.+?``|`[^`]*`)")


def escape_bars(line: str) -> str:
    """``|E|`` -> ``\\|E\\|`` outside inline literals and roles (a size, not a substitution)."""
    parts = _LITERAL_SPANS.split(line)
    for i in range(0, len(parts), 2):  # even indices: text outside literal spans
        parts[i] = _BARS.sub(r"\\|\1\\|", parts[i])
    return "".join(parts)


def _is_literal_line(stripped: str) -> bool:
    # Doctest lines, and the rows of grid tables and line blocks ("| " first), keep their bars.
    return stripped.startswith((">>>", "...", "| ", "+-", "+=")) or stripped == "|"


def escape_docstring_bars(lines: list[str]) -> None:
    """Escape substitution-like bars in place, skipping literal blocks (after ``::``)."""
    literal_indent: int | None = None
    for i, line in enumerate(lines):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if literal_indent is not None:
            if not stripped or indent > literal_indent:
                continue
            literal_indent = None
        if not _is_literal_line(stripped):
            lines[i] = escape_bars(line)
        if stripped.endswith("::"):
            literal_indent = indent


#: Singular section titles that numpydoc does not know, and the title it expects.
_SECTION_ALIASES = {
    "Example": "Examples",
    "Parameter": "Parameters",
    "Return": "Returns",
    "Raise": "Raises",
    "Note": "Notes",
    "Reference": "References",
    "Attribute": "Attributes",
}


ALIASED_SECTION = re.compile(rf"Unknown section ({'|'.join(_SECTION_ALIASES)})\b")


def normalize_section_titles(lines: list[str]) -> None:
    """Rename singular section titles ("Example" -> "Examples"), which numpydoc would drop."""
    for i in range(len(lines) - 1):
        title, underline = lines[i].strip(), lines[i + 1].strip()
        if title in _SECTION_ALIASES and underline and set(underline) == {"-"}:
            plural = _SECTION_ALIASES[title]
            lines[i] = lines[i].replace(title, plural)
            lines[i + 1] = lines[i + 1].replace(underline, "-" * len(plural))
