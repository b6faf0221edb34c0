// TableMerge (spec 003 §2.5, the paper's Algorithm 1 §7.1, corrected) and its top-down split.
//
// phi(v) = min { sum_c tau_c(x_c) : sum_c x_c = v }  is the min-plus convolution of the children's
// convex tables. Starting from every child at its smallest minimiser v0_c (V0 = sum v0_c), the
// optimal allocation of V0 + k is obtained by taking the k smallest "up" slopes
// tau_c(x) - tau_c(x-1) over all children (each child's list is already sorted by convexity), and
// symmetrically for V0 - k with the "down" slopes tau_c(x-1) - tau_c(x) (the paper prints the wrong
// key for that direction; spec 003 §2.5).
//
// Tables are slopes (cpl_table.hpp): phi's slopes are exactly the popped children slopes.
//
// Two implementations with identical output (slopes and traces):
//  * table_merge        : k-way heap merge stopped once the requested parent range is covered,
//                         O(sum_c |D_c| + |D_r| log |ch(r)|)  (spec 003 §2.5 "allowed optimisation");
//  * table_merge_sorted : the paper's literal version, sort all slopes, O(M log M).
// Ties are broken by (slope, child order, x), so both produce the same trace.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "privopt/cpl_table.hpp"

namespace privopt {

/// What the top-down phase needs to split a parent value among the children (spec 003 §2.5
/// "Top-down recovery"): the children's minimisers and the order in which they were incremented
/// (up) or decremented (down). Only the steps that reach the parent's domain are stored.
struct MergeTrace {
    std::vector<std::int64_t> v0;  // smallest minimiser of each child's table
    std::int64_t V0 = 0;           // sum of v0
    std::vector<std::int32_t> up;    // child incremented at step k (value V0 + k + 1)
    std::vector<std::int32_t> down;  // child decremented at step k (value V0 - k - 1)
};

namespace detail {

inline void merge_prepare(const CplTable* const* children, std::size_t k, std::int64_t want_lo,
                          std::int64_t want_hi, std::int64_t& lo_eff, std::int64_t& hi_eff,
                          std::int64_t& V0, std::int64_t& bound, std::vector<std::int64_t>& v0) {
    if (k == 0) throw std::invalid_argument("table_merge: a node without children has no phi");
    std::int64_t sum_lo = 0, sum_hi = 0;
    V0 = 0;
    bound = 0;
    v0.resize(k);
    for (std::size_t c = 0; c < k; ++c) {
        if (children[c] == nullptr || children[c]->empty())
            throw std::invalid_argument("table_merge: child " + std::to_string(c) +
                                        " has an empty table");
        sum_lo = checked_add(sum_lo, children[c]->lo, "table_merge");
        sum_hi = checked_add(sum_hi, children[c]->hi(), "table_merge");
        v0[c] = children[c]->argmin();
        V0 += v0[c];  // between sum_lo and sum_hi
        bound = std::max(bound, children[c]->slope_bound);  // phi's slopes are children's slopes
    }
    lo_eff = std::max(want_lo, sum_lo);
    hi_eff = std::min(want_hi, sum_hi);
}

/// An empty phi table on [lo_eff, hi_eff] (slopes filled by the caller).
inline CplTable new_phi(std::int64_t lo_eff, std::int64_t hi_eff, std::int64_t bound,
                        std::int64_t max_size) {
    if (hi_eff - lo_eff >= max_size)
        throw std::length_error("table_merge: a table of " + std::to_string(hi_eff - lo_eff + 1) +
                                " values exceeds the limit of " + std::to_string(max_size));
    CplTable phi;
    phi.lo = lo_eff;
    phi.n = hi_eff - lo_eff + 1;
    phi.slope_bound = bound;
    phi.slope.assign(static_cast<std::size_t>(phi.n - 1), 0);
    return phi;
}

/// Binary min-heap of (slope, child) with a replace-top operation: the merge pops the smallest
/// slope and pushes that child's next one, a single sift-down instead of std::priority_queue's
/// pop + push (half the comparisons; it matters for states with hundreds of counties). Entries
/// are unique in `child`, so the order of pops is the same as with any other min-heap.
class SlopeHeap {
  public:
    using Item = std::pair<std::int64_t, std::int32_t>;
    void reserve(std::size_t n) { h_.reserve(n); }
    void push(Item it) {
        h_.push_back(it);
        std::push_heap(h_.begin(), h_.end(), std::greater<Item>());
    }
    const Item& top() const { return h_.front(); }
    bool empty() const { return h_.empty(); }
    void pop() {
        std::pop_heap(h_.begin(), h_.end(), std::greater<Item>());
        h_.pop_back();
    }
    void replace_top(Item it) {  // == pop() then push(it)
        // Floyd's bottom-up variant: walk the hole down to a leaf along the smaller children
        // (one comparison per level), then sift the new item up — short, because a child's next
        // slope is at least its previous one, i.e. at least the popped minimum.
        const std::size_t n = h_.size();
        std::size_t i = 0;
        for (;;) {
            std::size_t c = 2 * i + 1;
            if (c >= n) break;
            if (c + 1 < n && h_[c + 1] < h_[c]) ++c;
            h_[i] = h_[c];
            i = c;
        }
        while (i > 0) {
            const std::size_t p = (i - 1) / 2;
            if (!(it < h_[p])) break;
            h_[i] = h_[p];
            i = p;
        }
        h_[i] = it;
    }

  private:
    std::vector<Item> h_;
};

}  // namespace detail

/// Largest table (number of domain values) TableMerge allocates unless told otherwise.
inline constexpr std::int64_t default_max_table_size = std::int64_t{1} << 32;

/// phi on [max(want_lo, sum lo_c), min(want_hi, sum hi_c)] (an empty table when that range is
/// empty). `trace`, when given, receives what split_value needs. Throws std::length_error when
/// phi would have more than `max_size` values.
inline CplTable table_merge(const CplTable* const* children, std::size_t k, std::int64_t want_lo,
                            std::int64_t want_hi, MergeTrace* trace = nullptr,
                            std::int64_t max_size = default_max_table_size) {
    std::int64_t lo_eff, hi_eff, V0, bound;
    std::vector<std::int64_t> v0;
    detail::merge_prepare(children, k, want_lo, want_hi, lo_eff, hi_eff, V0, bound, v0);
    if (hi_eff < lo_eff) {
        if (trace) *trace = MergeTrace{std::move(v0), V0, {}, {}};
        return {};
    }
    CplTable phi = detail::new_phi(lo_eff, hi_eff, bound, max_size);
    // phi's up-slope at v (phi(v+1) - phi(v)), recorded when [v, v+1] lies in the domain.
    auto record = [&](std::int64_t v, std::int64_t s) {
        if (v >= lo_eff && v < hi_eff) phi.slope[static_cast<std::size_t>(v - lo_eff)] = s;
    };
    std::vector<std::int32_t> up, down;
    // Heap items are (slope, child): ties by child order.
    // Up: V0 -> hi_eff; step k moves V0 + k - 1 -> V0 + k at the k-th smallest up-slope.
    const std::int64_t n_up = std::max<std::int64_t>(0, hi_eff - V0);
    if (n_up > 0) {
        detail::SlopeHeap heap;
        heap.reserve(k);
        std::vector<std::int64_t> x(v0);
        for (std::size_t c = 0; c < k; ++c)
            if (x[c] < children[c]->hi())
                heap.push({children[c]->up(x[c]), static_cast<std::int32_t>(c)});
        up.reserve(static_cast<std::size_t>(n_up));
        for (std::int64_t step = 1; step <= n_up; ++step) {
            const auto [slope, c] = heap.top();  // non-empty: V0 + step <= sum hi
            up.push_back(c);
            record(V0 + step - 1, slope);
            const CplTable& t = *children[static_cast<std::size_t>(c)];
            const std::int64_t nx = ++x[static_cast<std::size_t>(c)];
            if (nx < t.hi())
                heap.replace_top({t.up(nx), c});
            else
                heap.pop();
        }
    }
    // Down: V0 -> lo_eff; step k moves V0 - k + 1 -> V0 - k at the k-th smallest down-slope
    // tau(x-1) - tau(x) = -up(x-1).
    const std::int64_t n_down = std::max<std::int64_t>(0, V0 - lo_eff);
    if (n_down > 0) {
        detail::SlopeHeap heap;
        heap.reserve(k);
        std::vector<std::int64_t> x(v0);
        for (std::size_t c = 0; c < k; ++c)
            if (x[c] > children[c]->lo)
                heap.push({-children[c]->up(x[c] - 1), static_cast<std::int32_t>(c)});
        down.reserve(static_cast<std::size_t>(n_down));
        for (std::int64_t step = 1; step <= n_down; ++step) {
            const auto [slope, c] = heap.top();
            down.push_back(c);
            record(V0 - step, -slope);
            const CplTable& t = *children[static_cast<std::size_t>(c)];
            const std::int64_t nx = --x[static_cast<std::size_t>(c)];
            if (nx > t.lo)
                heap.replace_top({-t.up(nx - 1), c});
            else
                heap.pop();
        }
    }
    if (trace) *trace = MergeTrace{std::move(v0), V0, std::move(up), std::move(down)};
    return phi;
}

/// The paper's literal Algorithm 1: build all up/down slope lists, sort, take prefixes.
/// Same output as table_merge; kept as a reference and for the sort-floor benchmark.
inline CplTable table_merge_sorted(const CplTable* const* children, std::size_t k,
                                   std::int64_t want_lo, std::int64_t want_hi,
                                   MergeTrace* trace = nullptr,
                                   std::int64_t max_size = default_max_table_size) {
    std::int64_t lo_eff, hi_eff, V0, bound;
    std::vector<std::int64_t> v0;
    detail::merge_prepare(children, k, want_lo, want_hi, lo_eff, hi_eff, V0, bound, v0);
    if (hi_eff < lo_eff) {
        if (trace) *trace = MergeTrace{std::move(v0), V0, {}, {}};
        return {};
    }
    using Entry = std::tuple<std::int64_t, std::int32_t, std::int64_t>;  // (slope, child, x)
    std::vector<Entry> up_list, down_list;
    for (std::size_t c = 0; c < k; ++c) {
        const CplTable& t = *children[c];
        const auto ci = static_cast<std::int32_t>(c);
        for (std::int64_t x = v0[c]; x < t.hi(); ++x) up_list.emplace_back(t.up(x), ci, x);
        for (std::int64_t x = v0[c]; x > t.lo; --x) down_list.emplace_back(-t.up(x - 1), ci, -x);
    }
    std::sort(up_list.begin(), up_list.end());
    std::sort(down_list.begin(), down_list.end());
    CplTable phi = detail::new_phi(lo_eff, hi_eff, bound, max_size);
    auto record = [&](std::int64_t v, std::int64_t s) {
        if (v >= lo_eff && v < hi_eff) phi.slope[static_cast<std::size_t>(v - lo_eff)] = s;
    };
    MergeTrace tr{std::move(v0), V0, {}, {}};
    const auto n_up = static_cast<std::size_t>(std::max<std::int64_t>(0, hi_eff - V0));
    for (std::size_t s = 0; s < n_up; ++s) {
        tr.up.push_back(std::get<1>(up_list[s]));
        record(V0 + static_cast<std::int64_t>(s), std::get<0>(up_list[s]));
    }
    const auto n_down = static_cast<std::size_t>(std::max<std::int64_t>(0, V0 - lo_eff));
    for (std::size_t s = 0; s < n_down; ++s) {
        tr.down.push_back(std::get<1>(down_list[s]));
        record(V0 - static_cast<std::int64_t>(s) - 1, -std::get<0>(down_list[s]));
    }
    if (trace) *trace = std::move(tr);
    return phi;
}

/// Children values x_c (sum = v) attaining phi(v) (spec 003 §2.5 top-down recovery).
/// `v` must lie in the range the trace covers.
inline void split_value(const MergeTrace& trace, std::int64_t v, std::int64_t* out) {
    const std::size_t k = trace.v0.size();
    for (std::size_t c = 0; c < k; ++c) out[c] = trace.v0[c];
    if (v >= trace.V0) {
        const auto steps = static_cast<std::size_t>(v - trace.V0);
        if (steps > trace.up.size())
            throw std::invalid_argument("split_value: value " + std::to_string(v) +
                                        " above the merged range");
        for (std::size_t s = 0; s < steps; ++s) ++out[trace.up[s]];
    } else {
        const auto steps = static_cast<std::size_t>(trace.V0 - v);
        if (steps > trace.down.size())
            throw std::invalid_argument("split_value: value " + std::to_string(v) +
                                        " below the merged range");
        for (std::size_t s = 0; s < steps; ++s) --out[trace.down[s]];
    }
}

}  // namespace privopt
