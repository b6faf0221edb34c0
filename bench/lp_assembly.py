"""Benchmark: assemble a 1,000,000-nonzero LP from sparse blocks with privopt.lp, compared with
HiGHS's own ``passModel`` on the same, already prepared CSC arrays (issue 2, item 9).

    python bench/lp_assembly.py [--repeats 5] [--nnz 1000000]

Columns of the table (best of ``repeats`` wall-clock runs, seconds):

* ``assembly``: user blocks -> LinearProgram (add_variables/add_rows, per-block validation and
  canonical CSR) -> the row-wise arrays ``LinearProgram.pass_to`` hands to HiGHS
  (``LinearProgram.to_csr``: a concatenation, no sort).
* ``assembly (CSC)``: the same up to merged CSC arrays (``LinearProgram.to_csc``, the two-pass
  radix merge used for ``matrix()``), on one and on two threads.
* ``pass (ours)``: ``LinearProgram.pass_to`` on a fresh ``highspy.Highs`` (row-wise
  ``passModel``; HiGHS transposes to column-wise storage in C++).
* ``passModel baseline``: ``Highs.passModel`` alone on prepared column-wise arrays (fresh Highs),
  HiGHS's cheapest way in.
* ``scipy vstack+tocsc``: the naive route, for context.

The ratio ``assembly / passModel`` is the figure of merit (target <= 1); the last line gives the
end-to-end ratio (blocks to a loaded Highs) against passModel alone.
"""

from __future__ import annotations

import argparse
import time

import highspy
import numpy as np
import scipy.sparse as sp
from privopt.lp import LinearProgram


def make_blocks(nnz: int = 1_000_000, seed: int = 0):
    """A block-angular LP: K diagonal CSR blocks (80% of nonzeros, each on its own column range)
    and one linking block given as a (rows, cols, vals) triple over all columns (20%)."""
    rng = np.random.default_rng(seed)
    K = 10
    cols_per = 20_000
    rows_per = 8_000
    n = K * cols_per
    per_block = int(0.8 * nnz) // K
    diag = []
    for _ in range(K):
        r = rng.integers(0, rows_per, per_block)
        c = rng.integers(0, cols_per, per_block)
        B = sp.csr_array((rng.normal(size=per_block), (r, c)), shape=(rows_per, cols_per))
        B.sum_duplicates()
        diag.append(B)
    n_link_rows = 20_000
    k_link = nnz - sum(B.nnz for B in diag)
    # row-major order, as a caller building rows one after another would produce
    lr = np.sort(rng.integers(0, n_link_rows, k_link))
    lc = rng.choice(n, size=k_link, replace=True)
    key = np.unique(lr.astype(np.int64) * n + lc)  # unique (row, col)
    while key.size < k_link:
        extra = rng.integers(0, n_link_rows * n, k_link - key.size)
        key = np.unique(np.concatenate([key, extra]))
    lr, lc = np.divmod(key, n)
    link = (lr, lc, rng.normal(size=key.size))
    return diag, link, n_link_rows, n, cols_per


def build(diag, link, n_link_rows, n, cols_per) -> LinearProgram:
    """The user's side: variables and row blocks added to a LinearProgram."""
    lp = LinearProgram(0)
    cols = [lp.add_variables(cols_per, objective=1.0, upper=10.0) for _ in diag]
    for B, cs in zip(diag, cols, strict=False):
        lp.add_rows(B, upper=1.0, columns=cs)
    lp.add_rows(link, n_rows=n_link_rows, lower=-1.0, upper=1.0)
    return lp


def assemble(diag, link, n_link_rows, n, cols_per, threads=None, csc=False) -> LinearProgram:
    """Build, then produce the arrays for HiGHS: row-wise (default) or merged CSC."""
    lp = build(diag, link, n_link_rows, n, cols_per)
    if csc:
        lp.to_csc(threads=threads)
    else:
        lp.to_csr()
    return lp


def pass_model(lp: LinearProgram) -> highspy.Highs:
    """The baseline: a fresh Highs loaded by ``passModel`` from ``lp``'s prepared CSC arrays."""
    csc = lp.to_csc()
    cost, lo, up = lp.objective, lp.col_lower, lp.col_upper
    rl, ru = lp.row_lower, lp.row_upper
    integ = np.zeros(lp.n_vars, dtype=np.int32)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(
        lp.n_vars,
        lp.n_rows,
        csc.nnz,
        int(highspy.MatrixFormat.kColwise),
        int(highspy.ObjSense.kMinimize),
        0.0,
        cost,
        lo,
        up,
        rl,
        ru,
        csc.start,
        csc.index,
        csc.value,
        integ,
    )
    return h


def pass_to(lp: LinearProgram) -> highspy.Highs:
    """privopt's hand-over: a fresh Highs loaded by ``LinearProgram.pass_to``."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    lp.pass_to(h)
    return h


def baseline_pass(lp: LinearProgram) -> float:
    """Seconds of :func:`pass_model` on ``lp`` (its CSC arrays prepared beforehand)."""
    lp.to_csc()
    t0 = time.perf_counter()
    pass_model(lp)
    return time.perf_counter() - t0


def measure(repeats: int = 5, nnz: int = 1_000_000) -> dict[str, float]:
    blocks = make_blocks(nnz)
    diag, link, n_link_rows, n, _cols_per = blocks
    t_asm, t_csc, t_csc2, t_pass, t_base, t_scipy = [], [], [], [], [], []
    lp = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        assemble(*blocks, threads=2, csc=True)
        t_csc2.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        lp = assemble(*blocks, csc=True)
        t_csc.append(time.perf_counter() - t0)
        t_base.append(baseline_pass(lp))
        t0 = time.perf_counter()
        lp = assemble(*blocks)
        t_asm.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        h = pass_to(lp)  # no CSC cache: row-wise
        t_pass.append(time.perf_counter() - t0)
        assert h.getNumNz() == lp.nnz
        del h
        t0 = time.perf_counter()
        big = sp.block_diag(diag, format="csr")
        linkm = sp.csr_array((link[2], (link[0], link[1])), shape=(n_link_rows, n))
        sp.vstack([big, linkm], format="csr").tocsc()
        t_scipy.append(time.perf_counter() - t0)
    return {
        "nnz": lp.nnz,
        "n_vars": lp.n_vars,
        "n_rows": lp.n_rows,
        "assembly": min(t_asm),
        "assembly_csc": min(t_csc),
        "assembly_csc_2threads": min(t_csc2),
        "pass_ours": min(t_pass),
        "passModel": min(t_base),
        "scipy_vstack_tocsc": min(t_scipy),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--nnz", type=int, default=1_000_000)
    args = ap.parse_args()
    r = measure(args.repeats, args.nnz)
    print(
        f"LP: {r['n_vars']} variables, {r['n_rows']} rows, {r['nnz']} nonzeros "
        f"(10 CSR diagonal blocks + 1 linking triple); best of {args.repeats}, seconds"
    )
    print(f"{'step':<34}{'seconds':>10}{'ratio to passModel':>20}")
    print("-" * 64)
    base = r["passModel"]
    for label, key in [
        ("privopt assembly (blocks -> rows)", "assembly"),
        ("privopt assembly (blocks -> CSC)", "assembly_csc"),
        ("  same, merge on 2 threads", "assembly_csc_2threads"),
        ("privopt pass_to (row-wise)", "pass_ours"),
        ("HiGHS passModel baseline (CSC)", "passModel"),
        ("scipy block_diag+vstack+tocsc", "scipy_vstack_tocsc"),
    ]:
        print(f"{label:<34}{r[key]:>10.4f}{r[key] / base:>20.2f}")
    print(
        f"end to end, assembly + pass_to vs passModel alone: "
        f"{(r['assembly'] + r['pass_ours']) / base:.2f}x"
    )


if __name__ == "__main__":
    main()
