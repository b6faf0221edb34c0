"""Where a warning should point: the first frame of the call stack outside privopt.

A warning about a user's call (an uncertified result, unprotected records) must name the
user's line, however many privopt functions lie between it and the ``warnings.warn``; a fixed
``stacklevel`` breaks whenever a function moves. (Python 3.12's ``skip_file_prefixes`` does this;
privopt supports 3.10.)
"""

from __future__ import annotations

import sys

__all__ = ["stacklevel_outside_privopt"]


def stacklevel_outside_privopt() -> int:
    """The ``stacklevel`` that makes a ``warnings.warn`` issued by the *caller* of this function
    point at the first frame whose module is not privopt (1 = the caller itself)."""
    frame = sys._getframe(1)  # the function that will call warnings.warn
    level = 1
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not (name == "privopt" or name.startswith("privopt.")):
            return level
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level
