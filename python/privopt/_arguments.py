"""Types of the command line's numeric options: one strict parser, one message shape.

Every numeric option is read by a :class:`Real` or an :class:`Integer`, so its value is checked
as argparse reads it, before any input file is opened or any array allocated. NaN, an infinity
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
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "Real",
    "RealList",
    "Integer",
    "Method",
    "method_name",
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


def _no_separators(text: str) -> None:
    if "_" in text:
        raise argparse.ArgumentTypeError(
            f"{text!r} uses '_' digit separators; write the number without them"
        )


@dataclass(frozen=True)
class Real:
    """An argparse ``type``: a real number in ``[low, high]`` (``(low, high]`` if
    ``low_open``); ``inf`` only where ``allow_inf`` (a threshold where it means "none")."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    allow_inf: bool = False

    def __call__(self, text: str) -> float:
        _no_separators(text)
        finite = "a number" if self.allow_inf else "a finite number"
        wanted = finite + (
            f" > {self.low:g}"
            if self.low_open
            else f" >= {self.low:g}"
            if self.low is not None
            else ""
        )
        try:
            value = float(text.strip())
        except ValueError:
            raise _fail(wanted, text) from None
        if math.isnan(value) or (math.isinf(value) and not self.allow_inf):
            raise _fail(wanted, text)
        if self.low is not None and (value < self.low or (self.low_open and value == self.low)):
            raise _fail(wanted, text)
        if self.high is not None and value > self.high:
            raise _fail(f"{finite} <= {self.high:g}", text)
        return value


@dataclass(frozen=True)
class Integer:
    """An argparse ``type``: an integer in ``[low, high]``, written in decimal digits."""

    low: int | None = None
    high: int | None = None

    def __call__(self, text: str) -> int:
        _no_separators(text)
        wanted = "an integer" + (f" >= {self.low}" if self.low is not None else "")
        try:
            value = int(text.strip())
        except ValueError:
            raise _fail(wanted, text) from None
        if self.low is not None and value < self.low:
            raise _fail(wanted, text)
        if self.high is not None and value > self.high:
            raise _fail(f"an integer <= {self.high}", text)
        return value


@dataclass(frozen=True)
class RealList:
    """An argparse ``type``: a comma list of numbers, each read by ``item`` (e.g. the ε values
    of a sweep, ``0.5,1,2``), at most ``max_items`` of them."""

    item: Real
    max_items: int

    def __call__(self, text: str) -> list[float]:
        parts = [part.strip() for part in text.split(",")]
        if not text.strip() or any(not part for part in parts):
            raise _fail("a comma list of numbers (e.g. 0.5,1,2)", text)
        if len(parts) > self.max_items:
            raise argparse.ArgumentTypeError(
                f"holds {len(parts)} values, more than the {self.max_items} it takes"
            )
        values = []
        for part in parts:
            try:
                values.append(self.item(part))
            except argparse.ArgumentTypeError as exc:
                raise argparse.ArgumentTypeError(f"each value {exc}") from None
        return values


#: A finite number > 0 (ε, sizes in km, time limits in s).
positive = Real(low=0.0, low_open=True)
#: A finite number >= 0 (gaps, radii, waiting times).
nonnegative = Real(low=0.0)
#: An integer in [1, :data:`MAX_COUNT`] (a number of things).
count = Integer(low=1, high=MAX_COUNT)
#: An integer in [0, :data:`MAX_SEED`] (a random seed).
seed = Integer(low=0, high=MAX_SEED)


def method_name(text: str) -> str:
    """The command line's spelling of a method name: lower case, words joined by hyphens
    (``"split_carry"`` → ``"split-carry"``, ``"M_H^dp"`` → ``"m-h-dp"``, ``"TopDown"`` →
    ``"topdown"``)."""
    return re.sub(r"[\s_^-]+", "-", text.strip().lower()).strip("-")


class Method:
    """An argparse ``type``: one of a family's method names, returned as the library's own key.

    The command line shows and documents each name as :func:`method_name` spells it (lower
    case, hyphens); any spelling that reads the same once case, ``_``, ``^`` and ``-`` are
    ignored is accepted too, so ``split_carry``, ``Split-Carry`` and ``M_c^dp`` keep working.

    Examples
    --------
    >>> kind = Method(["split_carry", "M_c^dp"])
    >>> kind("split-carry"), kind("m-c-dp"), kind("M_c^dp")
    ('split_carry', 'M_c^dp', 'M_c^dp')
    >>> kind.metavar
    '{split-carry,m-c-dp}'
    """

    def __init__(self, keys: Iterable[str]) -> None:
        self._keys = {method_name(k): k for k in keys}
        self.shown = tuple(self._keys)

    @property
    def metavar(self) -> str:
        """The names as ``--help`` lists them."""
        return "{" + ",".join(self.shown) + "}"

    def __call__(self, text: str) -> str:
        key = self._keys.get(method_name(text))
        if key is None:
            shown = text if len(text) <= 40 else f"{text[:40]}..."
            raise argparse.ArgumentTypeError(
                f"must be one of {', '.join(self.shown)}, got {shown!r}"
            )
        return key
