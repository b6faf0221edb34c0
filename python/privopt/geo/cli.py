"""``privopt geo``: LR-Geo for M users; ``privopt geo serve`` / ``privopt geo client``.

``privopt geo`` simulates the whole exchange in one process on the Rome grid or a generated
grid and writes into ``--out`` (checked first, written as a unit) the release
(``release.json`` and ``data.npz``: :func:`privopt.load` reads the folder back as an
:class:`~privopt.geo.LRGeoResult`), one ``user<m>.npz`` per user (that user's
:class:`~privopt.perturbation.PerturbationMatrix` with its LR rows, loadable alone),
``report.md`` and ``result.json``; stdout carries the JSON summary only (the release's summary
and the run's evaluation), progress goes to stderr. Every parameter of
:class:`~privopt.geo.GeoParams` is a flag.

``privopt geo serve`` runs the server as an HTTP JSON service (:mod:`privopt.geo.http_server`,
extra ``privopt[server]``) and prints one JSON line with its URL once it listens;
``privopt geo client`` reports one obfuscated location through such a server
(:mod:`privopt.geo.http_client`) and prints it as JSON; the true location stays local.
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from privopt._arguments import (
    MAX_COUNT,
    Integer,
    Real,
    RealList,
    count,
    nonnegative,
    positive,
    seed,
)
from privopt._cli_support import (
    Terminated,
    add_alias,
    add_common_options,
    add_epsilon_option,
    add_executor_options,
    add_gap_option,
    add_out_option,
    add_seed_option,
    add_time_limit_option,
    dask_client_from_args,
    emit_summary,
    executor_from_args,
    executor_rules,
    refuse_ignored_options,
    release_summary,
    require_options,
    reserve_outputs,
)
from privopt._inputs import parse_number
from privopt._validation import check_int
from privopt.errors import InvalidInput
from privopt.geo import CostReferenceTable, GeoParams, grid_geography, load_rome_grid, run_lrgeo
from privopt.geo.adversary import ADVERSARY_LOSSES
from privopt.geo.geography import draw_indices
from privopt.geo.http_client import GeoServiceClient
from privopt.geo.http_counters import ServiceCounters
from privopt.geo.report import BASELINES, baseline_rows, write_report
from privopt.geo.tradeoff import sweep_epsilon
from privopt.perturbation.tradeoff import MAX_SWEEP_EPSILONS

__all__ = ["register"]

#: Most locations a generated --grid may have (a million take about 0.5 GB and 3 s to build;
#: beyond that, ask for a map with -K sampled locations instead).
MAX_GRID_LOCATIONS = 1_000_000
#: Most server processes of one ``geo serve`` (--processes).
MAX_SERVER_PROCESSES = 256
#: Largest request body a server accepts, in MiB (--max-body-mb).
MAX_BODY_MB = 1024.0
#: Largest x with e^x a finite double.


_SAMPLE_SEED_HELP = "seed of the K-location sample of the public map (default 0)"


#: A threshold in km where "inf" means none.
_threshold = Real(low=0.0, low_open=True, allow_inf=True)


def _grid(text: str) -> tuple[int, int]:
    """--grid ROWSxCOLS as (rows, cols), refused before anything is allocated if too large."""
    parts = text.lower().split("x")
    try:
        if len(parts) != 2:
            raise argparse.ArgumentTypeError("")
        rows, cols = (count(part) for part in parts)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"must look like ROWSxCOLS with two integers >= 1 (e.g. 20x20), got {text!r}"
        ) from None
    if rows * cols > MAX_GRID_LOCATIONS:
        raise argparse.ArgumentTypeError(
            f"{text} is {rows * cols:,} locations, more than the {MAX_GRID_LOCATIONS:,} a "
            "generated grid may have"
        )
    return rows, cols


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``privopt geo`` (a whole run) and its ``serve`` and ``client`` subcommands."""
    p = subparsers.add_parser(
        "geo",
        help="LR-Geo: locally relevant geo-obfuscation for many users (client/server)",
        description="Run LR-Geo (locally relevant geo-obfuscation) for M users: LR sets, CR table, "
        "cost estimates, "
        "CLR-Geo (Benders or one LP), per-user matrices verified against Geo-Ind. Map: the "
        "Rome 40x40 grid (--rome DIR) or a generated grid (default). 'privopt geo serve' and "
        "'privopt geo client' run the server and a user over HTTP.",
    )
    _map_options(p)
    _param_options(p, parent=True)
    p.add_argument("-M", "--users", type=count, default=4, help="number of users M")
    _solver_options(p)
    p.add_argument(
        "--baselines",
        type=_baseline_list,
        default=None,
        help="comma list of: lp, lp-inf, constopt, expmech, laplace, none (default: expmech; "
        "with --sweep-epsilon, expmech and laplace)",
    )
    p.add_argument(
        "--sweep-epsilon",
        type=RealList(positive, MAX_SWEEP_EPSILONS),
        metavar="E1,E2,...",
        help="instead of one run at --epsilon: run LR-Geo at each ε of the comma list (1/km) "
        "for the same users and compare cost and the Bayes adversary's error with the "
        "baselines (sweep.csv, plots)",
    )
    p.add_argument(
        "--adversary-loss",
        choices=ADVERSARY_LOSSES,
        default="metric",
        help="the adversary's error: straight-line km (metric) or km driven on the road "
        "network (road: the road-aware adversary)",
    )
    p.add_argument("--sample-seed", type=seed, default=0, help=_SAMPLE_SEED_HELP)
    add_seed_option(p, "the draws (targets, users, each client's v_a, the Laplace baseline)")
    add_executor_options(
        p,
        "a run's Benders subproblems (with --sweep-epsilon: the ε values)",
        threads="those subproblems or ε values",
    )
    add_out_option(p, "geo")
    p.set_defaults(func=_run)
    nested = p.add_subparsers(dest="geo_command", metavar="{serve,client}")
    _register_serve(nested)
    _register_client(nested)


def _map_options(p: argparse.ArgumentParser, *, sample_seed: bool = False) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--rome", help="directory with the LR-Geo Rome grid CSV files")
    src.add_argument(
        "--grid", type=_grid, default="20x20", help="generated ROWSxCOLS grid (default 20x20)"
    )
    p.add_argument("--cell-km", type=positive, default=0.5, help="generated grid cell size (km)")
    p.add_argument("--locations", type=count, help="sample this many locations K (default: all)")
    add_alias(p, "-K", "locations", type=count)
    if sample_seed:
        p.add_argument("--sample-seed", type=seed, default=0, help=_SAMPLE_SEED_HELP)


def _param_options(p: argparse.ArgumentParser, *, parent: bool = False) -> None:
    add_epsilon_option(p, "ε in 1/km, Geo-indistinguishability", parent=parent)
    p.add_argument("--gamma", type=_threshold, default=0.5, help="Geo-Ind threshold γ (km, or inf)")
    p.add_argument("--gamma-graph", type=_threshold, help="LR-search graph threshold (default γ)")
    p.add_argument(
        "--lr-radius", type=Real(low=0.0, allow_inf=True), default=20.0, help="Γ (km, or inf)"
    )
    p.add_argument("--r-obf", type=nonnegative, default=4.5, help="obfuscation radius (km)")
    p.add_argument("--r-exp", type=nonnegative, default=4.0, help="exponential radius (km)")
    p.add_argument(
        "--lr-max-size",
        type=Integer(low=0, high=MAX_COUNT),
        default=20,
        help="L; 0 for the paper-literal N_m",
    )
    p.add_argument("--eps-d-cap", type=_threshold, default=25.0, help="drop pairs with ε·d above")
    p.add_argument("--cr-cell-km", type=positive, default=0.1, help="CR-table cell size s (km)")
    p.add_argument("--targets", type=count, default=20, help="number of random targets")
    p.add_argument("--haversine-correction", action="store_true", help="paper-literal B.1")
    p.add_argument(
        "--anchor-locations",
        action="store_true",
        help="CR table: a cell holding a location keeps it as its point (exact cost estimates)",
    )


def _solver_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--method",
        default="auto",
        choices=["auto", "benders", "rowgen", "lp"],
        help="how CLR-Geo is solved: benders (decomposition), rowgen (one LP, rows added as "
        "needed), lp (one LP, all rows) or auto (chosen by size)",
    )
    add_gap_option(p, 1e-6)
    add_time_limit_option(p, "each CLR-Geo solve (on a server: per batch)")


def _nested_parser(nested: argparse._SubParsersAction, name: str, **kw: Any) -> Any:
    q = nested.add_parser(name, **kw)
    add_common_options(q)  # --debug, --force, --quiet, --verbose as on every command
    return q


def _register_serve(nested: argparse._SubParsersAction) -> None:
    q = _nested_parser(
        nested,
        "serve",
        help="run the LR-Geo server as an HTTP JSON service (extra privopt[server])",
        description="Hold the map and the CR table, answer CR requests (POST /cr) and solve "
        "CLR-Geo for batches of uploads (POST /upload, one solve per batch); GET /setup gives "
        "clients the public parameters. Prints one JSON line with the URL once listening; "
        "stops on SIGINT/SIGTERM.",
    )
    _map_options(q, sample_seed=True)
    _param_options(q)
    _solver_options(q)
    q.add_argument(
        "--seed",
        type=seed,
        default=None,
        help="seed of the server's target draw: reproducible, for testing only; default: the "
        "OS CSPRNG",
    )
    q.add_argument("--host", default="127.0.0.1", help="address to listen on")
    q.add_argument(
        "--port", type=Integer(low=0, high=65535), default=8765, help="port (0: any free port)"
    )
    q.add_argument("--max-batch", type=count, default=64, help="most uploads per CLR-Geo solve")
    q.add_argument(
        "--batch-window", type=nonnegative, default=0.25, help="seconds a batch stays open (s)"
    )
    q.add_argument(
        "--max-body-mb",
        type=Real(low=0.0, low_open=True, high=MAX_BODY_MB),
        default=32.0,
        help="largest request body (MiB)",
    )
    q.add_argument("--max-pending", type=count, default=4096, help="most uploads waiting")
    q.add_argument(
        "--header-timeout",
        type=positive,
        default=10.0,
        help="seconds a connection may wait for a request's complete headers, from its "
        "opening or the previous reply (also the idle keep-alive time; default 10)",
    )
    q.add_argument(
        "--body-timeout",
        type=positive,
        default=60.0,
        help="seconds to receive a whole request body; later: 408 (default 60)",
    )
    q.add_argument(
        "--max-connections",
        type=count,
        default=1024,
        help="most connections open at once; more get 503 (default 1024)",
    )
    q.add_argument(
        "--processes",
        type=Integer(low=1, high=MAX_SERVER_PROCESSES),
        default=1,
        metavar="P",
        help="server processes on the one port, each decoding, checking and solving the "
        "uploads it receives (batches of its own); the limits above hold per process, "
        "--threads per process, --workers / --scheduler is one cluster for all (default 1)",
    )
    add_executor_options(
        q, "each batch's Benders subproblems", threads="each batch's Benders subproblems"
    )
    q.set_defaults(func=_serve)


def _register_client(nested: argparse._SubParsersAction) -> None:
    q = _nested_parser(
        nested,
        "client",
        help="report an obfuscated location through an LR-Geo server",
        description="Build the CR request and the upload from a true location on the local "
        "map, receive this user's matrix, check it and sample the reported location locally "
        "(the true location never leaves this process). Prints the report as JSON.",
    )
    q.add_argument("--server", required=True, help="the server's URL, e.g. http://127.0.0.1:8765")
    _map_options(q, sample_seed=True)
    where = q.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--location", type=Integer(low=0, high=MAX_COUNT), help="true location (index in V)"
    )
    where.add_argument("--point", help="true position LAT,LON (the nearest location is used)")
    q.add_argument(
        "--seed",
        type=seed,
        help="seed of the draws (v_a and the reported location): reproducible, for testing "
        "only, since it reveals the report's noise; default: the OS CSPRNG",
    )
    q.add_argument(
        "--request-rows",
        default="lr",
        choices=["lr", "circle"],
        help="rows the client asks the server to price: its LR set only (lr: fast, shows the "
        "LR set to the server) or every location within Γ of its anchor (circle: hides more)",
    )
    q.add_argument("--timeout", type=positive, default=600.0, help="seconds per HTTP request")
    q.add_argument("--out", help="also save the matrix (.npz; it names the LR set)")
    q.set_defaults(func=_client)


def _params(args: argparse.Namespace) -> Any:
    """The run's GeoParams; a sweep starts at its first ε (each point sets its own)."""
    return GeoParams(
        epsilon=(
            args.epsilon if getattr(args, "sweep_epsilon", None) is None else args.sweep_epsilon[0]
        ),
        gamma=args.gamma,
        gamma_graph=args.gamma_graph,
        lr_radius=args.lr_radius,
        r_obf=args.r_obf,
        r_exp=args.r_exp,
        lr_max_size=args.lr_max_size or None,
        eps_d_cap=args.eps_d_cap,
        cr_cell_km=args.cr_cell_km,
        haversine_correction=args.haversine_correction,
    )


def _baseline_list(text: str) -> str:
    """An argparse ``type``: a comma list of baseline names, checked before anything runs."""
    unknown = [b for b in text.split(",") if b and b not in (*BASELINES, "none")]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown baseline(s) {unknown}; use any of {', '.join(BASELINES)} or none"
        )
    return text


def _geography(args: argparse.Namespace, sample_seed: int | None) -> Any:
    if args.rome:
        geo = load_rome_grid(args.rome)
    else:
        rows, cols = args.grid
        geo = grid_geography(rows, cols, args.cell_km, metric="haversine", road_factor=1.2)
    if args.locations:
        geo = geo.sample(args.locations, seed=sample_seed)
    return geo


def _run(args: argparse.Namespace) -> int:
    sweep = args.sweep_epsilon is not None
    refuse_ignored_options(
        args,
        [
            ("--epsilon", "epsilon", None, not sweep, "one run (without --sweep-epsilon)"),
            *executor_rules(
                sweep or _may_decompose(args), "--method benders or auto, or --sweep-epsilon"
            ),
        ],
    )
    if sweep:
        return _run_sweep(args)
    require_options(args, "--epsilon")
    with reserve_outputs(args, [args.rome]) as outputs:
        out = outputs.add(args.out)
        with outputs.publish() as staged:
            res, evaluation = _compute(args, staged[out])
    emit_summary(release_summary("geo", res, out, **evaluation))
    return 0


def _compute(args: argparse.Namespace, out: Path) -> tuple[Any, dict[str, Any]]:
    """(the release, the run's evaluation), with the release, the users' matrices, the report
    and result.json written into ``out``."""
    params = _params(args)
    geo = _geography(args, args.sample_seed)
    if not 1 <= args.users <= geo.n_locations:
        raise InvalidInput(f"--users must lie in [1, {geo.n_locations}], got {args.users}")
    print(f"[geo] {geo!r}: building the CR table (s = {params.cr_cell_km} km)", file=sys.stderr)
    # Unseeded (the default), every draw comes from the OS CSPRNG; --seed is for testing.
    rng = None if args.seed is None else np.random.default_rng(args.seed)
    table = _cr_table(geo, params, args)
    users = draw_indices(geo.n_locations, args.users, args.seed)
    print(f"[geo] solving CLR-Geo for {args.users} users ({args.method})", file=sys.stderr)
    with executor_from_args(args) as pool:
        res = run_lrgeo(
            geo,
            params,
            users,
            table,
            method=args.method,
            rel_gap=args.gap,
            time_limit=args.time_limit,
            executor=pool,
            rng=rng,
        )
    # The release (privopt.load reads the folder back), and each user's own matrix alone.
    res._write(out)
    for m, pm in enumerate(res.matrices):
        pm.save(out / f"user{m}.npz")
    wanted = [b for b in (args.baselines or "expmech").split(",") if b and b != "none"]
    print(f"[geo] baselines: {', '.join(wanted) or 'none'}", file=sys.stderr)
    base = baseline_rows(res, table, wanted, seed=args.seed)
    seen = res.inference_error(loss=args.adversary_loss)
    # The run's evaluation beside the release's summary: it uses the users' true locations
    # (the real-row cost), the CR table (baselines) and further solves (the relaxed bound).
    evaluation: dict[str, Any] = {
        "params": params.to_json(),
        "real_row_cost_km": res.real_row_cost(),
        "baselines": base,
        # the Bayes adversary holding each user's matrix, uniform prior on its LR set
        "adversary_loss": args.adversary_loss,
        "adversary_error_km": float(np.mean([e.expected_error for e in seen])),
        "true_report_probability": float(np.mean([e.true_report_probability for e in seen])),
    }
    bound = evaluation["relaxed_lower_bound_km"] = res.relaxed_bound()
    # A zero bound (a large ε makes every cost vanish) leaves the ratio undefined: null.
    evaluation["approximation_ratio"] = res.cost() / bound if bound > 0 else None
    summary = {"command": "geo", **res.summary(), **evaluation}
    write_report(res, table, summary, out)
    (out / "result.json").write_text(json.dumps(summary, default=float), encoding="utf-8")
    return res, evaluation


def _run_sweep(args: argparse.Namespace) -> int:
    """``--sweep-epsilon``: LR-Geo and its baselines at each ε for the same users; the table,
    plots and report into --out, the points on stdout."""
    wanted: Any = (
        "auto"
        if args.baselines is None
        else [b for b in args.baselines.split(",") if b and b != "none"]
    )
    with reserve_outputs(args, [args.rome]) as outputs:
        out = outputs.add(args.out)
        params = _params(args)
        for e in args.sweep_epsilon:
            params.with_(epsilon=e)  # an ε the model cannot hold is refused before any work
        geo = _geography(args, args.sample_seed)
        if not 1 <= args.users <= geo.n_locations:
            raise InvalidInput(f"--users must lie in [1, {geo.n_locations}], got {args.users}")
        print(f"[geo] {geo!r}: building the CR table", file=sys.stderr)
        table = _cr_table(geo, params, args)
        users = draw_indices(geo.n_locations, args.users, args.seed)
        with executor_from_args(args) as executor:
            result = sweep_epsilon(
                geo,
                params,
                args.sweep_epsilon,
                users,
                table,
                loss=args.adversary_loss,
                baselines=wanted,
                method=args.method,
                rel_gap=args.gap,
                rng=args.seed,
                executor=executor,
                progress=args.progress,
            )
        with outputs.publish() as staged:
            files = result.write_report(staged[out], "privopt geo --sweep-epsilon")
    emit_summary(
        {
            "command": "geo",
            "mode": "sweep-epsilon",
            "out": str(out),
            "files": files,
            "users": args.users,
            "K": geo.n_locations,
            **result.summary(),
        }
    )
    return 0


def _may_decompose(args: argparse.Namespace) -> bool:
    """Whether the solve may be Benders, the only method whose subproblems fan out (lp and
    rowgen are one LP in this process)."""
    return args.method in ("auto", "benders")


def _serve(args: argparse.Namespace) -> int:
    refuse_ignored_options(args, executor_rules(_may_decompose(args), "--method benders or auto"))
    if args.processes > 1:
        # One cluster for all server processes: each connects its own client to it.
        with dask_client_from_args(args) as client:
            return _serve_with(args, None, _process_executor(args, client))
    with executor_from_args(args) as executor:  # lives as long as the server
        return _serve_with(args, executor)


def _process_executor(args: argparse.Namespace, client: Any) -> Any:
    """What opens each server process's executor (picklable): its own thread pool for
    --threads, its own client of the cluster for --workers / --scheduler, None for neither."""
    if args.threads is None and client is None:
        return None
    address = None if client is None else client.scheduler.address
    options = argparse.Namespace(
        threads=args.threads,
        scheduler=address,
        workers=None,
        connect_timeout=args.connect_timeout if address is not None else None,
    )
    return functools.partial(executor_from_args, options)


def _serve_with(args: argparse.Namespace, executor: Any, process_executor: Any = None) -> int:
    server = _http_server()
    service = _service(args, executor)
    sock = server.bind_socket(args.host, args.port)
    host, port = sock.getsockname()[:2]
    url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    emit_summary(
        {
            "command": "geo serve",
            "url": url,
            "n_locations": service.geography.n_locations,
            "map_fingerprint": service.setup.map_fingerprint,
        }
    )
    print(f"[geo serve] listening on {url} (SIGINT/SIGTERM stops it)", file=sys.stderr)
    try:
        if args.processes > 1:
            _http_processes().serve_processes(
                service.table,
                service.params,
                sock,
                processes=args.processes,
                config=service.config,
                counters=service.counters,
                executor=process_executor,
            )
        else:
            server.serve(service, sock)
    except (KeyboardInterrupt, Terminated):
        pass  # the normal way to stop a server
    finally:
        sock.close()
    h = service.health()
    print(f"[geo serve] stopped: {h['requests']}, {h['batches']} batches solved", file=sys.stderr)
    return 0


def _service(args: argparse.Namespace, executor: Any = None) -> Any:
    """The server's state from the command line: settings checked first, then the map and the
    CR table."""
    server = _http_server()
    config = server.ServiceConfig(
        max_batch=args.max_batch,
        batch_window_s=args.batch_window,
        max_body_bytes=int(args.max_body_mb * 2**20),
        max_pending=args.max_pending,
        header_timeout_s=args.header_timeout,
        body_timeout_s=args.body_timeout,
        max_connections=args.max_connections,
        method=args.method,
        rel_gap=args.gap,
        time_limit=args.time_limit,
    )
    params = _params(args)
    geo = _geography(args, args.sample_seed)
    print(f"[geo serve] {geo!r}: building the CR table", file=sys.stderr)
    table = _cr_table(geo, params, args)
    counters = ServiceCounters(args.processes)
    return server.GeoService(table, params, config, executor=executor, counters=counters)


#: The packages of the server extra, ``privopt[server]``.
SERVER_EXTRA = ("starlette", "uvicorn", "h11")


def _http_server() -> ModuleType:
    """:mod:`privopt.geo.http_server`, imported when ``geo serve`` runs: it needs the server
    extra (Starlette and uvicorn), which nothing else does."""
    return _server_modules()[0]


def _http_processes() -> ModuleType:
    """:mod:`privopt.geo.http_processes` (``geo serve --processes``), imported likewise."""
    return _server_modules()[1]


def _server_modules() -> tuple[ModuleType, ModuleType]:
    try:
        from privopt.geo import http_processes, http_server
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in SERVER_EXTRA:
            raise
        raise InvalidInput("privopt geo serve needs: pip install 'privopt[server]'") from None
    return http_server, http_processes


def _client(args: argparse.Namespace) -> int:
    with reserve_outputs(args, [args.rome]) as outputs:
        out = None
        if args.out is not None:
            if not args.out.endswith(".npz"):
                raise InvalidInput(f"--out must name an .npz file, got {args.out!r}")
            out = outputs.add(args.out, kind="file")
        geo = _geography(args, args.sample_seed)
        if args.point is None:  # checked here: a bad location is refused before any request
            last = geo.n_locations - 1
            location = check_int("location", args.location, minimum=0, maximum=last)
        else:
            location = geo.locate(_latlon(args.point))
        client = GeoServiceClient(
            args.server, geo, timeout=args.timeout, request_rows=args.request_rows
        )
        report = client.obfuscate(location, rng=args.seed)
        if out is not None:
            with outputs.publish() as staged:
                report.matrix.save(staged[out])
    reported = report.reported
    emit_summary(
        {
            "command": "geo client",
            "reported_location": reported,
            "reported_point": None if geo.points is None else geo.points[reported].tolist(),
            "lr_set_size": report.matrix.n_records,
            "expected_cost_km": report.reply.objective,
            "max_geo_ind_violation": report.verification.max_relative_violation,
            "batch": report.reply.batch.to_json(),
            "matrix": None if out is None else str(out),
        }
    )
    return 0


def _latlon(text: str) -> Any:
    try:
        lat, lon = (parse_number(x) for x in text.split(","))
    except ValueError:
        raise InvalidInput(f"--point must look like LAT,LON, got {text!r}") from None
    return np.array([lat, lon])


def _cr_table(geo: Any, params: Any, args: argparse.Namespace) -> Any:
    """The server's cost reference table as the flags ask (targets, cell size, anchoring)."""
    return CostReferenceTable(
        geo,
        args.targets,
        cell_km=params.cr_cell_km,
        rng=args.seed,
        anchor_locations=args.anchor_locations,
    )
