// Bindings of the census kernels: TableMerge, the tree DP and the chain DP (spec 003).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "families.hpp"
#include "privopt/chain_dp.hpp"
#include "privopt/table_merge.hpp"
#include "privopt/tree_dp.hpp"

namespace py = pybind11;

namespace privopt::bindings {
namespace {

using I64Array = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
using U8Array = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>;

void check_1d(const char* name, const py::array& a, py::ssize_t n) {
    if (a.ndim() != 1) throw std::invalid_argument(std::string(name) + " must be one-dimensional");
    if (n >= 0 && a.size() != n)
        throw std::invalid_argument(std::string(name) + " must have " + std::to_string(n) +
                                    " entries, got " + std::to_string(a.size()));
}

std::vector<CplTable> to_tables(const I64Array& los, const std::vector<I64Array>& costs) {
    check_1d("los", los, static_cast<py::ssize_t>(costs.size()));
    std::vector<CplTable> out(costs.size());
    for (std::size_t c = 0; c < costs.size(); ++c) {
        check_1d("tables[i]", costs[c], -1);
        if (costs[c].size() == 0)
            throw std::invalid_argument("tables[" + std::to_string(c) + "] is empty");
        detail::check_magnitude(los.data()[c], "los[i]");
        detail::check_magnitude(los.data()[c] + costs[c].size(), "los[i] + len(tables[i])");
        out[c] = CplTable::from_values(los.data()[c], costs[c].data(), costs[c].size());
        if (!out[c].is_convex())
            throw std::invalid_argument("tables[" + std::to_string(c) + "] is not convex");
    }
    return out;
}

// phi's values on its domain from its slopes, anchored at the cost of the split of phi.lo.
std::vector<std::int64_t> phi_values(const CplTable& phi, const MergeTrace& tr,
                                     const std::vector<I64Array>& costs, const I64Array& los) {
    std::vector<std::int64_t> out;
    if (phi.empty()) return out;
    std::vector<std::int64_t> x(tr.v0.size());
    split_value(tr, phi.lo, x.data());
    std::int64_t acc = 0;
    for (std::size_t c = 0; c < x.size(); ++c)
        acc = detail::checked_add(acc, costs[c].data()[x[c] - los.data()[c]], "phi");
    out.push_back(acc);
    for (std::int64_t v = phi.lo; v < phi.hi(); ++v) {
        acc = detail::checked_add(acc, phi.up(v), "phi");
        out.push_back(acc);
    }
    return out;
}

py::tuple table_merge_py(const I64Array& los, const std::vector<I64Array>& costs,
                         std::int64_t want_lo, std::int64_t want_hi, const std::string& method) {
    if (method != "heap" && method != "sort")
        throw std::invalid_argument("method must be 'heap' or 'sort', got '" + method + "'");
    if (costs.empty()) throw std::invalid_argument("tables must not be empty");
    detail::check_magnitude(want_lo, "want_lo");
    detail::check_magnitude(want_hi, "want_hi");
    auto tables = to_tables(los, costs);
    std::vector<const CplTable*> ptrs;
    for (auto& t : tables) ptrs.push_back(&t);
    MergeTrace tr;
    CplTable phi;
    {
        py::gil_scoped_release release;
        phi = method == "heap" ? table_merge(ptrs.data(), ptrs.size(), want_lo, want_hi, &tr)
                               : table_merge_sorted(ptrs.data(), ptrs.size(), want_lo, want_hi, &tr);
    }
    const auto values = phi_values(phi, tr, costs, los);
    py::array_t<std::int64_t> cost(static_cast<py::ssize_t>(values.size()), values.data());
    py::array_t<std::int64_t> v0(static_cast<py::ssize_t>(tr.v0.size()), tr.v0.data());
    py::array_t<std::int32_t> up(static_cast<py::ssize_t>(tr.up.size()), tr.up.data());
    py::array_t<std::int32_t> down(static_cast<py::ssize_t>(tr.down.size()), tr.down.data());
    return py::make_tuple(phi.lo, cost, v0, tr.V0, up, down);
}

void check_limit(const char* name, std::int64_t v) {
    if (v < 1) throw std::invalid_argument(std::string(name) + " must be >= 1");
}

// Number of values in [lo, hi] (0 when empty); both ends already checked to be <= 2^61.
std::int64_t width(std::int64_t lo, std::int64_t hi) { return hi < lo ? 0 : hi - lo + 1; }

void check_values(const char* name, const I64Array& a) {
    const std::int64_t* d = a.data();
    for (py::ssize_t i = 0; i < a.size(); ++i) detail::check_magnitude(d[i], name);
}

// ``obj`` as a C-contiguous int64 array, never truncated: a float array is accepted only when
// every value is a finite integer within int64 (the Python side's integral floats), and bool,
// complex, object or text arrays are refused. (forcecast alone would turn 1.5 into 1.)
I64Array integer_array(const char* name, const py::object& obj) {
    const py::array a = py::array::ensure(obj);
    if (!a) throw std::invalid_argument(std::string(name) + " must be an integer array");
    const char kind = a.dtype().kind();
    if (kind == 'f') {
        const auto f = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(a);
        const double* d = f.data();
        for (py::ssize_t i = 0; i < f.size(); ++i)
            // 2^63 is exact in double; every integral double below it fits in int64
            if (!std::isfinite(d[i]) || d[i] != std::floor(d[i]) || std::fabs(d[i]) >= 0x1p63)
                throw std::invalid_argument(std::string(name) + "[" + std::to_string(i) +
                                            "] = " + py::repr(py::float_(d[i])).cast<std::string>() +
                                            " is not an integer within int64");
    } else if (kind == 'u' && a.itemsize() == 8) {
        const auto u = py::array_t<std::uint64_t, py::array::c_style | py::array::forcecast>::ensure(a);
        for (py::ssize_t i = 0; i < u.size(); ++i)
            if (u.data()[i] > static_cast<std::uint64_t>(INT64_MAX))  // would wrap negative
                throw std::invalid_argument(std::string(name) + "[" + std::to_string(i) + "] = " +
                                            std::to_string(u.data()[i]) + " is beyond int64");
    } else if (kind != 'i' && kind != 'u') {
        throw std::invalid_argument(std::string(name) + " must hold integers, got dtype " +
                                    py::str(a.dtype()).cast<std::string>());
    }
    return I64Array::ensure(a);
}

// ``obj`` as 0/1 flags (uint8), from integers or integral floats; any other value is refused.
U8Array flag_array(const char* name, const py::object& obj) {
    const I64Array v = integer_array(name, obj);
    U8Array out(v.request().shape);
    for (py::ssize_t i = 0; i < v.size(); ++i) {
        const std::int64_t x = v.data()[i];
        if (x != 0 && x != 1)
            throw std::invalid_argument(std::string(name) + "[" + std::to_string(i) + "] = " +
                                        std::to_string(x) + " is not 0 or 1");
        out.mutable_data()[i] = static_cast<std::uint8_t>(x);
    }
    return out;
}

py::tuple tree_dp_py(const py::object& child_ptr_in, const py::object& child_idx_in,
                     const py::object& noisy_in, const py::object& weight_in,
                     const py::object& lo_in, const py::object& hi_in, std::int64_t root,
                     bool widen, std::int64_t max_table_size) {
    const I64Array child_ptr = integer_array("child_ptr", child_ptr_in);
    const I64Array child_idx = integer_array("child_idx", child_idx_in);
    const I64Array noisy = integer_array("noisy", noisy_in);
    const I64Array weight = integer_array("weight", weight_in);
    const I64Array lo = integer_array("lo", lo_in);
    const I64Array hi = integer_array("hi", hi_in);
    check_1d("noisy", noisy, -1);
    const py::ssize_t n = noisy.size();
    if (n == 0) throw std::invalid_argument("the tree must have at least one node");
    check_1d("child_ptr", child_ptr, n + 1);
    check_1d("child_idx", child_idx, -1);
    check_1d("weight", weight, n);
    check_1d("lo", lo, n);
    check_1d("hi", hi, n);
    check_limit("max_table_size", max_table_size);
    if (root < 0 || root >= n) throw std::invalid_argument("root must lie in [0, len(noisy))");
    if (child_ptr.data()[0] != 0 || child_ptr.data()[n] != child_idx.size())
        throw std::invalid_argument("child_ptr must start at 0 and end at len(child_idx)");
    for (py::ssize_t a = 0; a < n; ++a)
        if (child_ptr.data()[a + 1] < child_ptr.data()[a])
            throw std::invalid_argument("child_ptr must be non-decreasing");
    for (py::ssize_t e = 0; e < child_idx.size(); ++e)
        if (child_idx.data()[e] < 0 || child_idx.data()[e] >= n)
            throw std::invalid_argument("child_idx has an entry outside [0, len(noisy))");
    check_values("noisy", noisy);
    check_values("lo", lo);
    check_values("hi", hi);
    TreeDpProblem p{n, child_ptr.data(), child_idx.data(), noisy.data(), weight.data(),
                    lo.data(), hi.data(), root};
    TreeDpResult r;
    {
        py::gil_scoped_release release;
        r = tree_dp(p, widen, max_table_size);
    }
    py::array_t<std::int64_t> values(static_cast<py::ssize_t>(r.values.size()), r.values.data());
    py::object cost = r.cost_overflow ? py::object(py::none()) : py::object(py::int_(r.cost));
    return py::make_tuple(static_cast<std::int64_t>(r.status), r.bad_node, cost, values,
                          r.n_widened);
}

py::tuple chain_dp_py(const py::object& noisy_in, const py::object& lo_in,
                      const py::object& hi_in, const py::object& equal_next_in,
                      std::int64_t max_table_size, std::int64_t max_cells) {
    const I64Array noisy = integer_array("noisy", noisy_in);
    const I64Array lo = integer_array("lo", lo_in);
    const I64Array hi = integer_array("hi", hi_in);
    const U8Array equal_next = flag_array("equal_next", equal_next_in);
    check_1d("noisy", noisy, -1);
    const py::ssize_t n = noisy.size();
    if (n == 0) throw std::invalid_argument("the chain must have at least one node");
    check_1d("lo", lo, n);
    check_1d("hi", hi, n);
    check_1d("equal_next", equal_next, n - 1);
    check_limit("max_table_size", max_table_size);
    check_limit("max_cells", max_cells);
    check_values("noisy", noisy);
    check_values("lo", lo);
    check_values("hi", hi);
    // The DP visits every value of every window once: bound the work before starting it.
    std::int64_t cells = 0;
    for (py::ssize_t i = 0; i < n; ++i) {
        cells += width(lo.data()[i], hi.data()[i]);
        if (cells > max_cells)
            throw std::length_error("chain_dp: the windows hold more than max_cells = " +
                                    std::to_string(max_cells) + " values");
    }
    ChainDpResult r;
    {
        py::gil_scoped_release release;
        r = chain_dp(n, noisy.data(), lo.data(), hi.data(), equal_next.data(), max_table_size);
    }
    py::array_t<std::int64_t> values(static_cast<py::ssize_t>(r.values.size()), r.values.data());
    py::object cost = r.cost_overflow ? py::object(py::none()) : py::object(py::int_(r.cost));
    return py::make_tuple(static_cast<std::int64_t>(r.status), r.bad_node, cost, values);
}

// ------------------------------------------------------------------ census forests

using I64Matrix = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;

// A CensusForest over numpy arrays, validated (shapes here, values in validate_forest).
using U8Matrix = py::array_t<std::uint8_t, py::array::c_style | py::array::forcecast>;

// Noisy counts for a CensusForest: a C-contiguous int32 array is read in place (half the bytes
// of int64 for the largest array of a subtree); anything else is converted to int64. `keep`
// holds the array the forest points into.
void set_noisy(CensusForest& f, const py::object& noisy, py::array& keep) {
    using I32Matrix = py::array_t<std::int32_t, py::array::c_style>;
    if (I32Matrix::check_(noisy)) {
        const auto narrow = noisy.cast<I32Matrix>();
        f.noisy = nullptr, f.noisy32 = narrow.data();
        keep = narrow;
    } else {
        const auto wide = noisy.cast<I64Matrix>();
        f.noisy = wide.data(), f.noisy32 = nullptr;
        keep = wide;
    }
    if (keep.ndim() != 2) throw std::invalid_argument("noisy must have shape (R, N)");
    f.n_regions = keep.shape(0), f.n_sizes = keep.shape(1);
    if (f.n_regions == 0 || f.n_sizes == 0)
        throw std::invalid_argument("noisy must have at least one region and size");
}

CensusForest make_forest(const I64Array& child_ptr, const I64Array& child_idx,
                         const py::object& noisy, py::array& noisy_keep, const py::object& delta,
                         std::int64_t delta0, std::int64_t G, std::int64_t max_table_size,
                         I64Matrix& delta_keep, const py::object& shift = py::none(),
                         U8Matrix* shift_keep = nullptr) {
    CensusForest f;
    set_noisy(f, noisy, noisy_keep);
    const py::ssize_t R = f.n_regions, N = f.n_sizes;
    check_1d("child_ptr", child_ptr, R + 1);
    check_1d("child_idx", child_idx, R - 1);
    check_limit("max_table_size", max_table_size);
    f.child_ptr = child_ptr.data(), f.child_idx = child_idx.data();
    f.G = G, f.delta0 = delta0, f.max_table_size = max_table_size;
    if (!delta.is_none()) {
        delta_keep = delta.cast<I64Matrix>();
        const bool per_node = delta_keep.ndim() == 2 && delta_keep.shape(0) == R && delta_keep.shape(1) == N;
        const bool per_region = delta_keep.ndim() == 1 && delta_keep.shape(0) == R;
        if (!per_node && !per_region)
            throw std::invalid_argument("delta must have shape (R,) or (R, N)");
        f.delta = delta_keep.data(), f.delta_per_node = per_node;
    }
    if (!shift.is_none()) {
        if (shift_keep == nullptr) throw std::invalid_argument("shift is not accepted here");
        *shift_keep = shift.cast<U8Matrix>();
        if (shift_keep->ndim() != 2 || shift_keep->shape(0) != R || shift_keep->shape(1) != N)
            throw std::invalid_argument("shift must have shape (R, N)");
        f.shift = shift_keep->data();
    }
    validate_forest(f);
    return f;
}

py::tuple census_dp_py(const I64Array& child_ptr, const I64Array& child_idx, const py::object& noisy,
                       const py::object& delta, std::int64_t delta0, std::int64_t G,
                       std::int64_t max_table_size) {
    py::array noisy_keep;
    I64Matrix keep;
    const CensusForest f = make_forest(child_ptr, child_idx, noisy, noisy_keep, delta, delta0, G,
                                       max_table_size, keep);
    py::array_t<std::int64_t> values({f.n_regions, f.n_sizes});
    py::array_t<std::uint8_t> touch({f.n_regions, f.n_sizes});
    std::int64_t* v = values.mutable_data();
    std::uint8_t* t = touch.mutable_data();
    CensusDpResult r;
    {
        py::gil_scoped_release release;
        r = census_forest_dp(f, v, t);
    }
    return py::make_tuple(static_cast<std::int64_t>(r.status), values, touch, r.n_widened,
                          r.n_touching);
}

// The N root tables of a subtree as (lo, n, concatenated slopes).
py::tuple pack_tables(const std::vector<CplTable>& tables) {
    const auto N = static_cast<py::ssize_t>(tables.size());
    py::array_t<std::int64_t> lo(N), n(N);
    std::int64_t total = 0;
    for (const auto& t : tables) total += std::max<std::int64_t>(t.n - 1, 0);
    py::array_t<std::int64_t> slopes(total);
    std::int64_t* out = slopes.mutable_data();
    for (py::ssize_t s = 0; s < N; ++s) {
        const CplTable& t = tables[static_cast<std::size_t>(s)];
        lo.mutable_data()[s] = t.lo, n.mutable_data()[s] = t.n;
        for (std::int64_t v = t.lo; v < t.hi(); ++v) *out++ = t.up(v);
    }
    return py::make_tuple(lo, n, slopes);
}

py::tuple census_up_py(const I64Array& child_ptr, const I64Array& child_idx, const py::object& noisy,
                       const py::object& delta, std::int64_t delta0, std::int64_t G,
                       std::int64_t max_table_size, const py::object& shift) {
    py::array noisy_keep;
    I64Matrix keep;
    U8Matrix shift_keep;
    const CensusForest f = make_forest(child_ptr, child_idx, noisy, noisy_keep, delta, delta0, G,
                                       max_table_size, keep, shift, &shift_keep);
    CensusSubtree sub;
    {
        py::gil_scoped_release release;
        sub = census_up(f, 0);
    }
    py::tuple packed = pack_tables(sub.tables);
    return py::make_tuple(packed[0], packed[1], packed[2], sub.n_widened);
}

// k subtrees' root tables packed as census_up returns them (lo (k, N), n (k, N), concatenated
// slopes), checked (sizes, convexity, magnitudes) and unpacked.
std::vector<std::vector<CplTable>> unpack_tables(const I64Matrix& lo, const I64Matrix& n,
                                                 const I64Array& slopes, py::ssize_t N,
                                                 std::int64_t max_table_size) {
    if (lo.ndim() != 2 || lo.shape(1) != N || n.ndim() != 2 || n.shape(0) != lo.shape(0) || n.shape(1) != N)
        throw std::invalid_argument("lo and n must have shape (k, N)");
    const py::ssize_t k = lo.shape(0);
    std::vector<std::vector<CplTable>> out(static_cast<std::size_t>(k));
    std::int64_t offset = 0;
    for (py::ssize_t j = 0; j < k; ++j) {
        for (py::ssize_t s = 0; s < N; ++s) {
            CplTable t;
            t.lo = lo.data()[j * N + s], t.n = n.data()[j * N + s];
            detail::check_magnitude(t.lo, "lo");
            if (t.n < 1 || t.n > max_table_size || offset + t.n - 1 > slopes.size())
                throw std::invalid_argument("n and slopes do not describe the tables");
            detail::check_magnitude(t.hi(), "lo + n - 1");
            t.slope.assign(slopes.data() + offset, slopes.data() + offset + t.n - 1);
            offset += t.n - 1;
            for (std::int64_t x : t.slope) t.slope_bound = std::max(t.slope_bound, x < 0 ? -x : x);
            if (!t.is_convex() || t.slope_bound > max_abs_slope)
                throw std::invalid_argument("a table is not convex or its slopes exceed 2^62");
            out[static_cast<std::size_t>(j)].push_back(std::move(t));
        }
    }
    if (offset != slopes.size()) throw std::invalid_argument("slopes has entries left over");
    return out;
}

py::tuple census_root_py(const I64Array& noisy_root, const I64Array& delta_root, std::int64_t G,
                         const I64Matrix& lo, const I64Matrix& n, const I64Array& slopes,
                         std::int64_t max_table_size) {
    check_1d("noisy_root", noisy_root, -1);
    const py::ssize_t N = noisy_root.size();
    check_1d("delta_root", delta_root, N);
    if (lo.ndim() != 2 || lo.shape(1) != N || n.ndim() != 2 || n.shape(0) != lo.shape(0) || n.shape(1) != N)
        throw std::invalid_argument("lo and n must have shape (k, N)");
    check_limit("max_table_size", max_table_size);
    const py::ssize_t k = lo.shape(0);
    // A forest of region 0 and its k children (only region 0's noisy value and window are read).
    std::vector<std::int64_t> ptr(static_cast<std::size_t>(k + 2), k), idx(static_cast<std::size_t>(k));
    ptr[0] = 0;
    for (py::ssize_t j = 0; j < k; ++j) idx[static_cast<std::size_t>(j)] = j + 1;
    std::vector<std::int64_t> nz(static_cast<std::size_t>((k + 1) * N), 0), dl(nz);
    for (py::ssize_t s = 0; s < N; ++s) nz[s] = noisy_root.data()[s], dl[s] = delta_root.data()[s];
    CensusForest f;
    f.n_regions = k + 1, f.n_sizes = N, f.child_ptr = ptr.data(), f.child_idx = idx.data();
    f.noisy = nz.data(), f.delta = dl.data(), f.delta_per_node = true, f.G = G;
    f.max_table_size = max_table_size;
    validate_forest(f);
    std::vector<std::vector<CplTable>> tables = unpack_tables(lo, n, slopes, N, max_table_size);
    std::vector<CensusSubtree> subs(static_cast<std::size_t>(k));
    for (py::ssize_t j = 0; j < k; ++j) {
        subs[static_cast<std::size_t>(j)].root = j + 1;
        subs[static_cast<std::size_t>(j)].tables = std::move(tables[static_cast<std::size_t>(j)]);
    }
    std::vector<std::int64_t> values(static_cast<std::size_t>((k + 1) * N), 0);
    std::int64_t widened = 0;
    DpStatus status;
    {
        py::gil_scoped_release release;
        status = census_root_step(f, subs, values.data(), widened);
    }
    py::array_t<std::int64_t> root(N), kids({k, N});
    py::array_t<std::uint8_t> touch(N);
    for (py::ssize_t s = 0; s < N; ++s) {
        root.mutable_data()[s] = values[static_cast<std::size_t>(s)];
        std::int64_t wlo, whi;
        f.window(0, s, wlo, whi);
        const std::int64_t v = values[static_cast<std::size_t>(s)];
        touch.mutable_data()[s] = ((v <= wlo && wlo > 0) || (v >= whi && whi < G)) ? 1 : 0;
    }
    std::copy(values.begin() + N, values.end(), kids.mutable_data());
    return py::make_tuple(static_cast<std::int64_t>(status), root, kids, touch, widened);
}

py::tuple census_down_py(const I64Array& child_ptr, const I64Array& child_idx,
                         const py::object& noisy, const py::object& delta, std::int64_t delta0,
                         std::int64_t G, const I64Array& root_values, std::int64_t max_table_size,
                         const py::object& shift) {
    py::array noisy_keep;
    I64Matrix keep;
    U8Matrix shift_keep;
    const CensusForest f = make_forest(child_ptr, child_idx, noisy, noisy_keep, delta, delta0, G,
                                       max_table_size, keep, shift, &shift_keep);
    check_1d("root_values", root_values, f.n_sizes);
    py::array_t<std::int64_t> values({f.n_regions, f.n_sizes});
    py::array_t<std::uint8_t> touch({f.n_regions, f.n_sizes});
    std::int64_t* v = values.mutable_data();
    std::uint8_t* t = touch.mutable_data();
    std::int64_t n_touch = 0;
    {
        py::gil_scoped_release release;
        CensusSubtree sub = census_up(f, 0);
        // The root values must lie in the root tables' domains (else the split is undefined).
        for (std::int64_t s = 0; s < f.n_sizes; ++s) {
            const std::int64_t x = root_values.data()[s];
            if (!sub.tables[static_cast<std::size_t>(s)].contains(x))
                throw std::invalid_argument("root_values[" + std::to_string(s) +
                                            "] lies outside the subtree's table");
            v[s] = x;
        }
        n_touch = census_down(f, sub, v, t);
    }
    return py::make_tuple(values, touch, n_touch);
}

// A census DP kept across widening rounds: the region tree, noisy values, per-region base
// half-widths and a per-node shift array (doubled windows) that Python updates in place between
// rounds. Each top-level subtree keeps its bottom-up result (root tables and merge traces), so a
// round re-solves only the subtrees whose windows changed (up) and those whose root values
// moved (down).
class CensusSession {
  public:
    CensusSession(I64Array child_ptr, I64Array child_idx, const py::object& noisy, I64Matrix delta,
                  py::array_t<std::uint8_t> shift, std::int64_t G, std::int64_t max_table_size)
        : ptr_(std::move(child_ptr)), idx_(std::move(child_idx)), delta_(std::move(delta)),
          shift_(std::move(shift)) {
        set_noisy(f_, noisy, noisy_);  // int32 counts are read in place
        const py::ssize_t R = f_.n_regions, N = f_.n_sizes;
        check_1d("child_ptr", ptr_, R + 1);
        check_1d("child_idx", idx_, R - 1);
        const bool per_node = delta_.ndim() == 2 && delta_.shape(0) == R && delta_.shape(1) == N;
        if (!per_node && !(delta_.ndim() == 1 && delta_.shape(0) == R))
            throw std::invalid_argument("delta must have shape (R,) or (R, N)");
        check_limit("max_table_size", max_table_size);
        if (shift_.ndim() != 2 || shift_.shape(0) != R || shift_.shape(1) != N ||
            !(shift_.flags() & py::array::c_style) || !shift_.writeable())
            throw std::invalid_argument("shift must be a writable C-contiguous uint8 (R, N) array");
        f_.child_ptr = ptr_.data(), f_.child_idx = idx_.data();
        f_.delta = delta_.data(), f_.delta_per_node = per_node;
        f_.shift = shift_.data(), f_.G = G;
        f_.max_table_size = max_table_size;
        validate_forest(f_);
        for (std::int64_t i = f_.child_ptr[0]; i < f_.child_ptr[1]; ++i) top_.push_back(f_.child_idx[i]);
        subs_.resize(top_.size());
    }
    // Tables for the given regions (leaves of this forest), standing for their subtrees solved
    // elsewhere: lo and n (m, N) and concatenated slopes, as census_up returns them. A later
    // up() of the subtrees above them merges these tables.
    void give(const std::vector<std::int64_t>& regions, const I64Matrix& lo, const I64Matrix& n,
              const I64Array& slopes) {
        if (lo.ndim() != 2 || lo.shape(0) != static_cast<py::ssize_t>(regions.size()))
            throw std::invalid_argument("lo must have one row per given region");
        for (std::int64_t r : regions)
            if (r <= 0 || r >= f_.n_regions || !f_.is_leaf(r))
                throw std::invalid_argument("given region " + std::to_string(r) +
                                            " is not a leaf region other than 0");
        std::vector<std::vector<CplTable>> tables =
            unpack_tables(lo, n, slopes, f_.n_sizes, f_.max_table_size);
        if (given_.empty()) given_.resize(static_cast<std::size_t>(f_.n_regions));
        for (std::size_t j = 0; j < regions.size(); ++j)
            given_[static_cast<std::size_t>(regions[j])] = std::move(tables[j]);
        f_.given = given_.data();
    }
    // give() from the tables as packed_steps() packs them: heads (the first slope of each table
    // with slopes) and the steps between neighbouring slopes (uint8 or uint16; a table's first
    // step is a placeholder), decoded here without an int64 slopes array in between.
    void give_steps(const std::vector<std::int64_t>& regions, const I64Matrix& lo,
                    const I64Matrix& n, const I64Array& heads, const py::array& steps) {
        if (py::isinstance<py::array_t<std::uint8_t>>(steps) && steps.dtype().itemsize() == 1)
            return give_steps_as<std::uint8_t>(regions, lo, n, heads, steps.cast<py::array_t<std::uint8_t>>());
        if (py::isinstance<py::array_t<std::uint16_t>>(steps) && steps.dtype().itemsize() == 2)
            return give_steps_as<std::uint16_t>(regions, lo, n, heads, steps.cast<py::array_t<std::uint16_t>>());
        throw std::invalid_argument("steps must be a uint8 or uint16 array");
    }
    void up(const std::vector<std::int64_t>& which) {
        check(which);
        py::gil_scoped_release release;
        for (std::int64_t i : which) subs_[static_cast<std::size_t>(i)] = census_up(f_, top_[static_cast<std::size_t>(i)]);
    }
    // Where down() and root() write: (R, N) values and touch flags. A caller that runs many
    // sessions one after another (a worker's batches) lends them the same arrays, so that only
    // the first writes into memory new to the process; only the rows of the subtrees a down()
    // covers are written, the rest keep what was there.
    void use_buffers(py::array_t<std::int64_t> values, py::array_t<std::uint8_t> touch) {
        const py::ssize_t R = f_.n_regions, N = f_.n_sizes;
        for (const py::array* a : {static_cast<const py::array*>(&values), static_cast<const py::array*>(&touch)})
            if (a->ndim() != 2 || a->shape(0) != R || a->shape(1) != N ||
                !(a->flags() & py::array::c_style) || !a->writeable())
                throw std::invalid_argument("values and touch must be writable C-contiguous (R, N) arrays");
        values_ = std::move(values), touch_ = std::move(touch), have_buffers_ = true;
    }
    std::int64_t root() {
        own_buffers();
        std::int64_t* v = values_.mutable_data();
        std::uint8_t* t = touch_.mutable_data();
        py::gil_scoped_release release;
        root_widened_ = 0;
        const DpStatus status = census_root_step(f_, subs_, v, root_widened_);
        if (status != DpStatus::optimal) return static_cast<std::int64_t>(status);
        for (std::int64_t s = 0; s < f_.n_sizes; ++s) {
            std::int64_t lo, hi;
            f_.window(0, s, lo, hi);
            t[s] = ((v[s] <= lo && lo > 0) || (v[s] >= hi && hi < f_.G)) ? 1 : 0;
        }
        return 0;
    }
    std::int64_t down(const std::vector<std::int64_t>& which) {
        check(which);
        own_buffers();
        std::int64_t* v = values_.mutable_data();
        std::uint8_t* t = touch_.mutable_data();
        py::gil_scoped_release release;
        std::int64_t n = 0;
        for (std::int64_t i : which) n += census_down(f_, subs_[static_cast<std::size_t>(i)], v, t);
        return n;
    }
    // The root tables of the subtrees `which` from their last up, packed in one go: lo and n
    // (m, N), the slopes of all tables concatenated (subtree by subtree, size by size), and
    // each subtree's widened count.
    py::tuple packed_tables(const std::vector<std::int64_t>& which) const {
        check(which);
        const auto m = static_cast<py::ssize_t>(which.size());
        const py::ssize_t N = f_.n_sizes;
        std::int64_t total = 0;
        for (std::int64_t i : which) {
            const CensusSubtree& sub = subs_[static_cast<std::size_t>(i)];
            if (sub.tables.empty()) throw std::invalid_argument("subtree " + std::to_string(i) + " has no up yet");
            for (const auto& t : sub.tables) total += std::max<std::int64_t>(t.n - 1, 0);
        }
        py::array_t<std::int64_t> lo({m, N}), n({m, N}), widened(m), slopes(total);
        table_extents(which, lo, n, widened);
        std::int64_t* out = slopes.mutable_data();
        for (std::int64_t i : which)
            for (const auto& t : subs_[static_cast<std::size_t>(i)].tables)
                for (std::int64_t v = t.lo; v < t.hi(); ++v) *out++ = t.up(v);
        return py::make_tuple(lo, n, slopes, widened);
    }
    // The same tables for the trip back to the driver: lo and n (m, N), widened (m,), the first
    // slope of each table with slopes (heads), and the steps between a table's neighbouring
    // slopes (never negative: the tables are convex) as uint8 or uint16, the smallest that holds
    // them all; steps is None when one does not fit in 16 bits (then use packed_tables).
    py::tuple packed_steps(const std::vector<std::int64_t>& which) const {
        check(which);
        const auto m = static_cast<py::ssize_t>(which.size());
        const py::ssize_t N = f_.n_sizes;
        std::int64_t total = 0, n_heads = 0, largest = 0;
        for (std::int64_t i : which) {
            const CensusSubtree& sub = subs_[static_cast<std::size_t>(i)];
            if (sub.tables.empty()) throw std::invalid_argument("subtree " + std::to_string(i) + " has no up yet");
            for (const auto& t : sub.tables) {
                if (t.n < 2) continue;
                total += t.n - 1, ++n_heads;
                for (std::int64_t v = t.lo + 1; v < t.hi(); ++v) {
                    const std::int64_t a = t.up(v - 1), b = t.up(v);
                    // the difference as unsigned: exact for b >= a even across 2^63
                    const std::uint64_t d = static_cast<std::uint64_t>(b) - static_cast<std::uint64_t>(a);
                    largest = (b < a || d >= 65536) ? std::int64_t{65536}
                                                    : std::max(largest, static_cast<std::int64_t>(d));
                }
            }
        }
        py::array_t<std::int64_t> lo({m, N}), n({m, N}), widened(m), heads(n_heads);
        table_extents(which, lo, n, widened);
        std::int64_t* head = heads.mutable_data();
        for (std::int64_t i : which)
            for (const auto& t : subs_[static_cast<std::size_t>(i)].tables)
                if (t.n >= 2) *head++ = t.up(t.lo);
        if (largest >= 65536) return py::make_tuple(lo, n, widened, heads, py::none());
        auto write = [&](auto* out) {
            for (std::int64_t i : which)
                for (const auto& t : subs_[static_cast<std::size_t>(i)].tables) {
                    if (t.n < 2) continue;
                    *out++ = 0;  // the head travels apart
                    for (std::int64_t v = t.lo + 1; v < t.hi(); ++v)
                        *out++ = static_cast<std::remove_pointer_t<decltype(out)>>(t.up(v) - t.up(v - 1));
                }
        };
        if (largest < 256) {
            py::array_t<std::uint8_t> steps(total);
            write(steps.mutable_data());
            return py::make_tuple(lo, n, widened, heads, steps);
        }
        py::array_t<std::uint16_t> steps(total);
        write(steps.mutable_data());
        return py::make_tuple(lo, n, widened, heads, steps);
    }
    // Subtree i's root tables from its last up, as census_up returns them.
    py::tuple tables(std::int64_t i) const {
        check({i});
        const CensusSubtree& sub = subs_[static_cast<std::size_t>(i)];
        if (sub.tables.empty()) throw std::invalid_argument("subtree " + std::to_string(i) + " has no up yet");
        py::tuple packed = pack_tables(sub.tables);
        return py::make_tuple(packed[0], packed[1], packed[2], sub.n_widened);
    }
    std::int64_t widened() const {
        std::int64_t w = root_widened_;
        for (const auto& sub : subs_) w += sub.n_widened;
        return w;
    }
    py::array_t<std::int64_t> values() {
        own_buffers();
        return values_;
    }
    py::array_t<std::uint8_t> touch() {
        own_buffers();
        return touch_;
    }
    std::vector<std::int64_t> top() const { return top_; }

  private:
    template <class Step>
    void give_steps_as(const std::vector<std::int64_t>& regions, const I64Matrix& lo,
                       const I64Matrix& n, const I64Array& heads,
                       const py::array_t<Step>& steps) {
        const py::ssize_t N = f_.n_sizes, m = static_cast<py::ssize_t>(regions.size());
        if (lo.ndim() != 2 || lo.shape(0) != m || lo.shape(1) != N || n.ndim() != 2 ||
            n.shape(0) != m || n.shape(1) != N || heads.ndim() != 1 || steps.ndim() != 1)
            throw std::invalid_argument("lo and n must have shape (m, N), heads and steps one axis");
        for (std::int64_t r : regions)
            if (r <= 0 || r >= f_.n_regions || !f_.is_leaf(r))
                throw std::invalid_argument("given region " + std::to_string(r) +
                                            " is not a leaf region other than 0");
        std::vector<std::vector<CplTable>> tables(regions.size());
        std::int64_t pos = 0, h = 0;
        const Step* step = steps.data();
        for (py::ssize_t j = 0; j < m; ++j) {
            for (py::ssize_t s = 0; s < N; ++s) {
                CplTable t;
                t.lo = lo.data()[j * N + s], t.n = n.data()[j * N + s];
                detail::check_magnitude(t.lo, "lo");
                if (t.n < 1 || t.n > f_.max_table_size || pos + t.n - 1 > steps.size() ||
                    (t.n > 1 && h >= heads.size()))
                    throw std::invalid_argument("n, heads and steps do not describe the tables");
                detail::check_magnitude(t.hi(), "lo + n - 1");
                if (t.n > 1) {
                    t.slope.resize(static_cast<std::size_t>(t.n - 1));
                    std::int64_t x = heads.data()[h++];
                    if (x > max_abs_slope || x < -max_abs_slope)
                        throw std::invalid_argument("a table's slopes exceed 2^62");
                    t.slope[0] = x;
                    for (std::int64_t i = 1; i < t.n - 1; ++i) {
                        x += static_cast<std::int64_t>(step[pos + i]);  // never decreasing: convex
                        if (x > max_abs_slope) throw std::invalid_argument("a table's slopes exceed 2^62");
                        t.slope[static_cast<std::size_t>(i)] = x;
                    }
                    t.slope_bound = std::max(t.slope.front() < 0 ? -t.slope.front() : t.slope.front(),
                                             t.slope.back() < 0 ? -t.slope.back() : t.slope.back());
                    pos += t.n - 1;
                }
                tables[static_cast<std::size_t>(j)].push_back(std::move(t));
            }
        }
        if (pos != steps.size() || h != heads.size())
            throw std::invalid_argument("heads or steps have entries left over");
        if (given_.empty()) given_.resize(static_cast<std::size_t>(f_.n_regions));
        for (std::size_t j = 0; j < regions.size(); ++j)
            given_[static_cast<std::size_t>(regions[j])] = std::move(tables[j]);
        f_.given = given_.data();
    }
    // Each listed subtree's root tables' first value and length (m, N) and its widenings (m,).
    void table_extents(const std::vector<std::int64_t>& which, py::array_t<std::int64_t>& lo,
                       py::array_t<std::int64_t>& n, py::array_t<std::int64_t>& widened) const {
        const std::size_t N = static_cast<std::size_t>(f_.n_sizes);
        for (std::size_t j = 0; j < which.size(); ++j) {
            const CensusSubtree& sub = subs_[static_cast<std::size_t>(which[j])];
            widened.mutable_data()[j] = sub.n_widened;
            for (std::size_t s = 0; s < N; ++s) {
                const CplTable& t = sub.tables[s];
                lo.mutable_data()[j * N + s] = t.lo, n.mutable_data()[j * N + s] = t.n;
            }
        }
    }
    // Buffers of its own (touch zeroed) unless some were lent.
    void own_buffers() {
        if (have_buffers_) return;
        const py::ssize_t R = f_.n_regions, N = f_.n_sizes;
        values_ = py::array_t<std::int64_t>({R, N});
        touch_ = py::array_t<std::uint8_t>({R, N});
        std::fill(touch_.mutable_data(), touch_.mutable_data() + R * N, 0);
        have_buffers_ = true;
    }
    void check(const std::vector<std::int64_t>& which) const {
        for (std::int64_t i : which)
            if (i < 0 || i >= static_cast<std::int64_t>(top_.size()))
                throw std::invalid_argument("subtree index " + std::to_string(i) + " out of range");
    }
    I64Array ptr_, idx_;
    py::array noisy_;  // int64 or int32 (f_.noisy or f_.noisy32 points into it)
    I64Matrix delta_;
    py::array_t<std::uint8_t> shift_;
    CensusForest f_;
    std::vector<std::int64_t> top_;
    std::vector<CensusSubtree> subs_;
    std::vector<std::vector<CplTable>> given_;
    std::int64_t root_widened_ = 0;
    py::array_t<std::int64_t> values_;
    py::array_t<std::uint8_t> touch_;
    bool have_buffers_ = false;  // values_ and touch_ set (own or lent)
};

// Seconds per call of (heap TableMerge, sorted TableMerge, plain std::sort of the same up+down
// slope lists) over the whole domain: the "within 3x of std::sort" target.
py::tuple time_table_merge_py(const I64Array& los, const std::vector<I64Array>& costs, int repeats) {
    if (repeats < 1) throw std::invalid_argument("repeats must be >= 1");
    auto tables = to_tables(los, costs);
    std::vector<const CplTable*> ptrs;
    for (auto& t : tables) ptrs.push_back(&t);
    using clock = std::chrono::steady_clock;
    double t_heap = 0, t_sorted = 0, t_sort = 0;
    {
        py::gil_scoped_release release;
        const std::int64_t big = std::int64_t{1} << 60;
        std::int64_t sink = 0;
        for (int r = 0; r < repeats; ++r) {
            auto a = clock::now();
            sink += table_merge(ptrs.data(), ptrs.size(), -big, big).size();
            auto b = clock::now();
            sink += table_merge_sorted(ptrs.data(), ptrs.size(), -big, big).size();
            auto c = clock::now();
            std::vector<std::int64_t> slopes;
            for (auto& t : tables) slopes.insert(slopes.end(), t.slope.begin(), t.slope.end());
            std::sort(slopes.begin(), slopes.end());
            sink += static_cast<std::int64_t>(slopes.size());
            auto d = clock::now();
            t_heap += std::chrono::duration<double>(b - a).count();
            t_sorted += std::chrono::duration<double>(c - b).count();
            t_sort += std::chrono::duration<double>(d - c).count();
        }
        if (sink < 0) throw std::runtime_error("unreachable");
    }
    return py::make_tuple(t_heap / repeats, t_sorted / repeats, t_sort / repeats);
}

}  // namespace

void register_census(py::module_& m) {
    m.def("table_merge", &table_merge_py, py::arg("los"), py::arg("tables"), py::arg("want_lo"),
          py::arg("want_hi"), py::arg("method") = "heap",
          "TableMerge (spec 003 Algorithm 1) of convex int64 tables; returns "
          "(lo, phi, v0, V0, up, down).");
    m.def("tree_dp", &tree_dp_py, py::arg("child_ptr"), py::arg("child_idx"), py::arg("noisy"),
          py::arg("weight"), py::arg("lo"), py::arg("hi"), py::arg("root"), py::arg("widen") = true,
          py::arg("max_table_size") = default_max_table_size,
          "Exact tree DP; returns (status, bad_node, cost, values, n_widened); status 0 optimal, "
          "1 infeasible; cost is None when it does not fit in int64. Raises ValueError on bad "
          "input or a table above max_table_size values, OverflowError when slopes would "
          "leave int64.");
    m.def("chain_dp", &chain_dp_py, py::arg("noisy"), py::arg("lo"), py::arg("hi"),
          py::arg("equal_next"), py::arg("max_table_size") = default_max_table_size,
          py::arg("max_cells") = std::int64_t{1} << 34,
          "Exact chain DP; returns (status, bad_node, cost, values); cost is None when it does "
          "not fit in int64. Raises ValueError on bad input or windows above max_table_size "
          "(one) / max_cells (all) values, OverflowError when slopes would leave int64.");
    m.def("census_dp", &census_dp_py, py::arg("child_ptr"), py::arg("child_idx"), py::arg("noisy"),
          py::arg("delta"), py::arg("delta0"), py::arg("G"),
          py::arg("max_table_size") = default_max_table_size,
          "Census tree DP by regions (breadth-first region tree, noisy (R, N) int64, or int32 "
          "read in place (here and in census_up, census_down, CensusSession), windows of "
          "half-width delta: None (delta0), (R,) or (R, N)); returns (status, values (R, N), "
          "touch (R, N) uint8, n_widened, n_touching).");
    m.def("census_up", &census_up_py, py::arg("child_ptr"), py::arg("child_idx"), py::arg("noisy"),
          py::arg("delta"), py::arg("delta0"), py::arg("G"),
          py::arg("max_table_size") = default_max_table_size, py::arg("shift") = py::none(),
          "Bottom-up over a subtree (its root is region 0); returns its root tables as "
          "(lo (N,), n (N,), concatenated slopes) and n_widened.");
    m.def("census_root", &census_root_py, py::arg("noisy_root"), py::arg("delta_root"),
          py::arg("G"), py::arg("lo"), py::arg("n"), py::arg("slopes"),
          py::arg("max_table_size") = default_max_table_size,
          "Root step from the k top-level subtrees' tables; returns (status, root values (N,), "
          "children values (k, N), root touch (N,), n_widened).");
    m.def("census_down", &census_down_py, py::arg("child_ptr"), py::arg("child_idx"),
          py::arg("noisy"), py::arg("delta"), py::arg("delta0"), py::arg("G"),
          py::arg("root_values"), py::arg("max_table_size") = default_max_table_size,
          py::arg("shift") = py::none(),
          "Top-down over a subtree given its root values (recomputes its bottom-up pass); "
          "returns (values (R, N), touch (R, N) uint8, n_touching).");
    py::class_<CensusSession>(m, "CensusSession",
                              "Census DP kept across widening rounds (see privopt.census.forest).")
        .def(py::init<I64Array, I64Array, const py::object&, I64Matrix, py::array_t<std::uint8_t>,
                      std::int64_t, std::int64_t>(),
             py::arg("child_ptr"), py::arg("child_idx"), py::arg("noisy"), py::arg("delta"),
             py::arg("shift"), py::arg("G"), py::arg("max_table_size") = default_max_table_size)
        .def("give", &CensusSession::give, py::arg("regions"), py::arg("lo"), py::arg("n"),
             py::arg("slopes"),
             "Tables (lo (m, N), n (m, N), concatenated slopes, as tables() returns them) for "
             "leaf regions that stand for subtrees solved elsewhere; up() merges them.")
        .def("packed_tables", &CensusSession::packed_tables, py::arg("which"),
             "The root tables of the subtrees `which` in one go: (lo (m, N), n (m, N), "
             "concatenated slopes, widened (m,)), as give() takes them.")
        .def("packed_steps", &CensusSession::packed_steps, py::arg("which"),
             "The root tables of the subtrees `which` as slope steps: (lo (m, N), n (m, N), "
             "widened (m,), heads, steps uint8/uint16 or None when a step exceeds 16 bits).")
        .def("give_steps", &CensusSession::give_steps, py::arg("regions"), py::arg("lo"),
             py::arg("n"), py::arg("heads"), py::arg("steps"),
             "give() from tables packed as packed_steps() returns them (heads, uint8/uint16 "
             "steps).")
        .def("use_buffers", &CensusSession::use_buffers, py::arg("values"), py::arg("touch"),
             "Write values (R, N) int64 and touch flags (R, N) uint8 into these arrays from now "
             "on (a down() writes only its subtrees' rows); by default the session has its own.")
        .def("up", &CensusSession::up, py::arg("which"))
        .def("root", &CensusSession::root)
        .def("down", &CensusSession::down, py::arg("which"))
        .def("tables", &CensusSession::tables, py::arg("i"),
             "Subtree i's root tables from its last up: (lo (N,), n (N,), concatenated slopes, "
             "n_widened), as census_up returns them.")
        .def_property_readonly("widened", &CensusSession::widened)
        .def_property_readonly("values", &CensusSession::values)
        .def_property_readonly("touch", &CensusSession::touch)
        .def_property_readonly("top", &CensusSession::top);
    m.def("time_table_merge", &time_table_merge_py, py::arg("los"), py::arg("tables"),
          py::arg("repeats") = 5,
          "Seconds per call: (heap TableMerge, sorted TableMerge, std::sort of the slopes).");
}

}  // namespace privopt::bindings
