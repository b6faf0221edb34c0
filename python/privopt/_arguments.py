"""Types of the command line's numeric options: one strict parser, one message shape.

Every numeric option is read by :func:`real` or :func:`integer`, so its value is checked as
argparse reads it, before any input file is opened or any array allocated. NaN, an infinity
(unless the option gives it a meaning), a value out of the option's range, a huge integer and
a number written with "_" digit separators (which Python's ``float()`` and ``int()`` accept,
but no CSV reader does) end the command with one line, e.g.
``privopt mdp: error: argument --epsilon: must be a finite number > 0, got 'nan'``.

Examples
--------
>>> positive("2.5")
2.5
>>> count("12")
12
>>> positive("nan")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: must be a finite number > 0, got 'nan'
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from privopt._inputs import parse_number

__all__ = [
    "real",
    "integer",
    "positive",
    "nonnegative",
    "count",
    "seed",
    "MAX_COUNT",
    "MAX_SEED",
]

#: Largest count an option takes (records, subsets, users, runs...): far above any size that
#: fits in memory, and small enough for every array index type.
MAX_COUNT = 2**31 - 1
#: Largest seed (numpy takes any non-negative integer; 64 bits are plenty).
MAX_SEED = 2**63 - 1


def _fail(wanted: str, text: str) -> argparse.ArgumentTypeError:
    shown = text if len(text) <= 40 else f"{text[:40]}... ({len(text):,} characters)"
    return argparse.ArgumentTypeError(f"must be {wanted}, got {shown!r}")


def real(
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    allow_inf: bool = False,
) -> Callable[[str], float]:
    """An argparse ``type`` for a real number in ``[low, high]`` (``(low, high]`` if
    ``low_open``); ``inf`` only where ``allow_inf`` (for thresholds where it means "none")."""
    finite = "a number" if allow_inf else "a finite number"
    bound = f" > {low:g}" if low_open else f" >= {low:g}" if low is not None else ""
    wanted = f"{finite}{bound}"

    def parse(text: str) -> float:
        try:
            value = parse_number(text.strip())
        except ValueError as err:
            if "_" in text:
                raise argparse.ArgumentTypeError(str(err)) from None
            raise _fail(wanted, text) from None
        if math.isnan(value) or (math.isinf(value) and not allow_inf):
            raise _fail(wanted, text)
        if low is not None and (value < low or (low_open and value == low)):
            raise _fail(wanted, text)
        if high is not None and value > high:
            raise _fail(f"{finite} <= {high:g}", text)
        return value

    parse.__name__ = "number"  # argparse names the type in some of its own messages
    return parse


def integer(*, low: int | None = None, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type`` for an integer in ``[low, high]`` (written in decimal digits)."""
    wanted = "an integer" + (f" >= {low}" if low is not None else "")

    def parse(text: str) -> int:
        digits = text.strip()
        if "_" in digits:
            raise argparse.ArgumentTypeError(
                f"{text!r} uses '_' digit separators; write the number without them"
            )
        try:
            value = int(digits)
        except ValueError:
            raise _fail(wanted, text) from None
        if low is not None and value < low:
            raise _fail(wanted, text)
        if high is not None and value > high:
            raise _fail(f"an integer <= {high}", text)
        return value

    parse.__name__ = "integer"
    return parse


#: A finite number > 0 (ε, sizes in km, time limits in s).
positive = real(low=0.0, low_open=True)
#: A finite number >= 0 (gaps, radii, waiting times).
nonnegative = real(low=0.0)
#: An integer in [1, :data:`MAX_COUNT`] (a number of things).
count = integer(low=1, high=MAX_COUNT)
#: An integer in [0, :data:`MAX_SEED`] (a random seed).
seed = integer(low=0, high=MAX_SEED)
