// Bindings of the graph kernels (Dijkstra on CSR graphs).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>

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

py::array_t<double> shortest_paths(const I64Array& indptr, const I64Array& indices,
                                   const F64Array& weights, const I64Array& sources, double cutoff) {
    const CsrGraphView g = make_view(indptr, indices, weights);
    if (sources.ndim() != 1) throw std::invalid_argument("sources must be one-dimensional");
    const std::int64_t n_sources = sources.size();
    for (std::int64_t s = 0; s < n_sources; ++s)
        if (sources.data()[s] < 0 || sources.data()[s] >= g.n_nodes)
            throw std::invalid_argument("source index outside the graph");
    py::array_t<double> out({n_sources, g.n_nodes});
    double* out_ptr = out.mutable_data();
    const std::int64_t* src = sources.data();
    {
        py::gil_scoped_release release;
        dijkstra_many(g, src, n_sources, cutoff, out_ptr);
    }
    return out;
}

}  // namespace

void register_graphs(py::module_& m) {
    m.def("shortest_paths", &shortest_paths, py::arg("indptr"), py::arg("indices"),
          py::arg("weights"), py::arg("sources"), py::arg("cutoff"),
          "Dijkstra from each source; returns a (n_sources, n_nodes) float64 array, +inf where "
          "unreachable or farther than cutoff.");
}

}  // namespace privopt::bindings
