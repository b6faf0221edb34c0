"""``bench/scaling.py --notes-only``: the scaling page's hand-kept notes are replaced by the
current ``bench/scaling_notes/<family>.md`` and nothing else on the page changes."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"

PAGE = """# Scaling

## census

| n | s |
|---|---|
| 10 | 1 |

![census](scaling/census.png)

old census note

### old subsection

## kanon-greedy

![kanon](scaling/kanon-greedy.png)

kanon's note stays
"""


def test_notes_only_replaces_the_notes_and_keeps_the_measurements(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import scaling

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "census.md").write_text("### new census note\n\nfigures\n")
    page = scaling.refresh_notes(PAGE, notes)
    assert "old census note" not in page and "old subsection" not in page
    assert "### new census note\n\nfigures\n\n## kanon-greedy" in page
    assert "| 10 | 1 |\n\n![census](scaling/census.png)\n\n### new census note" in page
    assert page.endswith("kanon's note stays\n")  # no note file: left as it was
    assert scaling.refresh_notes(page, notes) == page  # idempotent
    # the real page is what its notes say
    real = (BENCH.parent / "docs" / "scaling.md").read_text()
    assert scaling.refresh_notes(real) == real, "run: python bench/scaling.py --notes-only"
    sys.modules.pop("scaling", None)
