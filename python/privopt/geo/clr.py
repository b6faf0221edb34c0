"""CLR-Geo (spec 001 §5–7): the users' LR problems coupled by shared exponential entries.

Every user m uploads a :class:`UserBlock`: the distances between its LR rows N_m, from its
rows to every column of V, and its estimated costs. Entry (i, k) of user m is

- *free* (an LP variable z'_ik) when d_ik ≤ r_exp,
- *exponential* otherwise: ``z_ik = g_ik y_k`` with ``g_ik = exp(−ε min(d_ik, r_obf)/2)``
  and y ∈ R^K shared by all users (Eq. 19), which makes exponential entries ε/2-Geo-Ind
  across users whatever y is (Thm 4.4).

Rescaled as in §7.3: ``ỹ_k = y_k e^{−ε r_exp/2}``, ``g̃_ik = exp(−ε(min(d_ik, r_obf) − r_exp)/2)
∈ (0, 1]`` so that coefficients stay in range at ε = 10 km⁻¹. Each Geo-Ind row
``z_ik − e^{εd_ij} z_jk ≤ 0`` is divided by e^{εd_ij} (largest coefficient 1: accurate duals,
hence a tight safe bound); rows whose two entries are both exponential are dropped (they hold,
Prop. 4.1) and so are pairs with ε·d_ij above ``eps_d_cap`` (§7.3; the release is repaired
against every pair afterwards). Valid bounds: ``0 ≤ z' ≤ 1`` and ``0 ≤ ỹ_k ≤ min 1/g̃_ik``
(every z ≤ 1, §7.1).

The objective (Eq. 23) is ``Σ_m (1/|N_m|) Σ_i Σ_k ĉ_ik z_ik`` (uniform prior over each LR
set, A9): ``α̃ᵀỹ + Σ_m c'_m z'_m``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from privopt._validation import (
    MAX_EXP_ARGUMENT,
    check_exp_argument,
    check_finite_array,
    check_instance,
)
from privopt.errors import InvalidInput
from privopt.geo.params import GeoParams, check_params
from privopt.lp import LinearProgram
from privopt.perturbation.problem import EdgeList

__all__ = ["UserBlock", "ClrModel", "build_model", "assemble_model", "geo_ind_edges", "MAX_KM"]

#: Largest distance or cost a block may hold (km): 25 times the equator, beyond any road
#: distance on Earth, and small enough that the LP's coefficients stay in range (one user's
#: costs of 1e15 km beside others of 1 km already keep Benders from certifying the batch, and
#: from 1e19 km HiGHS fails on the whole batch).
MAX_KM = 1e6


@dataclass(frozen=True)
class UserBlock:
    """What the server receives from one user (the upload, spec §4 step 5).

    Attributes
    ----------
    pair_distances : (n, n) d between the user's LR rows (D_{N_m²}), km.
    column_distances : (n, K) d from each LR row to each column of V (D_{N_m,V}), km.
    cost : (n, K) estimated travel-cost loss ĉ_ik (km, without the prior).

    Every entry is finite and in [0, :data:`MAX_KM`] (else InvalidInput naming the array).
    """

    pair_distances: np.ndarray
    column_distances: np.ndarray
    cost: np.ndarray

    def __post_init__(self) -> None:
        self._check_and_set(self.pair_distances, self.column_distances, self.cost, finite=False)

    @classmethod
    def from_finite(
        cls, pair_distances: np.ndarray, column_distances: np.ndarray, cost: np.ndarray
    ) -> UserBlock:
        """The block of 2-D float64 arrays already known finite (an upload's arrays, decoded
        by :func:`~privopt.geo.messages.decode_array`): shapes, symmetry, signs and range are
        checked as by the constructor, finiteness is not checked again.

        Raises
        ------
        InvalidInput
            As the constructor.
        """
        block = cls.__new__(cls)
        block._check_and_set(pair_distances, column_distances, cost, finite=True)
        return block

    def _check_and_set(self, d: Any, cd: Any, c: Any, *, finite: bool) -> None:
        """Check the three arrays (``finite``: known to be finite 2-D float64 arrays) and set
        the fields; InvalidInput names the first array that fails."""
        if not finite:
            d = check_finite_array("pair_distances", d, ndim=2)
        n = d.shape[0]
        if n == 0 or d.shape != (n, n):
            raise InvalidInput(f"pair_distances must be a non-empty (n, n) array, got {d.shape}")
        if np.any(d < 0) or np.any(np.diag(d) != 0) or not np.allclose(d, d.T, rtol=1e-12, atol=0):
            raise InvalidInput("pair_distances must be symmetric, >= 0, with a zero diagonal")
        if not finite:
            cd = check_finite_array("column_distances", cd, shape=(n, None))
            c = check_finite_array("cost", c, shape=cd.shape)
        elif cd.shape[0] != n:
            raise InvalidInput(f"column_distances must have shape ({n}, any), got {cd.shape}")
        elif c.shape != cd.shape:
            raise InvalidInput(f"cost must have shape {cd.shape}, got {c.shape}")
        if np.any(cd < 0):
            raise InvalidInput("column_distances must be >= 0")
        if np.any(c < 0):
            raise InvalidInput("cost must be >= 0 (a travel-cost loss)")
        for name, a in (("pair_distances", d), ("column_distances", cd), ("cost", c)):
            if a.size and a.max() > MAX_KM:
                raise InvalidInput(
                    f"{name} holds {float(a.max())!r} km, above the largest accepted "
                    f"MAX_KM = {MAX_KM:g} km"
                )
        object.__setattr__(self, "pair_distances", np.minimum(d, d.T))
        object.__setattr__(self, "column_distances", cd)
        object.__setattr__(self, "cost", c)

    @property
    def n_rows(self) -> int:
        """Number of rows (the user's locations in the block)."""
        return int(self.pair_distances.shape[0])

    @property
    def n_columns(self) -> int:
        """Number of columns (obfuscated locations the block may report)."""
        return int(self.column_distances.shape[1])


@dataclass
class _BlockLP:
    """One user's rows over its free variables (W) and the shared ỹ (T)."""

    free: np.ndarray  # (n, K) bool: q_ik = 0
    g: np.ndarray  # (n, K) rescaled g̃ (meaningful where not free)
    var: np.ndarray  # (n, K) int64: variable index of a free entry, -1 otherwise
    w: sp.csr_array  # (m, n_free)
    t: sp.csr_array  # (m, K)
    lower: np.ndarray  # (m,)
    upper: np.ndarray  # (m,)
    cost_free: np.ndarray  # (n_free,) p_i ĉ_ik
    alpha: np.ndarray  # (K,) this user's share of α̃
    n_pairs: int  # ordered Geo-Ind pairs kept
    n_capped: int  # ordered pairs with d ≤ γ dropped by the ε·d cap

    @property
    def n(self) -> int:
        return int(self.free.shape[0])

    @property
    def n_free(self) -> int:
        return int(self.w.shape[1])

    @property
    def n_geo_rows(self) -> int:
        return int(self.w.shape[0] - self.n)

    def assemble(self, z_free: np.ndarray, y_tilde: np.ndarray) -> np.ndarray:
        """The user's matrix Z_{N_m} (n × K): free entries from z', the others g̃·ỹ."""
        z = self.g * y_tilde[None, :]
        z[self.free] = z_free[self.var[self.free]]
        return z


def _build_block(block: UserBlock, params: GeoParams) -> _BlockLP:
    n, k = block.n_rows, block.n_columns
    eps = params.epsilon
    cd = block.column_distances
    free = cd <= params.r_exp
    g = np.exp(-eps * (np.minimum(cd, params.r_obf) - params.r_exp) / 2.0)
    var = np.full((n, k), -1, dtype=np.int64)
    var[free] = np.arange(int(free.sum()))
    n_free = int(free.sum())
    p = 1.0 / n
    # Ordered neighbour pairs (i ≠ j, d_ij ≤ γ) and the ε·d cap of §7.3.
    d = block.pair_distances
    near = (d <= params.gamma) & ~np.eye(n, dtype=bool)
    kept = near & (eps * d <= params.eps_d_cap)
    ii, jj = np.nonzero(kept)
    # Unit-measure rows: Σ_free z' + Σ_exp g̃ ỹ = 1.
    ri, ki = np.nonzero(free)
    re, ke = np.nonzero(~free)
    w_rows, w_cols, w_vals = [ri], [var[ri, ki]], [np.ones(ri.size)]
    t_rows, t_cols, t_vals = [re], [ke], [g[re, ke]]
    # Geo-Ind rows e^{−εd} z_ik − z_jk ≤ 0 for every column with a free entry in the pair.
    mask = free[ii] | free[jj]
    pe, kk = np.nonzero(mask)
    rows = n + np.arange(pe.size)
    scale = np.exp(-eps * d[ii, jj])[pe]
    a, b = ii[pe], jj[pe]
    fa, fb = free[a, kk], free[b, kk]
    w_rows += [rows[fa], rows[fb]]
    w_cols += [var[a[fa], kk[fa]], var[b[fb], kk[fb]]]
    w_vals += [scale[fa], -np.ones(int(fb.sum()))]
    t_rows += [rows[~fa], rows[~fb]]
    t_cols += [kk[~fa], kk[~fb]]
    t_vals += [scale[~fa] * g[a[~fa], kk[~fa]], -g[b[~fb], kk[~fb]]]
    m = n + pe.size
    w = sp.csr_array(
        (np.concatenate(w_vals), (np.concatenate(w_rows), np.concatenate(w_cols))),
        shape=(m, n_free),
    )
    t = sp.csr_array(
        (np.concatenate(t_vals), (np.concatenate(t_rows), np.concatenate(t_cols))), shape=(m, k)
    )
    lower = np.concatenate([np.ones(n), np.full(pe.size, -np.inf)])
    upper = np.concatenate([np.ones(n), np.zeros(pe.size)])
    alpha = np.where(free, 0.0, p * block.cost * g).sum(axis=0)
    return _BlockLP(
        free,
        g,
        var,
        w,
        t,
        lower,
        upper,
        p * block.cost[free],
        alpha,
        int(ii.size),
        int(near.sum() - kept.sum()),
    )


@dataclass
class ClrModel:
    """The assembled CLR-Geo LP: one block per user and the shared ỹ.

    Attributes
    ----------
    params : the parameters it was built with.
    blocks : per-user LP blocks.
    alpha : (K,) objective coefficients α̃ of ỹ.
    y_upper : (K,) valid upper bounds of ỹ (0 for a column no user has an exponential entry in).
    """

    params: GeoParams
    blocks: list[_BlockLP]
    alpha: np.ndarray
    y_upper: np.ndarray
    uploads: list[UserBlock]
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n_columns(self) -> int:
        """Number of columns of the shared model."""
        return int(self.alpha.size)

    def y_scale(self) -> float:
        """y = ỹ · e^{ε r_exp/2} (the paper's y from the rescaled one, §7.3)."""
        return math.exp(self.params.epsilon * self.params.r_exp / 2.0)

    def objective(self, matrices: list[np.ndarray]) -> float:
        """The CLR-Geo objective Σ_m (1/n_m) Σ_ik ĉ_ik z_ik of given user matrices."""
        return float(
            sum(
                np.sum(u.cost * z) / z.shape[0] for z, u in zip(matrices, self.uploads, strict=True)
            )
        )

    def user_edges(self, m: int) -> Any:
        """Every ordered Geo-Ind pair (d ≤ γ, capped ones included) of user m, local rows."""
        return geo_ind_edges(self.uploads[m].pair_distances, self.params.gamma)

    def monolithic(self) -> Any:
        """The whole LP over [z'_1, …, z'_M, ỹ] as a :class:`privopt.lp.LinearProgram`."""
        lp = LinearProgram(0)
        slices = [
            lp.add_variables(b.n_free, objective=b.cost_free, lower=0.0, upper=1.0, name=f"z{m}")
            for m, b in enumerate(self.blocks)
        ]
        ys = lp.add_variables(
            self.n_columns, objective=self.alpha, lower=0.0, upper=self.y_upper, name="y"
        )
        for m, (b, sl) in enumerate(zip(self.blocks, slices, strict=True)):
            cols = np.concatenate([np.arange(sl.start, sl.stop), np.arange(ys.start, ys.stop)])
            lp.add_rows(
                sp.hstack([b.w, b.t], format="csr"),
                lower=b.lower,
                upper=b.upper,
                columns=cols,
                name=f"user{m}",
            )
        return lp

    def split(self, x: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
        """Monolithic solution vector → (per-user z', ỹ)."""
        out, start = [], 0
        for b in self.blocks:
            out.append(x[start : start + b.n_free])
            start += b.n_free
        return out, x[start : start + self.n_columns]


def geo_ind_edges(pair_distances: np.ndarray, gamma: float) -> Any:
    """The ordered pairs (i ≠ j) of an (n, n) distance matrix with d ≤ γ, as a
    :class:`~privopt.perturbation.problem.EdgeList` over local rows: the constraints (16) that a
    user's
    matrix satisfies (what the server enforces and what a client checks)."""
    d = np.asarray(pair_distances)
    i, j = np.nonzero((d <= gamma) & ~np.eye(d.shape[0], dtype=bool))
    return EdgeList(i.astype(np.int64), j.astype(np.int64), d[i, j])


def _check_pair_ratios(blocks: list[UserBlock], params: GeoParams) -> None:
    """Every Geo-Ind pair (d ≤ γ) must have a finite ratio e^{ε d}: the release is repaired
    and checked against all of them, capped ones included."""
    eps = params.epsilon
    if eps * params.gamma <= MAX_EXP_ARGUMENT:
        return
    for m, upload in enumerate(blocks):
        d = upload.pair_distances
        largest = float(np.max(d, where=d <= params.gamma, initial=0.0))
        check_exp_argument(
            eps * largest,
            "epsilon * d",
            f"use a smaller epsilon (now {eps:g}) or gamma",
            where=f" of a Geo-Ind pair (d <= gamma) of user {m}",
            show_value=False,  # it would reveal a distance between a user's locations
        )


def build_model(blocks: list[UserBlock], params: GeoParams) -> ClrModel:
    """Assemble CLR-Geo from the users' uploads (spec §6, Eqs. 23–25).

    Raises
    ------
    InvalidInput
        No user, or users with different column sets (K), or a Geo-Ind pair whose ratio
        e^{ε d} overflows.
    """
    check_params("params", params)
    if not isinstance(blocks, (list, tuple)) or not blocks:
        raise InvalidInput("blocks must be a non-empty list of UserBlock (M >= 1)")
    for upload in blocks:
        check_instance("blocks[...]", upload, UserBlock)
    k = blocks[0].n_columns
    if any(b.n_columns != k for b in blocks):
        raise InvalidInput("every user must upload the same K columns (all of V)")
    return assemble_model(blocks, params)


def assemble_model(blocks: list[UserBlock], params: GeoParams) -> ClrModel:
    """:func:`build_model` for arguments already checked (the caller validated the parameters
    and built every block once, all with the same K): trusted, nothing is checked again but
    the Geo-Ind ratios, which depend on the blocks and the parameters together.

    Raises
    ------
    InvalidInput
        A Geo-Ind pair whose ratio e^{ε d} overflows.
    """
    k = blocks[0].n_columns
    _check_pair_ratios(blocks, params)
    lps = [_build_block(b, params) for b in blocks]
    alpha = np.sum([b.alpha for b in lps], axis=0)
    inv = np.full(k, np.inf)
    for b in lps:
        exp_g = np.where(b.free, 0.0, b.g)
        with np.errstate(divide="ignore"):
            inv = np.minimum(inv, np.where(exp_g > 0, 1.0 / exp_g, np.inf).min(axis=0))
    y_upper = np.where(np.isfinite(inv), inv, 0.0)
    info = {
        "users": len(lps),
        "free_variables": int(sum(b.n_free for b in lps)),
        "geo_rows": int(sum(b.n_geo_rows for b in lps)),
        "pairs": int(sum(b.n_pairs for b in lps)),
        "capped_pairs": int(sum(b.n_capped for b in lps)),
    }
    return ClrModel(params, lps, alpha, y_upper, list(blocks), info)
