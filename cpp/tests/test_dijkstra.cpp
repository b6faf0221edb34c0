// Dijkstra against brute-force Floyd-Warshall on random graphs, plus cutoff and bad input.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "check.hpp"
#include "privopt/dijkstra.hpp"

namespace {

struct RandomGraph {
    std::int64_t n;
    std::vector<std::int64_t> indptr, indices;
    std::vector<double> weights;
    privopt::CsrGraphView view() const { return {n, indptr.data(), indices.data(), weights.data()}; }
};

RandomGraph random_graph(std::int64_t n, double p, unsigned seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> u(0.0, 1.0);
    RandomGraph g{n, {0}, {}, {}};
    for (std::int64_t a = 0; a < n; ++a) {
        for (std::int64_t b = 0; b < n; ++b)
            if (a != b && u(rng) < p) g.indices.push_back(b), g.weights.push_back(u(rng) * 10.0);
        g.indptr.push_back(static_cast<std::int64_t>(g.indices.size()));
    }
    return g;
}

std::vector<double> floyd_warshall(const RandomGraph& g) {
    const double inf = std::numeric_limits<double>::infinity();
    const auto n = static_cast<std::size_t>(g.n);
    std::vector<double> d(n * n, inf);
    for (std::size_t i = 0; i < n; ++i) d[i * n + i] = 0.0;
    for (std::size_t u = 0; u < n; ++u)
        for (auto a = g.indptr[u]; a < g.indptr[u + 1]; ++a) {
            auto& e = d[u * n + static_cast<std::size_t>(g.indices[a])];
            if (g.weights[a] < e) e = g.weights[a];
        }
    for (std::size_t k = 0; k < n; ++k)
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j)
                if (d[i * n + k] + d[k * n + j] < d[i * n + j]) d[i * n + j] = d[i * n + k] + d[k * n + j];
    return d;
}

}  // namespace

int main() {
    for (unsigned seed = 0; seed < 20; ++seed) {
        const auto g = random_graph(30, 0.1, seed);
        const auto ref = floyd_warshall(g);
        std::vector<std::int64_t> sources(30);
        for (std::int64_t s = 0; s < 30; ++s) sources[s] = s;
        std::vector<double> out(30 * 30);
        privopt::dijkstra_many(g.view(), sources.data(), 30, privopt::unreachable, out.data());
        for (std::size_t i = 0; i < out.size(); ++i) {
            if (std::isinf(ref[i])) CHECK(std::isinf(out[i]));
            else CHECK_NEAR(out[i], ref[i], 1e-9);
        }
        // A cutoff keeps exactly the entries within the radius.
        std::vector<double> cut(30 * 30);
        privopt::dijkstra_many(g.view(), sources.data(), 30, 5.0, cut.data());
        for (std::size_t i = 0; i < cut.size(); ++i) {
            if (ref[i] <= 5.0) CHECK_NEAR(cut[i], ref[i], 1e-9);
            else CHECK(std::isinf(cut[i]));
        }
    }
    // Threads split the sources; every row equals the single-threaded one.
    for (unsigned seed = 0; seed < 5; ++seed) {
        const auto g = random_graph(50, 0.08, 100 + seed);
        std::vector<std::int64_t> sources{3, 0, 49, 7, 7, 12, 30};
        const auto n_src = static_cast<std::int64_t>(sources.size());
        std::vector<double> one(sources.size() * 50), many(sources.size() * 50);
        privopt::dijkstra_many(g.view(), sources.data(), n_src, 6.0, one.data(), 1);
        for (int threads : {2, 3, 16}) {
            privopt::dijkstra_many(g.view(), sources.data(), n_src, 6.0, many.data(), threads);
            CHECK(one == many);
        }
    }
    // A node limit settles the L nearest nodes, in order, and leaves every other node at +inf.
    for (unsigned seed = 0; seed < 20; ++seed) {
        const auto g = random_graph(40, 0.1, 200 + seed);
        const auto ref = floyd_warshall(g);
        privopt::DijkstraWorkspace ws(g.n);
        const std::vector<std::int64_t> all = ws.run(g.view(), 5);
        for (std::int64_t limit : {0, 1, 4, 17, 100}) {
            const auto& part = ws.run(g.view(), 5, privopt::unreachable, limit);
            const auto expect = std::min<std::int64_t>(limit, static_cast<std::int64_t>(all.size()));
            CHECK(static_cast<std::int64_t>(part.size()) == expect);
            for (std::size_t i = 0; i < part.size(); ++i) {
                CHECK(part[i] == all[i]);
                CHECK_NEAR(ws.distance(part[i]), ref[5 * 40 + static_cast<std::size_t>(part[i])], 1e-9);
            }
            std::int64_t finite = 0;
            for (double d : ws.distances()) finite += std::isfinite(d) ? 1 : 0;
            CHECK(finite == expect);
        }
    }
    // Predecessors trace a shortest path back to the source.
    const auto g = random_graph(40, 0.15, 99);
    privopt::DijkstraWorkspace ws(g.n);
    const auto& settled = ws.run(g.view(), 0);
    for (std::int64_t v : settled) {
        double length = 0.0;
        std::int64_t cur = v;
        while (ws.predecessor(cur) >= 0) {
            const std::int64_t p = ws.predecessor(cur);
            double best = privopt::unreachable;
            for (auto a = g.indptr[p]; a < g.indptr[p + 1]; ++a)
                if (g.indices[a] == cur && g.weights[a] < best) best = g.weights[a];
            length += best;
            cur = p;
        }
        CHECK(cur == 0);
        CHECK_NEAR(length, ws.distance(v), 1e-9);
    }
    // Bad input is rejected with an exception, never a wrong answer.
    std::vector<std::int64_t> indptr{0, 1, 1}, indices{1};
    std::vector<double> negative{-1.0}, nan{std::numeric_limits<double>::quiet_NaN()};
    privopt::CsrGraphView bad{2, indptr.data(), indices.data(), negative.data()};
    CHECK_THROWS(bad.validate());
    bad.weights = nan.data();
    CHECK_THROWS(bad.validate());
    std::vector<std::int64_t> out_of_range{5};
    privopt::CsrGraphView bad_index{2, indptr.data(), out_of_range.data(), negative.data()};
    CHECK_THROWS(bad_index.validate());
    privopt::DijkstraWorkspace small(2);
    std::vector<double> ok{1.0};
    CHECK_THROWS(small.run(privopt::CsrGraphView{2, indptr.data(), indices.data(), ok.data()}, 7));
    // A workspace sized for another graph, and sources outside the graph, are rejected.
    privopt::DijkstraWorkspace wrong(5);
    CHECK_THROWS(wrong.run(privopt::CsrGraphView{2, indptr.data(), indices.data(), ok.data()}, 0));
    std::vector<std::int64_t> bad_sources{0, 2};
    std::vector<double> sink(4);
    CHECK_THROWS(privopt::dijkstra_many(privopt::CsrGraphView{2, indptr.data(), indices.data(),
                                                              ok.data()},
                                        bad_sources.data(), 2, privopt::unreachable, sink.data(), 2));
    return test_result("test_dijkstra");
}
