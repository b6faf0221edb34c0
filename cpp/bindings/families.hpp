// One registration function per kernel family; module.cpp calls each once.
// A new family adds a bind_<family>.cpp file and one line here and in module.cpp.
#pragma once

#include <pybind11/pybind11.h>

namespace privopt::bindings {
void register_graphs(pybind11::module_& m);
void register_census(pybind11::module_& m);
void register_cluster(pybind11::module_& m);
void register_dp(pybind11::module_& m);
void register_build_info(pybind11::module_& m);
}  // namespace privopt::bindings
