// Exact discrete Laplace and discrete Gaussian samplers: integer arithmetic on random bits.
//
// Canonne, Kamath & Steinke (2020), Algorithms 1 and 3, with the geometric part of the discrete
// Laplace drawn by a uniform integer split (below). Every decision compares uniform random bits
// with a rational number, so a sample's distribution is exactly the stated pmf; no floating
// point is involved. Bits are read from a buffer of 64-bit words, least significant bit first,
// in exactly the order of the arbitrary-precision reference privopt/dp/_reference.py, so both
// return the same samples from the same words.
//
// A sampler fills out[start:count) and returns {filled, pos, status}:
//  - status 0: done; pos is the next unread bit;
//  - status 1: the words ran out while drawing sample `filled`; pos is the bit where it began.
//    The caller appends fresh words after the unread tail and calls again, so that sample is
//    redrawn from the same bits followed by new ones (discarding it instead would condition the
//    output on the buffer boundary and bias it towards cheap samples);
//  - status 2: sample `filled` needs integers beyond 64/128 bits; pos is where it began, and the
//    caller draws it with the arbitrary-precision reference from that bit.
#pragma once

#include <cstdint>

namespace privopt::dp {

struct SampleRun {
    std::int64_t filled;
    std::int64_t pos;
    int status;
};

// Reads bits least significant first; past the end it returns zeros and sets exhausted().
class BitStream {
public:
    // pos <= 64·n_words: the bit where reading starts.
    BitStream(const std::uint64_t* words, std::int64_t n_words, std::int64_t pos)
        : words_(words), n_(n_words) {
        if (pos < 64 * n_) {
            idx_ = pos >> 6;
            left_ = 64 - static_cast<int>(pos & 63);
            cur_ = words_[idx_] >> (pos & 63);
        } else {  // nothing left: the first read reports exhaustion
            idx_ = n_ - 1;
            left_ = 0;
        }
    }

    bool exhausted() const { return out_; }
    std::int64_t pos() const { return idx_ * 64 + (64 - left_); }
    std::int64_t remaining() const { return left_ + 64 * (n_ - 1 - idx_); }

    // The next 64 bits without consuming them (bit j = the j-th bit to come); needs
    // remaining() >= 64.
    std::uint64_t peek64() const {
        if (left_ == 64) return cur_;
        return cur_ | (words_[idx_ + 1] << left_);
    }

    // Consumes k bits, 1 <= k <= min(64, remaining()).
    void skip(int k) {
        if (k < left_) {
            cur_ >>= k;
            left_ -= k;
            return;
        }
        k -= left_;
        if (k == 0) {  // the next word is loaded by the next read
            left_ = 0;
            cur_ = 0;
            return;
        }
        ++idx_;
        cur_ = k == 64 ? 0 : words_[idx_] >> k;
        left_ = 64 - k;
    }

    std::uint64_t bit() {
        if (left_ == 0 && !next_word()) return 0;
        std::uint64_t b = cur_ & 1u;
        cur_ >>= 1;
        --left_;
        return b;
    }

    // The next k bits (1 <= k <= 63) as an integer, first bit least significant.
    std::uint64_t bits(int k) {
        std::uint64_t mask = (std::uint64_t{1} << k) - 1;
        if (k <= left_) {
            std::uint64_t x = cur_ & mask;
            cur_ >>= k;  // k <= 63: defined
            left_ -= k;
            return x;
        }
        std::uint64_t x = cur_;
        int have = left_;
        if (!next_word()) return 0;
        x |= cur_ << have;  // have < k <= 63
        cur_ >>= (k - have);
        left_ -= (k - have);
        return x & mask;
    }

private:
    bool next_word() {
        if (idx_ + 1 >= n_) {
            out_ = true;
            return false;
        }
        cur_ = words_[++idx_];
        left_ = 64;
        return true;
    }

    const std::uint64_t* words_;
    std::int64_t n_;
    std::int64_t idx_ = 0;
    int left_ = 0;
    std::uint64_t cur_ = 0;
    bool out_ = false;
};

namespace detail {

using u128 = unsigned __int128;  // GCC/Clang extension

// Bernoulli(num/den) for 0 <= num <= den < 2^126 (U = uint64_t or u128): compare a lazily drawn
// uniform with the binary expansion of num/den, one bit at a time (2 bits expected). num = 0
// and num = den are decided without bits.
template <class U>
inline bool bernoulli_loop(BitStream& r, U num, U den) {
    for (;;) {
        num <<= 1;
        std::uint64_t e = 0;
        if (num >= den) {
            num -= den;
            e = 1;
        }
        std::uint64_t b = r.bit();
        if (r.exhausted()) return false;
        if (b != e) return e == 1;
    }
}

inline std::uint64_t reverse_bits(std::uint64_t x) {
    x = __builtin_bswap64(x);
    x = ((x >> 4) & 0x0F0F0F0F0F0F0F0Full) | ((x & 0x0F0F0F0F0F0F0F0Full) << 4);
    x = ((x >> 2) & 0x3333333333333333ull) | ((x & 0x3333333333333333ull) << 2);
    return ((x >> 1) & 0x5555555555555555ull) | ((x & 0x5555555555555555ull) << 1);
}

// The first 64 bits of the expansion of 1/k, first bit lowest, and the remainder 2^64 mod k
// (the state of bernoulli_loop after them), for 3 <= k < 64.
struct InverseExpansions {
    std::uint64_t bits[64];
    std::uint64_t rest[64];
    InverseExpansions() {
        for (std::uint64_t k = 3; k < 64; ++k) {
            const u128 scaled = u128{1} << 64;
            bits[k] = reverse_bits(static_cast<std::uint64_t>(scaled / k));
            rest[k] = static_cast<std::uint64_t>(scaled % k);
        }
    }
};

// bernoulli_loop's decision and bit use, 64 expansion bits at a time: the first bit where the
// uniform and the expansion differ decides, and exactly the bits up to it are consumed.
inline bool bernoulli_chunk(BitStream& r, std::uint64_t expansion, std::uint64_t rest,
                            std::uint64_t den) {
    const std::uint64_t diff = r.peek64() ^ expansion;
    if (diff == 0) {  // 64 equal bits (probability 2^-64): continue bit by bit
        r.skip(64);
        return bernoulli_loop<std::uint64_t>(r, rest, den);
    }
    const int j = __builtin_ctzll(diff);
    r.skip(j + 1);
    return ((expansion >> j) & 1u) == 1;
}

template <class U>
inline bool bernoulli(BitStream& r, U num, U den) {
    if (num == 0) return false;
    if (num == den) return true;
    if constexpr (sizeof(U) == 8) {
        if (r.remaining() >= 64) {
            if ((den & (den - 1)) == 0) {  // den = 2^k: the expansion is num's k bits
                const int k = 63 - __builtin_clzll(den);
                return bernoulli_chunk(r, reverse_bits(num << (64 - k)), 0, den);
            }
            if (num == 1 && den < 64) {
                static const InverseExpansions inv;
                return bernoulli_chunk(r, inv.bits[den], inv.rest[den], den);
            }
        }
    }
    return bernoulli_loop<U>(r, num, den);
}

// Bernoulli(exp(-num/den)) for 0 <= num <= den (CKS Algorithm 1).
template <class U>
inline bool bernoulli_exp_small(BitStream& r, U num, U den) {
    std::uint64_t k = 1;
    while (bernoulli<U>(r, num, den) && bernoulli<std::uint64_t>(r, 1, k)) ++k;
    return (k & 1) == 1 && !r.exhausted();
}

// Bernoulli(exp(-num/den)) for any num >= 0, 0 < den (CKS Algorithm 1): one Bernoulli(e^-1)
// per unit of the integer part, then the fractional part.
template <class U>
inline bool bernoulli_exp(BitStream& r, U num, U den) {
    while (num >= den) {
        if (!bernoulli_exp_small<std::uint64_t>(r, 1, 1)) return false;
        num -= den;
    }
    return bernoulli_exp_small<U>(r, num, den);
}

// Uniform on {0..2^k - 1}: k bits, 0 <= k <= 62.
inline std::uint64_t uniform_bits(BitStream& r, int k) { return k == 0 ? 0 : r.bits(k); }

inline int bit_length(std::uint64_t x) { return x == 0 ? 0 : 64 - __builtin_clzll(x); }

}  // namespace detail

// Parameters of P(y) ∝ exp(-|y|·s/t), 0 < s, t <= 2^62, t/s <= 2^56.
//
// |y| is a geometric variable of ratio q = e^{-s/t}, drawn as |y| = m·v + u with the block m
// the largest power of two <= max(1, t/s): u is uniform on {0..m-1} (log2(m) bits, no
// rejection) accepted with probability q^u = e^{-u·s/t} (a geometric truncated to the block),
// and v counts the successes of Bernoulli(q^m) before the first failure (a geometric of ratio
// q^m). Then P(|y|) ∝ q^u·(q^m)^v = q^{|y|}. A sign bit follows and (negative, 0) is rejected,
// which leaves P(y) ∝ q^{|y|} on the integers. Since m·s <= t, both exponents u·s/t and m·s/t
// are at most 1 when s < t (CKS Algorithm 1 without its integer-part loop); for s >= t, m = 1
// and v alone carries the draw.
struct LaplaceParams {
    std::uint64_t s, t, m;
    int km;             // log2(m)
    std::int64_t vmax;  // larger v could overflow m·v + u: status 2

    LaplaceParams(std::uint64_t s_, std::uint64_t t_)
        : s(s_), t(t_), m(block(s_, t_)), km(detail::bit_length(m) - 1), vmax(max_v(m)) {}

    static std::uint64_t block(std::uint64_t s, std::uint64_t t) {
        return s < t ? std::uint64_t{1} << (detail::bit_length(t / s) - 1) : 1;
    }

    // Largest v with m·v + u < 2^62 for every u < m.
    static std::int64_t max_v(std::uint64_t m) {
        return static_cast<std::int64_t>(((std::uint64_t{1} << 62) - m) / m);
    }
};

// One draw; on status != 0 (stored in *status) the value is meaningless.
inline std::int64_t discrete_laplace_one(BitStream& r, const LaplaceParams& p, int* status) {
    for (;;) {
        std::uint64_t u = detail::uniform_bits(r, p.km);
        if (r.exhausted()) break;
        if (!detail::bernoulli_exp_small<std::uint64_t>(r, u * p.s, p.t)) {
            if (r.exhausted()) break;
            continue;
        }
        std::int64_t v = 0;
        while (detail::bernoulli_exp<std::uint64_t>(r, p.m * p.s, p.t)) ++v;
        if (r.exhausted()) break;
        if (v > p.vmax) {
            *status = 2;
            return 0;
        }
        std::int64_t y = static_cast<std::int64_t>(p.m) * v + static_cast<std::int64_t>(u);
        std::uint64_t b = r.bit();
        if (r.exhausted()) break;
        if (b == 1 && y == 0) continue;
        return b == 1 ? -y : y;
    }
    *status = 1;
    return 0;
}

// vmax < 0: the overflow bound LaplaceParams::max_v; a smaller one (tests) sends every sample
// with v > vmax to the reference.
inline SampleRun discrete_laplace(const std::uint64_t* words, std::int64_t n_words,
                                  std::int64_t pos, std::uint64_t s, std::uint64_t t,
                                  std::int64_t* out, std::int64_t start, std::int64_t count,
                                  std::int64_t vmax = -1) {
    LaplaceParams p(s, t);
    if (vmax >= 0 && vmax < p.vmax) p.vmax = vmax;
    BitStream r(words, n_words, pos);
    for (std::int64_t i = start; i < count; ++i) {
        std::int64_t begin = r.pos();
        int status = 0;
        std::int64_t y = discrete_laplace_one(r, p, &status);
        if (status != 0) return {i, begin, status};
        out[i] = y;
    }
    return {count, r.pos(), 0};
}

// Discrete Gaussian, σ² = n/d (CKS Algorithm 3, exact for any scale t > 0; t ≈ σ keeps the
// acceptance high): a discrete Laplace of scale t accepted with probability exp(-(|y| - σ²/t)² / 2σ²) = exp(-a²/D), a = |y|·t·d - n,
// D = 2·n·t²·d. Requires n, t·d < 2^62 and D < 2^126. Candidates with |y| > ylim go to the
// reference (status 2); ylim < 0 means the overflow bound INT64_MAX / (t·d).
inline SampleRun discrete_gaussian(const std::uint64_t* words, std::int64_t n_words,
                                   std::int64_t pos, std::uint64_t n, std::uint64_t d,
                                   std::uint64_t t, std::int64_t* out, std::int64_t start,
                                   std::int64_t count, std::int64_t ylim = -1) {
    using detail::u128;
    const LaplaceParams p(1, t);
    const std::int64_t td = static_cast<std::int64_t>(t * d);
    if (ylim < 0 || ylim > INT64_MAX / td) ylim = INT64_MAX / td;
    const u128 dd = u128{2} * n * t * t * d;
    BitStream r(words, n_words, pos);
    for (std::int64_t i = start; i < count; ++i) {
        std::int64_t begin = r.pos();
        int status = 0;
        std::int64_t y;
        for (;;) {
            y = discrete_laplace_one(r, p, &status);
            if (status != 0) break;
            std::int64_t ay = y < 0 ? -y : y;
            if (ay > ylim) {
                status = 2;
                break;
            }
            std::int64_t a = ay * td - static_cast<std::int64_t>(n);
            std::uint64_t ua = static_cast<std::uint64_t>(a < 0 ? -a : a);
            bool accept = detail::bernoulli_exp<u128>(r, u128{ua} * ua, dd);
            if (r.exhausted()) {
                status = 1;
                break;
            }
            if (accept) break;
        }
        if (status != 0) return {i, begin, status};
        out[i] = y;
    }
    return {count, r.pos(), 0};
}

}  // namespace privopt::dp
