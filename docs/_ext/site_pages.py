"""Which pages the privopt site lists, found on disk (no Sphinx import: tests use it too).

Every ``docs/*.md`` page that is not one of the site's own pages is a user-guide page, and every
``docs/api/*.rst`` page is an API page, so a new mechanism's pages (``docs/geo.md``,
``docs/api/geo.rst``) join the site without editing any other file.
"""

from __future__ import annotations

from pathlib import Path

#: Pages of the site itself; every other top-level page is a user-guide page.
SITE_PAGES = {
    *("index", "getting_started", "choosing", "user_guide", "concepts", "cli", "cpp"),
    *("performance", "glossary"),
}
#: Concept pages, in this order, listed under "Concepts" when present.
CONCEPT_PAGES = ("architecture", "certification", "errors")
#: Preferred order of the user-guide pages: shared machinery first, then the mechanisms;
#: pages not named here follow in alphabetical order.
GUIDE_ORDER = ("dp", "lp", "mdp", "geo", "kanon", "census", "cluster")
#: Preferred order of the API pages (``docs/api/<module>.rst``), the same way.
API_ORDER = (
    *("privopt", "dp", "lp", "graphs", "geometry", "certify"),
    *("mdp", "geo", "kanon", "census", "cluster", "errors", "cli", "demo", "report"),
)


def pages_in(folder: Path) -> set[str]:
    """Names of the Markdown and reST pages directly in ``folder``."""
    return {p.stem for p in folder.iterdir() if p.suffix in {".md", ".rst"}}


def ordered(pages: set[str], order: tuple[str, ...]) -> list[str]:
    """``pages`` with those named in ``order`` first, in that order, then the rest sorted."""
    known = [name for name in order if name in pages]
    return known + sorted(pages - set(known))


def guide_pages(srcdir: Path) -> list[str]:
    """The user-guide pages: every top-level page that is neither a site nor a concept page."""
    return ordered(pages_in(srcdir) - SITE_PAGES - set(CONCEPT_PAGES), GUIDE_ORDER)


def concept_pages(srcdir: Path) -> list[str]:
    present = pages_in(srcdir)
    return [name for name in CONCEPT_PAGES if name in present]


def api_pages(srcdir: Path) -> list[str]:
    """The API reference pages ``api/<module>.rst``, relative to ``api/index``."""
    return ordered(pages_in(srcdir / "api") - {"index"}, API_ORDER)


#: Page -> (placeholder, lister, indent of the toctree body), filled by the site extension.
PLACEHOLDERS = {
    "user_guide": ("@GUIDE_PAGES@", guide_pages, ""),
    "concepts": ("@CONCEPT_PAGES@", concept_pages, ""),
    "api/index": ("@API_PAGES@", api_pages, "   "),
}
