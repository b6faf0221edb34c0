"""Shared argument checks: every public function validates through these, not copied code.

Each check raises :class:`privopt.errors.InvalidInput` with a message naming the argument (and
the value of a scalar parameter; for an array, its dtype, shape or the position of the first
offending entry, never a data value), and returns the value converted to the expected type.
:func:`numeric_array` is the one rule of what a numeric input is.
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, TypeVar

import numpy as np
import scipy.sparse as sp

from privopt.errors import InvalidInput, NumericalTrouble

__all__ = [
    "NotNumeric",
    "numeric_array",
    "check_numeric_dtype",
    "real_array",
    "check_real",
    "check_epsilon",
    "check_delta",
    "check_executor",
    "check_positive",
    "check_nonnegative",
    "check_finite_array",
    "check_int",
    "check_bool",
    "check_size",
    "check_exp_argument",
    "MAX_EXP_ARGUMENT",
    "MAX_ARRAY_VALUES",
    "check_probability_vector",
    "check_finite_result",
    "finite_result",
    "check_instance",
    "check_labels",
    "check_permutation",
]


#: Most values an array of 8-byte numbers may have: its size in bytes must fit int64, as numpy
#: requires (a larger product wraps around in numpy's own int64 arithmetic).
MAX_ARRAY_VALUES = (2**63 - 1) // 8

#: numpy dtype kinds that are numbers here: signed and unsigned integers, real floats.
_NUMERIC_KINDS = "iuf"


class NotNumeric(InvalidInput, TypeError):
    """An input holds something that is not a number (text, booleans, None, objects, a sparse
    matrix where a dense array is needed): an :class:`InvalidInput` that is also the
    ``TypeError`` numpy and scikit-learn raise for such input."""


def _is_number(value: Any) -> bool:
    """A real number that is not a bool: int, float, Fraction, numpy integers and floats."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def _as_float(name: str, value: Any) -> float:
    """A scalar parameter as a float: a real number by :func:`_is_number` (or a 0-d numeric
    array), not NaN."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        kind = type(value).__name__
        raise InvalidInput(f"{name} must be a real number, got the {kind} {value!r}")
    if np.iscomplexobj(value):  # float() would drop the imaginary part of a numpy complex
        raise InvalidInput(f"{name} must be a real number, got the complex {value!r}")
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in _NUMERIC_KINDS:
        value = value.item()
    if not _is_number(value):
        raise InvalidInput(f"{name} must be a real number, got {type(value).__name__}")
    try:
        out = float(value)
    except OverflowError:  # an int or Fraction beyond float64
        raise InvalidInput(f"{name} is beyond the float64 range") from None
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


def check_real(name: str, value: Any, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float: any real number, finite unless ``allow_inf``.

    Examples
    --------
    >>> check_real("offset", -2)
    -2.0
    """
    out = _as_float(name, value)
    if math.isinf(out) and not allow_inf:
        raise InvalidInput(f"{name} must be finite, got {value!r}")
    return out


#: Largest x whose exp(x) is a finite float64: ln(1.797e308) ≈ 709.78.
MAX_EXP_ARGUMENT = math.log(float(np.finfo(np.float64).max))


def check_exp_argument(
    value: float, expr: str, remedy: str, *, where: str = "", show_value: bool = True
) -> None:
    """Refuse a privacy ratio ``exp(value)`` that overflows float64 (``value`` > 709.78).

    A guarantee ``z_ik ≤ exp(ε·d)·z_jk`` with such a ratio cannot be computed or checked in
    float64: the ratio is inf and ``inf · 0`` is NaN, so a violation would pass unseen.

    Parameters
    ----------
    value : the exponent, e.g. ε·d (ε in 1/unit, d in the unit).
    expr : the exponent as a formula of parameter names, e.g. ``"epsilon * r_exp / 2"``.
    remedy : what the caller may change, e.g. ``"use a smaller epsilon or r_exp"``.
    where : words placed after the formula, e.g. ``" for a neighbour pair (d <= eta)"``.
    show_value : print ``value`` (False when it would reveal a data value, such as a distance
        between records).

    Examples
    --------
    >>> check_exp_argument(800.0, "epsilon * eta", "use a smaller epsilon or eta")
    Traceback (most recent call last):
    ...
    privopt.errors.InvalidInput: epsilon * eta = 800 exceeds ln(largest float64) = 709.78, so \
exp(epsilon * eta) overflows float64; use a smaller epsilon or eta
    """
    if not value <= MAX_EXP_ARGUMENT:
        shown = f" = {value:.6g}" if show_value else ""
        raise InvalidInput(
            f"{expr}{shown}{where} exceeds ln(largest float64) = {MAX_EXP_ARGUMENT:.2f}, so "
            f"exp({expr}) overflows float64; {remedy}"
        )


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


def check_bool(name: str, value: Any) -> bool:
    """A flag: ``True`` or ``False`` (numpy's ``bool_`` too), nothing else.

    Python would read any object as a truth value: ``"no"`` and ``"False"`` are true, so a flag
    given as text would silently mean the opposite of what it says.

    Examples
    --------
    >>> check_bool("directed", np.True_)
    True
    >>> check_bool("directed", "no")
    Traceback (most recent call last):
    ...
    privopt.errors.InvalidInput: directed must be True or False, got the str 'no'
    """
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidInput(
            f"{name} must be True or False, got the {type(value).__name__} {value!r:.40}"
        )
    return bool(value)


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
        shape: tuple[int, ...] = (check_int(name, value, minimum=0),)
    else:
        try:
            shape = tuple(check_int(name, s, minimum=0) for s in value)
        except TypeError:
            raise InvalidInput(
                f"{name} must be None, an int or a tuple of ints, got {value!r}"
            ) from None
    # Exact in Python ints: numpy's int64 product wraps without a word. The zero-free product
    # counts too, since numpy refuses a shape like (2**62, 4, 0) whose partial products overflow.
    if math.prod(max(s, 1) for s in shape) > MAX_ARRAY_VALUES:
        raise InvalidInput(
            f"{name} {shape} has more values than an array can hold (at most "
            f"{MAX_ARRAY_VALUES:,} 8-byte values: the byte count must fit int64)"
        )
    return math.prod(shape), shape


def _kind_hint(kind: str) -> str:
    if kind == "b":
        return " (booleans are not numbers here; convert with .astype(int) if 0/1 is meant)"
    if kind in "USO":
        return " (text is not parsed; convert it to numbers first)"
    return ""


def _holds_bool(seq: list[Any] | tuple[Any, ...]) -> bool:
    """Whether a (nested) list or tuple holds a bool, which numpy would silently read as 0/1
    when other numbers sit beside it (``[True, 2.0]`` becomes ``[1.0, 2.0]``).

    One level at a time, by the set of element types (a C-speed pass per level), so a list of
    10⁶ rows costs about as much as numpy's own conversion of it.
    """
    items: list[Any] | tuple[Any, ...] = seq
    while items:
        kinds = set(map(type, items))
        if bool in kinds or np.bool_ in kinds:
            return True
        if np.ndarray in kinds and any(
            type(x) is np.ndarray and x.dtype.kind == "b" for x in items
        ):
            return True
        if not kinds & {list, tuple}:
            return False
        nested = items if kinds <= {list, tuple} else [x for x in items if type(x) in (list, tuple)]
        items = list(itertools.chain.from_iterable(nested))
    return False


def _object_numbers(name: str, raw: np.ndarray) -> np.ndarray:
    """An object array whose every element is a real number, as int64 (all integers that fit)
    or float64; anything else (text, bool, None, Decimal, containers) is refused."""
    elements = raw.ravel().tolist()
    kinds = set(map(type, elements))  # one C-speed pass; the element loop only on failure
    if not all(issubclass(k, numbers.Real) and not issubclass(k, (bool, np.bool_)) for k in kinds):
        pos, item = next((i, v) for i, v in enumerate(elements) if not _is_number(v))
        if isinstance(item, (complex, np.complexfloating)):
            raise InvalidInput(f"{name} must be real, got complex values (dtype object)")
        where = tuple(int(i) for i in np.unravel_index(pos, raw.shape))
        raise NotNumeric(
            f"{name} must be numeric, got dtype object with an element of type "
            f"{type(item).__name__} at index {where}: each argument must be a real number, "
            "and a string, bool or None is not a number"
        )
    if all(issubclass(k, (int, np.integer)) for k in kinds):
        try:
            return raw.astype(np.int64)
        except OverflowError:  # integers beyond int64: their float values
            pass
    return raw.astype(np.float64)


def _pandas_numbers(name: str, value: Any) -> np.ndarray | None:
    """A pandas Series, DataFrame, Index or extension array as a numpy array of numbers;
    None if ``value`` is not a pandas object.

    Numeric numpy dtypes and the nullable ``Int64``/``UInt64``/``Float64`` (or numeric Arrow)
    dtypes are numbers; a missing value (``pd.NA``) in a nullable column is refused, as are
    ``string``, ``boolean``, ``category`` and date dtypes. Object columns go through the
    element check of plain object arrays.
    """
    if not type(value).__module__.startswith("pandas") or not hasattr(value, "to_numpy"):
        return None
    dtypes = list(value.dtypes) if getattr(value, "ndim", 1) == 2 else [value.dtype]
    extension = [dt for dt in dtypes if not isinstance(dt, np.dtype)]
    if not extension:
        return None  # plain numpy columns: numpy's own conversion, then the usual checks
    for dt in extension:
        if getattr(dt, "kind", "O") not in _NUMERIC_KINDS or not hasattr(dt, "numpy_dtype"):
            raise NotNumeric(f"{name} must be numeric, got pandas dtype {dt}{_kind_hint('O')}")
    missing = np.asarray(value.isna())
    if missing.any():
        where = tuple(np.argwhere(missing)[0].tolist())
        raise InvalidInput(f"{name} has a missing value (pandas NA) at index {where}; numbers only")
    target = np.result_type(*[dt if isinstance(dt, np.dtype) else dt.numpy_dtype for dt in dtypes])
    return value.to_numpy(dtype=target)


def numeric_array(name: str, value: Any) -> np.ndarray:
    """``value`` as a numpy array of real numbers: the one rule of what a numeric input is.

    Numbers are numpy integer and float arrays, Python and numpy real numbers (not bools),
    lists of them, object arrays holding only them, and pandas numeric columns, including
    the nullable ``Int64``/``Float64`` dtypes when no value is missing. Everything else is
    refused, never cast: text (which numpy would parse), booleans (which it would read as
    0/1, also inside a list of numbers), None, ``Decimal``, complex numbers (whose imaginary
    part it would drop), dates, pandas ``string``/``boolean``/``category`` columns and sparse
    matrices. Messages name the argument, the dtype and a position, never a value.

    Parameters
    ----------
    name : the argument's name, for messages.
    value : array-like of any shape.

    Returns
    -------
    ndarray of dtype kind int, uint or float, of ``value``'s shape (not copied when it
    already is one).

    Raises
    ------
    InvalidInput
        ``value`` is not numeric as above (a :class:`NotNumeric`, also a ``TypeError``, when
        it holds non-numbers), is ragged, or has a missing pandas value.

    Examples
    --------
    >>> numeric_array("x", [1, 2.5])
    array([1. , 2.5])
    >>> numeric_array("x", [True, 2.0])
    Traceback (most recent call last):
    ...
    privopt._validation.NotNumeric: x must be numeric, got a bool element in a list (booleans \
are not numbers here; convert with .astype(int) if 0/1 is meant)
    """
    if sp.issparse(value):
        raise NotNumeric(
            f"{name} must be a dense array, got the sparse {type(value).__name__} "
            "(sparse input is not supported here; convert it with .toarray())"
        )
    from_pandas = _pandas_numbers(name, value)
    if from_pandas is not None:
        return from_pandas
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):  # e.g. ragged nested lists
        raise NotNumeric(
            f"{name} must be a numeric array, got a ragged or mixed {type(value).__name__}"
        ) from None
    kind = raw.dtype.kind
    if kind in _NUMERIC_KINDS:
        if isinstance(value, (list, tuple)) and _holds_bool(value):
            raise NotNumeric(
                f"{name} must be numeric, got a bool element in a list{_kind_hint('b')}"
            )
        return raw
    if kind == "O":
        return _object_numbers(name, raw)
    check_numeric_dtype(name, raw.dtype)
    return raw


def check_numeric_dtype(name: str, dtype: Any) -> None:
    """Refuse a numpy dtype that is not a real number type (int, uint, float), as
    :func:`numeric_array` does; for arrays that are not converted here (Dask arrays)."""
    kind = np.dtype(dtype).kind
    if kind == "c":
        raise InvalidInput(f"{name} must be real, got complex values (dtype {dtype})")
    if kind not in _NUMERIC_KINDS:
        raise NotNumeric(f"{name} must be a numeric array, got dtype {dtype}{_kind_hint(kind)}")


def real_array(name: str, value: Any, dtype: Any = np.float64) -> np.ndarray:
    """``value`` (numeric by :func:`numeric_array`) as an array of ``dtype``; NaN and ±inf
    pass (see :func:`check_finite_array` to refuse them).

    Conversion to an integer dtype refuses what numpy would truncate or wrap: a fraction,
    NaN/inf, or a value beyond the target's range.

    Examples
    --------
    >>> real_array("lower", [0, -np.inf])
    array([  0., -inf])
    """
    raw = numeric_array(name, value)
    want = np.dtype(dtype)
    if want.kind in "iu" and raw.dtype.kind == "f":
        info = np.iinfo(want)
        # float(info.max) rounds up to a power of two for 64-bit types: compare against max + 1.
        low, high = float(info.min), float(info.max) + 1.0
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(raw) | (raw != np.round(raw)) | (raw < low) | (raw >= high)
        if np.any(bad):
            where = tuple(np.argwhere(bad)[0].tolist()) if raw.ndim else ()
            raise InvalidInput(
                f"{name} must hold integers, got a fractional, non-finite or out-of-range "
                f"({want}) value at index {where}"
            )
    elif want.kind in "iu" and raw.size and not np.can_cast(raw.dtype, want):
        info = np.iinfo(want)  # e.g. uint64 to int64, which numpy would wrap around
        bad = (raw < info.min) | (raw > info.max)
        if np.any(bad):
            where = tuple(np.argwhere(bad)[0].tolist()) if raw.ndim else ()
            raise InvalidInput(f"{name} has a value outside the {want} range at index {where}")
    try:
        with np.errstate(over="raise", invalid="raise"):
            return raw.astype(want, copy=False)
    except (OverflowError, FloatingPointError):  # e.g. a long double beyond float64
        raise InvalidInput(f"{name} has a value beyond the {want} range") from None


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
    arr = real_array(name, value, dtype)
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
    arr = real_array(name, value, np.float64)
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


def check_executor(
    executor: Any, name: str = "executor", *, accept_dask_client: bool = False
) -> Any:
    """An ``executor=`` argument: None (work in this thread) or a
    :class:`concurrent.futures.Executor` (threads, processes; for Dask: ``client.get_executor()``).
    ``accept_dask_client``: also anything with ``submit`` whose futures have ``result()`` (a Dask
    client itself), for callers that only submit and gather. Else InvalidInput naming ``name``."""
    if executor is None or isinstance(executor, Executor):
        return executor
    if accept_dask_client and callable(getattr(executor, "submit", None)):
        return executor
    raise InvalidInput(
        f"{name} must be a concurrent.futures.Executor (for Dask: client.get_executor()), got "
        f"{type(executor).__name__}"
    )
