"""Check a built documentation site (``docs/_build/html``) the way its readers meet it.

- Offline: no page loads a script, style sheet or font from another host (no CDN), and math is
  rendered by the MathJax copy inside the site.
- Options keep their two hyphens: no "–out" (an en dash that smart quotes made of ``--out``).
- No page cites material readers cannot see: internal spec numbers, their section marks, issue
  numbers or the project's spec folder (:data:`INTERNAL_REFERENCES`).
- Formulas are math, not code: on the user-guide pages no inline code reads as a formula
  (:func:`looks_like_formula`), and no text shows TeX that was never rendered (``e^{...}``,
  ``$...$``). The API pages (docstrings) are not held to this.

The formula test also runs over the Markdown sources (:func:`markdown_code_spans`), so the test
suite catches a formula written as code without building the site.

Usage: ``python tools/check_docs_site.py [docs/_build/html]``; prints one line per problem and
exits 1 when there is any, else prints a one-line summary and exits 0.
"""

from __future__ import annotations

import ast
import re
import sys
from html import unescape
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

#: Signs only a formula uses: no Python expression, option or path of privopt's contains them.
#: A caret counts when it joins two terms without spaces (``e^{εd}``, ``2^E``); Python's
#: exclusive or is written with spaces.
FORMULA_SIGNS = re.compile(r"[·×≤≥‖Σ∑−⌈⌉⌊⌋∝∈∉∪∩⊆√∞≈≠ᵀ⁺]|\^\{|_\{|(?<=[\w)])\^(?=[\w({])")
#: Greek letters and ℓ: a formula's symbols, unless they name an argument of a Python call.
GREEK = re.compile(r"[\u0370-\u03ffℓ]")
#: Code that carries formula signs on purpose: the census methods' names in the paper's
#: notation, which the command line still accepts as values (``--method M_c^dp``).
CODE_WITH_FORMULA_SIGNS = frozenset({"M_H^dp", "M_H^r", "M_c^dp", "M_c^r", "M_c^ch"})
#: Inline code that is a command or an option: what a user types, whatever it contains.
_COMMAND_OR_OPTION = re.compile(r"^(?:--?[A-Za-z]|privopt |python )")
#: Pages whose formulas are not checked: the API reference (docstrings) and highlighted code.
_UNCHECKED_FOR_FORMULAS = ("api", "_modules", "_sources")

#: Visible text that shows TeX instead of a formula: a braced sub- or superscript, a TeX
#: command, or a ``$...$`` that MyST did not turn into math.
RAW_TEX = re.compile(
    r"[_^]\{|\\(?:varepsilon|frac|sum|le|ge|lvert|mathrm|cdot)\b|(?<![\w$])\$[^\s$][^$]*\$(?!\w)"
)

_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
_FENCE = re.compile(r"^\s*(```|~~~)")
_HTML_CODE = re.compile(r"<code\b[^>]*>(.*?)</code>", re.DOTALL)
#: Code, scripts and rendered math: TeX there is expected, so the raw-TeX check skips them.
_NOT_PROSE = re.compile(
    r"<(pre|code|script|style)\b.*?</\1>|<(?:span|div) class=\"math[^\"]*\">.*?</(?:span|div)>",
    re.DOTALL,
)
_TAGS = re.compile(r"<[^>]+>")
_SKIPPED = re.compile(r"<(script|style)\b.*?</\1>", re.DOTALL | re.IGNORECASE)


def page_text(html: str) -> str:
    """The visible text of a page: scripts, styles and tags removed."""
    return _TAGS.sub(" ", _SKIPPED.sub(" ", html))


def is_python_code(code: str) -> bool:
    """Whether ``code`` parses as a Python expression that is more than a bare name.

    Documentation shortens calls (``rng=``, ``…``); those are read as ``rng=...``. A bare name
    (``π_i``) is a symbol, not code: the package names nothing in Greek.
    """
    normalised = re.sub(r"=\s*(?=[,)])", "=...", code.replace("…", "..."))
    try:
        tree = ast.parse(normalised, mode="eval")
    except SyntaxError:
        return False
    return not isinstance(tree.body, ast.Name)


def looks_like_formula(code: str) -> bool:
    """Whether inline code ``code`` reads as a formula that belongs in math (``$...$``).

    A formula sign (:data:`FORMULA_SIGNS`) makes it one; so do Greek letters outside a Python
    call or attribute (``h.level_slice(ℓ)`` is code, ``d_ij ≤ η`` and ``π_i`` are formulas).
    Commands, options and :data:`CODE_WITH_FORMULA_SIGNS` stay code.
    """
    code = code.strip()
    if _COMMAND_OR_OPTION.match(code) or code in CODE_WITH_FORMULA_SIGNS:
        return False
    if FORMULA_SIGNS.search(code):
        return True
    return bool(GREEK.search(code)) and not is_python_code(code)


def markdown_code_spans(text: str) -> list[tuple[int, str]]:
    """(line number, content) of every inline code span of a Markdown page, fences skipped."""
    prose: list[str] = []
    inside = False
    for line in text.splitlines():
        if _FENCE.match(line):
            inside = not inside
            prose.append("")
        else:
            prose.append("" if inside else line)
    joined = "\n".join(prose)
    return [
        (joined.count("\n", 0, m.start()) + 1, m.group(2).strip())
        for m in _CODE_SPAN.finditer(joined)
    ]


def formula_problems(name: str, page_html: str) -> list[str]:
    """Formulas written as inline code, and TeX shown as text, on one built page."""
    codes = (unescape(_TAGS.sub("", m.group(1))) for m in _HTML_CODE.finditer(page_html))
    problems = [
        f"{name}: formula written as code {code!r} (write it as $...$ math)"
        for code in codes
        if looks_like_formula(code)
    ]
    visible = unescape(page_text(_NOT_PROSE.sub(" ", page_html)))
    problems += [
        f"{name}: TeX shown as text {m.group(0)[:60]!r} (write it as $...$ math)"
        for m in RAW_TEX.finditer(visible)
    ]
    return problems


def page_problems(name: str, html: str) -> list[str]:
    """The problems of one page, each as ``"<name>: <what>"``."""
    problems = [f"{name}: loads {m.group(0)[:120]}" for m in REMOTE_ASSET.finditer(html)]
    if not name.startswith(_UNCHECKED_FOR_FORMULAS):
        problems += formula_problems(name, html)
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
    print(
        f"check_docs_site: {root}: offline, options intact, no internal references, "
        "formulas rendered as math"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
