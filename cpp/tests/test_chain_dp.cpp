// Chain DP: Table 6 (spec 003 §3.5 / §8 O2), the running example (O4, cost 12) and brute force
// over monotone sequences on random tiny chains.
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "check.hpp"
#include "privopt/chain_dp.hpp"

namespace {

std::int64_t brute(const std::vector<std::int64_t>& c, const std::vector<std::int64_t>& lo,
                   const std::vector<std::int64_t>& hi, const std::vector<std::uint8_t>& eq) {
    const std::size_t n = c.size();
    std::vector<std::int64_t> x(n);
    std::int64_t best = privopt::cost_infinity;
    std::function<void(std::size_t, std::int64_t)> rec = [&](std::size_t i, std::int64_t acc) {
        if (i == n) {
            if (acc < best) best = acc;
            return;
        }
        for (std::int64_t v = lo[i]; v <= hi[i]; ++v) {
            if (i > 0 && (eq[i - 1] ? v != x[i - 1] : v < x[i - 1])) continue;
            x[i] = v;
            rec(i + 1, acc + (v - c[i]) * (v - c[i]));
        }
    };
    rec(0, 0);
    return best;
}

}  // namespace

int main() {
    // O2: GA1, NY1, US1 with noisy (3, 3, 2); GA1 -> NY1 "<=", NY1 -> US1 "=". tau_US1(v) is the
    // optimal cost with the last node fixed to v.
    const std::int64_t tau_us[] = {22, 9, 2, 1, 5};
    const std::int64_t tau_ny[] = {18, 8, 2, 0, 1};
    for (std::int64_t v = 0; v <= 4; ++v) {
        std::vector<std::int64_t> c{3, 3, 2}, lo{0, 0, v}, hi{4, 4, v};
        std::vector<std::uint8_t> eq{0, 1};
        CHECK(privopt::chain_dp(3, c.data(), lo.data(), hi.data(), eq.data()).cost == tau_us[v]);
        std::vector<std::int64_t> lo2{0, v}, hi2{4, v};
        CHECK(privopt::chain_dp(2, c.data(), lo2.data(), hi2.data(), eq.data()).cost == tau_ny[v]);
    }
    // O4: full running example, exact domain [0, 6], G = 6: cost 12, unique optimum.
    std::vector<std::int64_t> ct{3, 3, 2, 1, 5, 4, 4, 7, 5, 6, 5, 8, 6, 7, 6};
    std::vector<std::int64_t> lo(15, 0), hi(15, 6);
    lo[14] = 6;
    std::vector<std::uint8_t> eq;
    for (int i = 0; i < 14; ++i) eq.push_back(i % 3 == 1 ? 1 : 0);  // NY_s -> US_s is upward
    auto r = privopt::chain_dp(15, ct.data(), lo.data(), hi.data(), eq.data());
    CHECK(r.status == privopt::DpStatus::optimal && r.cost == 12);
    CHECK((r.values == std::vector<std::int64_t>{2, 2, 2, 2, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6}));
    CHECK(brute(ct, lo, hi, eq) == 12);

    std::mt19937_64 rng(3);
    for (int trial = 0; trial < 300; ++trial) {
        const std::size_t n = 1 + rng() % 6;
        const std::int64_t G = 1 + static_cast<std::int64_t>(rng() % 4);
        std::vector<std::int64_t> c(n), l(n, 0), h(n, G);
        std::vector<std::uint8_t> e(n > 0 ? n - 1 : 0);
        for (auto& v : c) v = static_cast<std::int64_t>(rng() % 9) - 2;
        for (auto& v : e) v = static_cast<std::uint8_t>(rng() % 3 == 0);
        if (rng() % 2) l[n - 1] = G;
        if (rng() % 3 == 0) l[0] = 1 + static_cast<std::int64_t>(rng() % 2), h[0] = std::min<std::int64_t>(G, l[0] + 1);
        const std::int64_t bf = brute(c, l, h, e);
        auto res = privopt::chain_dp(static_cast<std::int64_t>(n), c.data(), l.data(), h.data(), e.data());
        if (bf == privopt::cost_infinity) {
            CHECK(res.status == privopt::DpStatus::infeasible);
            continue;
        }
        CHECK(res.status == privopt::DpStatus::optimal && res.cost == bf);
        std::int64_t cost = 0;
        for (std::size_t i = 0; i < n; ++i) {
            CHECK(res.values[i] >= l[i] && res.values[i] <= h[i]);
            if (i + 1 < n) CHECK(e[i] ? res.values[i] == res.values[i + 1] : res.values[i] <= res.values[i + 1]);
            cost += (res.values[i] - c[i]) * (res.values[i] - c[i]);
        }
        CHECK(cost == res.cost);
    }
    CHECK_THROWS(privopt::chain_dp(0, nullptr, nullptr, nullptr, nullptr));
    // Values near the int64 limits: refused (invalid) or computed without wrapping.
    {
        const std::int64_t big = privopt::max_abs_value;
        const std::int64_t far_value = std::int64_t{1} << 59;
        std::vector<std::int64_t> c2{far_value, -far_value}, l2{0, 5}, h2{10, 5};
        std::vector<std::uint8_t> e2{0};
        auto far = privopt::chain_dp(2, c2.data(), l2.data(), h2.data(), e2.data());
        CHECK(far.status == privopt::DpStatus::optimal && far.values[0] == 5 && far.cost_overflow);
        std::vector<std::int64_t> huge{std::numeric_limits<std::int64_t>::min(), 0};
        CHECK_THROWS(privopt::chain_dp(2, c2.data(), huge.data(), h2.data(), e2.data()));
        std::vector<std::int64_t> wide_lo{-big, -big}, wide_hi{big, big};
        CHECK_THROWS(privopt::chain_dp(2, c2.data(), wide_lo.data(), wide_hi.data(), e2.data()));
    }
    // The cost of a far optimum at G = 1e9 exceeds nothing: exact.
    {
        std::vector<std::int64_t> c3{-1000000000, 3000000000}, l3{0, 1000000000}, h3{10, 1000000000};
        std::vector<std::uint8_t> e3{0};
        auto r3 = privopt::chain_dp(2, c3.data(), l3.data(), h3.data(), e3.data());
        CHECK(r3.status == privopt::DpStatus::optimal && r3.values[0] == 0 && !r3.cost_overflow);
        CHECK(r3.cost == std::int64_t{1000000000} * 1000000000 + std::int64_t{2000000000} * 2000000000);
    }
    return test_result("test_chain_dp");
}
