"""The Bayes-optimal adversary against LR-Geo users (Shokri et al. 2011; road-aware as in
VehiTrack, 2024): :func:`user_inference_errors`.

Each user's release is a matrix over its LR set N_m (rows) and all locations V (reports). The
adversary is assumed to hold that matrix, hence to know N_m: its prior over the user's true
location is the given prior over V restricted to N_m and renormalised (uniform on N_m by
default), and it guesses any location of V. Its loss is the Geo-Ind metric (``"metric"``: km,
as the guarantee measures) or the travel distance on the road network (``"road"``: km driven
from the guess to the true location, the loss of an attacker who knows the roads).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from privopt._validation import check_instance
from privopt.errors import InvalidInput
from privopt.geo.geography import Geography
from privopt.perturbation.adversary import InferenceError, bayes_inference_error, check_prior

__all__ = ["ADVERSARY_LOSSES", "user_inference_errors", "check_loss"]

#: The adversary's losses on a map: the Geo-Ind metric, or travel distance on the roads.
ADVERSARY_LOSSES = ("metric", "road")


def check_loss(loss: Any) -> str:
    """``loss`` if it is one of :data:`ADVERSARY_LOSSES`, else InvalidInput naming it."""
    if not isinstance(loss, str) or loss not in ADVERSARY_LOSSES:
        raise InvalidInput(f"loss must be one of {ADVERSARY_LOSSES}, got {loss!r}")
    return loss


def user_inference_errors(
    geography: Geography,
    lr_sets: list[np.ndarray],
    matrices: list[np.ndarray],
    prior: Any = None,
    *,
    loss: str = "metric",
) -> list[InferenceError]:
    """The Bayes-optimal adversary's expected error against each user's matrix.

    Parameters
    ----------
    geography : the map (locations V, metric, road network).
    lr_sets : per user, the locations of its matrix's rows (distinct indices into V).
    matrices : per user, the (n_m, K) matrix, ``Z[i, k] = Pr[report location k | true
        location lr_sets[m][i]]``.
    prior : (K,) the adversary's prior over V (a probability vector), or None for uniform;
        restricted to each user's LR set and renormalised there.
    loss : ``"metric"`` (the Geo-Ind distance, km) or ``"road"`` (travel distance on the road
        network, km).

    Returns
    -------
    list of :class:`~privopt.perturbation.adversary.InferenceError`, one per user (guesses:
    location indices of V).

    Raises
    ------
    InvalidInput
        A bad ``loss`` or prior, a prior with no mass on a user's LR set, matrices that do not
        fit the LR sets or the map.
    """
    check_instance("geography", geography, Geography)
    loss = check_loss(loss)
    k = geography.n_locations
    weights = check_prior(prior, k)
    if len(lr_sets) != len(matrices):
        raise InvalidInput("give one LR set per matrix")
    out = []
    for m, (rows, z) in enumerate(zip(lr_sets, matrices, strict=True)):
        if z.shape != (rows.size, k):
            raise InvalidInput(f"user {m}'s matrix must have shape ({rows.size}, {k})")
        mass = float(weights[rows].sum())
        if mass <= 0.0:
            raise InvalidInput(
                f"prior has no mass on user {m}'s LR set: such a user cannot exist under it"
            )
        metric = geography.distance_rows(rows)
        table = metric if loss == "metric" else geography.travel_costs(geography.road_nodes[rows])
        out.append(
            bayes_inference_error(
                z, weights[rows] / mass, table, same_place=metric == 0.0, loss=loss
            )
        )
    return out
