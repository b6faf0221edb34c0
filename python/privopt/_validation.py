"""Shared argument checks: every public function validates through these, not copied code.

Each check raises :class:`privopt.errors.InvalidInput` with a message naming the argument and
the offending value, and returns the value converted to the expected type.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np

from privopt.errors import InvalidInput, NumericalTrouble

__all__ = [
    "check_epsilon",
    "check_delta",
    "check_positive",
    "check_nonnegative",
    "check_finite_array",
    "check_int",
    "check_size",
    "check_probability_vector",
    "check_finite_result",
    "finite_result",
    "check_instance",
    "check_labels",
    "check_permutation",
]


def _as_float(name: str, value: Any) -> float:
    if isinstance(value, (bool, np.bool_, str, bytes)):
        kind = type(value).__name__
        raise InvalidInput(f"{name} must be a real number, got the {kind} {value!r}")
    if np.iscomplexobj(value):  # float() would drop the imaginary part of a numpy complex
        raise InvalidInput(f"{name} must be a real number, got the complex {value!r}")
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


def check_size(value: Any, name: str = "size") -> tuple[int, tuple[int, ...] | None]:
    """numpy's ``size=`` argument: None (one value), an int >= 0 or a tuple of them.

    Returns the number of values and the output shape (None for a single value).

    Examples
    --------
    >>> check_size((2, 3))
    (6, (2, 3))
    >>> check_size(None)
    (1, None)
    """
    if value is None:
        return 1, None
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        n = check_int(name, value, minimum=0)
        return n, (n,)
    try:
        shape = tuple(check_int(name, s, minimum=0) for s in value)
    except TypeError:
        raise InvalidInput(
            f"{name} must be None, an int or a tuple of ints, got {value!r}"
        ) from None
    return int(np.prod(shape, dtype=np.int64)), shape


def _real_array(name: str, value: Any, dtype: Any) -> np.ndarray:
    """``value`` as an array of ``dtype``; complex, text and bool input are refused, not cast.

    numpy would drop an imaginary part, parse "1.5" or read True as 1 without a word: each is a
    caller's mistake here, not a number.
    """
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):  # e.g. ragged nested lists
        raise InvalidInput(f"{name} must be a numeric array, got {type(value).__name__}") from None
    kind = raw.dtype.kind
    if kind == "c" or (kind == "O" and any(isinstance(v, complex) for v in raw.flat)):
        raise InvalidInput(f"{name} must be real, got complex values (dtype {raw.dtype})")
    if kind in "USbMmV":
        raise InvalidInput(f"{name} must be a numeric array, got dtype {raw.dtype}")
    want = np.dtype(dtype)
    try:
        with np.errstate(invalid="raise", over="raise"):
            arr = raw.astype(want, copy=False) if kind != "O" else np.asarray(raw, dtype=want)
    except (TypeError, ValueError, OverflowError, FloatingPointError):
        raise InvalidInput(
            f"{name} must be a numeric array of {want} values, got {type(value).__name__}"
        ) from None
    if want.kind in "iu" and raw.dtype.kind not in "iu":
        as_float = np.asarray(raw, dtype=np.float64)
        if not np.array_equal(as_float, arr):  # 1.5 -> 1, NaN or 1e300 -> garbage
            bad = np.argwhere(as_float != arr)[0]
            raise InvalidInput(
                f"{name} must hold integers, got {float(as_float[tuple(bad)])!r} at index "
                f"{tuple(bad.tolist())}"
            )
    return arr


def check_finite_array(
    name: str,
    value: Any,
    *,
    ndim: int | None = None,
    shape: tuple[int | None, ...] | None = None,
    dtype: Any = np.float64,
) -> np.ndarray:
    """Return ``value`` as a numpy array of ``dtype``, rejecting NaN/inf and wrong shapes.

    ``shape`` may contain ``None`` for a free dimension. Complex, text and bool input are
    rejected (never cast), as are non-integral values when ``dtype`` is an integer type.

    Examples
    --------
    >>> check_finite_array("x", [1, 2.5])
    array([1. , 2.5])
    >>> check_finite_array("x", [1 + 2j])
    Traceback (most recent call last):
    ...
    privopt.errors.InvalidInput: x must be real, got complex values (dtype complex128)
    """
    arr = _real_array(name, value, dtype)
    if ndim is not None and arr.ndim != ndim:
        raise InvalidInput(f"{name} must be {ndim}-dimensional, got shape {arr.shape}")
    if shape is not None and (
        arr.ndim != len(shape)
        or any(want is not None and want != got for want, got in zip(shape, arr.shape, strict=True))
    ):
        want_text = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
        raise InvalidInput(f"{name} must have shape {want_text}, got {arr.shape}")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise InvalidInput(f"{name} contains a non-finite value at index {tuple(bad.tolist())}")
    return arr


def check_finite_result(name: str, value: Any, *, cause: str = "") -> Any:
    """Return ``value`` unchanged if it is finite, else raise :class:`NumericalTrouble`.

    The last check before a public function returns a number or an array: a NaN or inf result
    is never handed back as an answer.

    Parameters
    ----------
    name : what the value is (e.g. ``"expected_loss"``), named in the message.
    value : a real scalar or array-like of reals.
    cause : optional hint naming the input that produced it (e.g. ``"coordinates up to
        1e300"``), appended to the message.

    Raises
    ------
    NumericalTrouble
        ``value`` holds NaN or ±inf (the index of the first one is named).
    InvalidInput
        ``value`` is not numeric or is complex.

    Examples
    --------
    >>> check_finite_result("loss", 0.25)
    0.25
    >>> check_finite_result("loss", float("inf"), cause="a disconnected graph")
    Traceback (most recent call last):
    ...
    privopt.errors.NumericalTrouble: loss is not finite (inf); cause: a disconnected graph
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return value  # integers are finite (and a Python int may not fit a float)
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
        return value
    arr = _real_array(name, value, np.float64)
    finite = np.isfinite(arr)
    if not np.all(finite):
        hint = f"; cause: {cause}" if cause else ""
        if arr.ndim == 0:
            raise NumericalTrouble(f"{name} is not finite ({float(arr)!r}){hint}")
        bad = tuple(np.argwhere(~finite)[0].tolist())
        raise NumericalTrouble(
            f"{name} is not finite: {float(arr[bad])!r} at index {bad} "
            f"({int((~finite).sum())} of {arr.size} entries){hint}"
        )
    return value


_F = TypeVar("_F", bound=Callable[..., Any])


def finite_result(cause: str = "") -> Callable[[_F], _F]:
    """Decorator: :func:`check_finite_result` on what the function returns (a number or an
    array), named after the function; an ``OverflowError`` raised inside (float or integer
    conversion of a value beyond float64) becomes :class:`NumericalTrouble` too. numpy's
    overflow and invalid-value warnings are off inside: their NaN or inf reaches the result,
    and the check reports it.

    Parameters
    ----------
    cause : hint naming the inputs that can produce a non-finite result, added to the message.

    Examples
    --------
    >>> @finite_result(cause="a scale near the float64 limit")
    ... def double(x):
    ...     return 2 * x
    >>> double(1e308)
    Traceback (most recent call last):
    ...
    privopt.errors.NumericalTrouble: double result is not finite (inf); cause: a scale near the \
float64 limit
    """

    def decorate(func: _F) -> _F:
        name = f"{func.__name__} result"

        @functools.wraps(func)
        def checked(*args: Any, **kwargs: Any) -> Any:
            try:
                # An overflow inside shows in the result, which is checked below: one
                # NumericalTrouble instead of a RuntimeWarning and then the error.
                with np.errstate(over="ignore", invalid="ignore"):
                    out = func(*args, **kwargs)
            except OverflowError as err:
                hint = f"; cause: {cause}" if cause else ""
                raise NumericalTrouble(
                    f"{func.__name__}: a value overflows float64 ({err}){hint}"
                ) from None
            return check_finite_result(name, out, cause=cause)

        return checked  # type: ignore[return-value]

    return decorate


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


def check_instance(name: str, value: Any, cls: type | tuple[type, ...]) -> Any:
    """Return ``value`` if it is an instance of ``cls``, else raise InvalidInput naming it.

    Examples
    --------
    >>> check_instance("problem", None, dict)
    Traceback (most recent call last):
    ...
    privopt.errors.InvalidInput: problem must be a dict, got NoneType
    """
    if not isinstance(value, cls):
        want = " or ".join(c.__name__ for c in (cls if isinstance(cls, tuple) else (cls,)))
        raise InvalidInput(f"{name} must be a {want}, got {type(value).__name__}")
    return value


def check_labels(name: str, value: Any, n: int) -> np.ndarray:
    """A 1-D int64 array of ``n`` labels (class ids, any integers)."""
    arr = check_finite_array(name, value, dtype=np.int64)
    if arr.shape != (n,):
        raise InvalidInput(f"{name} must have shape ({n},), one entry per row, got {arr.shape}")
    return arr


def check_permutation(name: str, value: Any, n: int) -> np.ndarray:
    """A 1-D int64 array holding each of 0..n-1 exactly once (a row order)."""
    arr = check_labels(name, value, n)
    if not np.array_equal(np.sort(arr), np.arange(n)):
        raise InvalidInput(f"{name} must be a permutation of 0..{n - 1}")
    return arr
