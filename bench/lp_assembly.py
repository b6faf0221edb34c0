"""The block-angular LP of the LP layer's benchmarks (issue 2 item 9): its blocks, and the
ways into HiGHS that ``bench/test_lp.py`` and ``bench/scaling.py`` time.

* :func:`make_blocks`: ten CSR diagonal blocks and one linking ``(rows, cols, vals)`` triple of
  ``nnz`` nonzeros in all (1,000,000: 200,000 variables, 100,000 rows);
* :func:`assemble`: user blocks -> ``LinearProgram`` (per-block validation and canonical CSR),
  optionally up to merged CSC arrays (``LinearProgram.to_csc``, the two-pass radix merge);
* :func:`pass_to`: ``LinearProgram.pass_to`` on a fresh Highs (row-wise; HiGHS transposes);
* :func:`pass_model`: ``Highs.passModel`` alone on prepared column-wise arrays, the cheapest way
  into HiGHS (the baseline);
* :func:`scipy_route`: the naive ``block_diag`` + ``vstack`` + ``tocsc``, for context.
"""

from __future__ import annotations

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


def scipy_route(diag, link, n_link_rows, n, cols_per) -> sp.csc_array:
    """The same matrix by ``scipy.sparse``: ``block_diag`` + ``vstack``, then ``tocsc``."""
    big = sp.block_diag(diag, format="csr")
    linkm = sp.csr_array((link[2], (link[0], link[1])), shape=(n_link_rows, n))
    return sp.vstack([big, linkm], format="csr").tocsc()
