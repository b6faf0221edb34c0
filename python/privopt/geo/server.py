"""Server-side entry points (spec 001 §4): answer CR requests, solve a batch of uploads.

Both take and return the JSON messages of :mod:`privopt.geo.messages`, so an HTTP service
only has to parse bodies and call them:

- :func:`answer_cr_request` — a :class:`CRRequest` → its :class:`CRBlock`;
- :func:`solve_uploads` — a batch of :class:`Upload` → one :class:`UserMatrix` per user (one
  CLR-Geo solve for the whole batch).

Bad input raises :class:`~privopt.errors.InvalidInput` (a 4xx for a server).
"""

from __future__ import annotations

from concurrent.futures import Executor

import numpy as np

from privopt._validation import check_finite_result, check_instance
from privopt.errors import InvalidInput
from privopt.geo.clr import assemble_model, geo_ind_edges
from privopt.geo.crtable import CostReferenceTable
from privopt.geo.messages import BatchInfo, CRBlock, CRRequest, Upload, UserMatrix
from privopt.geo.params import GEO_REL_GAP, GeoParams, check_params
from privopt.geo.solve import ClrSolution, solve_clr
from privopt.geometry import pairwise
from privopt.perturbation.matrix import verify_matrix

__all__ = ["answer_cr_request", "solve_uploads", "solve_valid_uploads", "MAX_CR_PAIRS"]

#: Largest CR block (pairs) answered in one request.
MAX_CR_PAIRS = 20_000_000


def answer_cr_request(table: CostReferenceTable, request: CRRequest, params: GeoParams) -> CRBlock:
    """β for the requested V̂ rows × columns, after checking the request.

    Raises
    ------
    InvalidInput
        A centre outside V, a radius other than the protocol's, indices outside V̂, rows
        outside the request circle, or a block larger than :data:`MAX_CR_PAIRS`.
    """
    check_instance("table", table, CostReferenceTable)
    check_instance("request", request, CRRequest)
    check_params("params", params)
    geo = table.geography
    if not 0 <= request.center < geo.n_locations:
        raise InvalidInput(f"center {request.center} is not a location of the map")
    if abs(request.radius_km - params.request_radius) > 1e-9 * max(1.0, params.request_radius):
        raise InvalidInput(
            f"radius_km must be max(2Γ, Γ + r_obf) = {params.request_radius}, "
            f"got {request.radius_km}"
        )
    n = table.n_points
    for name, idx in (("rows", request.rows), ("cols", request.cols)):
        if idx.size == 0 or idx.min() < 0 or idx.max() >= n:
            raise InvalidInput(f"{name} must be non-empty V̂ indices in [0, {n})")
    if request.rows.size * request.cols.size > MAX_CR_PAIRS:
        raise InvalidInput(f"a CR block of more than {MAX_CR_PAIRS} pairs is refused")
    # Prop. 4.3: every row the user needs lies within the circle (up to the snap distance).
    assert geo.road_points is not None  # a CR table is built on a geography with road points
    center_xy = geo.road_points[geo.road_nodes[request.center]]
    rows_xy = table.fine_points[table.points_index[request.rows]]
    metric = "euclidean" if geo.metric == "euclidean" else "haversine"

    far = pairwise(center_xy[None], rows_xy, metric)[0] > request.radius_km + 2 * table.cell_km
    if np.any(far):
        raise InvalidInput("rows outside the request circle were asked for")
    beta = check_finite_result("β", table.beta(request.rows, request.cols), cause="the CR table")
    return CRBlock(request.rows, request.cols, beta)


def solve_uploads(
    uploads: list[Upload],
    params: GeoParams,
    *,
    method: str = "auto",
    executor: Executor | None = None,
    rel_gap: float = GEO_REL_GAP,
    time_limit: float | None = None,
    progress: bool | str = "auto",
) -> tuple[list[UserMatrix], ClrSolution]:
    """Solve CLR-Geo for a batch of uploads and return every user's matrix.

    Parameters
    ----------
    uploads : one message per user (all with the same columns, in the same order).
    params : the public parameters.
    method, executor, rel_gap, time_limit, progress : see :func:`privopt.geo.solve.solve_clr`.

    Returns
    -------
    (replies in the order of ``uploads``, the full :class:`ClrSolution`)
        Each reply holds the user's own matrix, objective and Geo-Ind check, and the batch's
        certificate (:class:`~privopt.geo.messages.BatchInfo`, ``id`` None).

    Raises
    ------
    InvalidInput
        No upload, an argument of the wrong type, uploads with different columns or repeated
        user ids.
    """
    if not isinstance(uploads, (list, tuple)) or not uploads:
        raise InvalidInput("uploads must be a non-empty list of Upload messages")
    for u in uploads:
        check_instance("uploads[...]", u, Upload)
    check_params("params", params)
    cols = [u.columns for u in uploads if u.columns is not None]
    if cols and any(not np.array_equal(c, cols[0]) for c in cols):
        raise InvalidInput("every upload must name the same columns in the same order")
    users = [u.user for u in uploads]
    if len(set(users)) != len(users):
        raise InvalidInput("user ids within a batch must be distinct")
    return solve_valid_uploads(
        uploads,
        params,
        method=method,
        executor=executor,
        rel_gap=rel_gap,
        time_limit=time_limit,
        progress=progress,
    )


def solve_valid_uploads(
    uploads: list[Upload],
    params: GeoParams,
    *,
    method: str = "auto",
    executor: Executor | None = None,
    rel_gap: float = GEO_REL_GAP,
    time_limit: float | None = None,
    progress: bool | str = "auto",
) -> tuple[list[UserMatrix], ClrSolution]:
    """:func:`solve_uploads` for a batch already checked: trusted, it checks nothing again.

    The caller has checked ``params`` and that every upload names the same columns; each
    upload's :class:`~privopt.geo.clr.UserBlock` is the one its message built when it was
    decoded (:meth:`~privopt.geo.messages.Upload.from_json`) or first asked for. User ids may
    repeat (each reply goes to the upload at its position). The HTTP service solves its
    batches here, every upload having been validated once, as it arrived.
    """
    model = assemble_model([u.block() for u in uploads], params)
    sol = solve_clr(
        model,
        method,
        rel_gap=rel_gap,
        executor=executor,
        time_limit=time_limit,
        progress=progress,
    )
    replies = []
    for m, (u, z) in enumerate(zip(uploads, sol.matrices, strict=True)):
        own = check_finite_result("a user's objective", float(np.sum(u.cost * z) / z.shape[0]))
        edges = geo_ind_edges(u.pair_distances, params.gamma)
        check = verify_matrix(z, edges, params.epsilon, check_input=False)
        batch = BatchInfo(
            len(uploads),
            m,
            sol.method,
            sol.status,
            sol.relative_gap,
            sol.objective,
            sol.lower_bound,
        )
        replies.append(UserMatrix(u.user, z, own, check.max_relative_violation, batch))
    return replies, sol
