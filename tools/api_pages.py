"""Keep ``docs/api/<module>.rst`` in step with each public module's ``__all__``.

    python tools/api_pages.py          # write: create missing pages, update the name lists
    python tools/api_pages.py --check  # exit 1 and name the pages that are out of date

A page lists a module's public names under one ``.. autosummary::`` directive, in ``__all__``
order; the page's other text (title, introduction) is left as written. Submodules with a page of
their own are not listed again (the reference's table of contents links them).
``tests/test_docs_site.py`` checks the same rule.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from pathlib import Path
from types import ModuleType

API = Path(__file__).resolve().parents[1] / "docs" / "api"


def public_modules() -> dict[str, ModuleType]:
    """``{"privopt": privopt, "dp": privopt.dp, ...}``: the package and its public modules."""
    import privopt

    modules: dict[str, ModuleType] = {"privopt": privopt}
    for info in pkgutil.iter_modules(privopt.__path__):
        if not info.name.startswith("_"):
            modules[info.name] = importlib.import_module(f"privopt.{info.name}")
    return modules


def listed_names(name: str, modules: dict[str, ModuleType]) -> list[str]:
    """``__all__`` in order, less the submodules that have a page of their own."""
    module = modules[name]
    return [
        entry
        for entry in module.__all__
        if not (entry in modules and getattr(module, entry) is modules[entry])
    ]


def new_page(qualified: str, names: list[str]) -> str:
    return "\n".join(
        [
            f"``{qualified}``",
            "=" * (len(qualified) + 4),
            "",
            f".. automodule:: {qualified}",
            "   :no-members:",
            "",
            f".. currentmodule:: {qualified}",
            "",
            ".. autosummary::",
            "   :toctree: generated/",
            "   :nosignatures:",
            "",
            *(f"   {n}" for n in names),
            "",
        ]
    )


def with_names(text: str, names: list[str]) -> str:
    """The page with the entries of its autosummary directive replaced by ``names``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(".. autosummary::"))
    body = start + 1
    while body < len(lines) and (lines[body].strip().startswith(":") or not lines[body].strip()):
        body += 1  # options and the blank line after them
    end = body
    while end < len(lines) and (lines[end].startswith(" ") or not lines[end].strip()):
        end += 1
    kept_blank = [""] if end < len(lines) else []
    return "\n".join(
        lines[:body] + [f"   {n}" for n in names] + kept_blank + lines[end:] + [""]
    ).replace("\n\n\n", "\n\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report out-of-date pages")
    args = parser.parse_args(argv)
    modules = public_modules()
    stale = []
    for name, module in modules.items():
        page = API / f"{name}.rst"
        names = listed_names(name, modules)
        old = page.read_text() if page.is_file() else None
        new = new_page(module.__name__, names) if old is None else with_names(old, names)
        if new != old:
            stale.append(page.name)
            if not args.check:
                temporary = page.with_name(f".{page.name}.tmp")
                temporary.write_text(new)
                temporary.replace(page)  # atomic: a page is never left half-written
    verb = "out of date" if args.check else "written"
    print(f"{len(stale)} page(s) {verb}: {', '.join(stale) or '-'}", file=sys.stderr)
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
