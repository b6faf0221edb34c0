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
// Tables are slopes (cpl_table.hpp): the prefix minimum keeps tau_i's slopes below v0_i and is
// flat above, so a slope is a sum of own-term slopes along the chain and never overflows unless
// the chain is ~2^62 / (value range) long, which is checked.
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
    std::int64_t cost = 0;             // optimal objective (meaningless when cost_overflow)
    bool cost_overflow = false;        // the objective does not fit in int64 (values are exact)
    std::vector<std::int64_t> values;  // optimal x per chain node (empty when infeasible)
};

/// `equal_next` has n - 1 entries (non-zero: equality edge i -> i+1). Throws
/// std::invalid_argument on malformed input (|noisy|, |lo|, |hi| > 2^61), std::overflow_error
/// when a slope could leave int64 and std::length_error when a domain exceeds `max_table_size`.
inline ChainDpResult chain_dp(std::int64_t n, const std::int64_t* noisy, const std::int64_t* lo,
                              const std::int64_t* hi, const std::uint8_t* equal_next,
                              std::int64_t max_table_size = std::int64_t{1} << 32) {
    if (n <= 0) throw std::invalid_argument("chain_dp: the chain must have at least one node");
    for (std::int64_t i = 0; i < n; ++i) {
        detail::check_magnitude(noisy[i], "chain_dp: noisy value");
        detail::check_magnitude(lo[i], "chain_dp: window lower end");
        detail::check_magnitude(hi[i], "chain_dp: window upper end");
    }
    ChainDpResult res;
    std::vector<std::int64_t> v0(static_cast<std::size_t>(n));
    CplTable cur, next;
    for (std::int64_t i = 0; i < n; ++i) {
        const bool eq = i > 0 && equal_next[i - 1] != 0;
        // Domain of tau_i: own window intersected with where phi_i is finite.
        const std::int64_t a = i == 0 ? lo[0] : std::max(lo[i], cur.lo);
        const std::int64_t b = i == 0 || !eq ? hi[i] : std::min(hi[i], cur.hi());
        if (b < a) {
            res.status = DpStatus::infeasible, res.bad_node = i;
            return res;
        }
        if (b - a >= max_table_size)
            throw std::length_error("chain_dp: node " + std::to_string(i) + " has a domain of " +
                                    std::to_string(b - a + 1) + " values (limit " +
                                    std::to_string(max_table_size) + ")");
        const std::int64_t own = detail::quadratic_slope_bound(noisy[i], a, b, 1);
        next.lo = a;
        next.n = b - a + 1;
        next.slope_bound = detail::checked_add(own, i == 0 ? 0 : cur.slope_bound, "chain_dp");
        if (next.slope_bound > max_abs_slope) detail::overflow("chain_dp");
        next.slope.resize(static_cast<std::size_t>(b - a));
        const std::int64_t vp = i == 0 ? 0 : v0[static_cast<std::size_t>(i - 1)];
        std::int64_t arg = b;  // smallest minimiser: first v whose up-slope is >= 0
        for (std::int64_t v = a; v < b; ++v) {
            std::int64_t s = 2 * (v - noisy[i]) + 1;
            if (i > 0 && (eq || v < vp)) s += cur.up(v);  // prefix minimum: flat from v0 on
            next.slope[static_cast<std::size_t>(v - a)] = s;
            if (s >= 0 && arg == b) arg = v;
        }
        v0[static_cast<std::size_t>(i)] = arg;
        std::swap(cur, next);
    }
    res.values.assign(static_cast<std::size_t>(n), 0);
    res.values.back() = v0.back();
    for (std::int64_t i = n - 2; i >= 0; --i) {
        const auto ui = static_cast<std::size_t>(i);
        res.values[ui] = equal_next[ui] ? res.values[ui + 1] : std::min(v0[ui], res.values[ui + 1]);
    }
    res.cost = weighted_squared_distance(n, res.values.data(), noisy, nullptr, res.cost_overflow);
    return res;
}

}  // namespace privopt
