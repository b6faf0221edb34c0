"""Choosing ε with evidence: utility loss against the Bayes-optimal adversary's error across a
range of ε, for a mechanism and its baselines on one map and prior (:class:`EpsilonSweep`).

Each mechanism's sweep (:func:`privopt.mdp.sweep_epsilon`, :func:`privopt.geo.sweep_epsilon`)
computes the points; this module holds what they share: the table, its plots, and the loop that
runs one task per ε here or on an executor with a progress bar (:func:`run_tasks`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privopt._atomic import write_text_atomic
from privopt._optional import pandas
from privopt._progress import progress_bar
from privopt._validation import check_finite_array, check_positive
from privopt.errors import InvalidInput
from privopt.report import (
    Report,
    Section,
    axes_or_new,
    close_figure,
    markdown_table,
    new_figure,
    save_figure,
)

__all__ = ["TradeoffPoint", "EpsilonSweep", "check_epsilons", "run_tasks"]

#: Most ε values one sweep takes (each is a solve).
MAX_SWEEP_EPSILONS = 1000


@dataclass(frozen=True)
class TradeoffPoint:
    """One mechanism at one ε.

    Attributes
    ----------
    mechanism : ``"optimal"`` (the LP / Benders matrix), ``"lr-geo"``, ``"expmech"`` (the
        exponential mechanism) or ``"laplace"`` (planar Laplace snapped to the outputs).
    epsilon : ε, in 1/(distance unit) (1/km on a map).
    expected_loss : the mechanism's expected utility loss (the problem's cost; km of travel
        cost for LR-Geo).
    adversary_error : the Bayes-optimal adversary's expected error (distance unit; larger is
        more private).
    true_report_probability : probability that the report is the true place.
    seconds : the time to compute the mechanism's matrix (not its evaluation).
    """

    mechanism: str
    epsilon: float
    expected_loss: float
    adversary_error: float
    true_report_probability: float
    seconds: float


@dataclass(frozen=True)
class EpsilonSweep:
    """Loss and adversary error of a mechanism and its baselines across ε.

    Attributes
    ----------
    points : one :class:`TradeoffPoint` per mechanism and ε, in ε order then mechanism order.
    loss_label : what ``expected_loss`` measures, with its unit (for tables and axes).
    error_label : what ``adversary_error`` measures, with its unit.
    notes : how the figures were obtained (prior, adversary's loss, Monte Carlo samples).
    """

    points: list[TradeoffPoint]
    loss_label: str = "expected loss"
    error_label: str = "adversary's expected error"
    notes: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not all(isinstance(p, TradeoffPoint) for p in self.points):
            raise InvalidInput("points must be a list of TradeoffPoint")

    @property
    def mechanisms(self) -> list[str]:
        """The mechanisms compared, in the order they appear."""
        return list(dict.fromkeys(p.mechanism for p in self.points))

    @property
    def epsilons(self) -> list[float]:
        """The ε values, in the order they were given."""
        return list(dict.fromkeys(p.epsilon for p in self.points))

    def rows(self) -> list[dict[str, Any]]:
        """The table: one dict per point (the fields of :class:`TradeoffPoint`)."""
        return [asdict(p) for p in self.points]

    def to_frame(self) -> Any:
        """The table as a pandas DataFrame (one row per point)."""
        return pandas().DataFrame(self.rows())

    def markdown(self) -> str:
        """The table in Markdown, with the labels as column headers."""
        header = [
            "mechanism",
            "ε",
            self.loss_label,
            self.error_label,
            "Pr[report = true place]",
            "time (s)",
        ]
        rows = [
            [
                p.mechanism,
                p.epsilon,
                p.expected_loss,
                p.adversary_error,
                p.true_report_probability,
                p.seconds,
            ]
            for p in self.points
        ]
        return markdown_table(header, rows)

    def to_csv(self) -> str:
        """The table as CSV text (header line, then one line per point)."""
        buffer = io.StringIO()
        names = list(TradeoffPoint.__dataclass_fields__)
        writer = csv.DictWriter(buffer, fieldnames=names, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.rows())
        return buffer.getvalue()

    def write_csv(self, path: str | Path) -> Path:
        """Write :meth:`to_csv` to ``path`` atomically; returns the path."""
        return write_text_atomic(Path(path), self.to_csv())

    def summary(self) -> dict[str, Any]:
        """The table and notes as JSON-ready values (``privopt mdp|geo --sweep-epsilon`` prints
        them): ``{"loss": label, "adversary_error": label, "notes": ..., "points": rows}``."""
        return {
            "loss": self.loss_label,
            "adversary_error": self.error_label,
            "notes": dict(self.notes),
            "points": self.rows(),
        }

    def write_report(self, out_dir: str | Path, title: str) -> list[str]:
        """Write the sweep into ``out_dir``: ``sweep.csv`` (the table), ``sweep.png`` (loss and
        adversary error over ε), ``sweep_tradeoff.png`` (error against loss) and ``report.md``
        titled ``title``, each atomically; returns the file names written."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        self.write_csv(out / "sweep.csv")
        try:
            left, _ = self.plot()
            save_figure(left.figure, out / "sweep.png", dpi=110, bbox_inches="tight")
            ax = self.plot_tradeoff()
            save_figure(ax.figure, out / "sweep_tradeoff.png", dpi=110, bbox_inches="tight")
        finally:
            close_figure("all")
        notes = "".join(f"- {k}: {v}\n" for k, v in self.notes.items() if v is not None)
        body = (
            "Utility loss and the Bayes-optimal adversary's expected error (larger: the "
            "adversary's best guess lies further from the truth) for each mechanism and ε.\n\n"
            + self.markdown()
            + ("\n" + notes if notes else "")
        )
        report = Report(title)
        report.add(Section("Privacy against utility across ε", body, ["sweep.png"]))
        report.add(Section("Trade-off curve", "", ["sweep_tradeoff.png"]))
        report.write(out)
        return ["sweep.csv", "sweep.png", "sweep_tradeoff.png", "report.md"]

    def _series(self, mechanism: str, attribute: str) -> tuple[np.ndarray, np.ndarray]:
        chosen = [p for p in self.points if p.mechanism == mechanism]
        chosen.sort(key=lambda p: p.epsilon)
        return (
            np.array([p.epsilon for p in chosen]),
            np.array([getattr(p, attribute) for p in chosen]),
        )

    def plot(self, axes: Any = None) -> Any:
        """Two panels over ε: the expected loss (left) and the adversary's expected error
        (right), one line per mechanism, so that the baselines share the axes.

        Parameters
        ----------
        axes : None (a new figure) or a sequence of two matplotlib Axes.

        Returns
        -------
        the two Axes.
        """
        if axes is None:
            axes = new_figure(1, 2, figsize=(10.0, 4.0))[1]
        if not isinstance(axes, Sequence | np.ndarray) or len(axes) != 2:
            raise InvalidInput("axes must be None or two matplotlib Axes")
        left, right = (axes_or_new(ax, (5.0, 4.0)) for ax in axes)
        for mechanism in self.mechanisms:
            eps, loss = self._series(mechanism, "expected_loss")
            left.plot(eps, loss, marker="o", label=mechanism)
            eps, error = self._series(mechanism, "adversary_error")
            right.plot(eps, error, marker="o", label=mechanism)
        for ax, label, title in (
            (left, self.loss_label, "utility loss (lower is better)"),
            (right, self.error_label, "adversary's error (higher is more private)"),
        ):
            ax.set_xscale("log")
            ax.set_xlabel("ε, privacy parameter (log scale)")
            ax.set_ylabel(label)
            ax.set_title(title)
            ax.legend(fontsize=8)
        return left, right

    def plot_tradeoff(self, ax: Any = None) -> Any:
        """The privacy–utility curve: the adversary's expected error against the expected loss,
        one line per mechanism through its ε values (labelled). A mechanism whose curve lies
        above another's gives the adversary more error for the same loss."""
        ax = axes_or_new(ax, (5.5, 4.5))
        for mechanism in self.mechanisms:
            eps, loss = self._series(mechanism, "expected_loss")
            _, error = self._series(mechanism, "adversary_error")
            ax.plot(loss, error, marker="o", label=mechanism)
            for e, x, y in zip(eps, loss, error, strict=True):
                ax.annotate(f"{e:g}", (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        ax.set_xlabel(self.loss_label)
        ax.set_ylabel(self.error_label)
        ax.set_title("privacy against utility (points labelled with ε)")
        ax.legend(fontsize=8)
        return ax


def check_epsilons(epsilons: Any) -> list[float]:
    """The ε values of a sweep: a non-empty 1-D list of finite reals > 0 (at most
    :data:`MAX_SWEEP_EPSILONS`), in the given order."""
    values = check_finite_array("epsilons", np.atleast_1d(epsilons), ndim=1)
    if values.size == 0:
        raise InvalidInput("epsilons must not be empty")
    if values.size > MAX_SWEEP_EPSILONS:
        raise InvalidInput(
            f"epsilons holds {values.size} values, more than the {MAX_SWEEP_EPSILONS} a sweep "
            "takes (each is a solve)"
        )
    return [check_positive("epsilons", float(e)) for e in values]


def run_tasks(
    task: Callable[..., Any],
    arguments: list[tuple[Any, ...]],
    *,
    executor: Executor | None,
    progress: Any,
    desc: str,
) -> list[Any]:
    """``[task(*a) for a in arguments]``, here in order or on ``executor`` (results still in
    order), with one progress bar step per finished task. ``task`` must be a module-level
    function for a process executor (it is pickled with its arguments)."""
    with progress_bar(progress, total=len(arguments), desc=desc, unit="ε") as bar:
        if executor is None:
            results = []
            for args in arguments:
                results.append(task(*args))
                bar.update(1)
            return results
        futures = [executor.submit(task, *args) for args in arguments]
        for _ in as_completed(futures):
            bar.update(1)
        return [f.result() for f in futures]
