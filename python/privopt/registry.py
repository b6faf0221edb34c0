"""The registry of privopt's mechanisms: one entry per mechanism, held to one release contract.

Each entry names the mechanism, its natural entry point, the release type it hands out, its
command-line subcommand and an ``example()`` that builds a small release in a second or two.
``tests/test_release_contract.py`` runs every registered mechanism through the contract of
:class:`privopt.release.Release`: example → ``verify()`` → ``save`` → :func:`privopt.load` →
equal → ``summary()`` keys → a ``repr`` of at most 10 lines → a plot written to a file. A new
mechanism joins by :func:`register`-ing; the test then holds it to the contract.

Entries name their objects by dotted path and import them only when asked, so that listing the
mechanisms imports none of them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from privopt.errors import InvalidInput
from privopt.release import Release

__all__ = ["Mechanism", "mechanisms", "mechanism", "register"]


def _resolve(path: str) -> Any:
    """The object at ``"package.module:attribute"``."""
    module, _, attribute = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attribute.split("."):
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True)
class Mechanism:
    """One registered mechanism.

    Attributes
    ----------
    name : the registry name, also the ``mechanism`` of its releases (``"mdp"``).
    title : what it does, in plain words.
    entry_point : ``"module:function"`` of its natural entry point (``privopt.mdp:solve``).
    release_type : ``"module:Class"`` of the :class:`~privopt.release.Release` it hands out.
    command : its ``privopt`` subcommand.
    example_builder : ``"module:function"`` of a function of no arguments that returns a
        small release of this mechanism in a second or two.
    """

    name: str
    title: str
    entry_point: str
    release_type: str
    command: str
    example_builder: str

    def entry(self) -> Callable[..., Any]:
        """The entry point itself (imports the mechanism)."""
        return _resolve(self.entry_point)

    def release_class(self) -> type[Release]:
        """The release type itself (imports the mechanism)."""
        cls = _resolve(self.release_type)
        if not (isinstance(cls, type) and issubclass(cls, Release)):
            raise InvalidInput(f"{self.release_type} is not a privopt.release.Release")
        return cls

    def example(self) -> Release:
        """A small release of this mechanism (seeded where it draws noise: for testing)."""
        release = _resolve(self.example_builder)()
        if not isinstance(release, self.release_class()):
            raise InvalidInput(
                f"{self.example_builder} returned a {type(release).__name__}, not a "
                f"{self.release_type}"
            )
        return release


_REGISTRY: dict[str, Mechanism] = {}


def register(entry: Mechanism) -> None:
    """Add a mechanism to the registry (its name must be new).

    Raises
    ------
    InvalidInput
        Not a :class:`Mechanism`, or a name already registered.
    """
    if not isinstance(entry, Mechanism):
        raise InvalidInput(f"entry must be a privopt.registry.Mechanism, got {entry!r}")
    if entry.name in _REGISTRY:
        raise InvalidInput(f"a mechanism named {entry.name!r} is registered already")
    _REGISTRY[entry.name] = entry


def mechanisms() -> list[Mechanism]:
    """Every registered mechanism, in registration order.

    Examples
    --------
    >>> [m.name for m in mechanisms()][:1]
    ['mdp']
    """
    return list(_REGISTRY.values())


def mechanism(name: str) -> Mechanism:
    """The registered mechanism called ``name``.

    Raises
    ------
    InvalidInput
        No mechanism of that name.
    """
    if name not in _REGISTRY:
        raise InvalidInput(f"no mechanism named {name!r}; registered: {sorted(_REGISTRY)}")
    return _REGISTRY[name]


register(
    Mechanism(
        name="mdp",
        title="optimal metric-DP perturbation matrices (exact LP, Benders at scale)",
        entry_point="privopt.mdp:solve",
        release_type="privopt.perturbation:PerturbationMatrix",
        command="mdp",
        example_builder="privopt.mdp.demo:example",
    )
)

register(
    Mechanism(
        name="census",
        title="consistent epsilon-DP household counts over a region hierarchy",
        entry_point="privopt.census:release",
        release_type="privopt.census:CensusRelease",
        command="census",
        example_builder="privopt.census.demo:example",
    )
)

register(
    Mechanism(
        name="kanon",
        title="k-anonymity by optimal generalisation to intervals (MILP, Split & Carry, greedy)",
        entry_point="privopt.kanon:anonymize",
        release_type="privopt.kanon:KAnonResult",
        command="kanon",
        example_builder="privopt.kanon.demo:example",
    )
)

register(
    Mechanism(
        name="cluster",
        title="differentially private clustering without the number of clusters (DPM)",
        entry_point="privopt.cluster:DPM",
        release_type="privopt.cluster.release:ClusteringRelease",
        command="cluster",
        example_builder="privopt.cluster.demo:example",
    )
)

register(
    Mechanism(
        name="geo",
        title="locally relevant geo-obfuscation for many users on a road map (LR-Geo)",
        entry_point="privopt.geo:run_lrgeo",
        release_type="privopt.geo:LRGeoResult",
        command="geo",
        example_builder="privopt.geo.demo:example",
    )
)
