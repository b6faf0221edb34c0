// DPM split scoring (Liebenow et al., CCS 2024; spec 004 §2, §4, §8).
//
// Plain header-only C++17, no Python. Everything a DPM recursion level needs:
//   * SplitGrid: the data-independent split candidates s_j = a + (j + 1/2)·β and their
//     emptiness windows, turned into one sorted threshold list per axis;
//   * route_points: send each point down the current split tree to its active node (slot);
//   * level_cells: one pass over the data computes, for every active node and dimension, a
//     histogram over the threshold cells (counts are additive, so chunks or threads sum);
//   * node_counts / score_candidates: left-insertion ranks r = #{x < s} and window counts |s|
//     of every candidate in every dimension from those cells, centreness + α·emptiness scores;
//   * em_choice: the exponential-mechanism choice p ∝ exp(scale·score) in log space, given a
//     uniform draw u in [0, 1) that the caller takes from its own randomness source;
//   * slot_sums: clipped coordinate sums per leaf for the final noisy averages.
// A sort-based node_counts_sorted is kept as the slow reference (test oracle) of level_cells.
// Data are n×d row-major float64; every coordinate is clipped to [a, b] on read (spec §10.10).
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace privopt::dpm {

// How the emptiness window of candidate s_j is counted (spec §2.1, §9 D3, §10.7).
enum class WindowMode : int {
    paper = 0,      // closed [s − β/2, s + β/2] (Def. 5 as printed)
    half_open = 1,  // [s − β/2, s + β/2): the windows partition the axis
    reference = 2,  // the reference code's histogram bins [a + jw, a + (j+1)w), w = (b−a)/numSplits,
                    // values equal to b dropped (fast_histogram semantics)
};

// Number of split candidates per dimension: ⌊(b − a)/β⌋ (spec §10.3).
inline std::int64_t num_splits(double a, double b, double beta) {
    if (!(b > a) || !std::isfinite(a) || !std::isfinite(b))
        throw std::invalid_argument("bounds must be finite with a < b");
    if (!(beta > 0) || !std::isfinite(beta)) throw std::invalid_argument("beta must be finite and > 0");
    const double k = std::floor((b - a) / beta);
    if (k > 1e8) throw std::invalid_argument("beta is too small for the bounds (more than 1e8 splits)");
    return static_cast<std::int64_t>(k);
}

inline double clip(double x, double a, double b) { return x < a ? a : (x > b ? b : x); }

// The candidate grid of one axis (the same in every dimension and at every node).
struct SplitGrid {
    double a = 0, b = 1, beta = 1;
    WindowMode mode = WindowMode::paper;
    std::int64_t n_splits = 0;            // W per dimension
    std::vector<double> candidate;       // s_j
    std::vector<double> thresholds;      // sorted, unique: every s_j, window low, window high
    std::vector<std::int64_t> idx_s, idx_lo, idx_hi;  // positions of s_j, lo_j, hi_j in thresholds
    bool hi_closed = true;               // window upper end included (paper mode)
    // Bucket accelerator: bucket k of [a, b] (width (b−a)/n_buckets) starts the threshold search at
    // first_ge[k] = #{t < a + k·width}; a short linear walk then finds the exact position.
    std::vector<std::int64_t> first_ge;
    double bucket_scale = 0;

    std::int64_t n_thresholds() const { return static_cast<std::int64_t>(thresholds.size()); }
    // Cells per dimension: an open interval before each threshold, the threshold value itself,
    // and the open interval after the last threshold.
    std::int64_t n_cells() const { return 2 * n_thresholds() + 1; }

    // #{t < x} for a value x in [a, b], exact (comparisons only).
    std::int64_t lower_index(double x) const {
        const std::int64_t nb = static_cast<std::int64_t>(first_ge.size()) - 1;
        std::int64_t k = static_cast<std::int64_t>((x - a) * bucket_scale);
        k = k < 0 ? 0 : (k > nb ? nb : k);
        std::int64_t i = first_ge[static_cast<std::size_t>(k)];
        const std::int64_t m = n_thresholds();
        while (i > 0 && thresholds[static_cast<std::size_t>(i - 1)] >= x) --i;
        while (i < m && thresholds[static_cast<std::size_t>(i)] < x) ++i;
        return i;
    }

    // Cell of x: 2·#{t < x}, plus 1 when x equals a threshold.
    std::int64_t cell(double x) const {
        const std::int64_t i = lower_index(x);
        return 2 * i + ((i < n_thresholds() && thresholds[static_cast<std::size_t>(i)] == x) ? 1 : 0);
    }
};

inline SplitGrid make_grid(double a, double b, double beta, WindowMode mode) {
    SplitGrid g;
    g.a = a;
    g.b = b;
    g.beta = beta;
    g.mode = mode;
    g.n_splits = num_splits(a, b, beta);
    const std::int64_t w = g.n_splits;
    std::vector<double> lo(static_cast<std::size_t>(w)), hi(static_cast<std::size_t>(w));
    g.candidate.resize(static_cast<std::size_t>(w));
    const double bin = w > 0 ? (b - a) / static_cast<double>(w) : 0.0;
    for (std::int64_t j = 0; j < w; ++j) {
        const auto u = static_cast<std::size_t>(j);
        const double s = a + (static_cast<double>(j) + 0.5) * beta;
        g.candidate[u] = s;
        if (mode == WindowMode::reference) {
            lo[u] = a + static_cast<double>(j) * bin;
            hi[u] = (j + 1 == w) ? b : a + static_cast<double>(j + 1) * bin;
        } else {
            lo[u] = s - 0.5 * beta;
            hi[u] = s + 0.5 * beta;
        }
    }
    g.hi_closed = (mode == WindowMode::paper);
    g.thresholds.reserve(static_cast<std::size_t>(3 * w));
    g.thresholds.insert(g.thresholds.end(), g.candidate.begin(), g.candidate.end());
    g.thresholds.insert(g.thresholds.end(), lo.begin(), lo.end());
    g.thresholds.insert(g.thresholds.end(), hi.begin(), hi.end());
    std::sort(g.thresholds.begin(), g.thresholds.end());
    g.thresholds.erase(std::unique(g.thresholds.begin(), g.thresholds.end()), g.thresholds.end());
    auto pos = [&](double v) {
        return static_cast<std::int64_t>(
            std::lower_bound(g.thresholds.begin(), g.thresholds.end(), v) - g.thresholds.begin());
    };
    g.idx_s.resize(static_cast<std::size_t>(w));
    g.idx_lo.resize(static_cast<std::size_t>(w));
    g.idx_hi.resize(static_cast<std::size_t>(w));
    for (std::int64_t j = 0; j < w; ++j) {
        const auto u = static_cast<std::size_t>(j);
        g.idx_s[u] = pos(g.candidate[u]);
        g.idx_lo[u] = pos(lo[u]);
        g.idx_hi[u] = pos(hi[u]);
    }
    const std::int64_t n_buckets = std::max<std::int64_t>(1, 2 * g.n_thresholds());
    g.bucket_scale = static_cast<double>(n_buckets) / (b - a);
    g.first_ge.resize(static_cast<std::size_t>(n_buckets + 1));
    for (std::int64_t k = 0; k <= n_buckets; ++k) {
        const double start = a + static_cast<double>(k) / g.bucket_scale;
        g.first_ge[static_cast<std::size_t>(k)] = pos(start);
    }
    return g;
}

// ---------------------------------------------------------------------------------------------
// The split tree. Node 0 is the root. An internal node has feature >= 0 and sends x to `left`
// when x[feature] <= threshold (S1 of Alg. 1 line 21), else to `right`. A node with feature < 0 is
// a tip: `slot` is its index among the nodes of interest (active nodes of the current level, or
// leaves for the averaging), or −1 when its points are to be ignored.
struct TreeView {
    std::int64_t n_nodes = 0;
    const std::int64_t* feature = nullptr;
    const double* threshold = nullptr;
    const std::int64_t* left = nullptr;
    const std::int64_t* right = nullptr;
    const std::int64_t* slot = nullptr;

    void validate(std::int64_t d, std::int64_t n_slots) const {
        if (n_nodes < 1) throw std::invalid_argument("the tree needs at least the root node");
        for (std::int64_t k = 0; k < n_nodes; ++k) {
            if (feature[k] < 0 && slot[k] >= n_slots) throw std::invalid_argument("tree slot >= n_slots");
            if (feature[k] >= d) throw std::invalid_argument("tree feature index >= d");
            if (feature[k] >= 0 && (left[k] <= k || right[k] <= k || left[k] >= n_nodes ||
                                    right[k] >= n_nodes))
                throw std::invalid_argument("tree children must have larger indices in range");
        }
    }

    // Branch-free step: on clustered data the direction of a split is unpredictable.
    std::int64_t tip(const double* x) const {
        std::int64_t k = 0;
        while (feature[k] >= 0) {
            const std::int64_t go_right = !(x[feature[k]] <= threshold[k]);
            k = left[k] + go_right * (right[k] - left[k]);
        }
        return k;
    }

    std::int64_t route(const double* x) const { return slot[tip(x)]; }
};

inline void route_points(const double* X, std::int64_t n, std::int64_t d, const TreeView& tree,
                         std::int64_t* out) {
    tree.validate(d, std::numeric_limits<std::int64_t>::max());
    for (std::int64_t i = 0; i < n; ++i) out[i] = tree.route(X + i * d);
}

namespace detail {
template <class Body>
void parallel_rows(std::int64_t n, int n_threads, Body body) {
    // body(begin, end, thread_index); rows are split into contiguous blocks.
    if (n_threads <= 1 || n < 20000) {
        body(std::int64_t{0}, n, 0);
        return;
    }
    std::vector<std::thread> pool;
    const std::int64_t block = (n + n_threads - 1) / n_threads;
    for (int t = 0; t < n_threads; ++t) {
        const std::int64_t begin = std::min<std::int64_t>(n, t * block);
        const std::int64_t end = std::min<std::int64_t>(n, begin + block);
        pool.emplace_back([=] { body(begin, end, t); });
    }
    for (auto& th : pool) th.join();
}

// Add one point's d cell codes to its slot's per-dimension histograms (base: d × nc counters);
// false when a code is outside the grid (those codes are skipped).
template <class Code>
bool add_codes(const Code* c, std::int64_t d, std::int64_t nc, std::int64_t* base) {
    bool ok = true;
    for (std::int64_t k = 0; k < d; ++k) {
        const std::int64_t cell = static_cast<std::int64_t>(c[k]);
        if (cell < nc)
            ++base[k * nc + cell];
        else
            ok = false;
    }
    return ok;
}

// Count rows into `cells` (total counters, added to): body(begin, end, out) adds the counts of
// rows [begin, end) into out, which is `cells` itself on one thread and a zeroed private copy per
// thread otherwise; the copies are summed into `cells` at the end.
template <class Body>
void count_rows(std::int64_t n, int n_threads, std::int64_t total, std::int64_t* cells, Body body) {
    n_threads = std::max(1, n_threads);
    std::vector<std::vector<std::int64_t>> local(static_cast<std::size_t>(n_threads));
    parallel_rows(n, n_threads, [&](std::int64_t begin, std::int64_t end, int t) {
        std::int64_t* out = cells;
        if (n_threads > 1) {
            local[static_cast<std::size_t>(t)].assign(static_cast<std::size_t>(total), 0);
            out = local[static_cast<std::size_t>(t)].data();
        }
        body(begin, end, out);
    });
    if (n_threads > 1)
        for (const auto& buf : local)
            if (!buf.empty())
                for (std::int64_t k = 0; k < total; ++k) cells[k] += buf[static_cast<std::size_t>(k)];
}
}  // namespace detail

// One pass over the data: cells[slot][dim][cell] += 1 for every point routed to an active slot.
// cells has n_slots × d × grid.n_cells() entries and is accumulated into (not zeroed), so that
// chunks can be summed. Coordinates are clipped to [a, b] before lookup.
inline void level_cells(const SplitGrid& g, const double* X, std::int64_t n, std::int64_t d,
                        const TreeView& tree, std::int64_t n_slots, std::int64_t* cells,
                        int n_threads = 1) {
    if (d < 1) throw std::invalid_argument("d must be >= 1");
    tree.validate(d, n_slots);
    const std::int64_t nc = g.n_cells();
    const std::int64_t per_slot = d * nc;
    const std::int64_t total = n_slots * per_slot;
    detail::count_rows(n, n_threads, total, cells,
                       [&](std::int64_t begin, std::int64_t end, std::int64_t* out) {
        for (std::int64_t i = begin; i < end; ++i) {
            const double* x = X + i * d;
            const std::int64_t s = tree.route(x);
            if (s < 0) continue;
            std::int64_t* base = out + s * per_slot;
            for (std::int64_t k = 0; k < d; ++k) ++base[k * nc + g.cell(clip(x[k], g.a, g.b))];
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Cell codes. For a fixed grid the cell of a coordinate does not change from level to level, so
// it is computed once (n × d small integers, 1/8 of the data at one byte) and every level pass
// then reads codes instead of doubles. Routing works on codes too: a split threshold s is itself
// a grid threshold, with cell 2i + 1, and for clipped x, x <= s exactly when cell(x) <= cell(s).

// The smallest unsigned width (1, 2 or 4 bytes) that holds every cell index of the grid.
inline int code_bytes(const SplitGrid& g) {
    const std::int64_t top = g.n_cells() - 1;
    if (top <= std::numeric_limits<std::uint8_t>::max()) return 1;
    if (top <= std::numeric_limits<std::uint16_t>::max()) return 2;
    if (top <= std::numeric_limits<std::uint32_t>::max()) return 4;
    throw std::invalid_argument("too many grid cells for a 32-bit code");
}

template <class Code>
void cell_codes(const SplitGrid& g, const double* X, std::int64_t n, std::int64_t d, Code* out,
                int n_threads = 1) {
    if (g.n_cells() - 1 > static_cast<std::int64_t>(std::numeric_limits<Code>::max()))
        throw std::invalid_argument("the code type is too narrow for the grid's cells");
    detail::parallel_rows(n, std::max(1, n_threads), [&](std::int64_t begin, std::int64_t end, int) {
        for (std::int64_t i = begin * d; i < end * d; ++i)
            out[i] = static_cast<Code>(g.cell(clip(X[i], g.a, g.b)));
    });
}

// The tree with each internal node's threshold replaced by its cell (throws when a threshold is
// not one of the grid's thresholds, so that code routing could differ from value routing). The
// nodes are packed and the step is branch-free: clustered data make the direction of a split
// unpredictable, and a mispredicted branch per level cost more than the counting itself.
struct CodeTree {
    struct Node {
        std::int64_t feature, threshold_cell, left, right, slot;
    };
    std::vector<Node> nodes;

    CodeTree(const SplitGrid& g, const TreeView& t, std::int64_t d, std::int64_t n_slots) {
        t.validate(d, n_slots);
        nodes.resize(static_cast<std::size_t>(t.n_nodes));
        for (std::int64_t k = 0; k < t.n_nodes; ++k) {
            Node& node = nodes[static_cast<std::size_t>(k)];
            node = Node{t.feature[k], 0, t.left[k], t.right[k], t.slot[k]};
            if (t.feature[k] < 0) continue;
            const double s = t.threshold[k];
            if (!(s >= g.a && s <= g.b)) throw std::invalid_argument("tree threshold outside [a, b]");
            const std::int64_t c = g.cell(s);
            if (c % 2 == 0) throw std::invalid_argument("tree threshold is not a threshold of the grid");
            node.threshold_cell = c;
        }
    }

    // The tip reached from node `start` (0 = the root).
    template <class Code>
    std::int64_t tip(const Code* code, std::int64_t start = 0) const {
        const Node* node = nodes.data() + start;
        while (node->feature >= 0) {
            const std::int64_t right = static_cast<std::int64_t>(code[node->feature]) > node->threshold_cell;
            node = nodes.data() + (node->left + right * (node->right - node->left));
        }
        return node - nodes.data();
    }

    template <class Code>
    std::int64_t route(const Code* code) const {
        return nodes[static_cast<std::size_t>(tip(code))].slot;
    }
};

// level_cells on codes: cells[slot][dim][code] += 1 for every row routed to an active slot.
template <class Code>
void level_cells_codes(const SplitGrid& g, const Code* codes, std::int64_t n, std::int64_t d,
                       const TreeView& tree, std::int64_t n_slots, std::int64_t* cells, int n_threads = 1) {
    if (d < 1) throw std::invalid_argument("d must be >= 1");
    const CodeTree ct(g, tree, d, n_slots);
    const std::int64_t nc = g.n_cells(), per_slot = d * nc, total = n_slots * per_slot;
    std::atomic<bool> bad_code{false};
    detail::count_rows(n, n_threads, total, cells,
                       [&](std::int64_t begin, std::int64_t end, std::int64_t* out) {
        for (std::int64_t i = begin; i < end; ++i) {
            const Code* c = codes + i * d;
            const std::int64_t s = ct.route(c);
            if (s < 0) continue;
            if (!detail::add_codes(c, d, nc, out + s * per_slot))
                bad_code.store(true, std::memory_order_relaxed);  // no throw across a thread
        }
    });
    if (bad_code.load()) throw std::invalid_argument("code out of range for the grid");
}

// level_cells_codes with per-point state: nodes[i] holds the tip point i reached in the previous
// pass (0 at first). Each pass walks on from there, usually one step, instead of from the root,
// and stores the new tip. The counts equal those of level_cells_codes on the same tree.
template <class Code, class NodeId>
void level_cells_nodes(const SplitGrid& g, const Code* codes, NodeId* nodes, std::int64_t n, std::int64_t d,
                       const TreeView& tree, std::int64_t n_slots, std::int64_t* cells, int n_threads = 1) {
    if (d < 1) throw std::invalid_argument("d must be >= 1");
    const CodeTree ct(g, tree, d, n_slots);
    if (tree.n_nodes - 1 > static_cast<std::int64_t>(std::numeric_limits<NodeId>::max()))
        throw std::invalid_argument("the node id type is too narrow for the tree");
    const std::int64_t nc = g.n_cells(), per_slot = d * nc, total = n_slots * per_slot;
    std::atomic<bool> bad{false};
    detail::count_rows(n, n_threads, total, cells,
                       [&](std::int64_t begin, std::int64_t end, std::int64_t* out) {
        for (std::int64_t i = begin; i < end; ++i) {
            const Code* c = codes + i * d;
            const std::int64_t from = static_cast<std::int64_t>(nodes[i]);
            if (from >= tree.n_nodes) {
                bad.store(true, std::memory_order_relaxed);  // no throw across a thread
                continue;
            }
            const std::int64_t at = ct.tip(c, from);
            nodes[i] = static_cast<NodeId>(at);
            const std::int64_t s = ct.nodes[static_cast<std::size_t>(at)].slot;
            if (s < 0) continue;
            if (!detail::add_codes(c, d, nc, out + s * per_slot)) bad.store(true, std::memory_order_relaxed);
        }
    });
    if (bad.load()) throw std::invalid_argument("code or node id out of range for the grid and tree");
}

// Ranks, window counts and size of one node, from its d × n_cells block of cells.
struct NodeCounts {
    std::int64_t d = 0, n_splits = 0;
    std::int64_t size = 0;                  // |S|
    std::vector<std::int64_t> rank;         // d × W: #{x in S : x^(i) < s_j}
    std::vector<std::int64_t> window;       // d × W: |s_j| (emptiness window count)
    std::vector<std::int64_t> at_most;      // d × W: #{x in S : x^(i) <= s_j} = |S1| of that split
};

inline NodeCounts node_counts(const SplitGrid& g, const std::int64_t* node_cells, std::int64_t d) {
    NodeCounts c;
    c.d = d;
    c.n_splits = g.n_splits;
    const std::int64_t nc = g.n_cells(), w = g.n_splits;
    c.rank.resize(static_cast<std::size_t>(d * w));
    c.window.resize(static_cast<std::size_t>(d * w));
    c.at_most.resize(static_cast<std::size_t>(d * w));
    std::vector<std::int64_t> prefix(static_cast<std::size_t>(nc + 1));
    for (std::int64_t k = 0; k < d; ++k) {
        const std::int64_t* h = node_cells + k * nc;
        prefix[0] = 0;
        for (std::int64_t q = 0; q < nc; ++q)
            prefix[static_cast<std::size_t>(q + 1)] = prefix[static_cast<std::size_t>(q)] + h[q];
        if (k == 0) c.size = prefix[static_cast<std::size_t>(nc)];
        // #{x < t_i} = cells 0..2i, #{x <= t_i} = cells 0..2i+1.
        auto less = [&](std::int64_t i) { return prefix[static_cast<std::size_t>(2 * i + 1)]; };
        auto leq = [&](std::int64_t i) { return prefix[static_cast<std::size_t>(2 * i + 2)]; };
        for (std::int64_t j = 0; j < w; ++j) {
            const auto u = static_cast<std::size_t>(j);
            const auto o = static_cast<std::size_t>(k * w + j);
            c.rank[o] = less(g.idx_s[u]);
            c.at_most[o] = leq(g.idx_s[u]);
            const std::int64_t upper = g.hi_closed ? leq(g.idx_hi[u]) : less(g.idx_hi[u]);
            c.window[o] = upper - less(g.idx_lo[u]);
        }
    }
    return c;
}

// Slow reference of node_counts for one node given as its own row-major n × d block: sorts each
// column and uses binary search (spec §8). Used as the test oracle of the cell histogram path.
inline NodeCounts node_counts_sorted(const SplitGrid& g, const double* X, std::int64_t n, std::int64_t d) {
    NodeCounts c;
    c.d = d;
    c.n_splits = g.n_splits;
    c.size = n;
    const std::int64_t w = g.n_splits;
    c.rank.resize(static_cast<std::size_t>(d * w));
    c.window.resize(static_cast<std::size_t>(d * w));
    c.at_most.resize(static_cast<std::size_t>(d * w));
    std::vector<double> col(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < d; ++k) {
        for (std::int64_t i = 0; i < n; ++i) col[static_cast<std::size_t>(i)] = clip(X[i * d + k], g.a, g.b);
        std::sort(col.begin(), col.end());
        auto less = [&](double v) {
            return static_cast<std::int64_t>(std::lower_bound(col.begin(), col.end(), v) - col.begin());
        };
        auto leq = [&](double v) {
            return static_cast<std::int64_t>(std::upper_bound(col.begin(), col.end(), v) - col.begin());
        };
        for (std::int64_t j = 0; j < w; ++j) {
            const auto u = static_cast<std::size_t>(j);
            const auto o = static_cast<std::size_t>(k * w + j);
            const double lo = g.thresholds[static_cast<std::size_t>(g.idx_lo[u])];
            const double hi = g.thresholds[static_cast<std::size_t>(g.idx_hi[u])];
            c.rank[o] = less(g.candidate[u]);
            c.at_most[o] = leq(g.candidate[u]);
            c.window[o] = (g.hi_closed ? leq(hi) : less(hi)) - less(lo);
        }
    }
    return c;
}

// acc[k] += v[k+1] − v[k] for k < m − 1 (the gaps of a sorted column, Alg. 2 line 7): one pass,
// the same difference then the same sum per element as a vectorised diff-and-add.
inline void add_gaps(const double* v, std::int64_t m, double* acc) {
    for (std::int64_t k = 0; k + 1 < m; ++k) acc[k] += v[k + 1] - v[k];
}

// ---------------------------------------------------------------------------------------------
// Scores (spec §2).

struct ScoreParams {
    double t = 0.3, q = 1.0 / 12.0, alpha = 5.0;
    void validate() const {
        if (!(q > 0) || !(q < 0.5)) throw std::invalid_argument("q must lie in (0, 1/2)");
        if (!(t >= 2 * q) || !(t <= 1)) throw std::invalid_argument("t must satisfy 2q <= t <= 1");
        if (!(alpha > 0) || !std::isfinite(alpha)) throw std::invalid_argument("alpha must be > 0");
    }
};

// Centreness c_{t,q}(r) of Def. 6, unclipped (spec §2.2): r may exceed ñ when ñ < |S|.
inline double centreness(double r, double n_tilde, double t, double q) {
    const double half = 0.5 * n_tilde;
    const double u = half - std::fabs(r - half);
    // Closed outer quantiles, as in the paper and [C]: |ñ/2 − r| >= ñ/2 − ñq  ⇒ outer.
    if (std::fabs(half - r) >= half - n_tilde * q) return u * t / (n_tilde * q);
    return (t - 2 * q) / (1 - 2 * q) + u * (1 - t) / (half - n_tilde * q);
}

// Emptiness e_β = 1 − |s|/ñ, clipped to [0, 1] as in [C] (spec §9 D4).
inline double emptiness(double window_count, double n_tilde) {
    const double e = 1.0 - window_count / n_tilde;
    return e < 0 ? 0.0 : (e > 1 ? 1.0 : e);
}

// Scores f = c + α·e of all d × W candidates (dimension-major). ñ <= 0 gives all zeros: a uniform
// choice (spec §9 D4, §10.15).
inline std::vector<double> score_candidates(const NodeCounts& c, double n_tilde, const ScoreParams& p) {
    p.validate();
    std::vector<double> out(c.rank.size(), 0.0);
    if (!(n_tilde > 0)) return out;
    for (std::size_t o = 0; o < out.size(); ++o)
        out[o] = centreness(static_cast<double>(c.rank[o]), n_tilde, p.t, p.q) +
                 p.alpha * emptiness(static_cast<double>(c.window[o]), n_tilde);
    return out;
}

// Δf = (t/q + α)/max(ñ − λ, 1) (Lemma 5, [C] clamp; spec §2.4, §10.4).
inline double score_sensitivity(double n_tilde, double lambda, const ScoreParams& p) {
    return (p.t / p.q + p.alpha) / std::max(n_tilde - lambda, 1.0);
}

// ---------------------------------------------------------------------------------------------
// Exponential mechanism in log space: P(i) ∝ exp(scale·score_i), scale = ε/(2Δf). The caller passes
// u ~ U[0, 1); the choice is the inverse CDF at u over the stabilised weights exp(scale·s − max).
inline std::vector<double> em_probabilities(const double* scores, std::int64_t m, double scale) {
    if (m < 1) throw std::invalid_argument("the exponential mechanism needs at least one candidate");
    if (!(scale >= 0) || !std::isfinite(scale)) throw std::invalid_argument("scale must be finite and >= 0");
    double top = -std::numeric_limits<double>::infinity();
    for (std::int64_t i = 0; i < m; ++i) {
        if (std::isnan(scores[i]) || scores[i] == std::numeric_limits<double>::infinity())
            throw std::invalid_argument("scores must be finite or -inf");
        top = std::max(top, scale * scores[i]);
    }
    if (!std::isfinite(top)) throw std::invalid_argument("at least one score must be finite");
    std::vector<double> p(static_cast<std::size_t>(m));
    double total = 0;
    for (std::int64_t i = 0; i < m; ++i) {
        const double v = std::isfinite(scores[i]) ? std::exp(scale * scores[i] - top) : 0.0;
        p[static_cast<std::size_t>(i)] = v;
        total += v;
    }
    for (double& v : p) v /= total;
    return p;
}

inline std::int64_t em_choice(const double* scores, std::int64_t m, double scale, double u) {
    if (!(u >= 0) || !(u < 1)) throw std::invalid_argument("u must lie in [0, 1)");
    const std::vector<double> p = em_probabilities(scores, m, scale);
    double acc = 0;
    std::int64_t last_positive = 0;
    for (std::int64_t i = 0; i < m; ++i) {
        const double pi = p[static_cast<std::size_t>(i)];
        if (pi > 0) last_positive = i;
        acc += pi;
        if (u < acc && pi > 0) return i;
    }
    return last_positive;  // rounding left acc slightly below 1
}

// DP percentile (Smith 2011; spec §5) over m sorted values v in [lo, hi], without materialising
// the m + 1 weights: interval k = [z_k, z_{k+1}] of z = (lo, v_0, ..., v_{m−1}, hi) has weight
// exp(−scale·|k − target|)·width_k (scale = ε/(2Δ)); zero-width intervals have weight 0. The
// choice is by inverse CDF at u ∈ [0, 1), in log space. Three passes over v, O(1) memory.
inline std::int64_t percentile_interval(const double* v, std::int64_t m, double lo, double hi, double target,
                                        double scale, double u) {
    if (m < 0 || !(lo < hi)) throw std::invalid_argument("need m >= 0 values and lo < hi");
    if (!(u >= 0) || !(u < 1)) throw std::invalid_argument("u must lie in [0, 1)");
    if (!std::isfinite(target) || !std::isfinite(scale) || !(scale >= 0))
        throw std::invalid_argument("target and scale must be finite, scale >= 0");
    auto z = [&](std::int64_t i) { return i == 0 ? lo : (i == m + 1 ? hi : v[i - 1]); };
    auto log_weight = [&](std::int64_t k, double width) {
        return -scale * std::fabs(static_cast<double>(k) - target) + std::log(width);
    };
    double top = -std::numeric_limits<double>::infinity();
    for (std::int64_t k = 0; k <= m; ++k) {
        const double w = z(k + 1) - z(k);
        if (!(w >= 0)) throw std::invalid_argument("values must be sorted and within [lo, hi]");
        if (w > 0) top = std::max(top, log_weight(k, w));
    }
    if (!std::isfinite(top)) throw std::invalid_argument("no interval of positive width");
    double total = 0;
    for (std::int64_t k = 0; k <= m; ++k) {
        const double w = z(k + 1) - z(k);
        if (w > 0) total += std::exp(log_weight(k, w) - top);
    }
    const double goal = u * total;
    double acc = 0;
    std::int64_t last_positive = 0;
    for (std::int64_t k = 0; k <= m; ++k) {
        const double w = z(k + 1) - z(k);
        if (!(w > 0)) continue;
        last_positive = k;
        acc += std::exp(log_weight(k, w) - top);
        if (goal < acc) return k;
    }
    return last_positive;  // rounding left acc slightly below total
}

// Split index decoding, dimension-major (spec §4 line 20, §10.2).
struct SplitChoice {
    std::int64_t dim = 0, j = 0;
    double value = 0;
};
inline SplitChoice decode_split(std::int64_t index, std::int64_t n_splits, double a, double beta) {
    if (n_splits < 1 || index < 0) throw std::invalid_argument("bad split index");
    SplitChoice s;
    s.dim = index / n_splits;
    s.j = index % n_splits;
    s.value = a + (static_cast<double>(s.j) + 0.5) * beta;
    return s;
}

// ---------------------------------------------------------------------------------------------
// Per-slot clipped coordinate sums (n_slots × d, accumulated into) and true sizes (n_slots).
// Each clipped coordinate is multiplied by `scale` before it is added. With scale a power of two
// (the caller picks 2^-e with max(|a|, |b|) < 2^e) the products are exact, so the sums equal the
// scaled sums in data units bit for bit, yet stay below n in magnitude and cannot overflow.
inline void slot_sums(const double* X, std::int64_t n, std::int64_t d, double a, double b,
                      const TreeView& tree, std::int64_t n_slots, double* sums, std::int64_t* sizes,
                      double scale = 1.0) {
    if (!(scale > 0) || !std::isfinite(scale)) throw std::invalid_argument("scale must be finite and > 0");
    tree.validate(d, n_slots);
    for (std::int64_t i = 0; i < n; ++i) {
        const double* x = X + i * d;
        const std::int64_t s = tree.route(x);
        if (s < 0) continue;
        double* out = sums + s * d;
        for (std::int64_t k = 0; k < d; ++k) out[k] += clip(x[k], a, b) * scale;
        ++sizes[s];
    }
}

// Index of the nearest centre (squared Euclidean, first on ties) of each row; centres k × d.
// The centres are transposed (d × k) so that the innermost loop runs over centres: the k running
// sums are independent (vectorisable, no serial add chain), and each distance still adds its d
// squared differences in coordinate order, so it is bit-identical to the naive loop.
// Coordinates are multiplied by a power of two 2^-e with every |value| < 2^e first: exact, so the
// ranking is unchanged, but the squared differences can neither overflow (values near 1e300) nor
// underflow (values near 1e-300) and tie everything at inf or 0.
inline void nearest_centres(const double* X, std::int64_t n, std::int64_t d, const double* centres,
                            std::int64_t k, std::int64_t* out, int n_threads = 1) {
    if (k < 1) throw std::invalid_argument("at least one centre is needed");
    double reach = 0;
    for (std::int64_t i = 0; i < n * d; ++i) reach = std::max(reach, std::fabs(X[i]));
    for (std::int64_t i = 0; i < k * d; ++i) reach = std::max(reach, std::fabs(centres[i]));
    if (!std::isfinite(reach)) throw std::invalid_argument("X and centres must be finite");
    int e = 0;
    std::frexp(reach, &e);  // reach < 2^e (reach = 0 gives e = 0: scale 1)
    const double scale = std::ldexp(1.0, -e);
    std::vector<double> ct(static_cast<std::size_t>(d * k));
    for (std::int64_t c = 0; c < k; ++c)
        for (std::int64_t j = 0; j < d; ++j)
            ct[static_cast<std::size_t>(j * k + c)] = centres[c * d + j] * scale;
    detail::parallel_rows(n, std::max(1, n_threads), [&](std::int64_t begin, std::int64_t end, int) {
        std::vector<double> dist(static_cast<std::size_t>(k));
        double* dd = dist.data();
        for (std::int64_t i = begin; i < end; ++i) {
            const double* x = X + i * d;
            std::fill(dist.begin(), dist.end(), 0.0);
            for (std::int64_t j = 0; j < d; ++j) {
                const double xj = x[j] * scale;
                const double* row = ct.data() + j * k;
                for (std::int64_t c = 0; c < k; ++c) {
                    const double diff = xj - row[c];
                    dd[c] += diff * diff;
                }
            }
            double best = std::numeric_limits<double>::infinity();
            std::int64_t arg = 0;
            for (std::int64_t c = 0; c < k; ++c) {
                if (dd[c] < best) {
                    best = dd[c];
                    arg = c;
                }
            }
            out[i] = arg;
        }
    });
}

// nearest_centres with a first guess: the tree gives every row a starting centre c0 (the slot of
// the tip the row reaches), and a centre c is skipped when ‖c − c0‖ > 2‖x − c0‖(1 + 1e-6) + τ:
// then ‖x − c‖ > ‖x − c0‖ by far more than the rounding of either distance, so c cannot win,
// not even a tie. The other centres are scanned in order of their distance from c0 until that
// bound stops them. The answer (first index on ties) is the one of nearest_centres, computed
// from the same distances; on clustered data most rows compute one or two distances instead of k.
inline void nearest_centres_from(const double* X, std::int64_t n, std::int64_t d, const double* centres,
                                 std::int64_t k, const TreeView& tree, std::int64_t* out, int n_threads = 1) {
    if (k < 1) throw std::invalid_argument("at least one centre is needed");
    tree.validate(d, k);
    for (std::int64_t j = 0; j < tree.n_nodes; ++j)
        if (tree.feature[j] < 0 && tree.slot[j] < 0) throw std::invalid_argument("every tip needs a centre");
    double reach = 0;
    for (std::int64_t i = 0; i < n * d; ++i) reach = std::max(reach, std::fabs(X[i]));
    for (std::int64_t i = 0; i < k * d; ++i) reach = std::max(reach, std::fabs(centres[i]));
    if (!std::isfinite(reach)) throw std::invalid_argument("X and centres must be finite");
    int e = 0;
    std::frexp(reach, &e);
    const double scale = std::ldexp(1.0, -e);
    std::vector<double> c(static_cast<std::size_t>(k * d));
    for (std::int64_t i = 0; i < k * d; ++i) c[static_cast<std::size_t>(i)] = centres[i] * scale;
    auto sq = [d](const double* u, const double* v) {  // the same sum, in the same order, as nearest_centres
        double s = 0;
        for (std::int64_t j = 0; j < d; ++j) {
            const double diff = u[j] - v[j];
            s += diff * diff;
        }
        return s;
    };
    // For each c0, the other centres by increasing distance from c0.
    std::vector<std::pair<double, std::int64_t>> order(static_cast<std::size_t>(k * k));
    for (std::int64_t a = 0; a < k; ++a) {
        auto* row = order.data() + a * k;
        for (std::int64_t b = 0; b < k; ++b)
            row[b] = {std::sqrt(sq(c.data() + a * d, c.data() + b * d)), b};
        std::sort(row, row + k);
    }
    constexpr double slack = 1.0 + 1e-6, tau = 1e-140;  // tau: far above the underflow of squares
    detail::parallel_rows(n, std::max(1, n_threads), [&](std::int64_t begin, std::int64_t end, int) {
        std::vector<double> x(static_cast<std::size_t>(d));
        for (std::int64_t i = begin; i < end; ++i) {
            for (std::int64_t j = 0; j < d; ++j) x[static_cast<std::size_t>(j)] = X[i * d + j] * scale;
            const std::int64_t c0 = tree.route(X + i * d);
            double best = sq(x.data(), c.data() + c0 * d);
            std::int64_t arg = c0;
            const double reach_c0 = 2.0 * std::sqrt(best) * slack + tau;
            const auto* row = order.data() + c0 * k;
            for (std::int64_t r = 0; r < k && row[r].first <= reach_c0; ++r) {
                const std::int64_t cand = row[r].second;
                if (cand == c0) continue;
                const double dist = sq(x.data(), c.data() + cand * d);
                if (dist < best || (dist == best && cand < arg)) {
                    best = dist;
                    arg = cand;
                }
            }
            out[i] = arg;
        }
    });
}

}  // namespace privopt::dpm

