// A read-only view of a weighted directed graph in compressed sparse row (CSR) form.
//
// The view owns nothing: callers keep the arrays alive (numpy buffers, std::vector, ...).
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace privopt {

/// Graph with `n_nodes` nodes; the out-arcs of node u are indices[indptr[u] .. indptr[u+1])
/// with lengths weights[...]. Arrays have sizes n_nodes + 1, n_arcs and n_arcs.
struct CsrGraphView {
    std::int64_t n_nodes = 0;
    const std::int64_t* indptr = nullptr;
    const std::int64_t* indices = nullptr;
    const double* weights = nullptr;

    std::int64_t n_arcs() const { return n_nodes > 0 ? indptr[n_nodes] : 0; }

    /// Throws std::invalid_argument naming the first defect: a non-monotone indptr, an arc
    /// to a node outside [0, n_nodes), or a negative / NaN / infinite length.
    void validate() const {
        if (n_nodes < 0) throw std::invalid_argument("graph: n_nodes must be >= 0");
        if (n_nodes == 0) return;
        if (indptr[0] != 0) throw std::invalid_argument("graph: indptr[0] must be 0");
        for (std::int64_t u = 0; u < n_nodes; ++u) {
            if (indptr[u + 1] < indptr[u])
                throw std::invalid_argument("graph: indptr decreases at node " + std::to_string(u));
        }
        const std::int64_t m = n_arcs();
        for (std::int64_t a = 0; a < m; ++a) {
            if (indices[a] < 0 || indices[a] >= n_nodes)
                throw std::invalid_argument("graph: arc " + std::to_string(a) + " points to node " +
                                            std::to_string(indices[a]) + " outside [0, " +
                                            std::to_string(n_nodes) + ")");
            if (!(weights[a] >= 0.0) || std::isinf(weights[a]))
                throw std::invalid_argument("graph: arc " + std::to_string(a) +
                                            " has a negative, NaN or infinite length");
        }
    }
};

}  // namespace privopt
