// Single- and multi-source shortest paths (Dijkstra) on a CSR graph with non-negative lengths.
//
// Used for metric-DP graph distances (spec 000) and for LR sets on road networks (spec 001),
// where a search is cut off at a radius: `cutoff` stops the search once the smallest tentative
// distance exceeds it, which makes a bounded search cost proportional to the ball it explores.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "privopt/csr_graph.hpp"

namespace privopt {

inline constexpr double unreachable = std::numeric_limits<double>::infinity();

/// Reusable workspace: a search touching few nodes resets only those it touched.
class DijkstraWorkspace {
  public:
    explicit DijkstraWorkspace(std::int64_t n_nodes)
        : dist_(static_cast<std::size_t>(n_nodes), unreachable),
          pred_(static_cast<std::size_t>(n_nodes), -1) {}

    /// Shortest distances from `source`; nodes farther than `cutoff` (or unreachable) stay at
    /// +inf. Returns the nodes settled within the cutoff, in order of distance.
    const std::vector<std::int64_t>& run(const CsrGraphView& g, std::int64_t source,
                                         double cutoff = unreachable) {
        if (source < 0 || source >= g.n_nodes)
            throw std::invalid_argument("dijkstra: source " + std::to_string(source) +
                                        " outside [0, " + std::to_string(g.n_nodes) + ")");
        reset();
        using Item = std::pair<double, std::int64_t>;
        std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
        set(source, 0.0, -1);
        heap.emplace(0.0, source);
        while (!heap.empty()) {
            const auto [d, u] = heap.top();
            heap.pop();
            if (d > dist_[u]) continue;  // stale entry (lazy deletion)
            if (d > cutoff) break;
            settled_.push_back(u);
            for (std::int64_t a = g.indptr[u]; a < g.indptr[u + 1]; ++a) {
                const std::int64_t v = g.indices[a];
                const double nd = d + g.weights[a];
                if (nd < dist_[v]) {
                    set(v, nd, u);
                    heap.emplace(nd, v);
                }
            }
        }
        // Nodes reached but beyond the cutoff are reported as unreachable.
        for (std::int64_t v : touched_)
            if (dist_[v] > cutoff) dist_[v] = unreachable, pred_[v] = -1;
        return settled_;
    }

    double distance(std::int64_t v) const { return dist_[v]; }
    std::int64_t predecessor(std::int64_t v) const { return pred_[v]; }
    const std::vector<double>& distances() const { return dist_; }

  private:
    void set(std::int64_t v, double d, std::int64_t p) {
        if (dist_[v] == unreachable) touched_.push_back(v);
        dist_[v] = d;
        pred_[v] = p;
    }
    void reset() {
        for (std::int64_t v : touched_) dist_[v] = unreachable, pred_[v] = -1;
        touched_.clear();
        settled_.clear();
    }
    std::vector<double> dist_;
    std::vector<std::int64_t> pred_;
    std::vector<std::int64_t> touched_;
    std::vector<std::int64_t> settled_;
};

/// Distances from each of `n_sources` sources to every node, written row-major into
/// `out` (n_sources x n_nodes). Unreachable or beyond-cutoff entries are +inf.
inline void dijkstra_many(const CsrGraphView& g, const std::int64_t* sources, std::int64_t n_sources,
                          double cutoff, double* out) {
    DijkstraWorkspace ws(g.n_nodes);
    for (std::int64_t s = 0; s < n_sources; ++s) {
        ws.run(g, sources[s], cutoff);
        const auto& dist = ws.distances();
        double* row = out + s * g.n_nodes;
        for (std::int64_t v = 0; v < g.n_nodes; ++v) row[v] = dist[static_cast<std::size_t>(v)];
    }
}

}  // namespace privopt
