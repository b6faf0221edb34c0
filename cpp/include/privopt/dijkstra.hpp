// Single- and multi-source shortest paths (Dijkstra) on a CSR graph with non-negative lengths.
//
// Used for metric-DP graph distances (spec 000) and for LR sets on road networks (spec 001),
// where a search is cut off at a radius and, optionally, after a number of settled nodes: both
// stop the search early, which makes a bounded search cost proportional to the ball it explores.
#pragma once

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "privopt/csr_graph.hpp"

namespace privopt {

inline constexpr double unreachable = std::numeric_limits<double>::infinity();

/// `max_settled` value meaning "no limit on the number of settled nodes".
inline constexpr std::int64_t no_node_limit = -1;

/// Reusable workspace: a search touching few nodes resets only those it touched.
class DijkstraWorkspace {
  public:
    explicit DijkstraWorkspace(std::int64_t n_nodes)
        : dist_(static_cast<std::size_t>(n_nodes), unreachable),
          pred_(static_cast<std::size_t>(n_nodes), -1),
          settled_flag_(static_cast<std::size_t>(n_nodes), 0) {}

    std::int64_t n_nodes() const { return static_cast<std::int64_t>(dist_.size()); }

    /// Shortest distances from `source`. The search settles nodes in order of distance (ties:
    /// smaller node id first) and stops once the next distance exceeds `cutoff` or, when
    /// `max_settled` >= 0, once that many nodes are settled. Only settled nodes keep a finite
    /// distance; every other node reads +inf. Returns the settled nodes in settled order.
    const std::vector<std::int64_t>& run(const CsrGraphView& g, std::int64_t source,
                                         double cutoff = unreachable,
                                         std::int64_t max_settled = no_node_limit) {
        if (source < 0 || source >= g.n_nodes)
            throw std::invalid_argument("dijkstra: source " + std::to_string(source) +
                                        " outside [0, " + std::to_string(g.n_nodes) + ")");
        if (g.n_nodes != n_nodes())
            throw std::invalid_argument("dijkstra: workspace sized for " +
                                        std::to_string(n_nodes()) + " nodes, graph has " +
                                        std::to_string(g.n_nodes));
        reset();
        if (max_settled == 0) return settled_;
        using Item = std::pair<double, std::int64_t>;
        std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
        set(source, 0.0, -1);
        heap.emplace(0.0, source);
        while (!heap.empty()) {
            const auto [d, u] = heap.top();
            heap.pop();
            if (settled_flag_[u] || d > dist_[u]) continue;  // stale entry (lazy deletion)
            if (d > cutoff) break;
            settled_flag_[u] = 1;
            settled_.push_back(u);
            if (max_settled >= 0 && static_cast<std::int64_t>(settled_.size()) >= max_settled)
                break;
            for (std::int64_t a = g.indptr[u]; a < g.indptr[u + 1]; ++a) {
                const std::int64_t v = g.indices[a];
                const double nd = d + g.weights[a];
                if (nd < dist_[v]) {
                    set(v, nd, u);
                    heap.emplace(nd, v);
                }
            }
        }
        // Nodes reached but not settled (beyond the cutoff or the node limit) read unreachable.
        for (std::int64_t v : touched_)
            if (!settled_flag_[v]) dist_[v] = unreachable, pred_[v] = -1;
        return settled_;
    }

    double distance(std::int64_t v) const { return dist_[v]; }
    std::int64_t predecessor(std::int64_t v) const { return pred_[v]; }
    const std::vector<double>& distances() const { return dist_; }
    const std::vector<std::int64_t>& settled() const { return settled_; }

  private:
    void set(std::int64_t v, double d, std::int64_t p) {
        if (dist_[v] == unreachable) touched_.push_back(v);
        dist_[v] = d;
        pred_[v] = p;
    }
    void reset() {
        for (std::int64_t v : touched_) dist_[v] = unreachable, pred_[v] = -1, settled_flag_[v] = 0;
        touched_.clear();
        settled_.clear();
    }
    std::vector<double> dist_;
    std::vector<std::int64_t> pred_;
    std::vector<char> settled_flag_;
    std::vector<std::int64_t> touched_;
    std::vector<std::int64_t> settled_;
};

/// Distances from sources[begin..end) to every node, written row-major into `out` (row s at
/// out + s * n_nodes). Unreachable or beyond-cutoff entries are +inf.
inline void dijkstra_rows(const CsrGraphView& g, const std::int64_t* sources, std::int64_t begin,
                          std::int64_t end, double cutoff, double* out) {
    DijkstraWorkspace ws(g.n_nodes);
    for (std::int64_t s = begin; s < end; ++s) {
        ws.run(g, sources[s], cutoff);
        const auto& dist = ws.distances();
        std::copy(dist.begin(), dist.end(), out + s * g.n_nodes);
    }
}

/// Distances from each of `n_sources` sources to every node, written row-major into
/// `out` (n_sources x n_nodes). Unreachable or beyond-cutoff entries are +inf. With
/// `n_threads` > 1 the sources are split into contiguous chunks, one workspace per thread
/// (the rows are independent, so the result does not depend on the thread count).
inline void dijkstra_many(const CsrGraphView& g, const std::int64_t* sources, std::int64_t n_sources,
                          double cutoff, double* out, int n_threads = 1) {
    for (std::int64_t s = 0; s < n_sources; ++s)
        if (sources[s] < 0 || sources[s] >= g.n_nodes)
            throw std::invalid_argument("dijkstra_many: source " + std::to_string(sources[s]) +
                                        " outside [0, " + std::to_string(g.n_nodes) + ")");
    const std::int64_t workers =
        std::max<std::int64_t>(1, std::min<std::int64_t>(n_threads, n_sources));
    if (workers == 1) {
        dijkstra_rows(g, sources, 0, n_sources, cutoff, out);
        return;
    }
    std::vector<std::thread> pool;
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(workers));
    pool.reserve(static_cast<std::size_t>(workers));
    for (std::int64_t w = 0; w < workers; ++w) {
        const std::int64_t begin = n_sources * w / workers, end = n_sources * (w + 1) / workers;
        pool.emplace_back([&g, sources, begin, end, cutoff, out, &errors, w] {
            // An exception (e.g. bad_alloc) must not escape a thread: it is rethrown below.
            try {
                dijkstra_rows(g, sources, begin, end, cutoff, out);
            } catch (...) {
                errors[static_cast<std::size_t>(w)] = std::current_exception();
            }
        });
    }
    for (auto& t : pool) t.join();
    for (const auto& e : errors)
        if (e) std::rethrow_exception(e);
}

}  // namespace privopt
