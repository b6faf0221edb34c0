"""Streamed M_H^dp (issue 17 item 2): a hierarchy generated, measured and solved per top-level
subtree on an Executor gives the release the in-memory tree DP gives on the same measurements —
same optimal cost, consistent, faithful, certified — and spends ε all or nothing."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from privopt.census import Hierarchy
from privopt.census.solvers import tree_postprocess
from privopt.census.streamed import RegularSyntheticSource, m_h_dp_streamed
from privopt.dp import PrivacyAccountant
from privopt.errors import InvalidInput, PrivacyBudgetExceeded


def _assemble(source, out):
    """The whole hierarchy, measurements and release in global breadth-first order."""
    k, fan = source.fanouts[0], source.fanouts[1:]
    sizes = np.cumprod([1, *fan]).astype(np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)])
    parent, noisy, released = [-1], [], []
    stored = [np.load(out / "measurements" / f"measured_{i}.npz") for i in range(k)]
    subs = [np.load(out / f"subtree_{i}.npy") for i in range(k)]
    first = {}  # (subtree, level) -> global index of its first region at that level
    nxt = 1
    for lev in range(len(sizes)):
        for i in range(k):
            first[i, lev] = nxt
            nxt += sizes[lev]
    for lev in range(len(sizes)):
        for i in range(k):
            a, b = starts[lev], starts[lev + 1]
            if lev == 0:
                parent.append(0)
            else:
                local_parent = np.arange(sizes[lev]) // fan[lev - 1]
                parent.extend((first[i, lev - 1] + local_parent).tolist())
            noisy.append(stored[i]["noisy"][a:b])
            released.append(subs[i][a:b])
    return Hierarchy.from_parents(parent), np.vstack(noisy), np.vstack(released)


@pytest.mark.parametrize("seed", [0, 1])
def test_streamed_equals_in_memory_on_the_same_measurements(tmp_path, seed):
    source = RegularSyntheticSource((3, 4, 5), n_groups=4000, N=3, seed=seed)
    with ThreadPoolExecutor(2) as ex:
        rel = m_h_dp_streamed(source, 0.5, ex, tmp_path)
    h, _, released = _assemble(source, tmp_path)
    root = np.load(tmp_path / "root.npy")
    G = rel.info["G"]
    full = np.vstack([root, released])
    assert np.array_equal(full[0], full[1 : 1 + 3].sum(axis=0))  # consistent at the root
    for lev in range(h.n_levels):
        assert int(full[h.level_slice(lev)].sum()) == G
    sums = np.zeros_like(full)
    np.add.at(sums, h.parent[1:], full[1:])
    internal = np.diff(h.child_ptr) > 0
    assert np.array_equal(sums[internal], full[internal])  # consistent everywhere
    assert (full >= 0).all() and rel.info["certified"]
    L = source.n_levels
    assert len(rel.ledger) == L and rel.l1_per_level.shape == (L,)
    assert sum(e.epsilon for e in rel.ledger) == pytest.approx(0.5)


def test_streamed_optimum_matches_in_memory(tmp_path, monkeypatch):
    # Fix the root measurement to a known value so the in-memory DP sees identical inputs.
    from privopt.census import streamed

    source = RegularSyntheticSource((2, 3, 4), n_groups=900, N=2, seed=5)
    calls = []
    real = streamed.draw_level_noise

    def root_noise(shapes, eps, sens, rng):
        out = real(shapes, eps, sens, rng)
        if len(shapes) == 1 and shapes[0] == (source.N,):
            calls.append(out[0].copy())
        return out

    monkeypatch.setattr(streamed, "draw_level_noise", root_noise)
    with ThreadPoolExecutor(2) as ex:
        rel = m_h_dp_streamed(source, 0.3, ex, tmp_path)
    h, noisy_sub, released = _assemble(source, tmp_path)
    root = np.load(tmp_path / "root.npy")
    # The root's truth is the sum of the subtree roots' truths (spilled with the measurements).
    truth_root = sum(
        np.load(tmp_path / "measurements" / f"measured_{i}.npz")["truth"][0] for i in range(2)
    )
    noisy = np.vstack([truth_root + calls[0], noisy_sub])
    counts, info = tree_postprocess(h, noisy, rel.info["G"], scale=2 * 3 / 0.3)
    assert info["cost"] == rel.info["cost"]
    assert np.array_equal(counts, np.vstack([root, released]))


def test_streamed_refuses_bad_arguments_and_charges_all_or_nothing(tmp_path):
    source = RegularSyntheticSource((2, 2), n_groups=50, N=2)
    with pytest.raises(InvalidInput, match="executor"):
        m_h_dp_streamed(source, 1.0, None, tmp_path)
    with pytest.raises(InvalidInput, match="folder"), ThreadPoolExecutor(1) as ex:
        m_h_dp_streamed(source, 1.0, ex, tmp_path / "absent")
    acct = PrivacyAccountant(epsilon_budget=0.5)
    with ThreadPoolExecutor(1) as ex, pytest.raises(PrivacyBudgetExceeded):
        m_h_dp_streamed(source, 1.0, ex, tmp_path, accountant=acct)
    assert acct.entries == []
    with pytest.raises(InvalidInput, match="fanouts"):
        RegularSyntheticSource((), n_groups=5)
