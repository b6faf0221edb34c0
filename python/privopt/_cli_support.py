"""What every ``privopt`` subcommand shares, below the mechanisms' command lines.

A mechanism's ``cli.py`` registers its subcommand and runs it with these pieces; the dispatcher
(:mod:`privopt.cli`) sits above every mechanism and sets up the run they report into. The
contract (docs/errors.md):

- stdout carries one JSON summary (:func:`emit_summary`) and nothing else;
- outputs are checked and locked before anything is read (:func:`reserve_outputs`), then
  written atomically and published together (:mod:`privopt._atomic`);
- an option that the run would ignore is refused (:func:`refuse_ignored_options`);
- every subcommand takes ``--debug``, ``--force``, ``--quiet`` and ``--verbose``
  (:func:`add_common_options`), and ends with one of the exit codes below.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from privopt._atomic import RunOutputs
from privopt._json import jsonable
from privopt.errors import InvalidInput

__all__ = [
    "emit_summary",
    "reserve_outputs",
    "refuse_ignored_options",
    "add_common_options",
    "one_line",
    "run_state",
    "RunState",
    "Terminated",
    "EXIT_FAILURE",
    "EXIT_USAGE",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
]

EXIT_FAILURE = 1  #: a solver or runtime failure
EXIT_USAGE = 2  #: bad usage or bad input (argparse uses 2 as well)
EXIT_SIGINT = 128 + int(signal.SIGINT)  #: 130
EXIT_SIGTERM = 128 + int(signal.SIGTERM)  #: 143


class Terminated(BaseException):
    """SIGTERM, raised in the main thread like KeyboardInterrupt so that cleanups run."""


@dataclass
class RunState:
    """The command that runs (one per process): where its summary goes and what it published,
    for the dispatcher's signal handlers."""

    #: The stream of the JSON summary while :func:`privopt.cli.main` runs (stdout itself is
    #: diverted to stderr); None outside it.
    results: TextIO | None = None
    published: list[Path] = field(default_factory=list)  # outputs in place: no interrupt now
    late_signal: int | None = None  # a signal that arrived after publication


#: The state of this process's command.
run_state = RunState()


def add_common_options(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """Add ``--debug`` (and, on a subcommand, ``--force``, ``--quiet``, ``--verbose``).

    ``top``: the ``privopt`` parser itself, which takes ``--debug`` only.
    """
    # On subcommands the defaults are suppressed, so that `privopt --debug mdp ...` is not
    # overwritten by the subparser's own default.
    default = None if top else argparse.SUPPRESS
    parser.add_argument(
        "--debug", action="store_true", default=default, help="show the traceback of an error"
    )
    if top:
        return
    parser.add_argument(
        "--force", action="store_true", default=default, help="replace an existing output"
    )
    parser.add_argument(
        "-q", "--quiet", action="store_true", default=default, help="no progress bars"
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default,
        help="show the solver's log (on stderr)",
    )


def _jsonable(value: Any) -> Any:
    return jsonable(value)  # JSON has no NaN/inf: they become null


def _scalar(value: Any) -> Any:
    try:
        return _jsonable(float(value))  # Fraction, Decimal, 0-d arrays...
    except (TypeError, ValueError):
        return str(value)


def emit_summary(summary: Mapping[str, Any]) -> None:
    """Print ``summary`` as one line of JSON on the command's stdout.

    Non-finite floats become ``null`` and numpy values plain numbers, so the line always
    parses (e.g. with ``jq``). Outside :func:`main` it goes to ``sys.stdout``.
    """
    if not isinstance(summary, Mapping):
        raise InvalidInput(f"summary must be a mapping (one JSON object), got {summary!r}")
    stream = run_state.results if run_state.results is not None else sys.stdout
    stream.write(json.dumps(_jsonable(summary), default=_scalar) + "\n")
    stream.flush()


def reserve_outputs(args: argparse.Namespace, inputs: Iterable[Any] = ()) -> RunOutputs:
    """The :class:`~privopt._atomic.RunOutputs` of a subcommand: ``--force`` as given, and the
    command line told when they are published (signals stop interrupting from then on).

    Use it as ``with reserve_outputs(args, [input paths]) as outputs:`` around the whole run,
    :meth:`~privopt._atomic.RunOutputs.add` each output first, and write them in
    :meth:`~privopt._atomic.RunOutputs.publish`.
    """
    return RunOutputs(inputs=inputs, force=args.force, on_published=run_state.published.extend)


def refuse_ignored_options(
    args: argparse.Namespace, rules: Iterable[tuple[str, str, Any, bool, str]]
) -> None:
    """Refuse an option that was given but that this run would not read.

    A user who passes ``--S 5`` with the greedy method, or two inputs, believes it changes the
    result; silently ignoring it would hand back something other than what was asked for.

    Parameters
    ----------
    args : the parsed options.
    rules : ``(flag, dest, default, used, when)`` per option: ``flag`` (stored as
        ``args.<dest>``) counts as given when it was written on the command line (``main``
        records them in ``args.given_options``; without that record, when its value differs
        from ``default``); ``used`` says whether this run reads it; ``when`` says when it is
        read, for the message.

    Raises
    ------
    InvalidInput
        Naming the first option given but not used, and when it would be.
    """
    given = getattr(args, "given_options", None)
    for flag, dest, default, used, when in rules:
        written = dest in given if given is not None else getattr(args, dest, default) != default
        if not used and written:
            raise InvalidInput(f"{flag} is only used with {when}; here it would be ignored")


def one_line(text: str) -> str:
    """``text`` on one line (an error message's form); "(no message)" when it is empty."""
    return " ".join(text.split()) or "(no message)"
