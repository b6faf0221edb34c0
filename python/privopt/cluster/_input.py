"""The points DPM reads: one check, shared by fitting and by labelling with a release."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.utils.validation import check_array

from privopt._validation import NotNumeric, numeric_array
from privopt.errors import InvalidInput

__all__ = ["points_array"]


def points_array(X: Any, *, min_samples: int = 2) -> np.ndarray:
    """X as a finite, real (n, d) float64 array, d ≥ 1, n ≥ ``min_samples``.

    What counts as a number is privopt's one rule (:func:`privopt._validation.numeric_array`:
    text, booleans, None and sparse matrices are refused, as a ``TypeError`` too); then
    scikit-learn's ``check_array`` checks the sizes, with the messages its users know. No
    message quotes the data.
    """
    if getattr(getattr(X, "dtype", None), "kind", "") == "c":
        # scikit-learn's wording, which its estimator checks look for.
        raise InvalidInput(f"X must be real: Complex data not supported (dtype {X.dtype})")
    arr = numeric_array("X", X)
    if arr.ndim != 2:  # check_array's own message would print the array
        raise InvalidInput(
            f"X must be 2-dimensional (n samples, d features), got shape {arr.shape}. Reshape "
            "your data with X.reshape(-1, 1) for one feature or X.reshape(1, -1) for one sample"
        )
    try:
        arr = check_array(
            arr,
            dtype=np.float64,
            order="C",
            ensure_all_finite=False,  # checked below, with a shorter message naming the entry
            ensure_min_samples=max(1, min_samples),
            ensure_min_features=1,
            estimator="DPM",
            input_name="X",
        )
    except TypeError as err:
        raise NotNumeric(f"X: {err}") from None
    except ValueError as err:
        raise InvalidInput(f"X: {err}") from None
    # A finite sum proves every entry finite without an (n, d) temporary; an overflowing sum of
    # finite values falls through to the entry-wise check.
    if not math.isfinite(float(np.sum(arr))):
        bad = np.argwhere(~np.isfinite(arr))
        if bad.size:
            i, j = bad[0].tolist()
            raise InvalidInput(f"X contains NaN or inf at X[{i}, {j}] ({len(bad)} such entries)")
    return arr
