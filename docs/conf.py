"""Sphinx configuration of the privopt documentation site.

Sources: the user-guide pages (``docs/*.md``, MyST), the API reference (``docs/api/*.rst``,
numpydoc from the docstrings), the CLI reference (generated from ``privopt.cli.build_parser``) and
the example gallery (``examples/``, run by sphinx-gallery). Builds offline: no intersphinx.
``make -C docs html`` builds with warnings as errors; see ``docs/Makefile``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # examples draw figures; no display here

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

import privopt  # noqa: E402  (the installed package is what the site documents)

project = "privopt"
author = "the privopt developers"
copyright = "2025, the privopt developers"  # the name Sphinx reads
release = privopt.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # MathJax copied into the site (_static/mathjax): formulas render without a network.
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "sphinxarg.ext",
    "privopt_site",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]

# MyST: the user-guide pages are plain Markdown that also reads well on a code host. Several
# start at "##" (a section of the README they came from); that is fine for the site.
myst_enable_extensions = ["dollarmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]

# API reference: one stub page per public object, docstrings in numpydoc format.
autosummary_generate = True
autosummary_imported_members = True
autodoc_default_options = {"members": True, "inherited-members": False, "show-inheritance": True}
autodoc_typehints = "none"  # numpydoc's Parameters section states the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = False

# The gallery: every script in examples/ is run and its figures are kept.
sphinx_gallery_conf = {
    "examples_dirs": str(DOCS.parent / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r".*\.py$",  # run every example, not only plot_*.py
    "ignore_pattern": r"__init__\.py",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "show_memory": False,
    "matplotlib_animations": False,
    "abort_on_example_error": False,  # report every failing example, then fail the build
    "only_warn_on_example_error": False,
    # No sg_execution_times page: it loads jQuery and DataTables from a CDN.
    "write_computation_times": False,
}

# "--out" stays two hyphens (smartquotes would print an en dash) in the command-line reference
# and in every option named in the text.
smartquotes = False

html_theme = "pydata_sphinx_theme"
html_title = f"privopt {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "header_links_before_dropdown": 4,  # the search box stays on the header's one line
    "show_toc_level": 2,
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_static_path = ["_static"]
html_css_files = ["privopt.css"]  # code blocks wrap instead of running off the page

# The build runs offline: no sphinx.ext.intersphinx (remote inventories), no analytics.
os.environ.setdefault("MPLBACKEND", "Agg")
