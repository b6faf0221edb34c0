"""An LR-Geo user talking to a ``privopt geo serve`` server over HTTP (``privopt geo client``).

The client holds the public map and its true location, which never leaves it. Per report:

1. ``GET /setup`` (once): the public parameters, the map fingerprint (checked against the local
   map) and the snap table of the server's CR grid;
2. LR set N_m and the CR request around a v_a drawn from N_m; ``POST /cr`` → β;
3. estimates ĉ, c̃ and the upload (distances and ĉ, no location id); ``POST /upload`` → Z_{N_m},
   solved together with the other users of its batch;
4. the reply is checked locally — rows = N_m, row-stochastic, (ε, γ)-Geo-Ind between its rows
   to 1e-9 — and the reported location is drawn from the row of the true location.

Only the standard library speaks HTTP here (``urllib``): a client needs no server extra.

Examples
--------
Against a running server (``privopt geo serve --grid 10x10 --port 8765``)::

    from privopt.geo import grid_geography
    from privopt.geo.http_client import GeoServiceClient

    geo = grid_geography(10, 10, 0.5, metric="haversine", road_factor=1.2)
    client = GeoServiceClient("http://127.0.0.1:8765", geo)
    report = client.obfuscate(42)        # the true location stays here
    report.reported                      # the location to send to the task platform
"""

from __future__ import annotations

import http.client
import json
import secrets
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

import numpy as np

from privopt._validation import check_positive
from privopt.dp import as_random_source
from privopt.errors import InvalidInput, PrivacyViolation, SolverError
from privopt.geo.client import LRGeoClient
from privopt.geo.clr import geo_ind_edges
from privopt.geo.geography import Geography, check_geography
from privopt.geo.messages import (
    CRBlock,
    CRRequest,
    ErrorMessage,
    Setup,
    Upload,
    UserMatrix,
    parse_json,
)
from privopt.perturbation.matrix import PerturbationMatrix, Verification, verify_matrix

__all__ = ["GeoServiceClient", "Obfuscation"]


@dataclass
class Obfuscation:
    """One report: the sampled location and how it was obtained.

    Attributes
    ----------
    reported : index in V of the reported location (drawn locally from Z's true row).
    matrix : Z_{N_m} as a :class:`PerturbationMatrix` (``row_index`` = N_m, v_m first;
        ``expected_loss`` = the server's ĉ-cost of this user's rows, km; ``summary["batch"]``
        the certificate of the batch's solve).
    reply : the server's ``user_matrix`` message (this user's matrix and Geo-Ind check, and
        ``reply.batch``: its batch's status, certified gap and size).
    request, upload : what was sent to the server (no location id in either).
    verification : the local Geo-Ind check of ``matrix``.
    """

    reported: int
    matrix: PerturbationMatrix
    reply: UserMatrix
    request: CRRequest
    upload: Upload
    verification: Verification


class GeoServiceClient:
    """A user's side of the HTTP protocol on a public map.

    Parameters
    ----------
    url : the server, e.g. ``"http://127.0.0.1:8765"``.
    geography : the public map (must have the server's fingerprint).
    timeout : seconds per HTTP request (an upload waits for its batch's solve).
    request_rows : ``"lr"`` or ``"circle"`` (see :class:`~privopt.geo.LRGeoClient`).

    Raises
    ------
    InvalidInput
        The server refuses (4xx) or works on another map.
    SolverError
        The server failed (5xx).
    OSError
        The server cannot be reached (``ConnectionError``) or does not answer within
        ``timeout`` (``TimeoutError``); the message names the server.
    """

    def __init__(
        self, url: str, geography: Geography, *, timeout: float = 600.0, request_rows: str = "lr"
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise InvalidInput(f"url must start with http:// or https://, got {url!r}")
        check_geography("geography", geography)
        self.url, self.timeout = url.rstrip("/"), check_positive("timeout", timeout)
        self.setup = Setup.from_json(self._call("GET", "/setup"))
        if self.setup.map_fingerprint != geography.fingerprint():
            raise InvalidInput(
                f"the server at {self.url} works on another map ({self.setup.n_locations} "
                f"locations, fingerprint {self.setup.map_fingerprint[:12]}…) than the local one "
                f"({geography.n_locations} locations): use the same map, -K and sample seed"
            )
        self.geography, self.params = geography, self.setup.params
        self.client = LRGeoClient(
            geography, self.params, self.setup.snaps(), request_rows=request_rows
        )

    def obfuscate(self, location: int, *, rng: Any = None, user: str | None = None) -> Obfuscation:
        """Report an obfuscated location for a user truly at ``location`` (index in V).

        ``rng``: randomness of v_a and of the report (None: the OS CSPRNG; a seed only for
        tests). ``user``: the opaque id sent with the upload (default: random).

        Raises
        ------
        PrivacyViolation
            The server's matrix fails the local Geo-Ind check.
        """
        source = as_random_source("secure" if rng is None else rng)
        state = self.client.start(location, source)
        block = CRBlock.from_json(self._call("POST", "/cr", state.request.to_json()))
        self.client.estimate(state, block)
        up = self.client.upload(state, secrets.token_hex(8) if user is None else user)
        reply = UserMatrix.from_json(self._call("POST", "/upload", up.to_json()))
        if reply.user != up.user or reply.matrix.shape != up.cost.shape:
            raise InvalidInput(
                f"the server answered for user {reply.user!r} with shape {reply.matrix.shape}; "
                f"expected {up.user!r} and {up.cost.shape}"
            )
        p = self.params
        edges = geo_ind_edges(up.pair_distances, p.gamma)
        check = verify_matrix(reply.matrix, edges, p.epsilon)
        if not check.ok(1e-9):
            raise PrivacyViolation(f"the server's matrix is not (ε, γ)-Geo-Ind: {check}")
        pm = PerturbationMatrix(
            reply.matrix,
            p.epsilon,
            p.gamma,
            reply.objective,
            method="lr-geo",
            output_index=np.arange(self.geography.n_locations),
            row_index=state.lr_set,
            info={"batch": reply.batch.to_json()},
            edges=edges,  # the pairs the guarantee covers: the saved matrix verifies alone
            kind="(epsilon, gamma)-Geo-Ind",
        )
        reported = pm.sample(int(location), source)
        return Obfuscation(reported, pm, reply, state.request, up, check)

    def health(self) -> dict[str, Any]:
        """The server's ``health`` message (request counters, batches)."""
        return dict(self._call("GET", "/health"))

    def _call(self, method: str, path: str, message: dict[str, Any] | None = None) -> Any:
        data = None if message is None else json.dumps(message).encode("utf-8")
        request = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as err:
            text = _error_text(err.read())
            if 400 <= err.code < 500:
                raise InvalidInput(f"the server refused {path} ({err.code}): {text}") from None
            raise SolverError(f"the server failed on {path} ({err.code}): {text}") from None
        except (urllib.error.URLError, http.client.HTTPException, OSError) as err:
            # What urllib raises when no reply comes back, as one sentence naming the server.
            reason = getattr(err, "reason", None) or err
            if isinstance(reason, TimeoutError):
                raise TimeoutError(
                    f"the server at {self.url} did not answer {path} within {self.timeout:g} s"
                ) from None
            text = getattr(reason, "strerror", None) or str(reason) or type(err).__name__
            raise ConnectionError(
                f"cannot reach the server at {self.url} ({path}): {text}"
            ) from None
        try:
            return parse_json(body)
        except InvalidInput as exc:
            raise InvalidInput(f"the server's reply to {path} is not usable JSON: {exc}") from None


def _error_text(body: bytes) -> str:
    try:
        return ErrorMessage.from_json(body).error
    except InvalidInput:
        return body[:200].decode("utf-8", "replace")
