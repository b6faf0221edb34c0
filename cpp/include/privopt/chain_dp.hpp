// Exact chain dynamic program (spec 003 §3.4, the paper's Eq. 8): post-processing of M_c^ch.
//
//   minimise  sum_i (x_i - noisy_i)^2
//   s.t.      x_i = x_{i+1}   where equal_next[i] (upward edge: a_{i+1} is a_i's parent)
//             x_i <= x_{i+1}  otherwise (same-level and downward edges, spec 003 §3.4 "Important")
//             x_i in [lo_i, hi_i] (integers); the caller fixes the last node by lo = hi = G.
//
// tau_1(v) = (v - noisy_1)^2; tau_{i+1}(v) = (v - noisy_{i+1})^2 + phi_{i+1}(v) with phi the
// previous table (equality) or its prefix minimum. By convexity the prefix minimum of tau_i is
// tau_i(min(v, v0_i)) with v0_i its smallest minimiser (Lemma 7), so each step is O(|D|) and only
// v0_i is kept for the top-down pass: x_i = x_{i+1} (equality) or min(v0_i, x_{i+1}).
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "privopt/cpl_table.hpp"
#include "privopt/tree_dp.hpp"

namespace privopt {

struct ChainDpResult {
    DpStatus status = DpStatus::optimal;
    std::int64_t bad_node = -1;        // first node whose domain could not be met
    std::int64_t cost = 0;
    std::vector<std::int64_t> values;  // optimal x per chain node (empty when infeasible)
};

/// `equal_next` has n - 1 entries (non-zero: equality edge i -> i+1).
inline ChainDpResult chain_dp(std::int64_t n, const std::int64_t* noisy, const std::int64_t* lo,
                              const std::int64_t* hi, const std::uint8_t* equal_next) {
    if (n <= 0) throw std::invalid_argument("chain_dp: the chain must have at least one node");
    ChainDpResult res;
    std::vector<std::int64_t> v0(static_cast<std::size_t>(n));
    CplTable cur, next;
    if (hi[0] < lo[0]) {
        res.status = DpStatus::infeasible, res.bad_node = 0;
        return res;
    }
    cur = squared_table(noisy[0], lo[0], hi[0]);
    v0[0] = cur.argmin();
    for (std::int64_t i = 1; i < n; ++i) {
        const bool eq = equal_next[i - 1] != 0;
        // Domain of tau_i: own window intersected with where phi_i is finite.
        const std::int64_t a = std::max(lo[i], cur.lo);
        const std::int64_t b = eq ? std::min(hi[i], cur.hi()) : hi[i];
        if (b < a) {
            res.status = DpStatus::infeasible, res.bad_node = i;
            return res;
        }
        next.lo = a;
        next.cost.resize(static_cast<std::size_t>(b - a + 1));
        const std::int64_t vp = v0[static_cast<std::size_t>(i - 1)];
        std::int64_t best = cost_infinity, arg = a;
        for (std::int64_t v = a; v <= b; ++v) {
            const std::int64_t d = v - noisy[i];
            const std::int64_t c = d * d + (eq ? cur.at(v) : cur.at(std::min(v, vp)));
            next.cost[static_cast<std::size_t>(v - a)] = c;
            if (c < best) best = c, arg = v;
        }
        v0[static_cast<std::size_t>(i)] = arg;
        std::swap(cur, next);
    }
    res.values.assign(static_cast<std::size_t>(n), 0);
    res.values.back() = v0.back();
    res.cost = cur.at(v0.back());
    for (std::int64_t i = n - 2; i >= 0; --i) {
        const auto ui = static_cast<std::size_t>(i);
        res.values[ui] = equal_next[ui] ? res.values[ui + 1] : std::min(v0[ui], res.values[ui + 1]);
    }
    return res;
}

}  // namespace privopt
