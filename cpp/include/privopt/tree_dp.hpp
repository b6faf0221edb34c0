// Exact tree dynamic program over convex cost tables (spec 003 §2.2-2.6): the post-processing of
// M_H^dp and M_c^dp.
//
//   minimise  sum_a w_a (x_a - noisy_a)^2   s.t.  x_a = sum_{c in ch(a)} x_c (a internal),
//             x_a in [lo_a, hi_a] (integers)
//
// on any rooted tree. For census data the tree is T^dp: one copy of the region tree per group
// size under a dummy root with domain {G} and weight 0 (spec 003 §2.2). Bottom-up, each internal
// node's table is TableMerge of its children plus its own squared term; top-down, each node's value
// is split among its children with the merge trace. Children tables are freed as soon as their
// parent is merged, so peak memory is the tables of one root-to-leaf frontier plus the traces.
// Tables hold slopes (cpl_table.hpp), so no intermediate cost can overflow; the optimal cost is
// recomputed from the values at the end, and flagged when it does not fit in int64.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "privopt/cpl_table.hpp"
#include "privopt/table_merge.hpp"

namespace privopt {

/// A rooted tree in CSR form (children of a: child_idx[child_ptr[a] .. child_ptr[a+1])) with one
/// noisy value, own-term weight and domain per node. Pointers are borrowed.
struct TreeDpProblem {
    std::int64_t n_nodes = 0;
    const std::int64_t* child_ptr = nullptr;  // n_nodes + 1
    const std::int64_t* child_idx = nullptr;  // child_ptr[n_nodes]
    const std::int64_t* noisy = nullptr;      // n_nodes
    const std::int64_t* weight = nullptr;     // n_nodes, >= 0 (0: no own term, e.g. the root)
    const std::int64_t* lo = nullptr;         // n_nodes
    const std::int64_t* hi = nullptr;         // n_nodes
    std::int64_t root = 0;
};

enum class DpStatus : std::int64_t { optimal = 0, infeasible = 1 };

struct TreeDpResult {
    DpStatus status = DpStatus::optimal;
    std::int64_t bad_node = -1;    // first node whose domain could not be met (status infeasible)
    std::int64_t cost = 0;         // optimal objective (meaningless when cost_overflow)
    bool cost_overflow = false;    // the objective does not fit in int64 (the values are exact)
    std::int64_t n_widened = 0;    // internal nodes whose window was replaced (widen = true)
    std::vector<std::int64_t> values;  // optimal x per node (empty when infeasible)
};

inline void validate_tree(const TreeDpProblem& p) {
    if (p.n_nodes <= 0) throw std::invalid_argument("tree_dp: n_nodes must be >= 1");
    if (p.root < 0 || p.root >= p.n_nodes) throw std::invalid_argument("tree_dp: root outside the tree");
    if (p.child_ptr[0] != 0) throw std::invalid_argument("tree_dp: child_ptr[0] must be 0");
    for (std::int64_t a = 0; a < p.n_nodes; ++a) {
        if (p.child_ptr[a + 1] < p.child_ptr[a])
            throw std::invalid_argument("tree_dp: child_ptr must be non-decreasing");
        if (p.weight[a] < 0) throw std::invalid_argument("tree_dp: negative weight at node " + std::to_string(a));
        detail::check_magnitude(p.noisy[a], "tree_dp: noisy value");
        detail::check_magnitude(p.lo[a], "tree_dp: window lower end");
        detail::check_magnitude(p.hi[a], "tree_dp: window upper end");
    }
    std::vector<std::int8_t> has_parent(static_cast<std::size_t>(p.n_nodes), 0);
    for (std::int64_t e = 0; e < p.child_ptr[p.n_nodes]; ++e) {
        const std::int64_t c = p.child_idx[e];
        if (c < 0 || c >= p.n_nodes) throw std::invalid_argument("tree_dp: child index outside the tree");
        if (has_parent[static_cast<std::size_t>(c)] || c == p.root)
            throw std::invalid_argument("tree_dp: node " + std::to_string(c) +
                                        " has two parents or is the root (not a tree)");
        has_parent[static_cast<std::size_t>(c)] = 1;
    }
}

/// sum_a w_a (x_a - noisy_a)^2, or cost_infinity with `overflow` set when it exceeds int64.
inline std::int64_t weighted_squared_distance(std::int64_t n, const std::int64_t* values,
                                              const std::int64_t* noisy,
                                              const std::int64_t* weight, bool& overflow) {
    overflow = false;
    std::int64_t acc = 0;
    try {
        for (std::int64_t a = 0; a < n; ++a) {
            const std::int64_t d = detail::checked_sub(values[a], noisy[a], "cost");
            const std::int64_t ad = d < 0 ? -d : d;
            const std::int64_t w = weight ? weight[a] : 1;
            acc = detail::checked_add(acc, detail::checked_mul(w, detail::checked_mul(ad, ad, "cost"), "cost"), "cost");
        }
    } catch (const std::overflow_error&) {
        overflow = true;
        return cost_infinity;
    }
    return acc;
}

/// Solve the tree DP. With `widen`, an internal non-root node whose window misses the range its
/// children can sum to gets that range instead (spec 003 §2.6 resolution); otherwise, or at the
/// root, such a node makes the result infeasible (the caller widens the windows and retries).
/// Throws std::invalid_argument on malformed input, std::overflow_error when a slope could leave
/// int64 and std::length_error when a table would exceed `max_table_size` values.
inline TreeDpResult tree_dp(const TreeDpProblem& p, bool widen = true,
                            std::int64_t max_table_size = default_max_table_size) {
    validate_tree(p);
    const auto n = static_cast<std::size_t>(p.n_nodes);
    TreeDpResult res;
    std::vector<CplTable> table(n);
    std::vector<MergeTrace> trace(n);
    std::vector<std::int8_t> seen(n, 0);
    std::vector<const CplTable*> kids;
    // Iterative post-order: (node, children already pushed?).
    std::vector<std::pair<std::int64_t, bool>> stack{{p.root, false}};
    std::int64_t n_seen = 0;
    while (!stack.empty()) {
        auto [a, expanded] = stack.back();
        const auto ua = static_cast<std::size_t>(a);
        const std::int64_t b = p.child_ptr[a], e = p.child_ptr[a + 1];
        if (!expanded) {
            if (seen[ua]) throw std::invalid_argument("tree_dp: node visited twice (cycle)");
            seen[ua] = 1;
            ++n_seen;
            if (b == e) {  // leaf
                stack.pop_back();
                if (p.hi[a] < p.lo[a]) {
                    res.status = DpStatus::infeasible, res.bad_node = a;
                    return res;
                }
                table[ua] = CplTable::quadratic(p.noisy[a], p.lo[a], p.hi[a], p.weight[a]);
                continue;
            }
            stack.back().second = true;
            for (std::int64_t i = e - 1; i >= b; --i) stack.emplace_back(p.child_idx[i], false);
            continue;
        }
        stack.pop_back();
        kids.clear();
        std::int64_t sum_lo = 0, sum_hi = 0;
        for (std::int64_t i = b; i < e; ++i) {
            const CplTable& t = table[static_cast<std::size_t>(p.child_idx[i])];
            kids.push_back(&t);
            sum_lo = detail::checked_add(sum_lo, t.lo, "tree_dp");
            sum_hi = detail::checked_add(sum_hi, t.hi(), "tree_dp");
        }
        std::int64_t want_lo = p.lo[a], want_hi = p.hi[a];
        if (want_hi < sum_lo || want_lo > sum_hi || want_hi < want_lo) {
            if (!widen || a == p.root) {
                res.status = DpStatus::infeasible, res.bad_node = a;
                return res;
            }
            want_lo = sum_lo, want_hi = sum_hi;
            detail::check_magnitude(want_lo, "tree_dp: widened window");
            detail::check_magnitude(want_hi, "tree_dp: widened window");
            ++res.n_widened;
        }
        table[ua] = table_merge(kids.data(), kids.size(), want_lo, want_hi, &trace[ua],
                                max_table_size);
        add_squared(table[ua], p.noisy[a], p.weight[a]);
        for (std::int64_t i = b; i < e; ++i) {  // children tables are no longer needed
            table[static_cast<std::size_t>(p.child_idx[i])].clear();
        }
    }
    if (n_seen != p.n_nodes) throw std::invalid_argument("tree_dp: some nodes are not below the root");
    // Top-down (spec 003 §2.2): the root takes its best value, each node splits its value.
    res.values.assign(n, 0);
    const CplTable& rt = table[static_cast<std::size_t>(p.root)];
    res.values[static_cast<std::size_t>(p.root)] = rt.argmin();
    std::vector<std::int64_t> order{p.root};
    std::vector<std::int64_t> split;
    for (std::size_t q = 0; q < order.size(); ++q) {
        const std::int64_t a = order[q];
        const std::int64_t b = p.child_ptr[a], e = p.child_ptr[a + 1];
        if (b == e) continue;
        split.resize(static_cast<std::size_t>(e - b));
        split_value(trace[static_cast<std::size_t>(a)], res.values[static_cast<std::size_t>(a)], split.data());
        for (std::int64_t i = b; i < e; ++i) {
            res.values[static_cast<std::size_t>(p.child_idx[i])] = split[static_cast<std::size_t>(i - b)];
            order.push_back(p.child_idx[i]);
        }
        trace[static_cast<std::size_t>(a)] = MergeTrace{};  // free as we go
    }
    res.cost = weighted_squared_distance(p.n_nodes, res.values.data(), p.noisy, p.weight,
                                         res.cost_overflow);
    return res;
}

// ------------------------------------------------------------------ census forests
//
// The census T^dp (spec 003 §2.2) is N copies of the region tree under the dummy root. Given by
// its region tree rather than node by node, the DP needs no per-node structure for the leaves
// (the bulk of the nodes): a leaf is an implicit quadratic built on the fly from its noisy value
// and window, only internal regions hold tables (one per size, freed once their parent has
// merged them), and only regions whose children are internal keep merge traces. A parent of
// leaves splits its value in closed form (census_leaf_split), exactly as its heap merge would.
// Top-level subtrees (the children of region 0) are independent until the root: census_up /
// census_root_step / census_down let them run as separate tasks with the same result, bit for
// bit, as census_forest_dp, which is built from the same three steps.

/// The census T^dp by regions. Region r (breadth-first order, root 0; children
/// child_idx[child_ptr[r] .. child_ptr[r+1])) has one node per size s < n_sizes, with noisy value
/// noisy[r * n_sizes + s] and window [max(c - d, 0), min(c + d, G)], c = clip(noisy, 0, G), where
/// d is delta[r * n_sizes + s] (delta_per_node), delta[r] (per region) or delta0 (delta null).
/// The noisy values are int64 (`noisy`) or, where they fit, int32 (`noisy32`, with `noisy` null):
/// half the memory for the largest array a worker holds. Pointers are borrowed.
struct CensusForest {
    std::int64_t n_regions = 0, n_sizes = 0;
    const std::int64_t* child_ptr = nullptr;
    const std::int64_t* child_idx = nullptr;
    const std::int64_t* noisy = nullptr;
    const std::int32_t* noisy32 = nullptr;  // read when noisy is null
    const std::int64_t* delta = nullptr;
    bool delta_per_node = false;
    std::int64_t delta0 = 0;
    const std::uint8_t* shift = nullptr;  // optional: node (r, s) uses delta << shift[r * N + s]
    std::int64_t G = 0;
    std::int64_t max_table_size = default_max_table_size;
    // Optional, n_regions entries: a region with tables here stands for a subtree solved
    // elsewhere (census_up of that subtree); the region has no children in this forest and its
    // N tables are merged as an internal child's would be.
    const std::vector<CplTable>* given = nullptr;

    bool is_leaf(std::int64_t r) const { return child_ptr[r] == child_ptr[r + 1]; }
    bool is_given(std::int64_t r) const { return given != nullptr && !given[r].empty(); }
    // Children merged from tables (an internal region's, or given), not as implicit quadratics.
    bool has_table(std::int64_t r) const { return !is_leaf(r) || is_given(r); }
    std::int64_t noisy_at(std::int64_t r, std::int64_t s) const {
        return noisy != nullptr ? noisy[r * n_sizes + s] : std::int64_t{noisy32[r * n_sizes + s]};
    }
    std::int64_t delta_at(std::int64_t r, std::int64_t s) const {
        std::int64_t d = delta == nullptr ? delta0 : delta_per_node ? delta[r * n_sizes + s] : delta[r];
        if (shift != nullptr) {  // doubled windows: capped at G (the whole domain)
            const int k = shift[r * n_sizes + s];
            d = (k >= 62 || d > (G >> k)) ? std::max(d, G) : d << k;
        }
        return d;
    }
    void window(std::int64_t r, std::int64_t s, std::int64_t& lo, std::int64_t& hi) const {
        const std::int64_t c = std::min(std::max(noisy_at(r, s), std::int64_t{0}), G);
        const std::int64_t d = delta_at(r, s);
        lo = std::max(c - d, std::int64_t{0});
        hi = std::min(c + d, G);
    }
    CplTable leaf_table(std::int64_t r, std::int64_t s) const {
        std::int64_t lo, hi;
        window(r, s, lo, hi);
        return CplTable::quadratic(noisy_at(r, s), lo, hi, 1);
    }
};

/// Checks a forest once: sizes, a tree below region 0 in breadth-first order, values in range.
inline void validate_forest(const CensusForest& f) {
    if (f.n_regions <= 0 || f.n_sizes <= 0)
        throw std::invalid_argument("census forest: needs at least one region and one size");
    if (f.G < 0 || f.G > max_abs_value) throw std::invalid_argument("census forest: G outside [0, 2^61]");
    if (f.child_ptr[0] != 0 || f.child_ptr[f.n_regions] != f.n_regions - 1)
        throw std::invalid_argument("census forest: child_ptr must run from 0 to n_regions - 1");
    for (std::int64_t r = 0; r < f.n_regions; ++r)
        if (f.child_ptr[r + 1] < f.child_ptr[r])
            throw std::invalid_argument("census forest: child_ptr must be non-decreasing");
    // Breadth-first order: the children of r are regions child_ptr[r] + 1 .. child_ptr[r + 1],
    // so every region but 0 has exactly one parent that precedes it.
    for (std::int64_t e = 0; e < f.n_regions - 1; ++e)
        if (f.child_idx[e] != e + 1)
            throw std::invalid_argument("census forest: regions must be in breadth-first order "
                                        "(child_idx = 1 .. n_regions - 1)");
    for (std::int64_t r = 0; r < f.n_regions; ++r)
        if (f.child_ptr[r] < r && f.child_ptr[r] != f.child_ptr[r + 1])
            throw std::invalid_argument("census forest: region " + std::to_string(r) +
                                        " has a child before it (not breadth-first)");
    const std::int64_t cells = f.n_regions * f.n_sizes;
    if (f.noisy != nullptr) {
        for (std::int64_t i = 0; i < cells; ++i) detail::check_magnitude(f.noisy[i], "census forest: noisy value");
    } else if (f.noisy32 == nullptr) {
        throw std::invalid_argument("census forest: no noisy values (noisy and noisy32 are null)");
    }  // int32 values are within max_abs_value
    if (f.delta != nullptr) {
        const std::int64_t nd = f.delta_per_node ? cells : f.n_regions;
        for (std::int64_t i = 0; i < nd; ++i)
            if (f.delta[i] < 0 || f.delta[i] > max_abs_value)
                throw std::invalid_argument("census forest: delta outside [0, 2^61]");
    } else if (f.delta0 < 0 || f.delta0 > max_abs_value) {
        throw std::invalid_argument("census forest: delta0 outside [0, 2^61]");
    }
}

/// Bottom-up result of one subtree: the n_sizes tables of its root (implicit for a leaf) and the
/// merge traces of its regions whose children are internal.
struct CensusSubtree {
    std::int64_t root = 0;
    std::vector<CplTable> tables;
    std::unordered_map<std::int64_t, std::vector<MergeTrace>> traces;
    std::int64_t n_widened = 0;
};

namespace detail {

/// phi of region r for size s from its children's tables, widened when its window misses their
/// range (spec 003 §2.6 resolution), plus r's own squared term.
inline CplTable census_merge(const CensusForest& f, std::int64_t r, std::int64_t s,
                             const std::vector<const CplTable*>& kids, MergeTrace* trace,
                             std::int64_t& n_widened) {
    std::int64_t sum_lo = 0, sum_hi = 0;
    for (const CplTable* t : kids) {
        sum_lo = checked_add(sum_lo, t->lo, "census forest");
        sum_hi = checked_add(sum_hi, t->hi(), "census forest");
    }
    std::int64_t lo, hi;
    f.window(r, s, lo, hi);
    if (hi < sum_lo || lo > sum_hi) {
        lo = sum_lo, hi = sum_hi;
        check_magnitude(lo, "census forest: widened window");
        check_magnitude(hi, "census forest: widened window");
        ++n_widened;
    }
    CplTable t = table_merge(kids.data(), kids.size(), lo, hi, trace, f.max_table_size);
    add_squared(t, f.noisy_at(r, s), 1);
    return t;
}

}  // namespace detail

namespace detail {

/// The children of a parent of leaves, seen from their merge (spec 003 §2.5): leaf j is the
/// quadratic (x - nz_j)^2 on [lo_j, hi_j] with smallest minimiser v0_j. In one direction (up:
/// increments from v0; down: decrements) its steps have the odd, increasing slopes
/// first_j, first_j + 2, ..., first_j + 2 (count_j - 1). The heap merge takes steps in
/// (slope, child) order; so does a sweep over the slope values, which needs no heap and no
/// trace: O(k log k) for the k leaves plus one pass over the steps taken.
struct LeafSteps {
    std::vector<std::int64_t> first_up, count_up, first_down, count_down, v0;
    std::int64_t V0 = 0, sum_lo = 0, sum_hi = 0, bound = 0;

    LeafSteps(const CensusForest& f, std::int64_t r, std::int64_t s) {
        const std::int64_t b = f.child_ptr[r], e = f.child_ptr[r + 1];
        const auto k = static_cast<std::size_t>(e - b);
        first_up.resize(k), count_up.resize(k), first_down.resize(k), count_down.resize(k);
        v0.resize(k);
        for (std::size_t j = 0; j < k; ++j) {
            const std::int64_t c = f.child_idx[b + static_cast<std::int64_t>(j)];
            std::int64_t lo, hi;
            f.window(c, s, lo, hi);
            const std::int64_t nz = f.noisy_at(c, s);
            v0[j] = std::min(std::max(nz, lo), hi);
            V0 += v0[j];
            sum_lo = checked_add(sum_lo, lo, "census forest");
            sum_hi = checked_add(sum_hi, hi, "census forest");
            if (hi > lo) bound = std::max(bound, quadratic_slope_bound(nz, lo, hi, 1));
            first_up[j] = 2 * (v0[j] - nz) + 1, count_up[j] = hi - v0[j];
            first_down[j] = 2 * (nz - v0[j]) + 1, count_down[j] = v0[j] - lo;
        }
        if (bound > max_abs_slope) overflow("quadratic table");
    }

    /// The slope values t of one direction in increasing order, each with the number m > 0 of
    /// steps of slope t (children whose range covers t), until `needed` steps are listed or the
    /// steps run out. Without gaps between the children's ranges, `needed` steps lie within the
    /// first `needed` odd values from the smallest first slope t0, where a histogram of range
    /// starts and ends replaces a sort; with gaps (ranges far apart), sorted range events.
    static std::vector<std::pair<std::int64_t, std::int64_t>> runs(
        const std::vector<std::int64_t>& first, const std::vector<std::int64_t>& count,
        std::int64_t needed) {
        std::vector<std::pair<std::int64_t, std::int64_t>> out;
        std::int64_t t0 = cost_infinity;
        for (std::size_t j = 0; j < first.size(); ++j)
            if (count[j] > 0) t0 = std::min(t0, first[j]);
        if (t0 == cost_infinity || needed <= 0) return out;
        const auto n = static_cast<std::size_t>(needed);
        std::vector<std::int64_t> delta(n, 0);
        for (std::size_t j = 0; j < first.size(); ++j) {
            if (count[j] <= 0) continue;
            const std::int64_t a = (first[j] - t0) / 2;
            if (a >= needed) continue;
            delta[static_cast<std::size_t>(a)] += 1;
            if (a + count[j] < needed) delta[static_cast<std::size_t>(a + count[j])] -= 1;
        }
        std::int64_t active = 0, listed = 0;
        for (std::size_t i = 0; i < n && listed < needed; ++i) {
            active += delta[i];
            if (active == 0) continue;
            out.emplace_back(t0 + 2 * static_cast<std::int64_t>(i), active);
            listed += active;
        }
        if (listed >= needed) return out;
        return sorted_runs(first, count, needed);  // gaps: the steps lie farther out
    }

    static std::vector<std::pair<std::int64_t, std::int64_t>> sorted_runs(
        const std::vector<std::int64_t>& first, const std::vector<std::int64_t>& count,
        std::int64_t needed) {
        std::vector<std::pair<std::int64_t, std::int64_t>> out;
        std::vector<std::int64_t> starts, ends;  // ends: one past the last slope
        for (std::size_t j = 0; j < first.size(); ++j)
            if (count[j] > 0) starts.push_back(first[j]), ends.push_back(first[j] + 2 * count[j]);
        std::sort(starts.begin(), starts.end());
        std::sort(ends.begin(), ends.end());
        const std::size_t n = starts.size();
        std::size_t i = 0, o = 0;
        std::int64_t active = 0, listed = 0;
        std::int64_t t = n > 0 ? starts[0] : 0;
        while (listed < needed) {
            while (i < n && starts[i] <= t) ++active, ++i;
            while (o < n && ends[o] <= t) --active, ++o;
            if (active == 0) {
                if (i == n) break;
                t = starts[i];  // skip the gap to the next range
                continue;
            }
            // Constant multiplicity until the next range starts or the first active one ends.
            std::int64_t next = ends[o];
            if (i < n) next = std::min(next, starts[i]);
            for (; t < next && listed < needed; t += 2) {
                out.emplace_back(t, active);
                listed += active;
            }
        }
        return out;
    }
};

}  // namespace detail

/// TableMerge of a parent of leaves (all children implicit quadratics of weight 1) on
/// [max(want_lo, sum lo), min(want_hi, sum hi)]: the same slopes as table_merge, without a heap.
inline CplTable census_leaf_merge(const CensusForest& f, std::int64_t r, std::int64_t s,
                                  std::int64_t want_lo, std::int64_t want_hi,
                                  std::int64_t& sum_lo, std::int64_t& sum_hi) {
    const detail::LeafSteps leaves(f, r, s);
    sum_lo = leaves.sum_lo, sum_hi = leaves.sum_hi;
    const std::int64_t lo_eff = std::max(want_lo, sum_lo), hi_eff = std::min(want_hi, sum_hi);
    if (hi_eff < lo_eff) return {};
    CplTable phi = detail::new_phi(lo_eff, hi_eff, leaves.bound, f.max_table_size);
    const std::int64_t V0 = leaves.V0;
    std::int64_t v = V0;  // up: the slope from v to v + 1
    for (const auto& [t, m] : detail::LeafSteps::runs(leaves.first_up, leaves.count_up, hi_eff - V0))
        for (std::int64_t q = 0; q < m && v < hi_eff; ++q, ++v)
            if (v >= lo_eff) phi.slope[static_cast<std::size_t>(v - lo_eff)] = t;
    v = V0;  // down: the slope from v - 1 to v is -t
    for (const auto& [t, m] : detail::LeafSteps::runs(leaves.first_down, leaves.count_down, V0 - lo_eff))
        for (std::int64_t q = 0; q < m && v > lo_eff; ++q, --v)
            if (v <= hi_eff) phi.slope[static_cast<std::size_t>(v - 1 - lo_eff)] = -t;
    return phi;
}

/// The split of value v of region r (size s) among its children when they are all leaves: the
/// first |v - V0| steps of the heap merge, in (slope, child) order, from a sweep of the leaves'
/// slopes instead of a stored trace.
inline void census_leaf_split(const CensusForest& f, std::int64_t r, std::int64_t s,
                              std::int64_t v, std::int64_t* out) {
    const detail::LeafSteps leaves(f, r, s);
    const std::int64_t k = f.child_ptr[r + 1] - f.child_ptr[r];
    for (std::int64_t j = 0; j < k; ++j) out[j] = leaves.v0[static_cast<std::size_t>(j)];
    if (v == leaves.V0) return;
    const bool inc = v > leaves.V0;
    const auto& first = inc ? leaves.first_up : leaves.first_down;
    const auto& count = inc ? leaves.count_up : leaves.count_down;
    std::int64_t steps = inc ? v - leaves.V0 : leaves.V0 - v;
    std::int64_t threshold = 0, take = -1;  // all steps below threshold, `take` at threshold
    for (const auto& [t, m] : detail::LeafSteps::runs(first, count, steps)) {
        if (m >= steps) {
            threshold = t, take = steps;
            break;
        }
        steps -= m;
    }
    if (take < 0)
        throw std::invalid_argument("census_leaf_split: value " + std::to_string(v) +
                                    " outside the children's range");
    for (std::int64_t j = 0; j < k; ++j) {
        const auto u = static_cast<std::size_t>(j);
        const std::int64_t a = first[u], n = count[u];
        std::int64_t below = threshold <= a ? 0 : std::min((threshold - a) / 2, n);
        if (take > 0 && n > below && a + 2 * below == threshold) ++below, --take;  // child order
        out[j] += inc ? below : -below;
    }
}

namespace detail {

/// Region r's table for size s when its children are all leaves: census_leaf_merge, widened
/// when r's window misses the children's range, plus r's own squared term.
inline CplTable census_leaf_parent(const CensusForest& f, std::int64_t r, std::int64_t s,
                                   std::int64_t& n_widened) {
    std::int64_t lo, hi, sum_lo, sum_hi;
    f.window(r, s, lo, hi);
    CplTable t = census_leaf_merge(f, r, s, lo, hi, sum_lo, sum_hi);
    if (hi < sum_lo || lo > sum_hi) {
        check_magnitude(sum_lo, "census forest: widened window");
        check_magnitude(sum_hi, "census forest: widened window");
        ++n_widened;
        t = census_leaf_merge(f, r, s, sum_lo, sum_hi, sum_lo, sum_hi);
    }
    add_squared(t, f.noisy_at(r, s), 1);
    return t;
}

}  // namespace detail

/// Bottom-up over the subtree of region `sub_root` (iterative post-order; internal tables live on
/// a stack, N per region, and are popped when the parent merges them).
inline CensusSubtree census_up(const CensusForest& f, std::int64_t sub_root) {
    const std::int64_t N = f.n_sizes;
    CensusSubtree out;
    out.root = sub_root;
    if (f.is_given(sub_root)) {
        out.tables = f.given[sub_root];
        return out;
    }
    if (f.is_leaf(sub_root)) {
        for (std::int64_t s = 0; s < N; ++s) out.tables.push_back(f.leaf_table(sub_root, s));
        return out;
    }
    std::vector<CplTable> tstack;  // N tables per finished internal region, in post-order
    std::vector<CplTable> leafbuf;
    std::vector<const CplTable*> kids;
    std::vector<std::pair<std::int64_t, bool>> stack{{sub_root, false}};
    while (!stack.empty()) {
        auto [r, expanded] = stack.back();
        const std::int64_t b = f.child_ptr[r], e = f.child_ptr[r + 1];
        if (!expanded && f.is_given(r)) {  // solved elsewhere: its tables as if just merged
            stack.pop_back();
            for (const CplTable& t : f.given[r]) tstack.push_back(t);
            continue;
        }
        if (!expanded) {
            stack.back().second = true;
            for (std::int64_t i = e - 1; i >= b; --i)
                if (f.has_table(f.child_idx[i])) stack.emplace_back(f.child_idx[i], false);
            continue;
        }
        stack.pop_back();
        const std::int64_t k = e - b;
        std::int64_t n_internal = 0;
        for (std::int64_t i = b; i < e; ++i) n_internal += f.has_table(f.child_idx[i]) ? 1 : 0;
        const std::size_t base = tstack.size() - static_cast<std::size_t>(n_internal * N);
        std::vector<MergeTrace> traces(n_internal > 0 ? static_cast<std::size_t>(N) : 0);
        std::vector<CplTable> mine(static_cast<std::size_t>(N));
        leafbuf.resize(static_cast<std::size_t>(k));
        kids.resize(static_cast<std::size_t>(k));
        for (std::int64_t s = 0; s < N && n_internal == 0; ++s)
            mine[static_cast<std::size_t>(s)] = detail::census_leaf_parent(f, r, s, out.n_widened);
        for (std::int64_t s = 0; s < N && n_internal > 0; ++s) {
            std::size_t next_internal = 0;
            for (std::int64_t i = b; i < e; ++i) {
                const std::int64_t c = f.child_idx[i];
                const auto j = static_cast<std::size_t>(i - b);
                if (!f.has_table(c)) {
                    leafbuf[j] = f.leaf_table(c, s);
                    kids[j] = &leafbuf[j];
                } else {
                    kids[j] = &tstack[base + next_internal++ * static_cast<std::size_t>(N) + static_cast<std::size_t>(s)];
                }
            }
            mine[static_cast<std::size_t>(s)] = detail::census_merge(
                f, r, s, kids, n_internal > 0 ? &traces[static_cast<std::size_t>(s)] : nullptr,
                out.n_widened);
        }
        tstack.resize(base);
        for (auto& t : mine) tstack.push_back(std::move(t));
        if (n_internal > 0) out.traces.emplace(r, std::move(traces));
    }
    out.tables = std::move(tstack);
    return out;
}

/// Top-down over the subtree of `sub.root`, whose values per size are already in `values`
/// (n_regions * n_sizes, row-major). Writes the values of every region below it and sets
/// touch[r * n_sizes + s] to 1 for each node of the subtree (root included) that ends on an
/// edge of its window other than 0 or G. Returns the number of such nodes.
inline std::int64_t census_down(const CensusForest& f, const CensusSubtree& sub,
                                std::int64_t* values, std::uint8_t* touch) {
    const std::int64_t N = f.n_sizes;
    std::int64_t n_touch = 0;
    std::vector<std::int64_t> order{sub.root}, split;
    for (std::size_t q = 0; q < order.size(); ++q) {
        const std::int64_t r = order[q];
        for (std::int64_t s = 0; s < N; ++s) {
            std::int64_t lo, hi;
            f.window(r, s, lo, hi);
            const std::int64_t v = values[r * N + s];
            const bool t = (v <= lo && lo > 0) || (v >= hi && hi < f.G);
            touch[r * N + s] = t ? 1 : 0;
            n_touch += t ? 1 : 0;
        }
        const std::int64_t b = f.child_ptr[r], e = f.child_ptr[r + 1];
        if (b == e) continue;
        split.resize(static_cast<std::size_t>(e - b));
        const auto it = sub.traces.find(r);
        for (std::int64_t s = 0; s < N; ++s) {
            if (it != sub.traces.end())
                split_value(it->second[static_cast<std::size_t>(s)], values[r * N + s], split.data());
            else
                census_leaf_split(f, r, s, values[r * N + s], split.data());
            for (std::int64_t i = b; i < e; ++i)
                values[f.child_idx[i] * N + s] = split[static_cast<std::size_t>(i - b)];
        }
        for (std::int64_t i = b; i < e; ++i) order.push_back(f.child_idx[i]);
    }
    return n_touch;
}

/// The root step: region 0's tables from its children's subtree tables (in child order, or its
/// own quadratics when it is a leaf), then the dummy root with domain {G}. Writes the values of
/// region 0 and of its children into `values`. Returns infeasible when no allocation of G exists
/// within the windows.
inline DpStatus census_root_step(const CensusForest& f, const std::vector<CensusSubtree>& subs,
                                 std::int64_t* values, std::int64_t& n_widened) {
    const std::int64_t N = f.n_sizes;
    std::vector<CplTable> root(static_cast<std::size_t>(N));
    std::vector<MergeTrace> traces(static_cast<std::size_t>(N));
    const bool leaf = f.is_leaf(0);
    std::vector<const CplTable*> kids;
    for (std::int64_t s = 0; s < N; ++s) {
        if (leaf) {
            root[static_cast<std::size_t>(s)] = f.leaf_table(0, s);
            continue;
        }
        kids.clear();
        for (const auto& sub : subs) kids.push_back(&sub.tables[static_cast<std::size_t>(s)]);
        root[static_cast<std::size_t>(s)] =
            detail::census_merge(f, 0, s, kids, &traces[static_cast<std::size_t>(s)], n_widened);
    }
    std::vector<const CplTable*> ptrs;
    for (auto& t : root) ptrs.push_back(&t);
    MergeTrace top;
    const CplTable phi = table_merge(ptrs.data(), ptrs.size(), f.G, f.G, &top, f.max_table_size);
    if (phi.empty()) return DpStatus::infeasible;
    std::vector<std::int64_t> by_size(static_cast<std::size_t>(N));
    split_value(top, f.G, by_size.data());
    std::vector<std::int64_t> split(subs.size());
    for (std::int64_t s = 0; s < N; ++s) {
        values[s] = by_size[static_cast<std::size_t>(s)];
        if (leaf) continue;
        split_value(traces[static_cast<std::size_t>(s)], values[s], split.data());
        for (std::size_t j = 0; j < subs.size(); ++j) values[subs[j].root * N + s] = split[j];
    }
    return DpStatus::optimal;
}

struct CensusDpResult {
    DpStatus status = DpStatus::optimal;
    std::int64_t n_widened = 0;
    std::int64_t n_touching = 0;
};

/// Solve the census T^dp: census_up on every child of region 0, the root step, census_down on
/// every child. `values` and `touch` have n_regions * n_sizes entries (row-major by region).
inline CensusDpResult census_forest_dp(const CensusForest& f, std::int64_t* values,
                                       std::uint8_t* touch) {
    validate_forest(f);
    CensusDpResult res;
    std::vector<CensusSubtree> subs;
    for (std::int64_t i = f.child_ptr[0]; i < f.child_ptr[1]; ++i) {
        subs.push_back(census_up(f, f.child_idx[i]));
        res.n_widened += subs.back().n_widened;
    }
    res.status = census_root_step(f, subs, values, res.n_widened);
    if (res.status != DpStatus::optimal) return res;
    CensusSubtree top;  // region 0 itself: only its touch flags (its split is done)
    top.root = 0;
    for (std::int64_t s = 0; s < f.n_sizes; ++s) {
        std::int64_t lo, hi;
        f.window(0, s, lo, hi);
        const std::int64_t v = values[s];
        touch[s] = ((v <= lo && lo > 0) || (v >= hi && hi < f.G)) ? 1 : 0;
        res.n_touching += touch[s];
    }
    for (auto& sub : subs) {
        res.n_touching += census_down(f, sub, values, touch);
        sub = CensusSubtree{};  // free its traces as soon as it is done
    }
    return res;
}

}  // namespace privopt
