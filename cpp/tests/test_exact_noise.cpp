// Exact noise samplers: the bit stream, Bernoulli(num/den) against exhaustive enumeration of
// bit strings, histograms of the discrete Laplace and Gaussian against their pmfs, and the
// status protocol (a run cut by the end of the buffer resumes into the uninterrupted stream).
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "check.hpp"
#include "privopt/exact_noise.hpp"

namespace {

using privopt::dp::BitStream;

std::vector<std::uint64_t> random_words(std::size_t n, std::uint64_t seed) {
    std::mt19937_64 gen(seed);
    std::vector<std::uint64_t> w(n);
    for (auto& x : w) x = gen();
    return w;
}

void test_bit_stream() {
    auto w = random_words(5, 1);
    for (int k : {1, 3, 17, 63}) {
        BitStream a(w.data(), 5, 7), b(w.data(), 5, 7);
        for (int rep = 0; rep < 4; ++rep) {
            std::uint64_t x = a.bits(k), y = 0;
            for (int j = 0; j < k; ++j) y |= b.bit() << j;
            CHECK(x == y);
            CHECK(a.pos() == b.pos() && a.pos() == 7 + (rep + 1) * k);
        }
    }
    BitStream end(w.data(), 1, 62);
    end.bits(2);
    CHECK(!end.exhausted() && end.pos() == 64);
    end.bit();
    CHECK(end.exhausted());
    BitStream empty(w.data(), 0, 0);
    empty.bit();
    CHECK(empty.exhausted());
}

// Over all 2^L bit strings, Bernoulli(num/den) decides "true" on T of them and stays undecided
// on U (it needs more than L bits); exactness means T/2^L <= num/den <= (T+U)/2^L.
void test_bernoulli_exhaustive() {
    const int L = 14;
    for (std::uint64_t den : {1u, 2u, 3u, 7u, 10u, 64u, 1000u}) {
        for (std::uint64_t num = 0; num <= den; ++num) {
            std::int64_t t = 0, u = 0;
            for (std::uint64_t bits = 0; bits < (1u << L); ++bits) {
                std::uint64_t word = bits << (64 - L);  // the L bits read last
                BitStream r(&word, 1, 64 - L);
                bool x = privopt::dp::detail::bernoulli<std::uint64_t>(r, num, den);
                if (r.exhausted())
                    ++u;
                else
                    t += x;
            }
            CHECK(static_cast<double>(t) * den <= static_cast<double>(num) * (1 << L));
            CHECK(static_cast<double>(num) * (1 << L) <= static_cast<double>(t + u) * den);
            CHECK(u <= 2);  // num/den's expansion pins all but ~1 string of length L
        }
    }
}

// The 64-bits-at-a-time Bernoulli makes the decisions of the bit-by-bit loop and leaves the
// stream at the same bit, including when all 64 bits agree with the expansion.
void test_bernoulli_chunk_equals_loop() {
    using privopt::dp::detail::bernoulli;
    using privopt::dp::detail::bernoulli_loop;
    using privopt::dp::detail::reverse_bits;
    auto w = random_words(4000, 5);
    std::mt19937_64 gen(6);
    for (int trial = 0; trial < 20000; ++trial) {
        // Odd trials: num/2^k for any num; even ones: 1/den for a small den (the two fast paths).
        const int k = 1 + static_cast<int>(gen() % 62);
        const std::uint64_t den = trial % 2 ? std::uint64_t{1} << k : 3 + gen() % 61;
        const std::uint64_t num = trial % 2 ? gen() % (den + 1) : 1;
        const std::int64_t pos = static_cast<std::int64_t>(gen() % (64 * 3990));
        BitStream a(w.data(), 4000, pos), b(w.data(), 4000, pos);
        bool x = bernoulli<std::uint64_t>(a, num, den);
        bool y = (num == 0 || num == den) ? num == den : bernoulli_loop<std::uint64_t>(b, num, den);
        CHECK(x == y);
        CHECK(a.pos() == b.pos() || num == 0 || num == den);
    }
    for (std::uint64_t den : {std::uint64_t{3}, std::uint64_t{7}, std::uint64_t{1} << 40}) {
        const std::uint64_t num = den == 3 || den == 7 ? 1 : 0x123456789ull;
        // Words whose first 64 bits equal the expansion, then a tail that decides later.
        std::uint64_t exp_bits = 0, n = num;
        for (int j = 0; j < 64; ++j) {
            n <<= 1;
            if (n >= den) {
                n -= den;
                exp_bits |= std::uint64_t{1} << j;
            }
        }
        std::uint64_t words[3] = {exp_bits, 0x5a5a5a5a5a5a5a5aull, 0x1234567ull};
        for (std::uint64_t tail : {std::uint64_t{0}, ~std::uint64_t{0}, std::uint64_t{0x5a}}) {
            words[1] = tail;
            BitStream a(words, 3, 0), b(words, 3, 0);
            CHECK(bernoulli<std::uint64_t>(a, num, den) == bernoulli_loop<std::uint64_t>(b, num, den));
            CHECK(a.pos() == b.pos() && a.pos() > 64);
        }
    }
    CHECK(reverse_bits(1) == std::uint64_t{1} << 63 && reverse_bits(0x6) == std::uint64_t{0x6} << 60);
}

// |count - N·p| within 6 standard deviations for every value with N·p >= 20.
template <class Pmf>
void check_histogram(const std::vector<std::int64_t>& x, Pmf pmf, int half) {
    std::vector<double> count(2 * half + 1, 0.0);
    for (auto y : x)
        if (y >= -half && y <= half) count[y + half] += 1;
    const double n = static_cast<double>(x.size());
    for (int y = -half; y <= half; ++y) {
        double p = pmf(y);
        if (n * p < 20) continue;
        CHECK(std::fabs(count[y + half] - n * p) <= 6 * std::sqrt(n * p * (1 - p)));
    }
}

void test_laplace_histogram() {
    struct Case { std::uint64_t s, t; };
    for (Case c : {Case{1, 1}, Case{1, 3}, Case{2, 7}, Case{5, 2}, Case{3, 100}}) {
        auto w = random_words(400000, c.s * 1000 + c.t);
        std::vector<std::int64_t> out(300000);
        auto run = privopt::dp::discrete_laplace(w.data(), w.size(), 0, c.s, c.t, out.data(), 0,
                                                 out.size());
        CHECK(run.status == 0 && run.filled == static_cast<std::int64_t>(out.size()));
        const double r = static_cast<double>(c.s) / c.t;
        check_histogram(out, [r](int y) { return std::tanh(r / 2) * std::exp(-r * std::abs(y)); },
                        400);
    }
}

void test_gaussian_histogram() {
    for (double sigma : {0.8, 2.0, 6.5}) {
        // σ² = n/d with d = 2^20
        const std::uint64_t d = 1u << 20;
        const auto n = static_cast<std::uint64_t>(std::ceil(sigma * sigma * d));
        const auto t = static_cast<std::uint64_t>(std::floor(std::sqrt(double(n) / d))) + 1;
        auto w = random_words(600000, n);
        std::vector<std::int64_t> out(200000);
        auto run = privopt::dp::discrete_gaussian(w.data(), w.size(), 0, n, d, t, out.data(), 0,
                                                  out.size());
        CHECK(run.status == 0);
        const double var = double(n) / d;
        double z = 0;
        for (int j = -200; j <= 200; ++j) z += std::exp(-j * j / (2 * var));
        check_histogram(out, [var, z](int y) { return std::exp(-y * y / (2 * var)) / z; }, 100);
    }
}

// A buffer cut short returns status 1 at the start of the unfinished sample; resuming from
// there on the whole buffer reproduces the uninterrupted run exactly.
void test_resume_after_refill() {
    auto w = random_words(2000, 9);
    std::vector<std::int64_t> full(500), cut(500);
    auto whole = privopt::dp::discrete_laplace(w.data(), w.size(), 0, 1, 5, full.data(), 0, 500);
    CHECK(whole.status == 0);
    std::int64_t i = 0, pos = 0;
    for (std::int64_t n_words = 3; i < 500; n_words += 3) {
        auto run = privopt::dp::discrete_laplace(w.data(), n_words, pos, 1, 5, cut.data(), i, 500);
        CHECK(run.status == 0 || run.status == 1);
        i = run.filled;
        pos = run.pos;
    }
    CHECK(full == cut);
    CHECK(pos == whole.pos);
    std::vector<std::int64_t> one(1);
    auto big = privopt::dp::discrete_laplace(w.data(), w.size(), 0, 1, 5, one.data(), 0, 1, 0);
    CHECK(big.status == 0 || big.status == 2);
}

}  // namespace

int main() {
    test_bit_stream();
    test_bernoulli_exhaustive();
    test_bernoulli_chunk_equals_loop();
    test_laplace_histogram();
    test_gaussian_histogram();
    test_resume_after_refill();
    return test_result("test_exact_noise");
}
