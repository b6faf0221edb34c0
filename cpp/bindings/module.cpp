// The one Python extension module of privopt: privopt._core.
#include <pybind11/pybind11.h>

#include "families.hpp"
#include "privopt/version.hpp"

PYBIND11_MODULE(_core, m) {
    m.doc() = "privopt compiled kernels (plain C++ under cpp/include/privopt, bound here)";
    m.attr("__version__") = privopt::version;
    privopt::bindings::register_build_info(m);
    auto graphs = m.def_submodule("graphs", "Shortest paths on CSR graphs");
    privopt::bindings::register_graphs(graphs);
    { auto census = m.def_submodule("census", "Census hierarchical-count DPs (spec 003)"); privopt::bindings::register_census(census); }
    { auto cluster = m.def_submodule("cluster", "DPM split scoring"); privopt::bindings::register_cluster(cluster); }
    { auto dp = m.def_submodule("dp", "Exact discrete noise samplers"); privopt::bindings::register_dp(dp); }
}
