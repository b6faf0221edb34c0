// Tests of the DPM split-scoring kernel against the spec's oracles (spec 004 §11.1).
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "check.hpp"
#include "privopt/dpm_split.hpp"

using namespace privopt::dpm;

namespace {

// A one-node tree (root is the only active slot).
struct RootTree {
    std::int64_t feature[1] = {-1};
    double threshold[1] = {0};
    std::int64_t left[1] = {0}, right[1] = {0}, slot[1] = {0};
    TreeView view() const { return TreeView{1, feature, threshold, left, right, slot}; }
};

const std::vector<double> kTwelve = {0.5, 1.2, 1.4, 2.6, 3.1, 3.3, 3.4, 6.0, 7.7, 8.2, 9.9, 9.95};

NodeCounts counts_of(const SplitGrid& g, const std::vector<double>& x, std::int64_t d) {
    RootTree t;
    std::vector<std::int64_t> cells(static_cast<std::size_t>(d * g.n_cells()), 0);
    level_cells(g, x.data(), static_cast<std::int64_t>(x.size()) / d, d, t.view(), 1, cells.data());
    return node_counts(g, cells.data(), d);
}

void test_centreness_tables() {
    const double want12[] = {0.0, 0.3, 0.44, 0.58, 0.72, 0.86, 1.0, 0.86, 0.72, 0.58, 0.44, 0.3, 0.0};
    for (int r = 0; r <= 12; ++r) CHECK_NEAR(centreness(r, 12, 0.3, 1.0 / 12), want12[r], 1e-12);
    struct Case { double r, c; };
    const Case cases[] = {{0, 0}, {5, 0.18}, {8, 0.288}, {100.0 / 12, 0.3}, {9, 0.3112},
                          {10, 0.328}, {25, 0.58}, {50, 1.0}, {90, 0.328}, {100, 0}};
    for (const auto& c : cases) CHECK_NEAR(centreness(c.r, 100, 0.3, 1.0 / 12), c.c, 1e-12);
    // Slopes: outer t/(ñq) >= inner 2(1−t)/(ñ(1−2q)) iff t >= 2q; rejected otherwise.
    CHECK_THROWS(ScoreParams({0.1, 0.1, 5}).validate());
    CHECK_THROWS(ScoreParams({0.3, 0.0, 5}).validate());
    CHECK_THROWS(ScoreParams({0.3, 1.0 / 12, 0.0}).validate());
    ScoreParams ok;
    ok.validate();
    CHECK_NEAR(ok.t / ok.q, 3.6, 1e-12);
    CHECK_NEAR(score_sensitivity(1e5, 4077.03, ok), 8.6 / (1e5 - 4077.03), 1e-15);
    CHECK_NEAR(score_sensitivity(10, 4077.03, ok), 8.6, 1e-12);  // clamp max(ñ−λ, 1)
}

void test_twelve_point_example() {
    const SplitGrid ref = make_grid(0, 10, 1, WindowMode::reference);
    CHECK(ref.n_splits == 10);
    const NodeCounts c = counts_of(ref, kTwelve, 1);
    CHECK(c.size == 12);
    const std::int64_t ranks[] = {0, 3, 3, 7, 7, 7, 8, 8, 10, 10};
    const double cent[] = {0, .58, .58, .86, .86, .86, .72, .72, .44, .44};
    const double emp_ref[] = {.916667, .833333, .916667, .75, 1, 1, .916667, .916667, .916667, .833333};
    const double score_ref[] = {4.583333, 4.746667, 5.163333, 4.61, 5.86,
                                5.86, 5.303333, 5.303333, 5.023333, 4.606667};
    const std::vector<double> s = score_candidates(c, 12, ScoreParams{});
    for (int j = 0; j < 10; ++j) {
        CHECK(c.rank[j] == ranks[j]);
        CHECK_NEAR(centreness(static_cast<double>(c.rank[j]), 12, 0.3, 1.0 / 12), cent[j], 1e-12);
        CHECK_NEAR(emptiness(static_cast<double>(c.window[j]), 12), emp_ref[j], 1e-6);
        CHECK_NEAR(s[j], score_ref[j], 1e-6);
    }
    // Paper mode: closed window [s − ½, s + ½]; differs only at 5.5 where 6.0 sits on the edge.
    const NodeCounts p = counts_of(make_grid(0, 10, 1, WindowMode::paper), kTwelve, 1);
    for (int j = 0; j < 10; ++j) {
        const double want = (j == 5) ? 11.0 / 12 : emp_ref[j];
        CHECK_NEAR(emptiness(static_cast<double>(p.window[j]), 12), want, 1e-6);
        CHECK(p.rank[j] == ranks[j]);
    }
    // Half-open windows partition the axis: counts sum to the points in [a, a + W·β).
    const NodeCounts h = counts_of(make_grid(0, 10, 1, WindowMode::half_open), kTwelve, 1);
    std::int64_t total = 0;
    for (int j = 0; j < 10; ++j) total += h.window[j];
    CHECK(total == 12);
    // EM with ε/(2Δf) = 1: p = softmax(scores).
    const double want_p[] = {.0531, .0625, .0948, .0545, .1902, .1902, .1090, .1090, .0824, .0543};
    const std::vector<double> prob = em_probabilities(s.data(), 10, 1.0);
    for (int j = 0; j < 10; ++j) CHECK_NEAR(prob[j], want_p[j], 6e-5);
    // Inverse-CDF choice: u just below the cumulative boundary picks that index.
    double acc = 0;
    for (int j = 0; j < 10; ++j) {
        CHECK(em_choice(s.data(), 10, 1.0, acc + 0.5 * prob[j]) == j);
        acc += prob[j];
    }
    CHECK_THROWS(em_choice(s.data(), 10, 1.0, 1.0));
    CHECK_THROWS(em_choice(s.data(), 10, 1.0, -0.1));
    // ñ <= 0: all scores zero, uniform choice.
    for (double v : score_candidates(c, 0.0, ScoreParams{})) CHECK(v == 0.0);
}

void test_log_space_stability() {
    // Scores spanning 1e6 at scale 1: the top one takes all the mass, no overflow or NaN.
    const double s[] = {0.0, 1e6, -1e6, 5e5};
    const std::vector<double> p = em_probabilities(s, 4, 1.0);
    CHECK_NEAR(p[1], 1.0, 1e-12);
    CHECK(em_choice(s, 4, 1.0, 0.999999) == 1);
    const double neg_inf[] = {-INFINITY, 2.0};
    CHECK(em_choice(neg_inf, 2, 3.0, 0.0) == 1);
    const double nan_s[] = {NAN};
    CHECK_THROWS(em_probabilities(nan_s, 1, 1.0));
}

void test_decode() {
    const SplitChoice c = decode_split(27, 13, -100, 14.75);
    CHECK(c.dim == 2);
    CHECK(c.j == 1);
    CHECK_NEAR(c.value, -100 + 1.5 * 14.75, 1e-12);
    CHECK(num_splits(-100, 100, 14.75) == 13);
    CHECK_THROWS(num_splits(1, 1, 1));
    CHECK_THROWS(num_splits(0, 1, 0));
}

void test_cells_match_sorted_oracle() {
    // Random data with ties on thresholds and values outside [a, b] (clipped), three modes.
    std::mt19937_64 gen(7);
    std::normal_distribution<double> normal(0.0, 40.0);
    const std::int64_t n = 3000, d = 3;
    std::vector<double> x(static_cast<std::size_t>(n * d));
    for (auto& v : x) v = normal(gen);
    for (std::int64_t i = 0; i < 200; ++i) x[static_cast<std::size_t>(i)] = -100 + 7.5 * static_cast<double>(i % 27);
    x[0] = 150;
    x[1] = -150;
    for (WindowMode mode : {WindowMode::paper, WindowMode::half_open, WindowMode::reference}) {
        const SplitGrid g = make_grid(-100, 100, 7.5, mode);
        const NodeCounts fast = counts_of(g, x, d);
        const NodeCounts slow = node_counts_sorted(g, x.data(), n, d);
        CHECK(fast.size == n);
        CHECK(fast.rank == slow.rank);
        CHECK(fast.window == slow.window);
        CHECK(fast.at_most == slow.at_most);
        // Threads give the same cells.
        RootTree t;
        std::vector<std::int64_t> c1(static_cast<std::size_t>(d * g.n_cells()), 0), c2 = c1;
        std::vector<double> big;
        for (int rep = 0; rep < 10; ++rep) big.insert(big.end(), x.begin(), x.end());
        level_cells(g, big.data(), 10 * n, d, t.view(), 1, c1.data(), 1);
        level_cells(g, big.data(), 10 * n, d, t.view(), 1, c2.data(), 2);
        CHECK(c1 == c2);
    }
}

void test_tree_routing_and_sums() {
    // Root splits dim 0 at 5: left = slot 0, right splits dim 1 at 0 into slots 1 and (ignored) −1.
    const std::int64_t feature[] = {0, -1, 1, -1, -1};
    const double threshold[] = {5.0, 0, 0.0, 0, 0};
    const std::int64_t left[] = {1, 0, 3, 0, 0}, right[] = {2, 0, 4, 0, 0};
    const std::int64_t slot[] = {-1, 0, -1, 1, -1};
    const TreeView tree{5, feature, threshold, left, right, slot};
    const std::vector<double> x = {5.0, 1.0, 6.0, -1.0, 6.0, 1.0, 20.0, 0.0};
    std::vector<std::int64_t> out(4);
    route_points(x.data(), 4, 2, tree, out.data());
    CHECK(out[0] == 0 && out[1] == 1 && out[2] == -1 && out[3] == 1);
    std::vector<double> sums(4, 0.0);
    std::vector<std::int64_t> sizes(2, 0);
    slot_sums(x.data(), 4, 2, -10, 10, tree, 2, sums.data(), sizes.data());
    CHECK(sizes[0] == 1 && sizes[1] == 2);
    CHECK_NEAR(sums[2], 16.0, 1e-12);  // 6 + clip(20) = 16
    CHECK_NEAR(sums[3], -1.0, 1e-12);
    CHECK_THROWS(slot_sums(x.data(), 4, 2, -10, 10, tree, 1, sums.data(), sizes.data()));
    // A power-of-two scale gives the sums in data units times the scale, exactly.
    std::vector<double> scaled(4, 0.0);
    std::vector<std::int64_t> sizes2(2, 0);
    slot_sums(x.data(), 4, 2, -10, 10, tree, 2, scaled.data(), sizes2.data(), 0.0625);
    for (std::size_t i = 0; i < 4; ++i) CHECK(scaled[i] * 16.0 == sums[i]);
    CHECK_THROWS(slot_sums(x.data(), 4, 2, -10, 10, tree, 2, scaled.data(), sizes2.data(), 0.0));
    const std::int64_t bad_left[] = {0, 0, 3, 0, 0};
    const TreeView bad{5, feature, threshold, bad_left, right, slot};
    CHECK_THROWS(route_points(x.data(), 4, 2, bad, out.data()));
}

void test_nearest_centres() {
    const std::vector<double> x = {0.0, 0.0, 9.0, 1.0, 5.0, 0.0, -3.0, 4.0};
    const std::vector<double> c = {0.0, 0.0, 10.0, 0.0};
    std::vector<std::int64_t> out(4);
    nearest_centres(x.data(), 4, 2, c.data(), 2, out.data());
    CHECK(out[0] == 0 && out[1] == 1 && out[2] == 0 && out[3] == 0);  // tie at 5 → first centre
    CHECK_THROWS(nearest_centres(x.data(), 4, 2, c.data(), 0, out.data()));

    // Against the naive row-by-centre loop on random data, with a duplicated centre (ties go to
    // the first copy), several threads and rows enough to use them.
    std::mt19937_64 gen(11);
    std::normal_distribution<double> normal(0.0, 3.0);
    const std::int64_t n = 30000, d = 7, k = 13;
    std::vector<double> xs(static_cast<std::size_t>(n * d)), cs(static_cast<std::size_t>(k * d));
    for (double& v : xs) v = normal(gen);
    for (double& v : cs) v = normal(gen);
    for (std::int64_t j = 0; j < d; ++j) cs[static_cast<std::size_t>(12 * d + j)] = cs[static_cast<std::size_t>(4 * d + j)];
    std::vector<std::int64_t> fast(static_cast<std::size_t>(n));
    nearest_centres(xs.data(), n, d, cs.data(), k, fast.data(), 3);
    bool same = true;
    for (std::int64_t i = 0; i < n; ++i) {
        double best = std::numeric_limits<double>::infinity();
        std::int64_t arg = 0;
        for (std::int64_t c2 = 0; c2 < k; ++c2) {
            double dist = 0;
            for (std::int64_t j = 0; j < d; ++j) {
                const double diff = xs[static_cast<std::size_t>(i * d + j)] - cs[static_cast<std::size_t>(c2 * d + j)];
                dist += diff * diff;
            }
            if (dist < best) {
                best = dist;
                arg = c2;
            }
        }
        same = same && fast[static_cast<std::size_t>(i)] == arg && arg != 12;
    }
    CHECK(same);

    // The same points and centres scaled by 2^±1000 keep their labels: the squared differences
    // would overflow (or underflow) without the kernel's own power-of-two rescaling.
    for (const double s : {std::ldexp(1.0, 1000), std::ldexp(1.0, -1000)}) {
        std::vector<double> xs2(xs), cs2(cs);
        for (double& v : xs2) v *= s;
        for (double& v : cs2) v *= s;
        std::vector<std::int64_t> scaled(static_cast<std::size_t>(n));
        nearest_centres(xs2.data(), n, d, cs2.data(), k, scaled.data(), 2);
        CHECK(scaled == fast);
    }
}

}  // namespace

int main() {
    test_nearest_centres();
    test_centreness_tables();
    test_twelve_point_example();
    test_log_space_stability();
    test_decode();
    test_cells_match_sorted_oracle();
    test_tree_routing_and_sums();
    return test_result("test_dpm_split");
}
