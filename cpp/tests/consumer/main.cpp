// Uses the installed privopt headers: shortest paths on a 4-node path graph.
#include <privopt/core.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

int main() {
    // 0 -> 1 -> 2 -> 3 with lengths 1, 2, 3 (one direction only).
    std::vector<std::int64_t> indptr{0, 1, 2, 3, 3}, indices{1, 2, 3};
    std::vector<double> weights{1.0, 2.0, 3.0};
    privopt::CsrGraphView g{4, indptr.data(), indices.data(), weights.data()};
    privopt::DijkstraWorkspace ws(g.n_nodes);
    ws.run(g, 0);
    if (ws.distance(3) != 6.0) return 1;
    std::printf("privopt %s consumer ok\n", privopt::version);
    return 0;
}
