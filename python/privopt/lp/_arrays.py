"""The numeric rule (:func:`privopt._validation.real_array`) with a fast path for the arrays the
engines pass each other on every solve: a float64 ndarray is already numbers and is returned as
it is, so checking it costs nothing on the hot paths of row generation and Benders."""

from __future__ import annotations

from typing import Any

import numpy as np

from privopt._validation import real_array
from privopt.errors import InvalidInput


def float_array(name: str, value: Any) -> np.ndarray:
    """``value`` as a float64 array by the numeric rule (no copy when it is one already)."""
    if type(value) is np.ndarray and value.dtype == np.float64:
        return value
    return real_array(name, value)


def float_vector(name: str, value: Any, size: int, *, scalar: bool = False) -> np.ndarray:
    """``value`` as a float64 vector of ``size`` entries by the numeric rule (a number too,
    broadcast, with ``scalar``); anything else raises :class:`InvalidInput` naming ``name``.
    HiGHS and the bounds read such vectors entry by entry: a wrong length must not broadcast
    or run past the end."""
    if type(value) is np.ndarray and value.dtype == np.float64 and value.shape == (size,):
        return value
    arr = real_array(name, value)
    if arr.shape == (size,):
        return arr
    if scalar and arr.shape == ():
        return np.full(size, float(arr))
    what = f"be a number or have shape ({size},)" if scalar else f"have shape ({size},)"
    raise InvalidInput(f"{name} must {what}, got shape {arr.shape}")
