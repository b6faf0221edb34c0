// privopt C++ core: include everything.
#pragma once

#include "privopt/chain_dp.hpp"
#include "privopt/cpl_table.hpp"
#include "privopt/csr_graph.hpp"
#include "privopt/dijkstra.hpp"
#include "privopt/table_merge.hpp"
#include "privopt/tree_dp.hpp"
#include "privopt/version.hpp"
