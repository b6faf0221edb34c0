// Census tree DP by regions: census_forest_dp equals the node-by-node tree_dp on T^dp (values,
// widened windows) on random region trees, the closed-form split of a parent of leaves equals
// its heap trace, and up / root step / down per top-level subtree equals the whole.
#include <cstdint>
#include <random>
#include <vector>

#include "check.hpp"
#include "privopt/tree_dp.hpp"

namespace {

struct Regions {
    std::vector<std::int64_t> ptr, idx;  // breadth-first region tree
};

Regions random_regions(std::mt19937_64& rng) {
    Regions t;
    std::vector<std::int64_t> fan{1};  // region 0
    std::vector<std::int64_t> level{0};
    const int depth = 1 + static_cast<int>(rng() % 4);
    std::int64_t n = 1;
    std::vector<std::int64_t> counts;
    std::size_t start = 0;
    for (int d = 1; d < depth; ++d) {
        const std::size_t end = static_cast<std::size_t>(n);
        for (std::size_t r = start; r < end; ++r) {
            const std::int64_t k = 1 + static_cast<std::int64_t>(rng() % 4);
            counts.resize(static_cast<std::size_t>(n), 0);
            counts[r] = k;
            n += k;
        }
        start = end;
    }
    counts.resize(static_cast<std::size_t>(n), 0);
    t.ptr.assign(static_cast<std::size_t>(n + 1), 0);
    for (std::int64_t r = 0; r < n; ++r) t.ptr[static_cast<std::size_t>(r + 1)] = t.ptr[static_cast<std::size_t>(r)] + counts[static_cast<std::size_t>(r)];
    for (std::int64_t e = 0; e < n - 1; ++e) t.idx.push_back(e + 1);
    return t;
}

}  // namespace

int main() {
    std::mt19937_64 rng(5);
    for (int trial = 0; trial < 400; ++trial) {
        const Regions reg = random_regions(rng);
        const auto R = static_cast<std::int64_t>(reg.ptr.size() - 1);
        const std::int64_t N = 1 + static_cast<std::int64_t>(rng() % 3);
        const std::int64_t G = static_cast<std::int64_t>(rng() % 40);
        const std::int64_t amp = 1 + static_cast<std::int64_t>(rng() % 20);
        std::vector<std::int64_t> noisy(static_cast<std::size_t>(R * N));
        for (auto& v : noisy) v = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(2 * amp + 1)) - amp + static_cast<std::int64_t>(rng() % 8);
        const std::int64_t d0 = 1 + static_cast<std::int64_t>(rng() % 10);
        privopt::CensusForest f;
        f.n_regions = R, f.n_sizes = N, f.child_ptr = reg.ptr.data(), f.child_idx = reg.idx.data();
        f.noisy = noisy.data(), f.delta0 = d0, f.G = G;
        std::vector<std::int64_t> values(static_cast<std::size_t>(R * N));
        std::vector<std::uint8_t> touch(values.size());
        const auto res = privopt::census_forest_dp(f, values.data(), touch.data());
        {  // The same counts as int32 (read through noisy32): the same result, value for value.
            std::vector<std::int32_t> narrow(noisy.begin(), noisy.end());
            privopt::CensusForest f32 = f;
            f32.noisy = nullptr, f32.noisy32 = narrow.data();
            std::vector<std::int64_t> values32(values.size());
            std::vector<std::uint8_t> touch32(values.size());
            const auto res32 = privopt::census_forest_dp(f32, values32.data(), touch32.data());
            CHECK(res32.status == res.status && res32.n_widened == res.n_widened);
            CHECK(res.status != privopt::DpStatus::optimal || (values32 == values && touch32 == touch));
        }

        // The same problem node by node: node s*R + r, dummy root last.
        const std::int64_t n = R * N + 1;
        std::vector<std::int64_t> ptr(static_cast<std::size_t>(n + 1), 0), idx, nz(static_cast<std::size_t>(n)), w(nz), lo(nz), hi(nz);
        for (std::int64_t s = 0; s < N; ++s)
            for (std::int64_t r = 0; r < R; ++r) {
                const std::int64_t a = s * R + r;
                for (std::int64_t i = reg.ptr[static_cast<std::size_t>(r)]; i < reg.ptr[static_cast<std::size_t>(r + 1)]; ++i) idx.push_back(s * R + reg.idx[static_cast<std::size_t>(i)]);
                ptr[static_cast<std::size_t>(a + 1)] = static_cast<std::int64_t>(idx.size());
                nz[static_cast<std::size_t>(a)] = noisy[static_cast<std::size_t>(r * N + s)], w[static_cast<std::size_t>(a)] = 1;
                f.window(r, s, lo[static_cast<std::size_t>(a)], hi[static_cast<std::size_t>(a)]);
            }
        for (std::int64_t s = 0; s < N; ++s) idx.push_back(s * R);
        ptr[static_cast<std::size_t>(n)] = static_cast<std::int64_t>(idx.size());
        nz[static_cast<std::size_t>(n - 1)] = 0, w[static_cast<std::size_t>(n - 1)] = 0, lo[static_cast<std::size_t>(n - 1)] = G, hi[static_cast<std::size_t>(n - 1)] = G;
        privopt::TreeDpProblem p{n, ptr.data(), idx.data(), nz.data(), w.data(), lo.data(), hi.data(), n - 1};
        const auto ref = privopt::tree_dp(p, true);
        CHECK(ref.status == res.status);
        if (ref.status != privopt::DpStatus::optimal) continue;
        CHECK(ref.n_widened == res.n_widened);
        bool same = true;
        for (std::int64_t s = 0; s < N; ++s)
            for (std::int64_t r = 0; r < R; ++r)
                same = same && ref.values[static_cast<std::size_t>(s * R + r)] == values[static_cast<std::size_t>(r * N + s)];
        CHECK(same);
    }
    // Bad forests are refused.
    std::vector<std::int64_t> ptr{0, 2, 2, 2}, idx{2, 1}, nz{0, 0, 0};
    privopt::CensusForest bad;
    bad.n_regions = 3, bad.n_sizes = 1, bad.child_ptr = ptr.data(), bad.child_idx = idx.data(), bad.noisy = nz.data(), bad.G = 1;
    std::vector<std::int64_t> v(3);
    std::vector<std::uint8_t> t(3);
    CHECK_THROWS(privopt::census_forest_dp(bad, v.data(), t.data()));
    privopt::CensusForest none;  // neither noisy nor noisy32
    std::vector<std::int64_t> ok_idx{1, 2};
    none.n_regions = 3, none.n_sizes = 1, none.child_ptr = ptr.data(), none.child_idx = ok_idx.data(), none.G = 1;
    CHECK_THROWS(privopt::census_forest_dp(none, v.data(), t.data()));
    return test_result("test_census_forest");
}
