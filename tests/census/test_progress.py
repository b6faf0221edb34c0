"""Progress of the census mechanisms: bars over the noise draws (and the DP rounds) on stderr
when asked, nothing when not, and never anything on stdout (which carries results only)."""

from __future__ import annotations

import numpy as np
import pytest
from census_helpers import random_counts, random_hierarchy
from privopt.census import MECHANISMS, m_c_ch, m_c_dp, m_h_dp, release
from privopt.errors import InvalidInput


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    return random_counts(rng, random_hierarchy(rng, 3, 3), 20, 3)


@pytest.mark.parametrize("mechanism", [m_h_dp, m_c_dp, m_c_ch])
def test_progress_true_draws_bars_on_stderr_only(mechanism, data, capsys):
    on = mechanism(data, 1.0, rng=0, progress=True)
    out, err = capsys.readouterr()
    assert out == ""
    assert "census noise" in err and " DP" in err
    off = mechanism(data, 1.0, rng=0, progress=False)
    out, err = capsys.readouterr()
    assert out == "" and err == ""
    assert np.array_equal(on.counts, off.counts)  # progress never changes a release


@pytest.mark.parametrize("name", ["M_H", "M_H^r", "M_c^r", "TopDown"])
def test_every_mechanism_takes_progress(name, data, capsys):
    # The shared argument means the same everywhere: here, the bar over the noise draws.
    on = release(data, 1.0, name, rng=0, progress=True)
    out, err = capsys.readouterr()
    assert out == "" and "census noise" in err
    off = release(data, 1.0, name, rng=0, progress=False)
    out, err = capsys.readouterr()
    assert out == "" and err == ""
    assert np.array_equal(on.counts, off.counts)
    with pytest.raises(InvalidInput, match="progress"):
        MECHANISMS[name](data, 1.0, rng=0, progress="yes")


def test_progress_reaches_the_mechanism_through_release(data, capsys):
    release(data, 1.0, "M_H^dp", rng=0, progress=True)
    assert "census tree DP" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["yes", 1, 0.5])
def test_bad_progress_is_refused_before_any_spend(data, bad):
    with pytest.raises(InvalidInput, match="progress"):
        m_h_dp(data, 1.0, rng=0, progress=bad)
