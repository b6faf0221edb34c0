// Convex piecewise-linear (CPWL) cost tables on contiguous integer domains (spec 003 §2.4).
//
// A table tau is stored by its values on [lo, lo + size - 1]; outside that range it is +inf.
// Costs are int64 so that ties are exact and results deterministic (spec 003 §2.5): noisy inputs
// are integers (geometric noise), so every cost is an integer.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace privopt {

inline constexpr std::int64_t cost_infinity = std::numeric_limits<std::int64_t>::max();

/// tau(v) for v in [lo, hi()]; +inf elsewhere. Either stored (`cost`) or, for a leaf of the
/// tree DP, the implicit quadratic weight * (v - noisy)^2 on [lo, implicit_hi]: leaves are the
/// bulk of the nodes and TableMerge reads only the few slopes it consumes, so they are never
/// materialised.
struct CplTable {
    std::int64_t lo = 0;
    std::vector<std::int64_t> cost;
    bool implicit = false;
    std::int64_t implicit_hi = -1, noisy = 0, weight = 1;

    static CplTable quadratic(std::int64_t noisy, std::int64_t lo, std::int64_t hi,
                              std::int64_t weight = 1) {
        CplTable t;
        t.lo = lo, t.implicit = true, t.implicit_hi = hi, t.noisy = noisy, t.weight = weight;
        return t;
    }
    std::int64_t size() const {
        return implicit ? implicit_hi - lo + 1 : static_cast<std::int64_t>(cost.size());
    }
    std::int64_t hi() const { return lo + size() - 1; }
    bool empty() const { return size() <= 0; }
    bool contains(std::int64_t v) const { return v >= lo && v <= hi(); }
    std::int64_t at(std::int64_t v) const {
        if (!contains(v)) return cost_infinity;
        if (implicit) return weight * (v - noisy) * (v - noisy);
        return cost[static_cast<std::size_t>(v - lo)];
    }
    /// Smallest minimiser (the deterministic tie-break of spec 003 §7 item 7).
    std::int64_t argmin() const {
        if (empty()) throw std::invalid_argument("argmin of an empty cost table");
        if (implicit) return weight == 0 ? lo : std::min(std::max(noisy, lo), hi());
        std::size_t best = 0;
        for (std::size_t i = 1; i < cost.size(); ++i)
            if (cost[i] < cost[best]) best = i;
        return lo + static_cast<std::int64_t>(best);
    }
    /// Discrete convexity: forward differences non-decreasing (spec 003 §2.4).
    bool is_convex() const {
        if (implicit) return weight >= 0;
        for (std::size_t i = 2; i < cost.size(); ++i)
            if (cost[i] - cost[i - 1] < cost[i - 1] - cost[i - 2]) return false;
        return true;
    }
    /// Release the storage (a table no longer needed).
    void clear() {
        std::vector<std::int64_t>().swap(cost);
        implicit = false;
    }
};

/// Squared-distance table w * (v - noisy)^2 on [lo, hi] (a leaf of the tree DP, spec 003 Eq. 4a).
inline CplTable squared_table(std::int64_t noisy, std::int64_t lo, std::int64_t hi,
                              std::int64_t weight = 1) {
    if (hi < lo)
        throw std::invalid_argument("squared_table: empty domain [" + std::to_string(lo) + ", " +
                                    std::to_string(hi) + "]");
    CplTable t;
    t.lo = lo;
    t.cost.resize(static_cast<std::size_t>(hi - lo + 1));
    for (std::int64_t v = lo; v <= hi; ++v) {
        const std::int64_t d = v - noisy;
        t.cost[static_cast<std::size_t>(v - lo)] = weight * d * d;
    }
    return t;
}

/// In place: tau(v) += w * (v - noisy)^2 (the parent's own term, added after merging).
inline void add_squared(CplTable& t, std::int64_t noisy, std::int64_t weight = 1) {
    if (weight == 0) return;
    if (t.implicit) throw std::invalid_argument("add_squared: implicit table");
    for (std::int64_t i = 0; i < t.size(); ++i) {
        const std::int64_t d = t.lo + i - noisy;
        t.cost[static_cast<std::size_t>(i)] += weight * d * d;
    }
}

/// Naive min-plus convolution of two tables, O(|a| |b|): the M_dp^OP-style reference used as a
/// test oracle for TableMerge (spec 003 §8 O1 / O6).
inline CplTable min_plus_naive(const CplTable& a, const CplTable& b) {
    if (a.empty() || b.empty()) return {};
    CplTable out;
    out.lo = a.lo + b.lo;
    out.cost.assign(static_cast<std::size_t>(a.size() + b.size() - 1), cost_infinity);
    for (std::int64_t i = 0; i < a.size(); ++i)
        for (std::int64_t j = 0; j < b.size(); ++j) {
            auto& slot = out.cost[static_cast<std::size_t>(i + j)];
            const std::int64_t c = a.at(a.lo + i) + b.at(b.lo + j);
            if (c < slot) slot = c;
        }
    return out;
}

}  // namespace privopt
