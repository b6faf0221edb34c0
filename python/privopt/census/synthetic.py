"""Seeded synthetic household counts calibrated to the 2010 US census (spec 003 §5, §7 item 9).

Real SF1 household-size-by-county counts are not available offline, so the national release is
generated: 52 "states" (50 + DC + PR) with their 2010 household counts (thousands, rounded) and
county counts (3,221 counties and equivalents, 3,143 without Puerto Rico's 78 municipios), the
national household-size distribution (26.7 % one-person, mean ≈ 2.58), heavy-tailed county sizes
(log-normal shares), mildly varying size mixes per county (Dirichlet), and optionally tracts and
blocks below the counties. The county list is generated with the right fan-outs; the real FIPS
county codes can be read from a file the user supplies (``counties_csv=``, e.g. the one shipped
by the ``addfips`` package, which is GPL-3 and therefore not a dependency, spec 003 §9).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from privopt import _optional
from privopt._validation import check_int, check_positive, check_size
from privopt.census.hierarchy import CensusCounts, Hierarchy
from privopt.errors import InvalidInput

__all__ = [
    "US_STATES",
    "STATE_FIPS",
    "US_HOUSEHOLDS_2010",
    "read_fips_counties",
    "household_size_distribution",
    "synthetic_us",
    "synthetic_hierarchy",
]

#: (state, households in thousands (2010, rounded), counties and equivalents)
US_STATES: tuple[tuple[str, int, int], ...] = (
    ("AL", 1884, 67),
    ("AK", 259, 29),
    ("AZ", 2381, 15),
    ("AR", 1147, 75),
    ("CA", 12577, 58),
    ("CO", 1973, 64),
    ("CT", 1359, 8),
    ("DE", 343, 3),
    ("DC", 267, 1),
    ("FL", 7421, 67),
    ("GA", 3586, 159),
    ("HI", 456, 5),
    ("ID", 580, 44),
    ("IL", 4837, 102),
    ("IN", 2502, 92),
    ("IA", 1222, 99),
    ("KS", 1113, 105),
    ("KY", 1720, 120),
    ("LA", 1729, 64),
    ("ME", 557, 16),
    ("MD", 2156, 24),
    ("MA", 2547, 14),
    ("MI", 3873, 83),
    ("MN", 2088, 87),
    ("MS", 1116, 82),
    ("MO", 2376, 115),
    ("MT", 410, 56),
    ("NE", 722, 93),
    ("NV", 1006, 17),
    ("NH", 519, 10),
    ("NJ", 3214, 21),
    ("NM", 791, 33),
    ("NY", 7318, 62),
    ("NC", 3746, 100),
    ("ND", 281, 53),
    ("OH", 4603, 88),
    ("OK", 1461, 77),
    ("OR", 1519, 36),
    ("PA", 5019, 67),
    ("RI", 413, 5),
    ("SC", 1802, 46),
    ("SD", 322, 66),
    ("TN", 2493, 95),
    ("TX", 8923, 254),
    ("UT", 878, 29),
    ("VT", 257, 14),
    ("VA", 3057, 134),
    ("WA", 2620, 39),
    ("WV", 764, 55),
    ("WI", 2280, 72),
    ("WY", 227, 23),
    ("PR", 1377, 78),
)

#: State FIPS codes (2-digit strings) of the postal codes above.
STATE_FIPS: dict[str, str] = dict(
    zip(
        [s[0] for s in US_STATES],
        "01 02 04 05 06 08 09 10 11 12 13 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32 33 "
        "34 35 36 37 38 39 40 41 42 44 45 46 47 48 49 50 51 53 54 55 56 72".split(),
        strict=True,
    )
)

#: Households in the 50 states + DC, 2010 census (spec 003 §5: "about 116.7 M").
US_HOUSEHOLDS_2010 = 116_716_292

# Shares of 1..6 and 7+ person households (2010 census, rounded).
_SIZE_SHARES = np.array([0.267, 0.336, 0.158, 0.132, 0.062, 0.025, 0.020])


def household_size_distribution(N: int) -> np.ndarray:
    """Probabilities of sizes 1..N: the 2010 shares, the 7+ mass spread geometrically with the
    ratio r = p_6/p_5 (the augmentation idea of spec 003 §5), the tail folded into size N."""
    N = check_int("N", N, minimum=1)
    p = _SIZE_SHARES[:6].tolist()
    r = _SIZE_SHARES[5] / _SIZE_SHARES[4]
    tail = _SIZE_SHARES[6] * (1 - r) * r ** np.arange(max(N - 6, 0))
    full = np.concatenate([p, tail]) if N > 6 else np.array(p[:N])
    full[-1] += 1.0 - full.sum()  # remaining mass (7+ beyond N, or sizes > N when N < 7)
    return full / full.sum()


def _split_shares(
    rng: np.random.Generator, parent_share: np.ndarray, fanout: np.ndarray, sigma: float
) -> np.ndarray:
    """Children shares: parent share times log-normal weights normalised within each parent."""
    owner = np.repeat(np.arange(parent_share.size), fanout)
    w = rng.lognormal(0.0, sigma, size=owner.size)
    tot = np.bincount(owner, weights=w, minlength=parent_share.size)
    return parent_share[owner] * w / tot[owner]


def _build(
    rng: np.random.Generator,
    level_fanouts: list[np.ndarray],
    top_share: np.ndarray,
    n_groups: int,
    N: int,
    names: list[np.ndarray] | None,
    level_names: Sequence[str],
    concentration: float,
    sigma: float,
    outliers: int,
) -> CensusCounts:
    # Parent array level by level (breadth-first, so from_parents keeps this order).
    parent = [np.array([-1])]
    start = 1
    shares = [np.array([1.0])]
    for lev, fan in enumerate(level_fanouts):
        prev_start = start - parent[-1].size
        parent.append(np.repeat(np.arange(prev_start, prev_start + fan.size), fan))
        start += parent[-1].size
        shares.append(top_share if lev == 0 else _split_shares(rng, shares[-1], fan, sigma))
    leaf_share = shares[-1]
    leaf_total = rng.multinomial(n_groups, leaf_share / leaf_share.sum())
    base = household_size_distribution(N)
    # Each leaf has its own size mix around the national one (Dirichlet).
    mix = rng.dirichlet(base * concentration + 1e-3, size=leaf_total.size)
    leaf = rng.multinomial(leaf_total, mix)
    if outliers and N >= 10:
        where = rng.integers(0, leaf.shape[0], size=outliers)
        sizes = rng.integers(10, N + 1, size=outliers)
        np.add.at(leaf, (where, sizes - 1), 1)
    par = np.concatenate(parent)
    name_arr = None if names is None else np.concatenate(names)
    h = Hierarchy.from_parents(par, name_arr, level_names)
    return CensusCounts.from_leaf_counts(h, leaf)


def read_fips_counties(path: str | Path) -> dict[str, list[str]]:
    """County FIPS codes per state from a CSV with columns ``statefp, countyfp`` (and optionally
    ``name``), e.g. ``addfips/data/counties_2010.csv`` of the ``addfips`` package (GPL-3, so
    privopt neither ships nor imports it; the codes themselves are US Census public data).

    Returns
    -------
    ``{state postal code: ["13001", "13003", …]}`` (5-digit county FIPS, file order, duplicates
    dropped) for the states of :data:`US_STATES` present in the file.
    """
    pd = _optional.pandas()

    p = Path(path)
    if not p.is_file():
        raise InvalidInput(f"counties_csv {str(p)!r} is not a file")
    frame = pd.read_csv(p, dtype=str)
    if not {"statefp", "countyfp"} <= set(frame.columns):
        raise InvalidInput(
            f"counties_csv needs columns statefp, countyfp; got {list(frame.columns)}"
        )
    codes = (frame["statefp"].str.zfill(2) + frame["countyfp"].str.zfill(3)).drop_duplicates()
    by_state: dict[str, list[str]] = {}
    postal = {v: k for k, v in STATE_FIPS.items()}
    for code in codes:
        if code[:2] in postal:
            by_state.setdefault(postal[code[:2]], []).append(code)
    return by_state


def synthetic_us(
    seed: int = 0,
    *,
    N: int = 20,
    scale: float = 1.0,
    include_pr: bool = True,
    tracts_per_county: float | None = None,
    blocks_per_tract: float | None = None,
    outliers: int = 0,
    counties_csv: str | Path | None = None,
) -> CensusCounts:
    """National hierarchy nation → 52 states → counties (→ tracts → blocks when asked).

    Parameters
    ----------
    seed : random seed (the data are a pure function of the arguments).
    N : largest household size (sizes 1..N); the 7+ mass is spread geometrically.
    scale : fraction of the 116.7 M households to generate (0 < scale ≤ 1; e.g. 1e-3 for tests).
    include_pr : keep Puerto Rico (52 "states", 3,221 counties) or not (51, 3,143).
    tracts_per_county, blocks_per_tract : mean fan-outs (1 + Poisson) of extra levels.
    outliers : groups with sizes uniform in [10, N] added at random leaves (spec 003 §5 uses 50
        with N = 1000, modelling group quarters); only when N ≥ 10.
    counties_csv : optional path to a FIPS county list (see :func:`read_fips_counties`); the
        counties are then the real ones, named by their 5-digit FIPS code, instead of generated
        ``"GA-001"``-style names (the fan-outs are the same for the 2010 list).

    Returns
    -------
    CensusCounts with ``G ≈ scale · 116.7 M`` groups.
    """
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    scale = check_positive("scale", scale)
    outliers = check_int("outliers", outliers, minimum=0)
    if scale > 1:
        raise InvalidInput(f"scale must be <= 1, got {scale}")
    states = [s for s in US_STATES if include_pr or s[0] != "PR"]
    hh = np.array([s[1] for s in states], dtype=np.float64)
    if counties_csv is None:
        county_names = [[f"{s[0]}-{i + 1:03d}" for i in range(s[2])] for s in states]
    else:
        fips = read_fips_counties(counties_csv)
        missing = [s[0] for s in states if s[0] not in fips]
        if missing:
            raise InvalidInput(f"counties_csv has no counties for {missing}")
        county_names = [fips[s[0]] for s in states]
    n_counties = np.array([len(c) for c in county_names])
    fan = [np.array([len(states)]), n_counties]
    names = [
        np.array(["US"], dtype=object),
        np.array([s[0] for s in states], dtype=object),
        np.array([c for cs in county_names for c in cs], dtype=object),
    ]
    level_names = ["nation", "state", "county"]
    for mean, lname in ((tracts_per_county, "tract"), (blocks_per_tract, "block")):
        if mean is None:
            continue
        check_positive(f"{lname} fan-out", mean)
        k = 1 + rng.poisson(max(mean - 1, 0), size=names[-1].size)
        fan.append(k)
        names.append(
            np.array(
                [f"{p}-{i + 1}" for p, kk in zip(names[-1], k, strict=True) for i in range(kk)],
                dtype=object,
            )
        )
        level_names.append(lname)
    # 116.7 M covers the 50 states + DC; Puerto Rico's households come on top.
    pr = hh[-1] / hh[:-1].sum() if include_pr else 0.0
    n_groups = round(US_HOUSEHOLDS_2010 * scale * (1.0 + pr))
    return _build(
        rng,
        fan,
        hh / hh.sum(),
        n_groups,
        N,
        names,
        level_names,
        concentration=400.0,
        sigma=1.3,
        outliers=outliers,
    )


def synthetic_hierarchy(
    fanouts: Sequence[int], n_groups: int, N: int = 20, seed: int = 0
) -> CensusCounts:
    """A regular hierarchy for scaling runs: level ℓ+1 has ``fanouts[ℓ]`` children per region
    (so ``prod(fanouts)`` leaves), ``n_groups`` groups, log-normal region sizes."""
    rng = np.random.default_rng(check_int("seed", seed, minimum=0))
    fans = [check_int("fanouts[i]", f, minimum=1) for f in fanouts]
    n_groups = check_int("n_groups", n_groups, minimum=0)
    check_size((*fans, max(n_groups, 1)), "(*fanouts, n_groups)")  # leaves × groups
    level_fan = []
    count = 1
    for f in fans:
        level_fan.append(np.full(count, f))
        count *= f
    top = rng.lognormal(0.0, 1.0, size=fans[0]) if fans else np.array([1.0])
    return _build(
        rng,
        level_fan,
        top / top.sum(),
        n_groups,
        N,
        None,
        ["root"] + [f"level{i + 2}" for i in range(len(fans))],
        400.0,
        1.0,
        0,
    )
