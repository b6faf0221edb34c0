"""The public parameters of LR-Geo (spec 001 §1, §12, A4): one validated, JSON-able record."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from privopt._validation import (
    check_bool,
    check_exp_argument,
    check_instance,
    check_int,
    check_nonnegative,
    check_positive,
)
from privopt.errors import InvalidInput

__all__ = ["GeoParams", "check_params", "MIN_EPS_D_CAP", "GEO_REL_GAP"]

#: The smallest ``eps_d_cap`` that may drop Geo-Ind pairs from the LP. A dropped row
#: ``z_ik ≤ e^{εd} z_jk`` can bind only where ``z_jk < e^{−εd} z_ik ≤ e^{−20} ≈ 2e-9``, about the
#: LP's own feasibility tolerance, so the release's repair changes the solved matrices only at
#: that level and the model solved is the model released. A smaller cap would drop rows that bind
#: at ordinary probabilities (cap 3: below e^{−3} = 0.05) and the repair would then mix in a
#: large share of another mechanism.
MIN_EPS_D_CAP = 20.0

#: Relative gap that every LR-Geo solver (CLR-Geo, ConstOPT, the full-LP baseline, the server)
#: proves by default before it says "optimal".
GEO_REL_GAP = 1e-6


@dataclass(frozen=True)
class GeoParams:
    """Parameters of LR-Geo, public to users and server alike (distances in km, ε in 1/km).

    Parameters
    ----------
    epsilon : ε > 0 in 1/km, the Geo-Ind budget; required, no default (the paper evaluates
        10 km⁻¹, under which a user is reported at their true location almost always).
    gamma : γ > 0, the Geo-Ind neighbour threshold of the constraints (16) and of the GV ratio
        (``inf`` = classical Geo-Ind, LR-Geo-F).
    gamma_graph : threshold of the Geo-Ind graph that LR sets are searched in (A4; None: equal
        to ``gamma``). At ``inf`` the graph is complete and N_m is a metric ball.
    lr_radius : Γ ≥ 0, the LR distance threshold (Eq. 11), graph distance D.
    r_obf : obfuscation-range radius (Eq. 12, 19).
    r_exp : exponential-mechanism radius, 0 ≤ r_exp ≤ r_obf: entries with d_ik > r_exp are
        tied to the shared y_k (Eq. 19).
    lr_max_size : L, keep the L nearest (in D) of N_m (A5); None = paper-literal N_m.
    eps_d_cap : drop Geo-Ind pairs with ε·d_ij above this from the LP (such a row binds
        only when z_jk < e^{-cap}; the release is repaired against every pair). It must be at
        least min(ε·γ, :data:`MIN_EPS_D_CAP` = 20): either no pair of the guarantee is dropped
        (cap ≥ ε·γ), or only pairs whose rows bind below e^{-20}, the LP's tolerance.
    cr_cell_km : s, the CR-table cell size.
    haversine_correction : Lemma B.1 corrected with the straight-line distance (paper-literal;
        not a valid bound on road networks) instead of the road distance (default).

    Examples
    --------
    >>> p = GeoParams(epsilon=10.0, gamma=0.5, lr_max_size=20)
    >>> GeoParams.from_json(p.to_json()) == p
    True
    >>> p.request_radius
    40.0
    """

    epsilon: float
    gamma: float = 0.5
    gamma_graph: float | None = None
    lr_radius: float = 20.0
    r_obf: float = 4.5
    r_exp: float = 4.0
    lr_max_size: int | None = 20
    eps_d_cap: float = 25.0
    cr_cell_km: float = 0.1
    haversine_correction: bool = False

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "epsilon", check_positive("epsilon", self.epsilon))
        set_(self, "gamma", check_positive("gamma", self.gamma, allow_inf=True))
        if self.gamma_graph is not None:
            set_(
                self, "gamma_graph", check_positive("gamma_graph", self.gamma_graph, allow_inf=True)
            )
        set_(self, "lr_radius", check_nonnegative("lr_radius", self.lr_radius, allow_inf=True))
        set_(self, "r_obf", check_nonnegative("r_obf", self.r_obf))
        set_(self, "r_exp", check_nonnegative("r_exp", self.r_exp))
        if self.r_exp > self.r_obf:
            raise InvalidInput(
                f"r_exp must be <= r_obf, got r_exp={self.r_exp}, r_obf={self.r_obf}"
            )
        if self.lr_max_size is not None:
            set_(self, "lr_max_size", check_int("lr_max_size", self.lr_max_size, minimum=1))
        set_(self, "eps_d_cap", check_positive("eps_d_cap", self.eps_d_cap, allow_inf=True))
        floor = min(self.epsilon * self.gamma, MIN_EPS_D_CAP)
        if self.eps_d_cap < floor:
            raise InvalidInput(
                f"eps_d_cap must be >= min(epsilon*gamma, {MIN_EPS_D_CAP:g}) = {floor:.6g}, got "
                f"{self.eps_d_cap:g}: a smaller cap leaves out Geo-Ind pairs whose constraints "
                f"bind at probabilities up to e^-{self.eps_d_cap:g} = "
                f"{math.exp(-self.eps_d_cap):.2g}, so the matrices solved would not be the ones "
                "released"
            )
        set_(self, "cr_cell_km", check_positive("cr_cell_km", self.cr_cell_km))
        set_(
            self,
            "haversine_correction",
            check_bool("haversine_correction", self.haversine_correction),
        )
        # The factor e^{ε r_exp/2} between the solved ỹ and the paper's y (§7.3).
        check_exp_argument(
            self.epsilon * self.r_exp / 2, "epsilon * r_exp / 2", "use a smaller epsilon or r_exp"
        )

    @property
    def graph_threshold(self) -> float:
        """γ of the Geo-Ind graph used for LR sets."""
        return self.gamma if self.gamma_graph is None else self.gamma_graph

    @property
    def request_radius(self) -> float:
        """Radius of the CR request circle, max{2Γ, Γ + r_obf} (Prop. 4.3)."""
        return max(2 * self.lr_radius, self.lr_radius + self.r_obf)

    def with_(self, **changes: Any) -> GeoParams:
        """A copy with some fields changed (validated again)."""
        extra = set(changes) - set(self.__dataclass_fields__)
        if extra:
            raise InvalidInput(f"unknown parameters {sorted(extra)}")
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (``inf`` written as the string "inf")."""
        return {
            k: ("inf" if isinstance(v, float) and math.isinf(v) else v)
            for k, v in asdict(self).items()
        }

    @classmethod
    def from_json(cls, data: Any) -> GeoParams:
        """Inverse of :meth:`to_json`; unknown keys are refused."""
        if not isinstance(data, dict):
            raise InvalidInput(f"parameters must be a JSON object, got {type(data).__name__}")
        known = set(cls.__dataclass_fields__)
        extra = set(data) - known
        if extra:
            raise InvalidInput(f"unknown parameters {sorted(extra)}")
        if "epsilon" not in data:
            raise InvalidInput("parameters must give epsilon (the Geo-Ind budget in 1/km)")
        values: dict[str, Any] = {k: (math.inf if v == "inf" else v) for k, v in data.items()}
        return cls(**values)


def check_params(name: str, value: Any) -> GeoParams:
    """``value`` if it is a :class:`GeoParams`, else InvalidInput naming ``name``."""
    return check_instance(name, value, GeoParams)
