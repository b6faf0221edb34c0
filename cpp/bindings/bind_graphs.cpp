// Bindings of the graph kernels (Dijkstra on CSR graphs).
//
// `PreparedGraph` owns a validated copy of the CSR arrays and a reusable workspace, so that a
// bounded search from Python costs the search itself plus one call (no re-validation, no
// allocation of n-sized arrays per call).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "families.hpp"
#include "privopt/dijkstra.hpp"

namespace py = pybind11;

namespace privopt::bindings {
namespace {

using I64Array = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
using F64Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

CsrGraphView make_view(const I64Array& indptr, const I64Array& indices, const F64Array& weights) {
    if (indptr.ndim() != 1 || indices.ndim() != 1 || weights.ndim() != 1)
        throw std::invalid_argument("graph arrays must be one-dimensional");
    if (indptr.size() < 1) throw std::invalid_argument("indptr must have n_nodes + 1 >= 1 entries");
    if (indices.size() != weights.size())
        throw std::invalid_argument("indices and weights must have the same length");
    CsrGraphView g{indptr.size() - 1, indptr.data(), indices.data(), weights.data()};
    if (g.n_arcs() != indices.size())
        throw std::invalid_argument("indptr[-1] must equal the number of arcs");
    g.validate();
    return g;
}

void check_cutoff(double cutoff) {
    if (std::isnan(cutoff) || cutoff < 0.0)
        throw std::invalid_argument("cutoff must be >= 0 (inf for none), got " +
                                    std::to_string(cutoff));
}

void check_sources(const I64Array& sources, std::int64_t n_nodes) {
    if (sources.ndim() != 1) throw std::invalid_argument("sources must be one-dimensional");
    for (std::int64_t s = 0; s < sources.size(); ++s)
        if (sources.data()[s] < 0 || sources.data()[s] >= n_nodes)
            throw std::invalid_argument("source " + std::to_string(sources.data()[s]) +
                                        " outside [0, " + std::to_string(n_nodes) + ")");
}

py::array_t<double> shortest_paths(const I64Array& indptr, const I64Array& indices,
                                   const F64Array& weights, const I64Array& sources, double cutoff) {
    const CsrGraphView g = make_view(indptr, indices, weights);
    check_sources(sources, g.n_nodes);
    check_cutoff(cutoff);
    const std::int64_t n_sources = sources.size();
    py::array_t<double> out({n_sources, g.n_nodes});
    double* out_ptr = out.mutable_data();
    const std::int64_t* src = sources.data();
    {
        py::gil_scoped_release release;
        dijkstra_many(g, src, n_sources, cutoff, out_ptr);
    }
    return out;
}

/// A validated CSR graph kept in C++ with one reusable Dijkstra workspace.
class PreparedGraph {
  public:
    PreparedGraph(const I64Array& indptr, const I64Array& indices, const F64Array& weights)
        : ws_(0) {
        const CsrGraphView g = make_view(indptr, indices, weights);
        indptr_.assign(indptr.data(), indptr.data() + indptr.size());
        indices_.assign(indices.data(), indices.data() + indices.size());
        weights_.assign(weights.data(), weights.data() + weights.size());
        view_ = CsrGraphView{g.n_nodes, indptr_.data(), indices_.data(), weights_.data()};
        ws_ = DijkstraWorkspace(g.n_nodes);
    }

    std::int64_t n_nodes() const { return view_.n_nodes; }
    std::int64_t n_arcs() const { return view_.n_arcs(); }

    /// (nodes, distances) settled from `source` within `cutoff`, at most `max_nodes` (-1: all).
    std::pair<py::array_t<std::int64_t>, py::array_t<double>> settled(std::int64_t source,
                                                                      double cutoff,
                                                                      std::int64_t max_nodes) {
        check_search(source, cutoff, max_nodes);
        std::vector<std::int64_t> nodes;
        std::vector<double> dist;
        {
            py::gil_scoped_release release;
            // The shared workspace serves one search at a time; a concurrent caller (another
            // Python thread) gets a private one rather than waiting.
            std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
            if (lock.owns_lock()) {
                collect(ws_, source, cutoff, max_nodes, nodes, dist);
            } else {
                DijkstraWorkspace own(view_.n_nodes);
                collect(own, source, cutoff, max_nodes, nodes, dist);
            }
        }
        return {to_array(nodes), to_array(dist)};
    }

    /// Dense (n_sources, n_nodes) distances on `threads` threads.
    py::array_t<double> many(const I64Array& sources, double cutoff, int threads) {
        check_sources(sources, view_.n_nodes);
        check_cutoff(cutoff);
        if (threads < 1) throw std::invalid_argument("threads must be >= 1");
        const std::int64_t n_sources = sources.size();
        py::array_t<double> out({n_sources, view_.n_nodes});
        double* out_ptr = out.mutable_data();
        const std::int64_t* src = sources.data();
        {
            py::gil_scoped_release release;
            dijkstra_many(view_, src, n_sources, cutoff, out_ptr, threads);
        }
        return out;
    }

    /// Mean seconds per bounded search of the kernel alone (no Python, no copies), cycling
    /// through `sources` for `reps` searches: the baseline of the per-call overhead benchmark.
    double kernel_seconds(const I64Array& sources, double cutoff, std::int64_t max_nodes,
                          std::int64_t reps) {
        check_sources(sources, view_.n_nodes);
        if (sources.size() == 0 || reps < 1)
            throw std::invalid_argument("kernel_seconds needs sources and reps >= 1");
        check_search(sources.data()[0], cutoff, max_nodes);
        const std::int64_t* src = sources.data();
        const std::int64_t n_src = sources.size();
        py::gil_scoped_release release;
        std::lock_guard<std::mutex> lock(mutex_);
        std::int64_t checksum = 0;
        const auto start = std::chrono::steady_clock::now();
        for (std::int64_t r = 0; r < reps; ++r)
            checksum += static_cast<std::int64_t>(ws_.run(view_, src[r % n_src], cutoff, max_nodes).size());
        const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
        if (checksum < 0) throw std::runtime_error("unreachable");  // keeps the loop observable
        return elapsed.count() / static_cast<double>(reps);
    }

  private:
    void check_search(std::int64_t source, double cutoff, std::int64_t max_nodes) const {
        if (source < 0 || source >= view_.n_nodes)
            throw std::invalid_argument("source " + std::to_string(source) + " outside [0, " +
                                        std::to_string(view_.n_nodes) + ")");
        check_cutoff(cutoff);
        if (max_nodes < -1) throw std::invalid_argument("max_nodes must be >= 0 (or -1: no limit)");
    }

    void collect(DijkstraWorkspace& ws, std::int64_t source, double cutoff, std::int64_t max_nodes,
                 std::vector<std::int64_t>& nodes, std::vector<double>& dist) const {
        const auto& settled = ws.run(view_, source, cutoff, max_nodes);
        nodes.assign(settled.begin(), settled.end());
        dist.resize(settled.size());
        for (std::size_t i = 0; i < settled.size(); ++i) dist[i] = ws.distance(settled[i]);
    }

    template <typename T>
    static py::array_t<T> to_array(const std::vector<T>& v) {
        py::array_t<T> out(static_cast<py::ssize_t>(v.size()));
        std::copy(v.begin(), v.end(), out.mutable_data());
        return out;
    }

    std::vector<std::int64_t> indptr_, indices_;
    std::vector<double> weights_;
    CsrGraphView view_;
    DijkstraWorkspace ws_;
    std::mutex mutex_;
};

}  // namespace

void register_graphs(py::module_& m) {
    m.def("shortest_paths", &shortest_paths, py::arg("indptr"), py::arg("indices"),
          py::arg("weights"), py::arg("sources"), py::arg("cutoff"),
          "Dijkstra from each source; returns a (n_sources, n_nodes) float64 array, +inf where "
          "unreachable or farther than cutoff.");
    py::class_<PreparedGraph>(m, "PreparedGraph",
                              "A validated CSR graph (copied once) with a reusable Dijkstra "
                              "workspace.")
        .def(py::init<const I64Array&, const I64Array&, const F64Array&>(), py::arg("indptr"),
             py::arg("indices"), py::arg("weights"))
        .def_property_readonly("n_nodes", &PreparedGraph::n_nodes)
        .def_property_readonly("n_arcs", &PreparedGraph::n_arcs)
        .def("settled", &PreparedGraph::settled, py::arg("source"), py::arg("cutoff"),
             py::arg("max_nodes"),
             "(nodes, distances) settled from source in order, within cutoff, at most "
             "max_nodes (-1: no limit).")
        .def("many", &PreparedGraph::many, py::arg("sources"), py::arg("cutoff"),
             py::arg("threads"), "Dense (n_sources, n_nodes) distances, +inf beyond cutoff.")
        .def("kernel_seconds", &PreparedGraph::kernel_seconds, py::arg("sources"),
             py::arg("cutoff"), py::arg("max_nodes"), py::arg("reps"),
             "Mean seconds per search of the C++ kernel alone (benchmark baseline).");
}

}  // namespace privopt::bindings
