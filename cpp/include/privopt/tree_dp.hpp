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

}  // namespace privopt
