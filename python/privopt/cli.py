"""The ``privopt`` command line: the dispatcher, above every mechanism.

Subcommands are registered in :data:`SUBCOMMANDS`: each entry is a ``"module:function"`` path of
a function ``register(subparsers)`` that adds one subparser and sets ``func`` on it, so that a
mechanism's CLI lives beside the mechanism and this file only lists it. A mechanism's ``cli.py``
never imports this module: what subcommands share (the summary, the outputs, the refusals, the
common options, the exit codes) is :mod:`privopt._cli_support`, re-exported here.

Every subcommand shares one contract (docs/errors.md):

- stdout carries one JSON summary (:func:`emit_summary`) and nothing else: while a command runs,
  everything else printed to stdout, by Python or by a C library such as HiGHS, goes to stderr;
- an expected failure ends in one line on stderr, ``privopt <command>: error: ...``, and an exit
  code (:data:`EXIT_USAGE` for bad usage or input, argparse's own errors included,
  :data:`EXIT_FAILURE` for a solver or runtime failure, 130 / 143 on SIGINT / SIGTERM);
  ``--debug`` adds the traceback;
- outputs are checked and locked before anything is read (:func:`reserve_outputs`), then
  written atomically and published together (:mod:`privopt._atomic`); once they are published,
  SIGINT / SIGTERM no longer interrupt: the run completes and says so on stderr;
- ``--force`` replaces an earlier output, ``--quiet`` turns progress bars off, ``-v`` lets the
  solver log (to stderr).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import signal
import sys
import time
import traceback
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn, TextIO

import privopt
from privopt._arguments import seed
from privopt._cli_support import (
    EXIT_FAILURE,
    EXIT_SIGINT,
    EXIT_SIGTERM,
    EXIT_UNCERTIFIED,
    EXIT_USAGE,
    Terminated,
    add_common_options,
    add_out_option,
    emit_summary,
    one_line,
    refuse_ignored_options,
    reserve_outputs,
    run_state,
)
from privopt._progress import progress_scope
from privopt.certify import CERTIFIED_STATUS
from privopt.demo import DEMO_PRIVACY, run_demo
from privopt.errors import InvalidInput, PrivacyBudgetExceeded, PrivoptError
from privopt.lp.interrupts import interruptible

__all__ = [
    "main",
    "build_parser",
    "emit_summary",
    "reserve_outputs",
    "refuse_ignored_options",
    "SUBCOMMANDS",
    "EXIT_FAILURE",
    "EXIT_USAGE",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "EXIT_UNCERTIFIED",
    "Terminated",
]

#: "module:function" paths of subcommand registrars, in --help order.
SUBCOMMANDS: list[str] = [
    "privopt.cli:_register_demo",
    "privopt.mdp.cli:register",
    "privopt.geo.cli:register",
    "privopt.kanon.cli:register",
    "privopt.census.cli:register",
    "privopt.cluster.cli:register",
]

#: Subcommands whose ``--seed`` seeds privacy noise or secret draws (mdp's seeds a public
#: choice of outputs): using it makes the release reproducible, so they warn.
SEEDED_NOISE_COMMANDS = ("census", "cluster", "geo", "demo")


class _DefaultsFormatter(argparse.HelpFormatter):
    """``--help`` shows every default: "(default: X)" after an option's help, unless the help
    already says what the default is, the option is a switch, or it has no default (its help
    then says what its absence means)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            "default" in text
            or default in (None, False, argparse.SUPPRESS)
            or action.required
            or not action.option_strings
        ):
            return text
        shown = ",".join(map(str, default)) if isinstance(default, (list, tuple)) else default
        return f"{text} (default: {shown})".lstrip()


class _Parser(argparse.ArgumentParser):
    """argparse with the command line's one-line errors (no usage block before them) and every
    default shown in ``--help``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(message)}\n")


def _register_demo(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "demo",
        help="run every mechanism on embedded default data and write a report",
        description="Run every available mechanism on embedded default data (generated, "
        "never downloaded) and write report.md plus PNG plots into --out.",
    )
    add_out_option(p, "demo")
    p.add_argument(
        "--seed",
        type=seed,
        default=0,
        help="seed of every random draw, so that the demo's report is reproducible (the demo "
        "is for trying privopt out, never a private release)",
    )
    p.set_defaults(func=_run_demo)


def _run_demo(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    with reserve_outputs(args) as outputs:
        out = outputs.add(args.out)
        print(f"[demo] privacy parameters chosen by the demo: {DEMO_PRIVACY}", file=sys.stderr)
        with outputs.publish() as staged:
            run_demo(staged[out], seed=args.seed)
    # Where the report is once published (run_demo wrote it into a staging folder).
    print(f"[demo] report written to {out / 'report.md'}", file=sys.stderr, flush=True)
    files = sorted(str(p) for p in out.rglob("*") if p.is_file() and not p.name.startswith("."))
    # The demo releases one thing per mechanism, each under its own guarantee (report.md states
    # each); the summary has the shared keys and says so.
    text = (
        f"every section of report.md states its own guarantee; the demo chooses its privacy "
        f"parameters itself ({DEMO_PRIVACY}) and draws from seed {args.seed}, so it is for "
        "trying privopt out and never a private release"
    )
    emit_summary(
        {
            "command": "demo",
            "mechanism": "demo",
            "guarantee": {
                "kind": "per section",
                "parameters": {},
                "protects": text,
                "seeded": True,
            },
            "guarantee_text": text,
            "status": None,
            "relative_gap": None,
            "out": str(out),
            "files": files,
            "time_s": time.perf_counter() - start,
            "report": str(out / "report.md"),
            "seed": args.seed,
        }
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``privopt`` argument parser: one subcommand per mechanism family."""
    parser = _Parser(
        prog="privopt",
        description="Optimal privacy mechanisms by mathematical optimization. Each command "
        "prints one JSON summary on stdout; progress and messages go to stderr. Exit codes: "
        "0 success, 1 solver or runtime failure, 2 bad usage or input, 3 not certified optimal "
        "with --require-optimal, 130/143 interrupted.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    parser.add_argument(
        "--verbose",
        action="store_true",
        dest="version_verbose",
        help="with --version: also the C++ core build, the dependencies and the platform "
        "(what a bug report needs; same as privopt.show_versions())",
    )
    add_common_options(parser, top=True)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for path in SUBCOMMANDS:
        module, func = path.split(":")
        getattr(importlib.import_module(module), func)(subparsers)
    for sub in subparsers.choices.values():
        add_common_options(sub)
    _name_commands(parser)
    return parser


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps its subcommands only there
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.values()


def _name_commands(parser: argparse.ArgumentParser) -> None:
    """Set ``command_name`` ("mdp", "geo serve", ...) on every (nested) subcommand, the name its
    error lines carry."""
    for sub in _subparsers(parser):
        sub.set_defaults(command_name=sub.prog.removeprefix("privopt ").strip())
        _name_commands(sub)


def _given_options(argv: Sequence[str] | None) -> set[str]:
    """The ``dest`` of every option written on the command line ``argv`` (argparse keeps only
    the values, so an option given with its default value looks as if it were not given):
    ``argv`` parsed again with every default suppressed."""
    bare = build_parser()
    parsers = [bare]
    while parsers:
        p = parsers.pop()
        parsers.extend(_subparsers(p))
        p._defaults.clear()  # set_defaults: func, command_name
        for action in p._actions:
            action.default = argparse.SUPPRESS
    return set(vars(bare.parse_known_args(argv)[0]))


def _parser_of(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The (nested) subcommand parser called ``name``, else ``parser`` itself."""
    for sub in _subparsers(parser):
        if sub.prog == f"privopt {name}":
            return sub
        found = _parser_of(sub, name)
        if found is not sub:
            return found
    return parser


def _on_signal(signum: int, frame: Any) -> None:
    if run_state.published:  # the release is complete: a signal cannot undo it, only be noted
        run_state.late_signal = signum
        return
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated()


@contextlib.contextmanager
def _signals_interrupt(*, keep_after_publication: bool) -> Iterator[None]:
    """SIGINT / SIGTERM raise KeyboardInterrupt / :class:`Terminated` until the run's outputs
    are published, and are only recorded after that. An ignored signal stays ignored (a
    background job of a shell ignores SIGINT). ``keep_after_publication``: once outputs were
    published, ignore both signals when the block ends: the process is about to exit, and a
    signal during the interpreter's shutdown must not turn success into a kill (Python puts
    the default action back for every signal with a Python handler as it shuts down, so a
    recording handler would not survive until the exit)."""
    previous: dict[int, Any] = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            if signal.getsignal(sig) != signal.SIG_IGN:
                previous[sig] = signal.signal(sig, _on_signal)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        ignore = keep_after_publication and bool(run_state.published)
        for signum, old in previous.items():
            kept = signal.SIG_IGN if ignore else old if old is not None else signal.SIG_DFL
            signal.signal(signum, kept)


def _fd(stream: Any) -> int | None:
    try:
        return int(stream.fileno())
    except (AttributeError, ValueError, io.UnsupportedOperation):
        return None


@contextlib.contextmanager
def _stdout_for_results_only() -> Iterator[TextIO]:
    """Divert stdout (Python's and file descriptor 1) to stderr; yield the results stream."""
    sys.stdout.flush()
    real_fd = _fd(sys.stdout) == 1
    saved = os.dup(1) if _fd(sys.__stdout__) is not None else None
    results: TextIO = (
        os.fdopen(os.dup(1), "w", encoding="utf-8", closefd=True) if real_fd else sys.stdout
    )
    previous = run_state.results
    run_state.results = results
    try:
        if saved is not None:
            os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield results
    finally:
        sys.stderr.flush()
        results.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)
        if real_fd:
            results.close()
        run_state.results = previous


def _classify(exc: BaseException) -> tuple[int, str]:
    """(exit code, message) of a failure; the message is one line."""
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_SIGINT, "interrupted (SIGINT); no output written, any earlier output kept"
    if isinstance(exc, Terminated):
        return EXIT_SIGTERM, "terminated (SIGTERM); no output written, any earlier output kept"
    if isinstance(exc, PrivoptError):
        usage = isinstance(exc, (ValueError, PrivacyBudgetExceeded))
        return (EXIT_USAGE if usage else EXIT_FAILURE), str(exc)
    if isinstance(exc, OSError):
        where = f": {exc.filename!r}" if exc.filename else ""
        text = exc.strerror or str(exc)
        user = isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError))
        return (EXIT_USAGE if user else EXIT_FAILURE), f"{text}{where}"
    if isinstance(exc, (ValueError, UnicodeError)):
        # Outside privopt's own checks, a ValueError here comes from parsing an input file.
        return EXIT_USAGE, f"bad input: {exc}"
    return EXIT_FAILURE, (
        f"internal error ({type(exc).__name__}: {exc}); please report it, --debug shows where"
    )


def _warn_if_seeded(args: argparse.Namespace) -> None:
    """One stderr line when ``--seed`` makes a command's noise reproducible."""
    seed = getattr(args, "seed", None)
    if args.command in SEEDED_NOISE_COMMANDS and seed is not None:
        print(
            f"privopt {args.command_name}: warning: --seed {seed} makes the random draws "
            "reproducible by anyone who knows the seed: for testing only, not a private release",
            file=sys.stderr,
        )


@contextlib.contextmanager
def _warnings_as_lines(command_name: str, debug: bool) -> Iterator[None]:
    """Warnings raised during a run as one stderr line each, ``privopt <command>: warning:
    ...``: Python's default display adds the file and source line of whoever called the
    warning's origin, which for a command is the console script itself (``--debug`` keeps it)."""
    if debug:
        yield
        return

    def show(message: Any, category: Any, filename: str, lineno: int, *_: Any, **__: Any) -> None:
        origin = category.__module__.partition(".")[0]
        kind = "" if origin == "privopt" else f" ({category.__name__})"
        print(
            f"privopt {command_name}: warning{kind}: {one_line(str(message))}",
            file=sys.stderr,
        )

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``privopt`` console script; returns the process exit code.

    ``argv``: the arguments (default: the process's own, ``sys.argv[1:]``). Without ``argv``
    main() runs as the process's command, so after a published run SIGINT and SIGTERM stay
    harmless until the process exits.
    """
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # named after the subcommand it was given to, as its other errors are
            _parser_of(parser, getattr(args, "command_name", "")).error(
                f"unrecognized arguments: {' '.join(extra)}"
            )
    except SystemExit as stop:
        if stop.code == EXIT_USAGE:  # a bad option: its one line is printed
            return EXIT_USAGE
        raise  # --help
    if args.version:
        print(f"privopt {privopt.__version__}")
        if args.version_verbose:
            privopt.show_versions()
        parser.exit()
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    args.given_options = _given_options(argv)
    for name in ("force", "quiet", "verbose", "debug", "require_optimal"):
        setattr(args, name, bool(getattr(args, name, False)))
    try:
        args.progress = _progress_wanted(args)
    except InvalidInput as exc:
        print(f"privopt {args.command_name}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    _warn_if_seeded(args)
    run_state.published.clear()
    run_state.late_signal = None
    # interruptible() inside _signals_interrupt(): a signal during a HiGHS run stops the run,
    # then the handlers in place (KeyboardInterrupt, Terminated) end the command as before.
    with (
        _stdout_for_results_only(),
        _warnings_as_lines(args.command_name, args.debug),
        _signals_interrupt(keep_after_publication=argv is None),
        interruptible(log=args.verbose),
        progress_scope(args.progress),
    ):
        try:
            run_state.summary = None
            code = int(args.func(args) or 0)
            if code == 0 and args.require_optimal:
                code = _require_optimal(args.command_name)
        except BaseException as exc:  # every failure ends in one line
            if isinstance(exc, SystemExit):
                raise
            code, message = _classify(exc)
            if run_state.published:
                message += f" (after its output was published completely: {_shown_published()})"
            if args.debug:
                traceback.print_exc(file=sys.stderr)
            print(f"privopt {args.command_name}: error: {one_line(message)}", file=sys.stderr)
        if run_state.late_signal is not None:
            name = signal.Signals(run_state.late_signal).name
            print(
                f"privopt {args.command_name}: note: {name} arrived after the output was "
                "published; "
                f"the run completed: {_shown_published()}",
                file=sys.stderr,
            )
        return code


def _progress_wanted(args: argparse.Namespace) -> bool:
    """Whether progress bars show: ``--progress on``/``off``, ``--quiet`` (off), else only when
    stderr is a terminal, so that a log file gets no carriage-return debris."""
    choice = getattr(args, "progress", "auto")
    if args.quiet and choice == "on":
        raise InvalidInput("--quiet and --progress on contradict each other; give one")
    if args.quiet or choice == "off":
        return False
    if choice == "on":
        return True
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


def _require_optimal(command: str) -> int:
    """:data:`EXIT_UNCERTIFIED` and one stderr line when the run's summary states a status other
    than certified optimal (a release that optimizes nothing, status null, passes)."""
    summary = run_state.summary or {}
    status = summary.get("status")
    if status is None or status == CERTIFIED_STATUS:
        return 0
    gap = summary.get("relative_gap")
    shown = "" if gap is None else f", proven relative gap {gap:.3g}"
    print(
        f"privopt {command}: error: --require-optimal: the result is {status!r}{shown}, not "
        "certified optimal (its outputs are written; the summary on stdout says the same)",
        file=sys.stderr,
    )
    return EXIT_UNCERTIFIED


def _shown_published() -> str:
    return ", ".join(str(p) for p in run_state.published)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
