"""What every ``privopt`` subcommand shares, below the mechanisms' command lines.

A mechanism's ``cli.py`` registers its subcommand and runs it with these pieces; the dispatcher
(:mod:`privopt.cli`) sits above every mechanism and sets up the run they report into. The
contract (docs/errors.md):

- stdout carries one JSON summary (:func:`emit_summary`) and nothing else;
- outputs are checked and locked before anything is read (:func:`reserve_outputs`), then
  written atomically and published together (:mod:`privopt._atomic`);
- an option that the run would ignore is refused (:func:`refuse_ignored_options`);
- every subcommand takes ``--debug``, ``--force``, ``--quiet``, ``--progress``,
  ``--require-optimal`` and ``--verbose`` (:func:`add_common_options`), and ends with one of
  the exit codes below;
- the options that several subcommands take have one name, one meaning and one help text:
  ``--epsilon``, ``--delta``, ``--seed``, ``--time-limit``, ``--gap`` and ``--out`` (default
  ``<subcommand>-out``) are added by the ``add_*_option`` functions here; an older spelling
  stays accepted, hidden from ``--help``, through :func:`add_alias`;
- a subcommand whose work fans out takes ``--workers N`` (a local Dask cluster of N worker
  processes) or ``--scheduler ADDRESS`` (a running Dask cluster), and where threads help,
  ``--threads N`` (:func:`add_executor_options`); the run gets the executor from
  :func:`executor_from_args`, or, for work on Dask collections, the client from
  :func:`dask_client_from_args`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from privopt import _optional
from privopt._arguments import Real, count, nonnegative, positive, seed
from privopt._atomic import RunOutputs
from privopt._json import jsonable
from privopt.errors import InvalidInput

__all__ = [
    "emit_summary",
    "release_summary",
    "SUMMARY_KEYS",
    "reserve_outputs",
    "refuse_ignored_options",
    "add_common_options",
    "add_alias",
    "add_epsilon_option",
    "require_options",
    "add_delta_option",
    "add_seed_option",
    "add_time_limit_option",
    "add_gap_option",
    "add_out_option",
    "add_executor_options",
    "executor_rules",
    "executor_from_args",
    "dask_client_from_args",
    "CONNECT_TIMEOUT_S",
    "one_line",
    "run_state",
    "RunState",
    "Terminated",
    "EXIT_FAILURE",
    "EXIT_USAGE",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "EXIT_UNCERTIFIED",
]

EXIT_FAILURE = 1  #: a solver or runtime failure
EXIT_USAGE = 2  #: bad usage or bad input (argparse uses 2 as well)
EXIT_UNCERTIFIED = 3  #: --require-optimal, and the result is not certified optimal
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
    #: The JSON summary the command printed (for --require-optimal), None before it.
    summary: dict[str, Any] | None = None
    published: list[Path] = field(default_factory=list)  # outputs in place: no interrupt now
    late_signal: int | None = None  # a signal that arrived after publication


#: The state of this process's command.
run_state = RunState()


def add_common_options(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """Add ``--debug`` (and, on a subcommand, ``--force``, ``--quiet``, ``--progress``,
    ``--require-optimal``, ``--verbose``).

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
        "--progress",
        choices=["auto", "on", "off"],
        default=default,
        help="progress bars on stderr: auto (only when stderr is a terminal, so that a log "
        "file gets no bars), on or off (default: auto)",
    )
    parser.add_argument(
        "--require-optimal",
        action="store_true",
        default=default,
        help=f"exit with code {EXIT_UNCERTIFIED} when the optimization's status is not "
        "certified optimal (the outputs are written either way; the summary's status says "
        "which)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default,
        help="show the solver's log (on stderr)",
    )


def add_alias(parser: argparse.ArgumentParser, flag: str, dest: str, **kwargs: Any) -> None:
    """Accept ``flag`` as an older spelling of the option stored in ``args.<dest>``, hidden
    from ``--help`` (``kwargs``: the option's ``type``, ``action``...)."""
    kwargs.update(default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    parser.add_argument(flag, dest=dest, **kwargs)


def add_epsilon_option(parser: argparse.ArgumentParser, what: str, *, parent: bool = False) -> None:
    """``--epsilon``: required, never defaulted: the privacy level is the user's choice.

    ``what``: its meaning and unit in this subcommand (e.g. "ε per km, metric DP").
    ``parent``: the parser also has subcommands of its own (``geo`` has ``serve``), so argparse
    cannot require it; the command calls :func:`require_options` instead.
    """
    parser.add_argument(
        "--epsilon",
        type=positive,
        required=not parent,
        default=None,
        help=f"privacy parameter ε, required: {what}; smaller is more private",
    )


def require_options(args: argparse.Namespace, *flags: str) -> None:
    """Refuse a run without ``flags`` (e.g. ``"--epsilon"``), as argparse refuses a missing
    required option, where argparse cannot (a parser with subcommands of its own)."""
    missing = [f for f in flags if getattr(args, f.lstrip("-").replace("-", "_"), None) is None]
    if missing:
        raise InvalidInput(f"the following arguments are required: {', '.join(missing)}")


def add_delta_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--delta``: the probability δ with which an (ε, δ) guarantee may fail."""
    parser.add_argument(
        "--delta",
        type=Real(low=0.0, low_open=True, high=1.0),
        required=True,
        help=f"privacy parameter δ in (0, 1], required: {what}",
    )


def add_seed_option(parser: argparse.ArgumentParser, draws: str) -> None:
    """``--seed``: seeds the release's random draws (``draws`` names them). A seeded release is
    reproducible by anyone who knows the seed, so it is for testing only (the command warns)."""
    parser.add_argument(
        "--seed",
        type=seed,
        default=None,
        help=f"seed of {draws}: the release becomes reproducible by anyone who knows the "
        "seed, so for testing only (default: the operating system's cryptographic source)",
    )


def add_time_limit_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--time-limit``: seconds the optimization may run; on the limit the release is what was
    proven so far and its status says so."""
    parser.add_argument(
        "--time-limit",
        type=positive,
        default=None,
        help=f"seconds {what} may run (default: no limit); when it is reached the result "
        "is the best one proven so far and its status says so",
    )


def add_gap_option(parser: argparse.ArgumentParser, default: float, what: str = "") -> None:
    """``--gap``: the relative gap between the solution's cost and the proven lower bound at
    which the optimization stops."""
    parser.add_argument(
        "--gap",
        type=nonnegative,
        default=default,
        help="relative gap between the cost and the proven lower bound at which the "
        f"optimization stops{what}",
    )


def add_out_option(parser: argparse.ArgumentParser, command: str) -> None:
    """``--out``: the output folder, ``<command>-out`` by default."""
    parser.add_argument(
        "--out",
        default=f"{command}-out",
        help="output folder (written whole or not at all; an existing one needs --force)",
    )


#: Seconds ``--scheduler`` waits for the scheduler to answer, unless ``--connect-timeout``.
CONNECT_TIMEOUT_S = 30.0


def add_executor_options(
    parser: argparse.ArgumentParser, what: str, *, threads: str | None = None
) -> None:
    """``--workers N`` / ``--scheduler ADDRESS`` (and ``--threads N`` where ``threads`` says
    what threads run), one of them at most, plus ``--connect-timeout``.

    ``what``: the work that fans out, in plain words (e.g. "the Benders subproblems"). The
    results are the serial run's whichever is given; only where the work runs changes.
    """
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--workers",
        type=count,
        default=None,
        metavar="N",
        help=f"run {what} on a local Dask cluster of N worker processes, started for this run "
        "and stopped at its end (needs privopt[dask]; default: in this process)",
    )
    where.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help=f"run {what} on the running Dask cluster whose scheduler is at ADDRESS "
        "(e.g. tcp://10.0.0.5:8786); its workers need privopt installed",
    )
    if threads is not None:
        where.add_argument(
            "--threads",
            type=count,
            default=None,
            metavar="N",
            help=f"run {threads} on N threads of this process (default: one after another)",
        )
    parser.add_argument(
        "--connect-timeout",
        type=positive,
        default=None,
        metavar="SECONDS",
        help=f"--scheduler: seconds to wait for the scheduler (default {CONNECT_TIMEOUT_S:g})",
    )


def executor_rules(used: bool, when: str) -> list[tuple[str, str, Any, bool, str]]:
    """The :func:`refuse_ignored_options` rules of :func:`add_executor_options`' options, for a
    run that fans out only when ``used`` (``when`` says when, for the message)."""
    return [
        ("--workers", "workers", None, used, when),
        ("--scheduler", "scheduler", None, used, when),
        ("--threads", "threads", None, used, when),
    ]


@contextlib.contextmanager
def executor_from_args(args: argparse.Namespace) -> Iterator[Executor | None]:
    """The executor that ``--workers``, ``--scheduler`` or ``--threads`` ask for (None: the
    work runs in this thread), open for the block.

    ``--workers N`` starts a ``distributed.LocalCluster`` of N single-threaded worker processes
    and a client; ``--scheduler`` connects a client to a running cluster. The block gets the
    client's ``get_executor(pure=False)``, the ``concurrent.futures.Executor`` that every
    privopt API with ``executor=`` takes. On leaving the block, normally, on an error or on
    SIGINT/SIGTERM (both raise in the main thread), the client is closed and a cluster started
    here is stopped.

    Raises
    ------
    InvalidInput
        ``--connect-timeout`` without ``--scheduler``; Dask not installed (names the extra).
    ConnectionError
        The scheduler does not answer within the timeout (names its address).
    """
    threads = getattr(args, "threads", None)
    if threads is not None:
        _connect_timeout(args)
        pool = ThreadPoolExecutor(threads)  # HiGHS releases the GIL
        try:
            yield pool
        finally:  # an interrupted run does not wait for the queued work
            pool.shutdown(wait=False, cancel_futures=True)
        return
    with dask_client_from_args(args) as client:
        # pure=False: privopt's tasks never repeat one another, so Dask need not hash every
        # task's arguments to find repeats (milliseconds per task for a part of a table)
        yield None if client is None else client.get_executor(pure=False)


@contextlib.contextmanager
def dask_client_from_args(args: argparse.Namespace) -> Iterator[Any | None]:
    """The Dask client that ``--workers`` or ``--scheduler`` ask for (None without either),
    open for the block and current in it: a Dask collection computed in the block (e.g. the
    passes of a DPM fit over a Dask array) runs on that cluster.

    The cluster is started, connected and stopped as by :func:`executor_from_args`, with the
    same errors.
    """
    workers = getattr(args, "workers", None)
    address = getattr(args, "scheduler", None)
    timeout = _connect_timeout(args)
    if workers is None and address is None:
        yield None
        return
    with _dask_client(workers, address, timeout) as client, client.as_current():
        yield client


def _connect_timeout(args: argparse.Namespace) -> float | None:
    """``--connect-timeout`` (None when not given), refused without ``--scheduler``."""
    timeout = getattr(args, "connect_timeout", None)
    if timeout is not None and getattr(args, "scheduler", None) is None:
        raise InvalidInput("--connect-timeout is only used with --scheduler")
    return timeout


@contextlib.contextmanager
def _dask_client(workers: int | None, address: str | None, timeout: float | None) -> Iterator[Any]:
    """A client of a new local cluster (``workers`` processes) or of the one at ``address``."""
    dask = _optional.distributed()
    if address is None:
        print(f"starting a local Dask cluster of {workers} worker processes", file=sys.stderr)
        with (
            dask.LocalCluster(
                n_workers=workers,
                threads_per_worker=1,  # one solve per process: no oversubscription
                processes=True,
                dashboard_address=None,
            ) as cluster,
            dask.Client(cluster) as client,
        ):
            yield client
        return
    wait = CONNECT_TIMEOUT_S if timeout is None else timeout
    try:
        client = dask.Client(address, timeout=wait)
    except (OSError, TimeoutError) as exc:
        raise ConnectionError(
            f"cannot reach the Dask scheduler at {address} within {wait:g} s "
            f"({one_line(str(exc)) if str(exc) else type(exc).__name__})"
        ) from None
    except ValueError as exc:  # an address Dask cannot parse
        raise InvalidInput(f"--scheduler: {address!r} is not a Dask address: {exc}") from None
    with client:
        yield client


def _jsonable(value: Any) -> Any:
    return jsonable(value)  # JSON has no NaN/inf: they become null


def _scalar(value: Any) -> Any:
    try:
        return _jsonable(float(value))  # Fraction, Decimal, 0-d arrays...
    except (TypeError, ValueError):
        return str(value)


#: The keys every summary begins with, in this order (docs/cli.rst).
SUMMARY_KEYS = (
    "command",
    "mechanism",
    "guarantee",
    "guarantee_text",
    "status",
    "relative_gap",
    "out",
    "files",
    "time_s",
)


def release_summary(command: str, release: Any, out: str | Path, **specific: Any) -> dict[str, Any]:
    """The summary of a subcommand that published ``release`` into the folder ``out``.

    Every subcommand's summary has the same first keys (:data:`SUMMARY_KEYS`): the command, the
    release's own :meth:`~privopt.release.Release.summary` (mechanism, guarantee as a dict and
    in plain words, status, relative gap, time in seconds), the output folder and the files
    written in it (sorted paths); then the release's own fields and ``specific``.
    """
    own = dict(release.summary())
    folder = Path(out)
    # The folder's own marker (a dot file) is privopt's bookkeeping, not a result.
    written = folder.rglob("*") if folder.is_dir() else ()
    files = sorted(str(p) for p in written if p.is_file() and not p.name.startswith("."))
    shared = {"command": command, "out": str(folder), "files": files}
    head = {key: shared[key] if key in shared else own.pop(key, None) for key in SUMMARY_KEYS}
    return {**head, **own, **specific}


def emit_summary(summary: Mapping[str, Any]) -> None:
    """Print ``summary`` as one line of JSON on the command's stdout.

    Non-finite floats become ``null`` and numpy values plain numbers, so the line always
    parses (e.g. with ``jq``). Outside :func:`main` it goes to ``sys.stdout``.
    """
    if not isinstance(summary, Mapping):
        raise InvalidInput(f"summary must be a mapping (one JSON object), got {summary!r}")
    run_state.summary = dict(summary)
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
