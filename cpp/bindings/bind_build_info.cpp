// privopt._core.build_info(): how the compiled core was built, for bug reports
// (privopt.show_versions() and `privopt --version --verbose` print it).
#include <pybind11/pybind11.h>

#include <string>
#include <thread>

#include "families.hpp"
#include "privopt/version.hpp"
#include "privopt_build_info.hpp"

namespace py = pybind11;

namespace privopt::bindings {
namespace {

py::dict build_info() {
    py::dict info;
    info["version"] = privopt::version;
    info["compiler"] = std::string(build::compiler_id) + " " + build::compiler_version;
    info["cxx_standard"] = static_cast<long>(__cplusplus);
    info["build_type"] = build::build_type;
    info["cxx_flags"] = build::cxx_flags;
    info["system"] = build::system;
    info["cmake"] = build::cmake_version;
    info["pybind11"] = std::to_string(PYBIND11_VERSION_MAJOR) + "." +
                       std::to_string(PYBIND11_VERSION_MINOR) + "." +
                       std::to_string(PYBIND11_VERSION_PATCH);
#ifdef _OPENMP
    info["openmp"] = static_cast<long>(_OPENMP);
#else
    info["openmp"] = py::none();
#endif
    // The kernels that run in parallel (many-source Dijkstra, DPM split scoring) use std::thread,
    // with the thread count chosen per call.
    info["threads"] = "std::thread";
    info["hardware_concurrency"] = std::thread::hardware_concurrency();
#ifdef NDEBUG
    info["assertions"] = false;
#else
    info["assertions"] = true;
#endif
    return info;
}

}  // namespace

void register_build_info(py::module_& m) {
    m.def("build_info", &build_info,
          "How the compiled core was built: version, compiler, C++ standard, build type and "
          "flags, pybind11, OpenMP (None when not used), threading, hardware threads.");
}

}  // namespace privopt::bindings
