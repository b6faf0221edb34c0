"""Progress bars on stderr, one rule for every long loop in privopt.

A public call that can run longer than a couple of seconds takes ``progress="auto"`` and makes
its bar with :func:`progress_bar`:

- ``True``: a tqdm bar on stderr; ``False``: none;
- ``"auto"`` (default): whatever an enclosing :func:`progress_scope` says (the command line
  opens one: on, or off with ``--quiet``), else a bar only when stderr is a terminal, and only
  once the loop has run for :data:`AUTO_DELAY_S` seconds, so short calls stay silent.

Bars never write to stdout, which carries results only.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import inspect
import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tqdm import tqdm

from privopt.errors import InvalidInput

__all__ = [
    "AUTO_DELAY_S",
    "check_progress",
    "progress_bar",
    "progress_scope",
    "progress_scope_for",
    "with_progress_argument",
    "gap_postfix",
    "postfix_within_step",
    "TEXT_REFRESH_S",
]

#: Seconds an ``"auto"`` bar waits before it appears (a call this short needs no bar).
AUTO_DELAY_S = 2.0

#: Seconds between two updates of a bar's text within one long step (an LP solve, a round of
#: subproblems), so that a callback called per iteration does not redraw the bar each time.
TEXT_REFRESH_S = 1.0

_scope: contextvars.ContextVar[bool | None] = contextvars.ContextVar(
    "privopt_progress", default=None
)


def check_progress(progress: Any, name: str = "progress") -> bool | str:
    """Validate a ``progress`` argument: ``True``, ``False`` or ``"auto"`` (None means auto)."""
    if progress is None or (isinstance(progress, str) and progress == "auto"):
        return "auto"
    if isinstance(progress, bool):
        return progress
    raise InvalidInput(f"{name} must be True, False or 'auto', got {progress!r}")


@contextlib.contextmanager
def progress_scope(enabled: bool) -> Iterator[None]:
    """Within this block, ``progress="auto"`` means ``enabled`` (the CLI's on / ``--quiet``)."""
    token = _scope.set(bool(enabled))
    try:
        yield
    finally:
        _scope.reset(token)


def progress_scope_for(progress: Any) -> contextlib.AbstractContextManager[None]:
    """The scope a public call with a ``progress`` argument opens around its work: ``True`` or
    ``False`` switch the ``"auto"`` bars of everything it calls on or off; ``"auto"`` keeps the
    enclosing scope."""
    resolved = check_progress(progress)
    return contextlib.nullcontext() if resolved == "auto" else progress_scope(bool(resolved))


def with_progress_argument(func: Callable[..., Any]) -> Callable[..., Any]:
    """Give ``func`` a keyword-only ``progress`` argument (``"auto"``, True or False) that opens
    :func:`progress_scope_for` around the call, so every ``"auto"`` bar of what it calls follows
    it. The argument shows in ``inspect.signature`` (hence in the docs and in checks of valid
    keywords)."""
    signature = inspect.signature(func)
    params = list(signature.parameters.values())
    at = next((i for i, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
    params.insert(
        at,
        inspect.Parameter(
            "progress", inspect.Parameter.KEYWORD_ONLY, default="auto", annotation="bool | str"
        ),
    )

    @functools.wraps(func)
    def with_scope(*args: Any, progress: Any = "auto", **kwargs: Any) -> Any:
        with progress_scope_for(progress):
            return func(*args, **kwargs)

    with_scope.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    return with_scope


def _resolve(progress: bool | str) -> tuple[bool, float]:
    """(show a bar, delay in seconds) for a validated ``progress``."""
    if progress != "auto":
        return bool(progress), 0.0
    scoped = _scope.get()
    if scoped is not None:
        return scoped, 0.0
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty()), AUTO_DELAY_S


def progress_bar(
    progress: Any = "auto",
    iterable: Iterable[Any] | None = None,
    *,
    total: float | None = None,
    desc: str,
    unit: str = "it",
    leave: bool | None = None,
    min_delay: float = 0.0,
) -> Any:
    """A tqdm bar on stderr, disabled (a cheap no-op with the same methods) when off.

    Parameters
    ----------
    progress : ``True``, ``False`` or ``"auto"`` (see the module docstring).
    iterable : optional: iterate over the bar and it advances by itself (tqdm semantics).
    total : number of steps when known (iterations, levels), else None (from ``iterable``).
    desc : short label shown before the bar (e.g. ``"Benders"``).
    unit : name of one step.
    leave : keep the finished bar on screen (default: when ``progress`` is True).
    min_delay : seconds before the bar appears, even where ``"auto"`` would show it at once
        (for calls made many times in a row, most of them short: one bar per call flickers).

    Examples
    --------
    >>> with progress_bar(False, total=3, desc="levels") as bar:
    ...     for level in range(3):
    ...         bar.set_postfix_str(gap_postfix(0.5, 0.5 + 0.1 / (level + 1)), refresh=False)
    ...         bar.update(1)
    >>> bar.disable
    True
    """
    show, delay = _resolve(check_progress(progress))
    return tqdm(
        iterable,
        total=total,
        desc=desc,
        unit=unit,
        file=sys.stderr,
        disable=not show,
        delay=max(delay, float(min_delay)),
        leave=bool(progress is True) if leave is None else leave,
        mininterval=0.5,
        dynamic_ncols=True,
    )


def gap_postfix(lower: float, upper: float) -> str:
    """``"lb=… ub=… gap=…"`` for a bar's postfix: bounds and their relative gap."""
    gap = (
        (upper - lower) / max(abs(upper), 1e-300)
        if not (math.isnan(upper) or math.isnan(lower))
        else float("nan")
    )
    return f"lb={lower:.6g} ub={upper:.6g} gap={gap:.2e}"


def postfix_within_step(bar: Any, text: Callable[[float], str | None]) -> Callable[[], None]:
    """A callable for a callback called often within one long step (each simplex iteration,
    each solved subproblem): it sets ``bar``'s text to ``text(seconds since the step began)``
    at most every :data:`TEXT_REFRESH_S` (none when ``text`` returns None)."""
    start = time.monotonic()
    shown = [start]

    def update() -> None:
        now = time.monotonic()
        if now - shown[0] >= TEXT_REFRESH_S:
            words = text(now - start)
            if words is not None:
                shown[0] = now
                bar.set_postfix_str(words)

    return update
