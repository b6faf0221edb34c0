// TableMerge (Algorithm 1): the paper's Table 5 oracle, heap == sort == naive min-plus on random
// convex tables, and the top-down split attaining phi.
#include <cstdint>
#include <random>
#include <vector>

#include "check.hpp"
#include "privopt/table_merge.hpp"

using privopt::CplTable;

namespace {

CplTable random_convex(std::mt19937_64& rng) {
    std::uniform_int_distribution<std::int64_t> len(1, 7), lo(-3, 5), slope(-6, 6), step(0, 4), noisy(-4, 9);
    CplTable t;
    t.lo = lo(rng);
    const std::int64_t n = len(rng);
    if (rng() % 2) {  // a squared leaf table
        return privopt::squared_table(noisy(rng), t.lo, t.lo + n - 1);
    }
    std::int64_t v = step(rng) * 3, s = slope(rng);
    for (std::int64_t i = 0; i < n; ++i) {
        t.cost.push_back(v);
        v += s;
        s += step(rng);  // non-decreasing slopes: convex
    }
    return t;
}

bool same_trace(const privopt::MergeTrace& a, const privopt::MergeTrace& b) {
    return a.v0 == b.v0 && a.V0 == b.V0 && a.up == b.up && a.down == b.down;
}

}  // namespace

int main() {
    // O1 (spec 003 §2.7 / §8): GA = (v-3)^2, NY = v^2 on {0..4}.
    CplTable ga{0, {9, 4, 1, 0, 1}}, ny{0, {0, 1, 4, 9, 16}};
    const CplTable* kids[] = {&ga, &ny};
    privopt::MergeTrace tr;
    CplTable phi = privopt::table_merge(kids, 2, -100, 100, &tr);
    CHECK(phi.lo == 0 && phi.hi() == 8);
    CHECK((phi.cost == std::vector<std::int64_t>{9, 4, 1, 0, 1, 2, 5, 10, 17}));
    CHECK(tr.V0 == 3 && tr.v0[0] == 3 && tr.v0[1] == 0);
    // Example 4/5: up-list (NY,1),(GA,4),(NY,2),(GA,5),... ties toward the first-declared child
    // with our (slope, child order) rule: here GA is child 0, so the first tie goes to GA.
    CHECK(tr.up.size() == 5);
    CplTable us = privopt::table_merge(kids, 2, 0, 6, nullptr);
    privopt::add_squared(us, 2);
    CHECK((us.cost == std::vector<std::int64_t>{13, 5, 1, 1, 5, 11, 21}));
    CHECK(phi.is_convex() && us.is_convex());
    // Implicit quadratic leaves give the same merge as stored ones.
    CplTable qga = CplTable::quadratic(3, 0, 4), qny = CplTable::quadratic(0, 0, 4);
    const CplTable* qkids[] = {&qga, &qny};
    privopt::MergeTrace qtr;
    CplTable qphi = privopt::table_merge(qkids, 2, -100, 100, &qtr);
    CHECK(qphi.cost == phi.cost && qtr.up == tr.up && qtr.down == tr.down && qtr.v0 == tr.v0);
    CHECK(qga.argmin() == 3 && qga.at(5) == privopt::cost_infinity && qga.hi() == 4);
    CHECK(CplTable::quadratic(-5, 0, 4).argmin() == 0 && CplTable::quadratic(9, 0, 4).argmin() == 4);
    std::int64_t split[2];
    privopt::split_value(tr, 5, split);
    CHECK(split[0] + split[1] == 5 && ga.at(split[0]) + ny.at(split[1]) == 2);

    // Random: heap == sorted (tables and traces) == naive min-plus; split attains phi.
    std::mt19937_64 rng(7);
    for (int trial = 0; trial < 300; ++trial) {
        const int k = 1 + static_cast<int>(rng() % 4);
        std::vector<CplTable> ts;
        for (int c = 0; c < k; ++c) ts.push_back(random_convex(rng));
        std::vector<const CplTable*> ptrs;
        for (auto& t : ts) ptrs.push_back(&t);
        CplTable naive = ts[0];
        for (int c = 1; c < k; ++c) naive = privopt::min_plus_naive(naive, ts[static_cast<std::size_t>(c)]);
        privopt::MergeTrace t1, t2;
        CplTable h = privopt::table_merge(ptrs.data(), ptrs.size(), -1000, 1000, &t1);
        CplTable s = privopt::table_merge_sorted(ptrs.data(), ptrs.size(), -1000, 1000, &t2);
        CHECK(h.lo == naive.lo && h.cost == naive.cost);
        CHECK(s.lo == h.lo && s.cost == h.cost && same_trace(t1, t2));
        CHECK(h.is_convex());
        std::vector<std::int64_t> x(static_cast<std::size_t>(k));
        for (std::int64_t v = h.lo; v <= h.hi(); ++v) {
            privopt::split_value(t1, v, x.data());
            std::int64_t sum = 0, cost = 0;
            for (int c = 0; c < k; ++c) {
                sum += x[static_cast<std::size_t>(c)];
                cost += ts[static_cast<std::size_t>(c)].at(x[static_cast<std::size_t>(c)]);
            }
            CHECK(sum == v && cost == h.at(v));
        }
        // A restricted parent window returns the same values on the window.
        const std::int64_t a = naive.lo + 1, b = naive.hi() - 1;
        CplTable w = privopt::table_merge(ptrs.data(), ptrs.size(), a, b, nullptr);
        if (a <= b) {
            CHECK(w.lo == a && w.hi() == b);
            for (std::int64_t v = a; v <= b; ++v) CHECK(w.at(v) == naive.at(v));
        } else {
            CHECK(w.empty());
        }
    }
    CHECK_THROWS(privopt::table_merge(kids, 0, 0, 1));
    CplTable empty;
    const CplTable* bad[] = {&ga, &empty};
    CHECK_THROWS(privopt::table_merge(bad, 2, 0, 1, nullptr));
    return test_result("test_table_merge");
}
