// privopt C++ core: include everything.
#pragma once

#include "privopt/csr_graph.hpp"
#include "privopt/dijkstra.hpp"
#include "privopt/version.hpp"
