"""Plain JSON from privopt's values: numpy scalars and arrays, paths and non-finite floats."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["jsonable"]


def jsonable(value: Any, *, nonfinite_as_text: bool = False) -> Any:
    """``value`` with numpy scalars and arrays made Python numbers and lists, paths strings,
    and non-finite floats JSON can hold: ``None`` (default, the command line's summaries), or
    with ``nonfinite_as_text`` the strings ``"inf"``/``"-inf"`` (NaN stays ``None``), which a
    saved release reads back as numbers."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, nonfinite_as_text=nonfinite_as_text) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, nonfinite_as_text=nonfinite_as_text) for v in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist(), nonfinite_as_text=nonfinite_as_text)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        if nonfinite_as_text and math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return None
    return value
