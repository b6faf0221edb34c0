// A C++ program using privopt's header-only core, found through find_package(privopt):
// shortest paths on a small road graph (the metric of metric DP on road networks), then the
// exact consistent post-processing of noisy hierarchical counts (the census tree DP).
#include <privopt/core.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

// Distances from junction 0 on a 4-junction one-way road 0 -> 1 -> 2 -> 3 (lengths in km).
bool road_distances() {
    std::vector<std::int64_t> indptr{0, 1, 2, 3, 3}, indices{1, 2, 3};
    std::vector<double> km{1.0, 2.0, 3.0};
    privopt::CsrGraphView road{4, indptr.data(), indices.data(), km.data()};
    privopt::DijkstraWorkspace search(road.n_nodes);
    search.run(road, 0);
    std::printf("road: junction 3 is %.1f km from junction 0\n", search.distance(3));
    return search.distance(3) == 6.0;
}

// The census paper's running example: noisy counts 2 (US), 3 (GA), 0 (NY) of
// size-1 households, the national total known to be 3. The tree DP returns the consistent
// integer counts closest to the noisy ones: GA + NY = US = 3.
bool consistent_counts() {
    std::vector<std::int64_t> child_ptr{0, 2, 2, 2}, child_idx{1, 2};  // US -> GA, NY
    std::vector<std::int64_t> noisy{2, 3, 0}, weight{1, 1, 1};
    std::vector<std::int64_t> lo{3, 0, 0}, hi{3, 6, 6};  // US fixed at 3, states in [0, 6]
    privopt::TreeDpProblem counts{3, child_ptr.data(), child_idx.data(), noisy.data(),
                                  weight.data(), lo.data(), hi.data(), 0};
    privopt::TreeDpResult fit = privopt::tree_dp(counts);
    std::printf("census: GA %lld + NY %lld = US 3, squared error %lld\n",
                static_cast<long long>(fit.values[1]), static_cast<long long>(fit.values[2]),
                static_cast<long long>(fit.cost));
    return fit.status == privopt::DpStatus::optimal && fit.values[1] + fit.values[2] == 3;
}

}  // namespace

int main() {
    if (!road_distances() || !consistent_counts()) return 1;
    std::printf("privopt %s consumer ok\n", privopt::version);
    return 0;
}
