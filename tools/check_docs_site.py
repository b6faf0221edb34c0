"""Check a built documentation site (``docs/_build/html``) the way its readers meet it.

- Offline: no page loads a script, style sheet or font from another host (no CDN), and math is
  rendered by the MathJax copy inside the site.
- Options keep their two hyphens: no "–out" (an en dash that smart quotes made of ``--out``).
- No page cites material readers cannot see: internal spec numbers, their section marks, issue
  numbers or the project's spec folder (:data:`INTERNAL_REFERENCES`).

Usage: ``python tools/check_docs_site.py [docs/_build/html]``; prints one line per problem and
exits 1 when there is any, else prints a one-line summary and exits 0.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

#: Text that cites what a reader of the site cannot see.
INTERNAL_REFERENCES = re.compile(
    r"\bspec \d{3}\b|\bspecs?/\d{3}_|shared/specs|(?<!HiGHS )\b[Ii]ssue #?\d+\b|§\s?\d|\bspec §"
)
#: A script, style sheet or font loaded from another host.
REMOTE_ASSET = re.compile(
    r"<(?:script|link)\b[^>]*\b(?:src|href)=\"(?:https?:)?//[^\"]+\"[^>]*>", re.IGNORECASE
)
#: An option whose two hyphens became an en dash (a dash between two words, as in
#: "privacy–utility", is punctuation, not an option).
DASHED_OPTION = re.compile(r"(?<!\w)–[a-z][a-z-]+\b")

_TAGS = re.compile(r"<[^>]+>")
_SKIPPED = re.compile(r"<(script|style)\b.*?</\1>", re.DOTALL | re.IGNORECASE)


def page_text(html: str) -> str:
    """The visible text of a page: scripts, styles and tags removed."""
    return _TAGS.sub(" ", _SKIPPED.sub(" ", html))


def page_problems(name: str, html: str) -> list[str]:
    """The problems of one page, each as ``"<name>: <what>"``."""
    problems = [f"{name}: loads {m.group(0)[:120]}" for m in REMOTE_ASSET.finditer(html)]
    text = page_text(html)
    problems += [
        f"{name}: option with an en dash {m.group(0)!r}" for m in DASHED_OPTION.finditer(text)
    ]
    for match in INTERNAL_REFERENCES.finditer(text):
        start = max(0, match.start() - 40)
        context = " ".join(text[start : match.end() + 40].split())
        problems.append(f"{name}: internal reference {match.group(0)!r} in '…{context}…'")
    return problems


def site_problems(root: Path) -> list[str]:
    """Every problem of the site under ``root`` (the HTML build's folder)."""
    problems: list[str] = []
    pages = sorted(root.rglob("*.html"))
    if not pages:
        return [f"{root}: no HTML pages (build the site first: make -C docs html)"]
    for page in pages:
        if "_sources" in page.parts or "_modules" in page.parts:
            continue  # page sources and highlighted code: the code's own comments
        problems += page_problems(str(page.relative_to(root)), page.read_text(errors="replace"))
    uses_math = any('class="math' in p.read_text(errors="replace") for p in pages)
    if uses_math and not (root / "_static" / "mathjax" / "tex-chtml.js").is_file():
        problems.append(f"{root}: pages show math but _static/mathjax/tex-chtml.js is missing")
    return problems


def main(argv: list[str]) -> int:
    root = Path(argv[0] if argv else "docs/_build/html")
    problems = site_problems(root)
    for line in problems:
        print(line)
    if problems:
        return 1
    print(f"check_docs_site: {root}: offline, options intact, no internal references")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
