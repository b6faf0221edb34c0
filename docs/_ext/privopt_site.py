"""Sphinx extension of the privopt site: page discovery, docstring hygiene, a warning summary.

Page discovery (:mod:`site_pages`): the toctrees of the user guide, the concepts and the API
reference list the pages found on disk, so a new page needs no other edit.

Docstring hygiene (:mod:`docstring_hygiene`): substitution-like bars (``|E|``) are escaped and
singular section titles ("Example") renamed before numpydoc parses a docstring. Members that
privopt does not define (scikit-learn's generated ``set_*_request`` methods) and the type
docstrings that undocumented constants inherit are left out.

Warning summary: with ``-W`` one warning fails the build. At the end every warning is listed again,
grouped by the docstring or page it comes from, with a hint on how to fix it. numpydoc's own
complaints (an unknown section such as "Example") are turned into Sphinx warnings for this.
"""

from __future__ import annotations

import inspect
import logging
import re
import sys
import warnings
from collections import defaultdict
from pathlib import Path
from typing import Any

from docstring_hygiene import ALIASED_SECTION, escape_docstring_bars, normalize_section_titles
from site_pages import PLACEHOLDERS
from sphinx.application import Sphinx
from sphinx.util import logging as sphinx_logging
from sphinx.util.docstrings import prepare_docstring

logger = sphinx_logging.getLogger(__name__)


# --- page discovery -------------------------------------------------------------------------


def _fill_toctrees(app: Sphinx, docname: str, source: list[str]) -> None:
    if docname in PLACEHOLDERS:
        token, lister, indent = PLACEHOLDERS[docname]
        entries = ("\n" + indent).join(lister(Path(app.srcdir)))
        source[0] = source[0].replace(token, entries)


# --- docstring hygiene ----------------------------------------------------------------------


def _is_type_docstring(obj: Any, lines: list[str]) -> bool:
    """The lines are the docstring of ``obj``'s type, which ``obj`` (a constant) inherits."""
    if inspect.isclass(obj) or inspect.isroutine(obj) or inspect.ismodule(obj):
        return False
    own = getattr(obj, "__doc__", None)  # for an instance, its type's (a C type's may differ)
    if not own:
        return False
    return [line for line in lines if line.strip()][:1] == [
        line for line in prepare_docstring(own) if line.strip()
    ][:1]


def _clean_docstring(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]):
    if what in {"data", "attribute"} and _is_type_docstring(obj, lines):
        lines.clear()  # an undocumented constant: not the docstring of its type
        return
    normalize_section_titles(lines)
    escape_docstring_bars(lines)


def _skip_foreign_member(app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any):
    """Leave out members of privopt classes that privopt does not define."""
    if what != "class" or skip:
        return None
    module = getattr(obj, "__module__", None) or getattr(
        getattr(obj, "fget", None), "__module__", None
    )
    if isinstance(module, str) and not module.startswith("privopt"):
        return True
    return None


# --- warning summary ------------------------------------------------------------------------

_DOCSTRING_LOCATION = re.compile(
    r"^(?P<file>.*?):docstring of (?P<object>[\w.]+)(?::(?P<line>\d+))?"
)


class _WarningCollector(logging.Handler):
    """Keeps every warning the build reports (after Sphinx's own suppression), once."""

    def __init__(self, app: Sphinx) -> None:
        super().__init__(level=logging.WARNING)
        self.addFilter(sphinx_logging.WarningSuppressor(app))
        self.addFilter(sphinx_logging.WarningLogRecordTranslator(app))
        self.records: list[tuple[str, str]] = []
        self._seen: set[int] = set()

    def emit(self, record: logging.LogRecord) -> None:
        # Sphinx holds some warnings back and re-sends them: count each record once.
        if id(record) in self._seen:
            return
        self._seen.add(id(record))
        message = record.msg % record.args if record.args else str(record.msg)
        self.records.append((str(getattr(record, "location", "") or ""), message))


def _origin(location: str) -> str:
    match = _DOCSTRING_LOCATION.match(location)
    if match:
        line = f", docstring line {match['line']}" if match["line"] else ""
        return f"docstring of {match['object']} ({match['file']}{line})"
    return location or "(no location)"


def summarize(records: list[tuple[str, str]]) -> str:
    """The end-of-build summary: warnings grouped by docstring or page, then how to fix them."""
    grouped: dict[str, list[str]] = defaultdict(list)
    for location, message in records:
        grouped[_origin(location)].append(message.splitlines()[0] if message else "")
    lines = [f"privopt docs: {len(records)} warning(s); with -W each one fails the build:"]
    for origin in sorted(grouped):
        lines.append(f"  {origin}")
        lines.extend(f"      {message}" for message in grouped[origin])
    lines.append(
        "How to fix: a 'docstring of X' entry is in X's docstring. numpydoc sections are "
        "Parameters, Returns, Yields, Raises, Warns, See Also, Notes, References, Examples "
        "(plural), each underlined with dashes; leave a blank line before a list or a literal "
        "block; close every ``literal``. Then run `make -C docs html` again."
    )
    return "\n".join(lines)


def _forward_numpydoc_warnings() -> Any:
    """Route numpydoc's Python warnings (they name the docstring) into Sphinx warnings."""
    original = warnings.showwarning

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if "numpydoc" in str(filename):
            if not ALIASED_SECTION.match(str(message)):  # those are renamed before rendering
                logger.warning("numpydoc: %s", message, type="numpydoc")
        else:
            original(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning
    return original


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("source-read", _fill_toctrees)
    app.connect("autodoc-process-docstring", _clean_docstring, priority=400)  # before numpydoc
    app.connect("autodoc-skip-member", _skip_foreign_member)
    collector = _WarningCollector(app)
    logging.getLogger(sphinx_logging.NAMESPACE).addHandler(collector)
    original_showwarning = _forward_numpydoc_warnings()

    def report(app: Sphinx, exception: BaseException | None) -> None:
        warnings.showwarning = original_showwarning
        if collector.records:
            print(summarize(collector.records), file=sys.stderr)

    app.connect("build-finished", report)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
