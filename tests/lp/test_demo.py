from __future__ import annotations

import re

from privopt.lp.demo import demo_section


def test_demo_section_writes_plot_and_matching_optima(tmp_path):
    section = demo_section(tmp_path, seed=3)
    assert section.figures and all((tmp_path / f).stat().st_size > 0 for f in section.figures)
    rel = float(re.search(r"to a relative ([0-9.]+e[+-][0-9]+)", section.body).group(1))
    assert rel <= 1e-7
