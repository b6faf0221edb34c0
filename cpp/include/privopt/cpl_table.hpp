// Convex piecewise-linear (CPWL) cost tables on contiguous integer domains (spec 003 §2.4).
//
// A table tau on [lo, lo + size - 1] (+inf elsewhere) is stored by its *slopes*
// tau(v + 1) - tau(v), one per pair of consecutive domain values: the breakpoints of the CPWL
// function. The DPs only ever compare slopes (TableMerge pops the smallest, a minimiser is where
// the slope turns non-negative), so absolute costs are never formed: they grow like
// (cells) x (value range)^2 and overflow int64 for national data at small epsilon, whereas a slope
// is bounded by (tree height) x (2 x value range + 1). Slopes are int64 and exact, so ties are
// exact and results deterministic (spec 003 §2.5). The kernels track a bound on every slope and
// throw std::overflow_error before any slope could leave [-2^62, 2^62].
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace privopt {

inline constexpr std::int64_t cost_infinity = std::numeric_limits<std::int64_t>::max();
/// Largest magnitude accepted for a noisy value or a window end (differences then fit in int64).
inline constexpr std::int64_t max_abs_value = std::int64_t{1} << 61;
/// Largest slope magnitude the kernels let a table reach (sums of two still fit in int64).
inline constexpr std::int64_t max_abs_slope = std::int64_t{1} << 62;

namespace detail {

[[noreturn]] inline void overflow(const char* what) {
    throw std::overflow_error(std::string(what) + ": int64 overflow (values or windows too large)");
}

// Portable checked arithmetic (no compiler builtins): off the hot loops, so plain tests suffice.
inline std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what) {
    constexpr std::int64_t hi = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t lo = std::numeric_limits<std::int64_t>::min();
    if ((b > 0 && a > hi - b) || (b < 0 && a < lo - b)) overflow(what);
    return a + b;
}

inline std::int64_t checked_sub(std::int64_t a, std::int64_t b, const char* what) {
    if (b == std::numeric_limits<std::int64_t>::min()) overflow(what);
    return checked_add(a, -b, what);
}

/// a * b for a, b >= 0.
inline std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what) {
    if (a < 0 || b < 0) throw std::invalid_argument(std::string(what) + ": negative factor");
    if (a != 0 && b > std::numeric_limits<std::int64_t>::max() / a) overflow(what);
    return a * b;
}

/// Throws std::invalid_argument unless |v| <= max_abs_value.
inline void check_magnitude(std::int64_t v, const char* what) {
    if (v > max_abs_value || v < -max_abs_value)
        throw std::invalid_argument(std::string(what) + " = " + std::to_string(v) +
                                    " is outside [-2^61, 2^61]");
}

/// Bound on |w (2 (v - noisy) + 1)| over v in [lo, hi]: the slopes of w (v - noisy)^2 there.
/// Requires |lo|, |hi|, |noisy| <= max_abs_value.
inline std::int64_t quadratic_slope_bound(std::int64_t noisy, std::int64_t lo, std::int64_t hi,
                                          std::int64_t weight) {
    const std::int64_t far = std::max<std::int64_t>(
        std::max(checked_sub(hi, noisy, "slope"), checked_sub(noisy, lo, "slope")), 0);
    return checked_mul(weight, checked_add(checked_mul(2, far, "slope"), 1, "slope"), "slope");
}

}  // namespace detail

/// tau on [lo, hi()], stored by its slopes; +inf elsewhere. Either stored (`slope`) or, for a
/// leaf of the tree DP, the implicit quadratic weight * (v - noisy)^2 on [lo, lo + n - 1]:
/// leaves are the bulk of the nodes and TableMerge reads only the few slopes it consumes, so
/// they are never materialised.
struct CplTable {
    std::int64_t lo = 0;
    std::int64_t n = 0;                // number of domain values (0: empty)
    std::vector<std::int64_t> slope;   // stored tables: slope[i] = tau(lo+i+1) - tau(lo+i)
    bool implicit = false;
    std::int64_t noisy = 0, weight = 1;
    std::int64_t slope_bound = 0;      // |slope| <= slope_bound everywhere

    static CplTable quadratic(std::int64_t noisy, std::int64_t lo, std::int64_t hi,
                              std::int64_t weight = 1) {
        CplTable t;
        t.lo = lo, t.n = std::max<std::int64_t>(hi - lo + 1, 0), t.implicit = true;
        t.noisy = noisy, t.weight = weight;
        t.slope_bound = t.n > 1 ? detail::quadratic_slope_bound(noisy, lo, hi, weight) : 0;
        if (t.slope_bound > max_abs_slope) detail::overflow("quadratic table");
        return t;
    }
    /// A stored table from its values tau(lo), tau(lo+1), ... (tests and bindings).
    static CplTable from_values(std::int64_t lo, const std::int64_t* values, std::int64_t count) {
        CplTable t;
        t.lo = lo, t.n = count;
        for (std::int64_t i = 1; i < count; ++i) {
            const std::int64_t d = detail::checked_sub(values[i], values[i - 1], "table");
            t.slope.push_back(d);
            t.slope_bound = std::max(t.slope_bound, d < 0 ? -d : d);
        }
        if (t.slope_bound > max_abs_slope) detail::overflow("table");
        return t;
    }
    std::int64_t size() const { return n; }
    std::int64_t hi() const { return lo + n - 1; }
    bool empty() const { return n <= 0; }
    bool contains(std::int64_t v) const { return v >= lo && v <= hi(); }
    /// tau(v + 1) - tau(v) for v in [lo, hi() - 1].
    std::int64_t up(std::int64_t v) const {
        if (implicit) return weight * (2 * (v - noisy) + 1);
        return slope[static_cast<std::size_t>(v - lo)];
    }
    /// tau(v) - tau(lo) for v in the domain (checked: tests and small tables only).
    std::int64_t relative(std::int64_t v) const {
        if (!contains(v)) return cost_infinity;
        std::int64_t acc = 0;
        for (std::int64_t u = lo; u < v; ++u) acc = detail::checked_add(acc, up(u), "relative");
        return acc;
    }
    /// Smallest minimiser (the deterministic tie-break of spec 003 §7 item 7): the first value
    /// whose up-slope is non-negative.
    std::int64_t argmin() const {
        if (empty()) throw std::invalid_argument("argmin of an empty cost table");
        if (implicit) return weight == 0 ? lo : std::min(std::max(noisy, lo), hi());
        const auto it = std::lower_bound(slope.begin(), slope.end(), std::int64_t{0});
        return lo + static_cast<std::int64_t>(it - slope.begin());
    }
    /// Discrete convexity: slopes non-decreasing (spec 003 §2.4).
    bool is_convex() const {
        if (implicit) return weight >= 0;
        return std::is_sorted(slope.begin(), slope.end());
    }
    /// Release the storage (a table no longer needed).
    void clear() {
        std::vector<std::int64_t>().swap(slope);
        implicit = false;
        n = 0;
    }
};

/// Squared-distance table w * (v - noisy)^2 on [lo, hi] (a leaf of the tree DP, spec 003 Eq. 4a),
/// stored.
inline CplTable squared_table(std::int64_t noisy, std::int64_t lo, std::int64_t hi,
                              std::int64_t weight = 1) {
    if (hi < lo)
        throw std::invalid_argument("squared_table: empty domain [" + std::to_string(lo) + ", " +
                                    std::to_string(hi) + "]");
    CplTable q = CplTable::quadratic(noisy, lo, hi, weight);
    CplTable t;
    t.lo = lo, t.n = q.n, t.slope_bound = q.slope_bound;
    t.slope.resize(static_cast<std::size_t>(t.n - 1));
    for (std::int64_t v = lo; v < hi; ++v) t.slope[static_cast<std::size_t>(v - lo)] = q.up(v);
    return t;
}

/// In place: tau(v) += w * (v - noisy)^2 (the parent's own term, added after merging).
/// Throws std::overflow_error if a slope could leave [-2^62, 2^62].
inline void add_squared(CplTable& t, std::int64_t noisy, std::int64_t weight = 1) {
    if (weight == 0 || t.n <= 1) return;
    if (t.implicit) throw std::invalid_argument("add_squared: implicit table");
    const std::int64_t own = detail::quadratic_slope_bound(noisy, t.lo, t.hi(), weight);
    t.slope_bound = detail::checked_add(t.slope_bound, own, "add_squared");
    if (t.slope_bound > max_abs_slope) detail::overflow("add_squared");
    for (std::int64_t i = 0; i + 1 < t.n; ++i)
        t.slope[static_cast<std::size_t>(i)] += weight * (2 * (t.lo + i - noisy) + 1);
}

/// Naive min-plus convolution of two tables, O(|a| |b|): the M_dp^OP-style reference used as a
/// test oracle for TableMerge (spec 003 §8 O1 / O6). Values are taken relative to tau(lo).
inline CplTable min_plus_naive(const CplTable& a, const CplTable& b) {
    if (a.empty() || b.empty()) return {};
    std::vector<std::int64_t> out(static_cast<std::size_t>(a.size() + b.size() - 1), cost_infinity);
    for (std::int64_t i = 0; i < a.size(); ++i)
        for (std::int64_t j = 0; j < b.size(); ++j) {
            auto& slot = out[static_cast<std::size_t>(i + j)];
            const std::int64_t c = a.relative(a.lo + i) + b.relative(b.lo + j);
            if (c < slot) slot = c;
        }
    return CplTable::from_values(a.lo + b.lo, out.data(), static_cast<std::int64_t>(out.size()));
}

}  // namespace privopt
