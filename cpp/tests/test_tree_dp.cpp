// Tree DP: the running example of spec 003 §8 O3 (cost 10, unique optimum) and brute force on
// random tiny trees with exact domains.
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "check.hpp"
#include "privopt/tree_dp.hpp"

namespace {

struct Tree {
    std::vector<std::int64_t> ptr, idx, noisy, weight, lo, hi;
    std::int64_t root = 0;
    privopt::TreeDpProblem problem() const {
        return {static_cast<std::int64_t>(noisy.size()), ptr.data(), idx.data(), noisy.data(),
                weight.data(), lo.data(), hi.data(), root};
    }
};

Tree from_parents(const std::vector<std::int64_t>& parent) {
    Tree t;
    const auto n = parent.size();
    t.ptr.assign(n + 1, 0);
    for (std::size_t a = 0; a < n; ++a)
        if (parent[a] >= 0) ++t.ptr[static_cast<std::size_t>(parent[a]) + 1];
        else t.root = static_cast<std::int64_t>(a);
    for (std::size_t a = 0; a < n; ++a) t.ptr[a + 1] += t.ptr[a];
    t.idx.assign(static_cast<std::size_t>(t.ptr[n]), 0);
    std::vector<std::int64_t> fill(t.ptr.begin(), t.ptr.end() - 1);
    for (std::size_t a = 0; a < n; ++a)
        if (parent[a] >= 0) t.idx[static_cast<std::size_t>(fill[static_cast<std::size_t>(parent[a])]++)] = static_cast<std::int64_t>(a);
    return t;
}

// Enumerate leaf values; internal values are sums; keep feasible, return min cost.
std::int64_t brute_force(const Tree& t) {
    const auto n = t.noisy.size();
    std::vector<std::int64_t> leaves;
    for (std::size_t a = 0; a < n; ++a)
        if (t.ptr[a] == t.ptr[a + 1]) leaves.push_back(static_cast<std::int64_t>(a));
    std::vector<std::int64_t> x(n, 0);
    std::int64_t best = privopt::cost_infinity;
    std::function<std::int64_t(std::int64_t)> eval = [&](std::int64_t a) -> std::int64_t {
        if (t.ptr[a] == t.ptr[a + 1]) return x[static_cast<std::size_t>(a)];
        std::int64_t s = 0;
        for (auto i = t.ptr[a]; i < t.ptr[a + 1]; ++i) s += eval(t.idx[static_cast<std::size_t>(i)]);
        return x[static_cast<std::size_t>(a)] = s;
    };
    std::function<void(std::size_t)> rec = [&](std::size_t j) {
        if (j == leaves.size()) {
            eval(t.root);
            std::int64_t c = 0;
            for (std::size_t a = 0; a < n; ++a) {
                if (x[a] < t.lo[a] || x[a] > t.hi[a]) return;
                const std::int64_t d = x[a] - t.noisy[a];
                c += t.weight[a] * d * d;
            }
            if (c < best) best = c;
            return;
        }
        const auto a = static_cast<std::size_t>(leaves[j]);
        for (std::int64_t v = t.lo[a]; v <= t.hi[a]; ++v) x[a] = v, rec(j + 1);
    };
    rec(0);
    return best;
}

}  // namespace

int main() {
    // Running example T^dp: node 0 = dummy root (G = 6); per size s (0..4): US_s, GA_s, NY_s.
    const std::int64_t noisy_ga[] = {3, 1, 1, -1, 0}, noisy_ny[] = {0, 2, 1, 1, -2},
                       noisy_us[] = {2, 0, 3, 1, 0};
    std::vector<std::int64_t> parent{-1};
    Tree ex;
    for (int s = 0; s < 5; ++s) {
        const auto us = static_cast<std::int64_t>(parent.size());
        parent.push_back(0), parent.push_back(us), parent.push_back(us);
    }
    ex = from_parents(parent);
    ex.noisy = {0}, ex.weight = {0}, ex.lo = {6}, ex.hi = {6};
    for (int s = 0; s < 5; ++s) {
        for (auto v : {noisy_us[s], noisy_ga[s], noisy_ny[s]}) {
            ex.noisy.push_back(v), ex.weight.push_back(1), ex.lo.push_back(0), ex.hi.push_back(6);
        }
    }
    auto r = privopt::tree_dp(ex.problem());
    CHECK(r.status == privopt::DpStatus::optimal);
    CHECK(r.cost == 10);
    // Unique optimum: (GA, NY, US) per size = (2,0,2),(0,1,1),(1,1,2),(0,1,1),(0,0,0).
    const std::int64_t want[5][3] = {{2, 0, 2}, {0, 1, 1}, {1, 1, 2}, {0, 1, 1}, {0, 0, 0}};
    for (int s = 0; s < 5; ++s) {
        const auto us = static_cast<std::size_t>(1 + 3 * s);
        CHECK(r.values[us + 1] == want[s][0] && r.values[us + 2] == want[s][1] && r.values[us] == want[s][2]);
    }
    CHECK(r.values[0] == 6);

    // Random tiny trees: DP == brute force, values feasible and consistent, cost recomputed.
    std::mt19937_64 rng(11);
    for (int trial = 0; trial < 150; ++trial) {
        const std::size_t n = 2 + rng() % 6;
        std::vector<std::int64_t> par(n, -1);
        for (std::size_t a = 1; a < n; ++a) par[a] = static_cast<std::int64_t>(rng() % a);
        Tree t = from_parents(par);
        const std::int64_t G = 1 + static_cast<std::int64_t>(rng() % 4);
        for (std::size_t a = 0; a < n; ++a) {
            t.noisy.push_back(static_cast<std::int64_t>(rng() % 9) - 3);
            t.weight.push_back(a == 0 ? static_cast<std::int64_t>(rng() % 2) : 1 + static_cast<std::int64_t>(rng() % 2));
            const bool fix = a == 0 && rng() % 2;
            t.lo.push_back(fix ? G : 0);
            t.hi.push_back(G);
        }
        const std::int64_t bf = brute_force(t);
        auto res = privopt::tree_dp(t.problem(), false);
        if (bf == privopt::cost_infinity) {
            CHECK(res.status == privopt::DpStatus::infeasible);
            continue;
        }
        CHECK(res.status == privopt::DpStatus::optimal);
        CHECK(res.cost == bf);
        std::int64_t c = 0;
        for (std::size_t a = 0; a < n; ++a) {
            std::int64_t s = 0;
            for (auto i = t.ptr[a]; i < t.ptr[a + 1]; ++i) s += res.values[static_cast<std::size_t>(t.idx[static_cast<std::size_t>(i)])];
            if (t.ptr[a] != t.ptr[a + 1]) CHECK(s == res.values[a]);
            CHECK(res.values[a] >= t.lo[a] && res.values[a] <= t.hi[a]);
            const std::int64_t d = res.values[a] - t.noisy[a];
            c += t.weight[a] * d * d;
        }
        CHECK(c == res.cost);
    }
    // Widening: a parent window disjoint from its children's range is replaced (not root).
    Tree w = from_parents({-1, 0, 1, 1});
    w.noisy = {0, 50, 1, 1}, w.weight = {0, 1, 1, 1}, w.lo = {0, 40, 0, 0}, w.hi = {10, 60, 3, 3};
    auto rw = privopt::tree_dp(w.problem(), true);
    CHECK(rw.status == privopt::DpStatus::optimal && rw.n_widened == 1 && rw.values[1] == 6);
    CHECK(privopt::tree_dp(w.problem(), false).status == privopt::DpStatus::infeasible);
    // Bad input: a node with two parents.
    Tree bad = from_parents({-1, 0, 0});
    bad.idx = {1, 1};
    bad.noisy = {0, 0, 0}, bad.weight = {0, 1, 1}, bad.lo = {0, 0, 0}, bad.hi = {1, 1, 1};
    CHECK_THROWS(privopt::tree_dp(bad.problem()));
    // Far values at G = 1e9: slopes stay small, the cost is exact; beyond int64 it is flagged.
    {
        Tree f = from_parents({-1, 0, 0});
        const std::int64_t G = 1000000000;
        f.noisy = {0, -3000000000LL, G + 100000}, f.weight = {0, 1, 1};
        f.lo = {G, 0, G - 10}, f.hi = {G, 10, G};
        auto rf = privopt::tree_dp(f.problem());
        CHECK(rf.status == privopt::DpStatus::optimal && rf.values[1] == 0 && rf.values[2] == G);
        CHECK(!rf.cost_overflow && rf.cost == 9000000000000000000LL + 10000000000LL);
        f.noisy = {0, -3000000000LL, 3 * G + 5};
        auto ro = privopt::tree_dp(f.problem());
        CHECK(ro.status == privopt::DpStatus::optimal && ro.cost_overflow);
        // Values beyond 2^61 are refused, as are tables above the size limit.
        f.noisy = {0, std::int64_t{1} << 62, 0};
        CHECK_THROWS(privopt::tree_dp(f.problem()));
        f.noisy = {0, 0, 0}, f.lo = {0, 0, 0}, f.hi = {G, G, G};
        CHECK_THROWS(privopt::tree_dp(f.problem(), true, 1000));
    }
    return test_result("test_tree_dp");
}
