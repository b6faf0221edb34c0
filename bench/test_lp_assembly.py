"""pytest-benchmark suite for LP assembly (opt-in: ``python -m pytest bench --benchmark-only``).

The ratio to HiGHS's own passModel is printed by ``python bench/lp_assembly.py``; here the
two steps are benchmarked side by side so that pytest-benchmark's table compares them.
"""

from __future__ import annotations

import highspy
import pytest
from lp_assembly import assemble, baseline_pass, make_blocks


@pytest.fixture(scope="module")
def blocks():
    return make_blocks(1_000_000)


def test_privopt_assembly(benchmark, blocks):
    lp = benchmark(assemble, *blocks)
    assert lp.nnz == 1_000_000


def test_privopt_assembly_csc(benchmark, blocks):
    lp = benchmark(assemble, *blocks, csc=True)
    assert lp.nnz == 1_000_000


def test_privopt_pass_to(benchmark, blocks):
    lp = assemble(*blocks)

    def run():
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        lp.pass_to(h)
        return h

    h = benchmark(run)
    assert h.getNumNz() == 1_000_000


def test_highs_passmodel_baseline(benchmark, blocks):
    lp = assemble(*blocks, csc=True)
    benchmark(baseline_pass, lp)
