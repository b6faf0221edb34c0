// Bindings of the exact noise samplers (privopt/exact_noise.hpp) for privopt.dp.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "families.hpp"
#include "privopt/exact_noise.hpp"

namespace py = pybind11;

namespace privopt::bindings {
namespace {

constexpr std::int64_t kLimit = std::int64_t{1} << 62;

// The buffers are used in place (no conversion): a copy of `out` would lose the samples.
const std::uint64_t* word_data(const py::array& words) {
    if (!words.dtype().is(py::dtype::of<std::uint64_t>()) || words.ndim() != 1 ||
        !(words.flags() & py::array::c_style))
        throw std::invalid_argument("words must be a one-dimensional contiguous uint64 array");
    return static_cast<const std::uint64_t*>(words.data());
}

std::int64_t* out_data(py::array& out, std::int64_t start) {
    if (!out.dtype().is(py::dtype::of<std::int64_t>()) || out.ndim() != 1 ||
        !(out.flags() & py::array::c_style) || !out.writeable())
        throw std::invalid_argument("out must be a one-dimensional contiguous writable int64 array");
    if (start < 0 || start > out.size())
        throw std::invalid_argument("start must lie in [0, len(out)], got " + std::to_string(start));
    return static_cast<std::int64_t*>(out.mutable_data());
}

void check_pos(std::int64_t pos, const py::array& words) {
    if (pos < 0 || pos > 64 * static_cast<std::int64_t>(words.size()))
        throw std::invalid_argument("pos must lie in [0, 64*len(words)], got " + std::to_string(pos));
}

void check_range(const char* name, std::int64_t v, std::int64_t top) {
    if (v < 1 || v > top)
        throw std::invalid_argument(std::string(name) + " must lie in [1, " + std::to_string(top) +
                                    "], got " + std::to_string(v));
}

py::tuple to_tuple(const dp::SampleRun& run) { return py::make_tuple(run.filled, run.pos, run.status); }

py::tuple discrete_laplace_py(const py::array& words, std::int64_t pos, std::int64_t s,
                              std::int64_t t, py::array& out, std::int64_t start,
                              std::int64_t vmax) {
    const std::uint64_t* w = word_data(words);
    std::int64_t* o = out_data(out, start);
    check_pos(pos, words);
    check_range("s", s, kLimit);  // 2^62 itself is safe: the kernel doubles values below t
    check_range("t", t, kLimit);
    if (t / s > (std::int64_t{1} << 56))
        throw std::invalid_argument("t/s must not exceed 2**56 (the noise must fit int64)");
    dp::SampleRun run;
    {
        py::gil_scoped_release release;
        run = dp::discrete_laplace(w, words.size(), pos, s, t, o, start, out.size(), vmax);
    }
    return to_tuple(run);
}

py::tuple discrete_gaussian_py(const py::array& words, std::int64_t pos, std::int64_t n,
                               std::int64_t d, std::int64_t t, py::array& out,
                               std::int64_t start, std::int64_t ylim) {
    const std::uint64_t* w = word_data(words);
    std::int64_t* o = out_data(out, start);
    check_pos(pos, words);
    check_range("n", n, kLimit - 1);
    check_range("d", d, kLimit - 1);
    check_range("t", t, kLimit - 1);
    if (d > (kLimit - 1) / t) throw std::invalid_argument("t*d must be below 2**62");
    using dp::detail::u128;
    const u128 dd = u128{2} * static_cast<u128>(n) * static_cast<u128>(t * d);  // < 2^125
    if (dd >= (u128{1} << 126) / static_cast<u128>(t))
        throw std::invalid_argument("2*n*t*t*d must be below 2**126");
    dp::SampleRun run;
    {
        py::gil_scoped_release release;
        run = dp::discrete_gaussian(w, words.size(), pos, n, d, t, o, start, out.size(), ylim);
    }
    return to_tuple(run);
}

}  // namespace

void register_dp(py::module_& m) {
    m.def("discrete_laplace", &discrete_laplace_py, py::arg("words"), py::arg("pos"), py::arg("s"),
          py::arg("t"), py::arg("out"), py::arg("start"), py::arg("vmax") = -1,
          "Fill out[start:] with P(y) ∝ exp(-|y|·s/t) from the bits of words from bit pos;\n"
          "returns (filled, pos, status) as documented in privopt/exact_noise.hpp.");
    m.def("discrete_gaussian", &discrete_gaussian_py, py::arg("words"), py::arg("pos"),
          py::arg("n"), py::arg("d"), py::arg("t"), py::arg("out"), py::arg("start"),
          py::arg("ylim") = -1,
          "Fill out[start:] with P(y) ∝ exp(-y²/(2n/d)) (Laplace proposal of scale t), from the\n"
          "bits of words from bit pos; returns (filled, pos, status).");
}

}  // namespace privopt::bindings
