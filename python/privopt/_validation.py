"""Shared argument checks: every public function validates through these, not copied code.

Each check raises :class:`privopt.errors.InvalidInput` with a message naming the argument and
the offending value, and returns the value converted to the expected type.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privopt.errors import InvalidInput

__all__ = [
    "check_epsilon",
    "check_delta",
    "check_positive",
    "check_nonnegative",
    "check_finite_array",
    "check_int",
    "check_probability_vector",
]


def _as_float(name: str, value: Any) -> float:
    if isinstance(value, bool):
        raise InvalidInput(f"{name} must be a real number, got the bool {value!r}")
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{name} must be a real number, got {value!r}") from None
    if math.isnan(out):
        raise InvalidInput(f"{name} must not be NaN")
    return out


def check_positive(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float, requiring ``0 < value`` (and finiteness unless allowed)."""
    out = _as_float(name, value)
    if not out > 0:
        raise InvalidInput(f"{name} must be > 0, got {value!r}")
    if math.isinf(out) and not allow_inf:
        raise InvalidInput(f"{name} must be finite, got {value!r}")
    return out


def check_nonnegative(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float, requiring ``0 <= value``."""
    out = _as_float(name, value)
    if not out >= 0:
        raise InvalidInput(f"{name} must be >= 0, got {value!r}")
    if math.isinf(out) and not allow_inf:
        raise InvalidInput(f"{name} must be finite, got {value!r}")
    return out


def check_epsilon(value: Any, name: str = "epsilon") -> float:
    """Privacy parameter ε: a finite real number > 0."""
    return check_positive(name, value)


def check_delta(value: Any, name: str = "delta") -> float:
    """Privacy parameter δ: a real number in [0, 1)."""
    out = _as_float(name, value)
    if not 0.0 <= out < 1.0:
        raise InvalidInput(f"{name} must lie in [0, 1), got {value!r}")
    return out


def check_int(
    name: str, value: Any, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """Return ``value`` as a Python int, requiring an integral value within the bounds."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise InvalidInput(f"{name} must be an integer, got {value!r}")
    out = int(value)
    if minimum is not None and out < minimum:
        raise InvalidInput(f"{name} must be >= {minimum}, got {out}")
    if maximum is not None and out > maximum:
        raise InvalidInput(f"{name} must be <= {maximum}, got {out}")
    return out


def check_finite_array(
    name: str,
    value: Any,
    *,
    ndim: int | None = None,
    shape: tuple[int | None, ...] | None = None,
    dtype: Any = np.float64,
) -> np.ndarray:
    """Return ``value`` as a numpy array of ``dtype``, rejecting NaN/inf and wrong shapes.

    ``shape`` may contain ``None`` for a free dimension.
    """
    try:
        arr = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise InvalidInput(f"{name} must be a numeric array, got {type(value).__name__}") from None
    if ndim is not None and arr.ndim != ndim:
        raise InvalidInput(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if shape is not None:
        if arr.ndim != len(shape) or any(
            want is not None and want != got for want, got in zip(shape, arr.shape, strict=True)
        ):
            want_text = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
            raise InvalidInput(f"{name} must have shape {want_text}, got {arr.shape}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise InvalidInput(f"{name} contains a non-finite value at index {tuple(bad.tolist())}")
    return arr


def check_probability_vector(name: str, value: Any, *, atol: float = 1e-9) -> np.ndarray:
    """A 1-D array of non-negative finite entries summing to 1 (within ``atol``)."""
    arr = check_finite_array(name, value, ndim=1)
    if arr.size == 0:
        raise InvalidInput(f"{name} must not be empty")
    if np.any(arr < 0):
        raise InvalidInput(f"{name} has a negative entry at index {int(np.argmin(arr))}")
    total = float(arr.sum())
    if abs(total - 1.0) > atol:
        raise InvalidInput(f"{name} must sum to 1, sums to {total!r}")
    return arr
