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
    const std::int64_t l = lo(rng), n = len(rng);
    switch (rng() % 3) {
        case 0: return privopt::squared_table(noisy(rng), l, l + n - 1);       // stored leaf
        case 1: return CplTable::quadratic(noisy(rng), l, l + n - 1);          // implicit leaf
        default: break;
    }
    std::vector<std::int64_t> values;
    std::int64_t v = step(rng) * 3, s = slope(rng);
    for (std::int64_t i = 0; i < n; ++i) {
        values.push_back(v);
        v += s;
        s += step(rng);  // non-decreasing slopes: convex
    }
    return CplTable::from_values(l, values.data(), n);
}

CplTable table(std::int64_t lo, std::vector<std::int64_t> values) {
    return CplTable::from_values(lo, values.data(), static_cast<std::int64_t>(values.size()));
}

// Up-slopes over the domain (stored or implicit).
std::vector<std::int64_t> slopes(const CplTable& t) {
    std::vector<std::int64_t> out;
    for (std::int64_t v = t.lo; v < t.hi(); ++v) out.push_back(t.up(v));
    return out;
}

// tau(v) - tau(lo) over the domain.
std::vector<std::int64_t> relative_values(const CplTable& t) {
    std::vector<std::int64_t> out;
    for (std::int64_t v = t.lo; v <= t.hi(); ++v) out.push_back(t.relative(v));
    return out;
}

bool same_trace(const privopt::MergeTrace& a, const privopt::MergeTrace& b) {
    return a.v0 == b.v0 && a.V0 == b.V0 && a.up == b.up && a.down == b.down;
}

}  // namespace

int main() {
    // O1 (spec 003 §2.7 / §8): GA = (v-3)^2, NY = v^2 on {0..4}.
    CplTable ga = table(0, {9, 4, 1, 0, 1}), ny = table(0, {0, 1, 4, 9, 16});
    const CplTable* kids[] = {&ga, &ny};
    privopt::MergeTrace tr;
    CplTable phi = privopt::table_merge(kids, 2, -100, 100, &tr);
    CHECK(phi.lo == 0 && phi.hi() == 8);
    // phi = [9, 4, 1, 0, 1, 2, 5, 10, 17], stored relative to phi(0) = 9.
    CHECK((relative_values(phi) == std::vector<std::int64_t>{0, -5, -8, -9, -8, -7, -4, 1, 8}));
    CHECK(phi.argmin() == 3);
    CHECK(tr.V0 == 3 && tr.v0[0] == 3 && tr.v0[1] == 0);
    // Example 4/5: up-list (NY,1),(GA,4),(NY,2),(GA,5),... ties toward the first-declared child
    // with our (slope, child order) rule: here GA is child 0, so the first tie goes to GA.
    CHECK(tr.up.size() == 5);
    CplTable us = privopt::table_merge(kids, 2, 0, 6, nullptr);
    privopt::add_squared(us, 2);
    // tau^US = [13, 5, 1, 1, 5, 11, 21] relative to 13; smallest minimiser 2.
    CHECK((relative_values(us) == std::vector<std::int64_t>{0, -8, -12, -12, -8, -2, 8}));
    CHECK(us.argmin() == 2);
    CHECK(phi.is_convex() && us.is_convex());
    // Implicit quadratic leaves give the same merge as stored ones.
    CplTable qga = CplTable::quadratic(3, 0, 4), qny = CplTable::quadratic(0, 0, 4);
    const CplTable* qkids[] = {&qga, &qny};
    privopt::MergeTrace qtr;
    CplTable qphi = privopt::table_merge(qkids, 2, -100, 100, &qtr);
    CHECK(qphi.slope == phi.slope && qtr.up == tr.up && qtr.down == tr.down && qtr.v0 == tr.v0);
    CHECK(qga.argmin() == 3 && qga.relative(5) == privopt::cost_infinity && qga.hi() == 4);
    CHECK(CplTable::quadratic(-5, 0, 4).argmin() == 0 && CplTable::quadratic(9, 0, 4).argmin() == 4);
    std::int64_t split[2];
    privopt::split_value(tr, 5, split);
    CHECK(split[0] + split[1] == 5 && ga.relative(split[0]) + ny.relative(split[1]) == 2 - 9);

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
        CHECK(h.lo == naive.lo && h.n == naive.n && slopes(h) == slopes(naive));
        CHECK(s.lo == h.lo && s.slope == h.slope && same_trace(t1, t2));
        CHECK(h.is_convex() && h.argmin() == naive.argmin());
        std::vector<std::int64_t> x(static_cast<std::size_t>(k));
        std::int64_t at_lo = 0;
        for (std::int64_t v = h.lo; v <= h.hi(); ++v) {
            privopt::split_value(t1, v, x.data());
            std::int64_t sum = 0, cost = 0;  // relative to every child's tau(lo)
            for (int c = 0; c < k; ++c) {
                sum += x[static_cast<std::size_t>(c)];
                cost += ts[static_cast<std::size_t>(c)].relative(x[static_cast<std::size_t>(c)]);
            }
            if (v == h.lo) at_lo = cost;
            CHECK(sum == v && cost - at_lo == h.relative(v));
        }
        // A restricted parent window returns the same values on the window.
        const std::int64_t a = naive.lo + 1, b = naive.hi() - 1;
        CplTable w = privopt::table_merge(ptrs.data(), ptrs.size(), a, b, nullptr);
        if (a <= b) {
            CHECK(w.lo == a && w.hi() == b);
            for (std::int64_t v = a; v < b; ++v) CHECK(w.up(v) == naive.up(v));
        } else {
            CHECK(w.empty());
        }
    }
    CHECK_THROWS(privopt::table_merge(kids, 0, 0, 1));
    CplTable empty;
    const CplTable* bad[] = {&ga, &empty};
    CHECK_THROWS(privopt::table_merge(bad, 2, 0, 1, nullptr));
    // A table above the size limit is refused before it is allocated.
    CHECK_THROWS(privopt::table_merge(kids, 2, -100, 100, nullptr, 4));
    // Slopes near the int64 limit are refused instead of wrapping.
    const std::int64_t big = privopt::max_abs_value;
    CHECK_THROWS(CplTable::quadratic(-big, -big, big, 4));
    const std::int64_t far_value = big / 2;
    CplTable far = CplTable::quadratic(far_value, 0, 10);  // slopes ~ -2^61: representable
    CHECK(far.argmin() == 10 && far.slope_bound <= privopt::max_abs_slope);
    CplTable stored = privopt::squared_table(far_value, 0, 10);
    CHECK_THROWS(privopt::add_squared(stored, -far_value));  // slopes would reach 2^62
    return test_result("test_table_merge");
}
