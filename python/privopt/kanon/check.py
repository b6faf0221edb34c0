"""Our own k-anonymity verifier (issue item 4), independent of how a partition was produced."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from privopt._validation import check_finite_array, check_int
from privopt.errors import InvalidInput, PrivacyViolation

__all__ = ["k_anonymity_level", "verify_k_anonymous", "verify_boxes"]


def k_anonymity_level(table, quasi_identifiers: Sequence) -> int:
    """Size of the smallest group of rows with identical (generalized) QI values.

    Parameters
    ----------
    table : pandas.DataFrame, e.g. the generalized table of a result.
    quasi_identifiers : columns to group on.

    Returns
    -------
    The largest k for which ``table`` is k-anonymous (0 for an empty table).
    """
    missing = [q for q in quasi_identifiers if q not in getattr(table, "columns", ())]
    if missing:
        raise InvalidInput(f"quasi_identifiers {missing} are not columns of the table")
    if len(table) == 0:
        return 0
    sizes = table.groupby(list(quasi_identifiers), sort=False, dropna=False).size()
    return int(sizes.min())


def verify_boxes(
    x: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    labels: np.ndarray,
    k: int,
    categorical: np.ndarray | None = None,
) -> None:
    """Check a numeric generalization; raise :class:`PrivacyViolation` on the first failure.

    Checks that boxes contain their rows (``lo <= x <= hi``, numeric columns), that rows of one
    class share one box, and that every class has at least ``k`` rows. Arrays are (n, m);
    ``labels`` (n,). Categorical columns (bool mask (m,)) are checked by containment only of
    the codes' min/max, which the value-set rendering refines.
    """
    x = check_finite_array("x", x, ndim=2)
    lo = check_finite_array("lo", lo, shape=x.shape)
    hi = check_finite_array("hi", hi, shape=x.shape)
    k = check_int("k", k, minimum=1)
    n = x.shape[0]
    labels = np.asarray(labels)
    if labels.shape != (n,):
        raise PrivacyViolation(f"labels has shape {labels.shape}, expected ({n},)")
    if np.any(lo > x) or np.any(x > hi):
        i = int(np.argwhere((lo > x) | (x > hi))[0, 0])
        raise PrivacyViolation(f"row {i}'s box does not contain its values")
    _, inv, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    if sizes.min() < k:
        c = int(np.argmin(sizes))
        raise PrivacyViolation(f"an equivalence class has {int(sizes[c])} < k={k} rows")
    order = np.argsort(inv, kind="stable")
    first = np.empty(len(sizes), dtype=np.int64)
    first[inv[order[::-1]]] = order[::-1]
    ref = first[inv]
    if np.any(lo != lo[ref]) or np.any(hi != hi[ref]):
        i = int(np.argwhere(np.any((lo != lo[ref]) | (hi != hi[ref]), axis=1))[0, 0])
        raise PrivacyViolation(f"row {i} has a different box from the rest of its class")


def verify_k_anonymous(table, quasi_identifiers: Sequence, k: int) -> None:
    """Raise :class:`PrivacyViolation` unless every QI combination of ``table`` occurs ≥ k times."""
    k = check_int("k", k, minimum=1)
    level = k_anonymity_level(table, quasi_identifiers)
    if level < k:
        raise PrivacyViolation(
            f"table is only {level}-anonymous on {list(quasi_identifiers)}, k={k} required"
        )
