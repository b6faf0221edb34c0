"""privopt.lp.highs.run_with_fallbacks: retries with the fallback options, restores them."""

from __future__ import annotations

import highspy
import numpy as np
from privopt.lp.highs import FALLBACK_OPTIONS, run_with_fallbacks


class _FlakyHighs(highspy.Highs):
    """A real HiGHS whose first ``fail`` runs report "Solve error" (as HiGHS does on badly
    scaled models), recording the options each run saw."""

    def __init__(self, fail: int) -> None:
        super().__init__()
        self.setOptionValue("output_flag", False)
        self.fail = fail
        self.seen: list[tuple] = []

    def run(self):
        self.seen.append(
            tuple(self.getOptionValue(n)[1] for n in ("presolve", "simplex_strategy", "solver"))
        )
        self.failed_now = self.fail > 0
        self.fail -= 1
        return super().run()

    def getModelStatus(self):
        if self.failed_now:
            return highspy.HighsModelStatus.kSolveError
        return super().getModelStatus()


def _tiny_lp(h: highspy.Highs) -> None:
    # min x + y, x + y >= 1, x, y >= 0
    h.addVars(2, np.zeros(2), np.full(2, highspy.kHighsInf))
    h.changeColsCost(2, np.arange(2, dtype=np.int32), np.ones(2))
    h.addRow(1.0, highspy.kHighsInf, 2, np.arange(2, dtype=np.int32), np.ones(2))


def test_fallbacks_retry_in_order_and_restore_options() -> None:
    h = _FlakyHighs(fail=2)
    _tiny_lp(h)
    status, tried = run_with_fallbacks(h)
    assert status == highspy.HighsModelStatus.kOptimal
    assert len(tried) == 2 and "presolve=off" in tried[0] and "simplex_strategy=4" in tried[1]
    assert h.seen[1][0] == "off" and h.seen[2][:2] == ("off", 4)
    # Options are back to their defaults after the tries.
    assert h.getOptionValue("presolve")[1] == "choose"
    assert h.getOptionValue("simplex_strategy")[1] == 1
    assert h.getInfo().objective_function_value == 1.0


def test_fallbacks_give_up_with_the_last_status() -> None:
    h = _FlakyHighs(fail=10)
    _tiny_lp(h)
    status, tried = run_with_fallbacks(h)
    assert status == highspy.HighsModelStatus.kSolveError
    assert len(tried) == len(FALLBACK_OPTIONS)
    assert h.getOptionValue("solver")[1] == "choose"


def test_no_fallback_when_the_first_run_decides() -> None:
    h = _FlakyHighs(fail=0)
    _tiny_lp(h)
    status, tried = run_with_fallbacks(h)
    assert status == highspy.HighsModelStatus.kOptimal and tried == []
