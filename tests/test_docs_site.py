"""The documentation site's sources: the API reference matches ``__all__``, the getting-started
code runs, and the docstring fixes the site applies are right (checked with docutils' parser).

These read the files under ``docs/`` and ``tools/`` and need no Sphinx. Both ship wherever the
tests do (a clone, the sdist); the wheel's smoke test runs a subset without this module
(``tools/smoke_test.py``), so a missing ``docs/`` is an error here, never a skip.
"""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import docutils.core
import docutils.utils
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

DOCS = Path(__file__).resolve().parents[1] / "docs"
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(DOCS.parent / "tools"))

from api_pages import listed_names, new_page, public_modules  # noqa: E402
from check_docs_site import (  # noqa: E402
    INTERNAL_REFERENCES,
    formula_problems,
    looks_like_formula,
    markdown_code_spans,
    page_problems,
)
from docstring_hygiene import escape_bars, escape_docstring_bars, normalize_section_titles  # noqa: E402
from site_pages import api_pages, concept_pages, guide_pages  # noqa: E402


def autosummary_entries(page: Path) -> list[str]:
    """Names listed under the ``.. autosummary::`` directives of an API page."""
    names: list[str] = []
    inside = False
    for line in page.read_text().splitlines():
        if line.startswith(".. autosummary::"):
            inside = True
        elif inside and line and not line.startswith(" "):
            inside = False
        elif inside and line.strip() and not line.strip().startswith(":"):
            names.append(line.strip())
    return names


@pytest.mark.parametrize("name", sorted(public_modules()))
def test_api_page_lists_exactly_the_public_names(name):
    module = public_modules()[name]
    assert hasattr(module, "__all__"), f"privopt module {name!r} has no __all__"
    page = DOCS / "api" / f"{name}.rst"
    qualified = module.__name__  # type: ignore[attr-defined]
    expected = set(listed_names(name, public_modules()))
    template = new_page(qualified, sorted(expected))
    assert page.is_file(), (
        f"add docs/api/{name}.rst for {qualified} (python tools/api_pages.py writes it), "
        f"e.g.\n{template}"
    )
    listed = autosummary_entries(page)
    assert len(listed) == len(set(listed)), f"{page.name} lists a name twice: {listed}"
    missing, extra = expected - set(listed), set(listed) - expected
    assert not missing and not extra, (
        f"docs/api/{name}.rst must list {qualified}.__all__: "
        f"missing {sorted(missing)}, not in __all__ {sorted(extra)}"
    )


def test_every_api_page_documents_a_module():
    modules = public_modules()
    for page in api_pages(DOCS):
        assert page in modules, f"docs/api/{page}.rst names no public module privopt.{page}"


def test_every_markdown_page_is_in_the_site():
    site_pages = {"index", "getting_started", "user_guide", "concepts", "cpp"}
    site_pages |= {"choosing", "performance", "glossary"}
    listed = set(guide_pages(DOCS)) | set(concept_pages(DOCS)) | site_pages
    assert {p.stem for p in DOCS.glob("*.md")} <= listed
    assert guide_pages(DOCS)[:2] == ["dp", "lp"]  # shared machinery first
    assert "certification" in concept_pages(DOCS)


def test_getting_started_code_runs(tmp_path, monkeypatch):
    text = (DOCS / "getting_started.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, "getting_started.md", "exec"), namespace)
    assert namespace["mechanism"].expected_loss <= namespace["baseline"].expected_loss


def rst_problems(text: str) -> list[str]:
    """docutils' complaints about a reStructuredText paragraph (errors and warnings)."""
    stream = io.StringIO()
    docutils.core.publish_doctree(
        text, settings_overrides={"warning_stream": stream, "report_level": 2, "halt_level": 5}
    )
    return [line for line in stream.getvalue().splitlines() if "ERROR" in line or "WARN" in line]


def rendered_text(text: str) -> str:
    return docutils.core.publish_doctree(text, settings_overrides={"report_level": 5}).astext()


def test_bars_read_as_sizes_not_substitutions():
    line = "Rows: |E|·K mDP rows and |R_ℓ| per level; |x - y| stays; ``|E|`` is literal."
    assert any("substitution" in p for p in rst_problems(line))
    escaped = escape_bars(line)
    assert rst_problems(escaped) == []
    assert rendered_text(escaped) == line.replace("``", "")


def test_literal_blocks_doctests_and_roles_keep_their_bars():
    lines = [
        "Sizes |E| here.",
        ">>> abs(-1) |  0",
        "Example::",
        "",
        "    |E| = 3",
        "Back to text |V|, :math:`|x|`.",
    ]
    escape_docstring_bars(lines)
    assert lines == [
        r"Sizes \|E\| here.",
        ">>> abs(-1) |  0",
        "Example::",
        "",
        "    |E| = 3",
        r"Back to text \|V\|, :math:`|x|`.",
    ]


_WORDS = st.sampled_from(["|E|", "|R_ℓ|", "|x - y|", "|", "||", "a|b", "E", "K", "·", "(n)", "2"])


@settings(max_examples=150, deadline=None)
@given(st.lists(_WORDS, min_size=1, max_size=8))
def test_escaped_text_parses_cleanly_and_renders_unchanged(words):
    # Property: whatever bars a sentence holds, the escaped paragraph gives docutils nothing to
    # complain about and renders to exactly the text that was written.
    line = "Text " + " ".join(words) + " end."
    escaped = escape_bars(line)
    assert not [p for p in rst_problems(escaped) if "substitution" in p]
    if not rst_problems(escaped):
        assert rendered_text(escaped) == line


def test_singular_section_titles_become_numpydoc_titles():
    lines = ["Summary.", "", "Example", "-------", ">>> 1 + 1", "2", "", "Note", "----", "x"]
    normalize_section_titles(lines)
    assert lines[2:4] == ["Examples", "--------"]
    assert lines[7:9] == ["Notes", "-----"]
    untouched = ["Example of use", "--------------"]
    normalize_section_titles(untouched)
    assert untouched == ["Example of use", "--------------"]


def test_docs_build_offline_settings():
    # No remote inventory: the site builds without network access.
    conf = (DOCS / "conf.py").read_text()
    assert "sphinx.ext.intersphinx" not in conf.split("extensions = [")[1].split("]")[0]
    assert "SPHINXOPTS  ?= -W --keep-going" in (DOCS / "Makefile").read_text()


def test_examples_are_gallery_scripts_that_draw_a_figure():
    examples = sorted((DOCS.parent / "examples").glob("*.py"))
    assert 8 <= len(examples) <= 12
    for path in examples:
        text = path.read_text()
        # sphinx-gallery needs a docstring that starts with a title and its underline.
        match = re.match(r'"""\n(?P<title>.+)\n(?P<rule>=+)\n\n', text)
        assert match, f"{path.name}: the docstring must open with a title and a === underline"
        assert len(match["rule"]) == len(match["title"]), f"{path.name}: underline length"
        assert "plt.show()" in text, f"{path.name} draws no figure"


#: The mechanism pages: each opens with a short task a reader can run as it is.
MECHANISM_PAGES = ("dp", "lp", "mdp", "geo", "kanon", "census", "cluster")


def opening_task(page: str) -> tuple[str, int]:
    """The first Python block of ``docs/<page>.md`` and the number of headings before it."""
    text = (DOCS / f"{page}.md").read_text()
    match = re.search(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert match, f"docs/{page}.md has no Python block"
    headings = re.findall(r"^#+ ", text[: match.start()], flags=re.MULTILINE)
    return match.group(1), len(headings)


@pytest.mark.parametrize("page", MECHANISM_PAGES)
def test_mechanism_page_opens_with_a_short_task_that_runs(page, tmp_path, monkeypatch, capsys):
    code, headings = opening_task(page)
    assert headings == 1, f"docs/{page}.md: the task comes before any section (after the title)"
    assert len(code.strip().splitlines()) <= 12, f"docs/{page}.md: the opening task is long"
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"docs/{page}.md", "exec"), {})
    assert capsys.readouterr().out.strip(), f"docs/{page}.md: the task shows no result"


def docstring_lines() -> list[tuple[str, str]]:
    """(object, line) for every line of every public docstring (what the API pages show)."""
    import inspect

    found: list[tuple[str, str]] = []
    modules = public_modules()
    for name, module in modules.items():
        objects = [(name, module)]
        for attr in listed_names(name, modules):
            obj = getattr(module, attr, None)
            objects.append((f"{name}.{attr}", obj))
            if inspect.isclass(obj):
                objects += [(f"{name}.{attr}.{k}", v) for k, v in vars(obj).items()]
        for label, obj in objects:
            doc = inspect.getdoc(obj) if obj is not None else None
            found += [(label, line) for line in (doc or "").splitlines()]
    return found


def test_no_page_or_docstring_cites_internal_material():
    # Readers cannot see the project's specs or issue tracker: a page names the paper instead.
    sources = [*DOCS.glob("*.md"), *DOCS.glob("*.rst"), *(DOCS.parent / "examples").glob("*.py")]
    found = [
        f"{path.name}: {line.strip()}"
        for path in sources
        for line in path.read_text().splitlines()
        if INTERNAL_REFERENCES.search(line)
    ]
    found += [
        f"{obj}: {line}" for obj, line in docstring_lines() if INTERNAL_REFERENCES.search(line)
    ]
    assert not found, "internal references on the site:\n" + "\n".join(found)


def test_built_page_checks_find_cdn_dashes_and_internal_references():
    page = (
        '<script src="https://cdn.example.org/jquery.js"></script><p>Use –out DIR '
        "(spec 003 §2) as issue 12 says; HiGHS issue #1956 is public.</p>"
    )
    problems = page_problems("p.html", page)
    assert any("loads" in p for p in problems)
    assert any("en dash" in p for p in problems)
    assert sum("internal reference" in p for p in problems) == 3  # spec 003, §2, issue 12
    assert page_problems("ok.html", "<p>Use --out DIR (Liang &amp; Samavi 2020, eq. 34).</p>") == []
    assert page_problems("dash.html", "<p>The privacy–utility curve, 2–5 runs.</p>") == []


def test_site_settings_keep_it_offline_and_options_intact():
    conf = (DOCS / "conf.py").read_text()
    assert '"sphinx-mathjax-offline"' in conf  # MathJax served from the site itself
    assert "smartquotes = False" in conf  # --out stays --out
    assert '"write_computation_times": False' in conf  # that page loads jQuery from a CDN
    assert "sphinx-mathjax-offline" in (DOCS.parent / "pyproject.toml").read_text()
    css = (DOCS / "_static" / "privopt.css").read_text()
    assert "pre-wrap" in css  # code blocks wrap instead of overflowing the page


def test_installation_promises_no_published_distribution():
    for path in [*DOCS.glob("*.md"), DOCS.parent / "README.md"]:
        assert "pip install privopt" not in path.read_text(), path.name
    install = (DOCS / "getting_started.md").read_text().split("## Install")[1].split("\n## ")[0]
    assert "pip install ." in install and ".whl" in install  # from source, from a built wheel


def test_user_pages_exist_and_are_linked_from_the_index():
    index = (DOCS / "index.md").read_text()
    for page in ("choosing", "performance", "glossary"):
        assert (DOCS / f"{page}.md").is_file() and f"\n{page}\n" in index, page
    assert "python bench/" in (DOCS / "performance.md").read_text()


#: Inline code a page may hold: what a user types or reads in Python, Greek and carets included.
_CODE = [
    "--epsilon",
    "--window auto|paper|exact|δ",
    "privopt census --mechanism M_H^dp --epsilon 1",
    "M_c^dp",  # a census method's paper name, still accepted by the command line
    "h.level_slice(ℓ)",
    "sample_discrete_laplace(eps, size, sensitivity=Δ, rng=)",
    "privopt.census.streamed.m_h_dp_streamed(source, ε, executor, out_dir)",
    'info["relative_gap"]',
    'rng="secure"',
    "a ^ b",
    "$PRIVOPT_DATA/rome",
    "shared/data/rome/nodes_rome.csv",
    "lower == upper",
    "DPM(epsilon=1, delta=1 / n**1.5).fit(X)",
]
#: Formulas written as code: each belongs in math.
_FORMULAS = [
    "ε·d(x, x')",
    "Pr[y|x] ≤ e^{ε d} Pr[y|x']",
    "π_i",
    "ε",
    "d_ij ≤ η",
    "e^{εd} ȳ",
    "M·2^E",
    "n × K",
    "‖y*‖",
    "exp(ε·d)",
    "DPM(ε = 1, δ = 1/n^1.5).fit(X)",
    "Σ_{i∈X_l} min_k p_i c_ik",
    "⌈⌊n/k⌋/S⌉",
    "cᵀx",
]


@pytest.mark.parametrize("code", _CODE)
def test_code_is_not_taken_for_a_formula(code):
    assert not looks_like_formula(code)


@pytest.mark.parametrize("code", _FORMULAS)
def test_formulas_written_as_code_are_found(code):
    assert looks_like_formula(code)


def test_markdown_code_spans_skip_fenced_blocks_and_keep_line_numbers():
    text = "Text `a` and ``b`c``.\n```python\nx = `not a span`\n```\nLast `ε`.\n"
    assert markdown_code_spans(text) == [(1, "a"), (1, "b`c"), (5, "ε")]


def test_no_page_writes_a_formula_as_inline_code():
    # The site renders $...$ as math (MathJax, served offline); code shows TeX and Unicode
    # formulas as typed. A formula in backticks is a formula the reader cannot read.
    found = [
        f"{path.name}:{line}: `{code}`"
        for path in sorted(DOCS.glob("*.md"))
        for line, code in markdown_code_spans(path.read_text())
        if looks_like_formula(code)
    ]
    # The gallery's text is reStructuredText: ``code`` there, :math:`...` for formulas.
    found += [
        f"{path.name}: ``{match[1]}``"
        for path in sorted((DOCS.parent / "examples").glob("*.py"))
        for match in re.finditer(r"``(.+?)``", path.read_text())
        if looks_like_formula(match[1])
    ]
    assert not found, "formulas written as code (write them as $...$):\n" + "\n".join(found)


def test_built_page_checks_find_formulas_as_code_and_raw_tex():
    code = '<code class="docutils literal notranslate"><span class="pre">z_ik</span> '
    code += '<span class="pre">&#x2264;</span> <span class="pre">e^{εd}</span></code>'
    math = '<span class="math notranslate nohighlight">\\(e^{\\varepsilon d}\\)</span>'
    option = '<code class="docutils literal notranslate"><span class="pre">--epsilon</span></code>'
    assert formula_problems("ok.html", f"<p>{math} with {option} and e<sup>x</sup>.</p>") == []
    problems = formula_problems("p.html", f"<p>{code}; text e^{{εd}} and $x$ unrendered.</p>")
    assert len(problems) == 3
    assert "formula written as code 'z_ik ≤ e^{εd}'" in problems[0]
    assert ["TeX shown as text" in p for p in problems[1:]] == [True, True]
    # The API reference shows docstrings as they are written; it is not held to this.
    assert page_problems("api/generated/privopt.mdp.solve.html", f"<p>{code}</p>") == []
