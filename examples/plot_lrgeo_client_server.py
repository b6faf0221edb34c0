"""
LR-Geo as a service: one server, many clients
=============================================

``privopt geo serve`` holds the public map and the cost-reference (CR) table and solves CLR-Geo
for *batches* of users over HTTP/JSON. Each client (:class:`privopt.geo.http_client.
GeoServiceClient`) keeps its true location to itself: it sends a CR request for its locally
relevant rows, uploads their distances and estimated costs, checks the returned matrix is
(ε, γ)-Geo-Ind, and draws its report locally. Uploads arriving within the batch window are
solved together, so the exponential entries of all users in a batch share one y (Thm 4.4).

Here the server runs as a subprocess on a free port, and 12 drivers report at once from a
thread pool. It needs the server extra (``pip install 'privopt[server]'``). The map: the
LR-Geo Rome grid from ``$PRIVOPT_DATA/rome/`` (by default the ``shared/data`` folder beside a
privopt checkout), else a generated 30 × 30 grid of 0.5 km cells, built the same way on both
sides (the client refuses a server whose map has another fingerprint).
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from privopt.geo import grid_geography, load_rome_grid
from privopt.geo.http_client import GeoServiceClient

here = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()
rome = Path(os.environ.get("PRIVOPT_DATA", here.parents[1] / "shared" / "data")) / "rome"
if (rome / "reget_rome_cell_node40x40.csv").is_file():
    geo, map_args = load_rome_grid(rome), ["--rome", str(rome)]
else:
    geo = grid_geography(30, 30, 0.5, metric="haversine", road_factor=1.2)
    map_args = ["--grid", "30x30", "--cell-km", "0.5"]

# ε = 2 per km, γ = 0.5 km; LR sets of 20; free entries within r_exp = 1 km. Batches close
# after 0.3 s or 16 uploads.
serve = [sys.executable, "-m", "privopt", "geo", "serve", *map_args, "--port", "0"]
serve += ["--epsilon", "2", "--gamma", "0.5", "--gamma-graph", "50", "--lr-radius", "20"]
serve += ["--r-exp", "1", "--r-obf", "2", "--lr-max-size", "20", "--targets", "20"]
serve += ["--batch-window", "0.3", "--max-batch", "16"]
log = tempfile.TemporaryFile("w+")  # noqa: SIM115 - the server's stderr for its lifetime; a pipe could fill up
server = subprocess.Popen(serve, stdout=subprocess.PIPE, stderr=log, text=True)
line = server.stdout.readline()  # one JSON line, printed once the server listens
if not line:
    log.seek(0)
    raise RuntimeError(f"the server did not start:\n{log.read()}")
url = json.loads(line)["url"]
print(f"server at {url}")

# %%
# Twelve drivers at random cells ask in two waves of six (the second once the first has its
# reports): the six uploads of a wave arrive within the batch window and share one solve. Each
# call is the whole protocol: CR request, upload, wait for the batch's solve, local check, local
# draw.
try:
    client = GeoServiceClient(url, geo, timeout=120)
    drivers = np.random.default_rng(3).choice(geo.n_locations, 12, replace=False)

    def report(n: int):
        t = time.perf_counter()
        out = client.obfuscate(int(drivers[n]), rng=100 + n)  # a seed only for a repeatable page
        return out, time.perf_counter() - t

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(report, range(6)))  # wave 1
        results += list(pool.map(report, range(6, 12)))  # wave 2
    health = client.health()
finally:
    server.send_signal(signal.SIGTERM)  # the normal way to stop it
    server.wait(timeout=30)
    log.close()

for n, (out, seconds) in enumerate(results):
    b = out.reply.batch  # the solve this driver's matrix came from, shared with its batch
    print(
        f"driver {n:2d}: batch {b.id} of {b.users}, {b.status} (gap {b.relative_gap:.0e}), "
        f"Geo-Ind check {out.verification.n_violated} violations, {seconds:.2f} s"
    )
print(f"batches solved: {health['batches']} of sizes {health['batch_sizes']}")

# %%
# What the drivers report: an arrow from each true cell to its report (a dot where the report
# is the true cell), and how long each driver waited (the batch window plus the solve).
latlon = geo.points
d = geo.distance_rows(drivers)
fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.5), width_ratios=[1.3, 1])
ax.scatter(latlon[:, 1], latlon[:, 0], s=3, c="0.85")
for n, (out, _) in enumerate(results):
    (y0, x0), (y1, x1) = latlon[drivers[n]], latlon[out.reported]
    ax.annotate("", (x1, y1), (x0, y0), arrowprops={"arrowstyle": "->", "color": "tab:red"})
    ax.plot(x0, y0, "k*", ms=8)
    ax.plot(x1, y1, "o", c="tab:red", ms=4)
ax.set(xlabel="longitude (°)", ylabel="latitude (°)", title="true cell (★) → reported cell")
gaps = [d[n, out.reported] for n, (out, _) in enumerate(results)]
waits = [seconds for _, seconds in results]
batch = [out.reply.batch.id for out, _ in results]
bx.bar(range(len(drivers)), waits, color=[f"C{b}" for b in batch])
for n, g in enumerate(gaps):
    bx.text(n, waits[n], f"{g:.1f}", ha="center", va="bottom", fontsize=7)
bx.set(xlabel="driver (colour: batch)", ylabel="wait (s)", title="wait; label: km to the report")
fig.tight_layout()
plt.show()
