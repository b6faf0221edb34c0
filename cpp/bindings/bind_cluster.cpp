// Bindings of the DPM split-scoring kernel (privopt/dpm_split.hpp) as privopt._core.cluster.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "families.hpp"
#include "privopt/dpm_split.hpp"

namespace py = pybind11;

namespace privopt::bindings {
namespace {

using I64Array = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>;
using F64Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

dpm::WindowMode parse_mode(const std::string& mode) {
    if (mode == "paper") return dpm::WindowMode::paper;
    if (mode == "half_open") return dpm::WindowMode::half_open;
    if (mode == "reference") return dpm::WindowMode::reference;
    throw std::invalid_argument("window must be 'paper', 'half_open' or 'reference', got '" + mode + "'");
}

struct Tree {  // member order = constructor argument order (brace initialisation)
    I64Array feature;
    F64Array threshold;
    I64Array left, right, slot;
    dpm::TreeView view() const {
        const std::int64_t n = feature.size();
        if (threshold.size() != n || left.size() != n || right.size() != n || slot.size() != n)
            throw std::invalid_argument("tree arrays must have the same length");
        return dpm::TreeView{n, feature.data(), threshold.data(), left.data(), right.data(), slot.data()};
    }
};

const double* matrix(const F64Array& X, std::int64_t& n, std::int64_t& d) {
    if (X.ndim() != 2) throw std::invalid_argument("X must be two-dimensional (n, d)");
    n = X.shape(0);
    d = X.shape(1);
    if (d < 1) throw std::invalid_argument("X must have at least one column");
    return X.data();
}

py::tuple level_counts(const F64Array& X, double a, double b, double beta, const std::string& mode,
                       const Tree& tree, std::int64_t n_slots, int n_threads) {
    std::int64_t n = 0, d = 0;
    const double* x = matrix(X, n, d);
    if (n_slots < 0) throw std::invalid_argument("n_slots must be >= 0");
    const dpm::SplitGrid g = dpm::make_grid(a, b, beta, parse_mode(mode));
    const dpm::TreeView tv = tree.view();
    const std::int64_t w = g.n_splits, nc = g.n_cells();
    py::array_t<std::int64_t> size(n_slots);
    py::array_t<std::int64_t> rank({n_slots, d, w}), window({n_slots, d, w}), at_most({n_slots, d, w});
    {
        py::gil_scoped_release release;
        std::vector<std::int64_t> cells(static_cast<std::size_t>(n_slots * d * nc), 0);
        dpm::level_cells(g, x, n, d, tv, n_slots, cells.data(), n_threads);
        std::int64_t* sz = size.mutable_data();
        std::int64_t* r = rank.mutable_data();
        std::int64_t* wi = window.mutable_data();
        std::int64_t* am = at_most.mutable_data();
        for (std::int64_t s = 0; s < n_slots; ++s) {
            const dpm::NodeCounts c = dpm::node_counts(g, cells.data() + s * d * nc, d);
            sz[s] = c.size;
            std::copy(c.rank.begin(), c.rank.end(), r + s * d * w);
            std::copy(c.window.begin(), c.window.end(), wi + s * d * w);
            std::copy(c.at_most.begin(), c.at_most.end(), am + s * d * w);
        }
    }
    return py::make_tuple(size, rank, window, at_most);
}

py::array cell_codes(const F64Array& X, double a, double b, double beta, const std::string& mode,
                     int n_threads) {
    std::int64_t n = 0, d = 0;
    const double* x = matrix(X, n, d);
    const dpm::SplitGrid g = dpm::make_grid(a, b, beta, parse_mode(mode));
    auto fill = [&](auto tag) {
        using Code = decltype(tag);
        py::array_t<Code> out({n, d});
        Code* o = out.mutable_data();
        {
            py::gil_scoped_release release;
            dpm::cell_codes(g, x, n, d, o, n_threads);
        }
        return py::array(std::move(out));
    };
    switch (dpm::code_bytes(g)) {
        case 1: return fill(std::uint8_t{});
        case 2: return fill(std::uint16_t{});
        default: return fill(std::uint32_t{});
    }
}

template <class Code>
void cells_of(const py::array& codes, const dpm::SplitGrid& g, const dpm::TreeView& tv, std::int64_t n_slots,
              std::int64_t* cells, int n_threads) {
    const auto arr = py::array_t<Code, py::array::c_style>::ensure(codes);
    if (!arr) throw std::invalid_argument("codes must be a C-contiguous unsigned integer array");
    const std::int64_t n = arr.shape(0), d = arr.shape(1);
    const Code* c = arr.data();
    py::gil_scoped_release release;
    dpm::level_cells_codes(g, c, n, d, tv, n_slots, cells, n_threads);
}

// The zeroed (n_slots, d, n_cells) counts for a code array (n, d), after checking the shapes.
py::array_t<std::int64_t> zeroed_cells(const py::array& codes, const dpm::SplitGrid& g, std::int64_t n_slots) {
    if (codes.ndim() != 2 || codes.shape(1) < 1) throw std::invalid_argument("codes must be (n, d), d >= 1");
    if (n_slots < 0) throw std::invalid_argument("n_slots must be >= 0");
    const std::int64_t d = codes.shape(1), nc = g.n_cells();
    py::array_t<std::int64_t> cells({n_slots, d, nc});
    std::fill(cells.mutable_data(), cells.mutable_data() + n_slots * d * nc, std::int64_t{0});
    return cells;
}

py::array_t<std::int64_t> level_cells_codes(const py::array& codes, double a, double b, double beta,
                                            const std::string& mode, const Tree& tree, std::int64_t n_slots,
                                            int n_threads) {
    const dpm::SplitGrid g = dpm::make_grid(a, b, beta, parse_mode(mode));
    const dpm::TreeView tv = tree.view();
    py::array_t<std::int64_t> cells = zeroed_cells(codes, g, n_slots);
    std::int64_t* out = cells.mutable_data();
    const auto kind = codes.dtype();
    if (kind.is(py::dtype::of<std::uint8_t>()))
        cells_of<std::uint8_t>(codes, g, tv, n_slots, out, n_threads);
    else if (kind.is(py::dtype::of<std::uint16_t>()))
        cells_of<std::uint16_t>(codes, g, tv, n_slots, out, n_threads);
    else if (kind.is(py::dtype::of<std::uint32_t>()))
        cells_of<std::uint32_t>(codes, g, tv, n_slots, out, n_threads);
    else
        throw std::invalid_argument("codes must be uint8, uint16 or uint32");
    return cells;
}

template <class Code, class NodeId>
void cells_with_nodes(const py::array& codes, py::array& nodes, const dpm::SplitGrid& g, const dpm::TreeView& tv,
                      std::int64_t n_slots, std::int64_t* cells, int n_threads) {
    const auto c = py::array_t<Code, py::array::c_style>::ensure(codes);
    if (!c) throw std::invalid_argument("codes must be a C-contiguous unsigned integer array");
    auto node = py::array_t<NodeId, py::array::c_style>::ensure(nodes);
    if (!node || !node.writeable() || node.ptr() != nodes.ptr())
        throw std::invalid_argument("nodes must be a writeable C-contiguous uint16 or uint32 array");
    const std::int64_t n = c.shape(0), d = c.shape(1);
    if (node.ndim() != 1 || node.shape(0) != n) throw std::invalid_argument("nodes must have shape (n,)");
    const Code* cp = c.data();
    NodeId* np_ = node.mutable_data();
    py::gil_scoped_release release;
    dpm::level_cells_nodes(g, cp, np_, n, d, tv, n_slots, cells, n_threads);
}

template <class Code>
void cells_with_nodes_of(const py::array& codes, py::array& nodes, const dpm::SplitGrid& g,
                         const dpm::TreeView& tv, std::int64_t n_slots, std::int64_t* cells, int n_threads) {
    if (nodes.dtype().is(py::dtype::of<std::uint16_t>()))
        cells_with_nodes<Code, std::uint16_t>(codes, nodes, g, tv, n_slots, cells, n_threads);
    else if (nodes.dtype().is(py::dtype::of<std::uint32_t>()))
        cells_with_nodes<Code, std::uint32_t>(codes, nodes, g, tv, n_slots, cells, n_threads);
    else
        throw std::invalid_argument("nodes must be uint16 or uint32");
}

py::array_t<std::int64_t> level_cells_nodes(const py::array& codes, py::array nodes, double a, double b,
                                            double beta, const std::string& mode, const Tree& tree,
                                            std::int64_t n_slots, int n_threads) {
    const dpm::SplitGrid g = dpm::make_grid(a, b, beta, parse_mode(mode));
    const dpm::TreeView tv = tree.view();
    py::array_t<std::int64_t> cells = zeroed_cells(codes, g, n_slots);
    std::int64_t* out = cells.mutable_data();
    const auto kind = codes.dtype();
    if (kind.is(py::dtype::of<std::uint8_t>()))
        cells_with_nodes_of<std::uint8_t>(codes, nodes, g, tv, n_slots, out, n_threads);
    else if (kind.is(py::dtype::of<std::uint16_t>()))
        cells_with_nodes_of<std::uint16_t>(codes, nodes, g, tv, n_slots, out, n_threads);
    else if (kind.is(py::dtype::of<std::uint32_t>()))
        cells_with_nodes_of<std::uint32_t>(codes, nodes, g, tv, n_slots, out, n_threads);
    else
        throw std::invalid_argument("codes must be uint8, uint16 or uint32");
    return cells;
}

py::tuple counts_from_cells(const I64Array& cells, double a, double b, double beta, const std::string& mode) {
    const dpm::SplitGrid g = dpm::make_grid(a, b, beta, parse_mode(mode));
    const std::int64_t nc = g.n_cells(), w = g.n_splits;
    if (cells.ndim() != 3 || cells.shape(2) != nc)
        throw std::invalid_argument("cells must be (n_slots, d, n_cells) for this grid");
    const std::int64_t n_slots = cells.shape(0), d = cells.shape(1);
    if (d < 1) throw std::invalid_argument("cells need d >= 1");
    py::array_t<std::int64_t> size(n_slots);
    py::array_t<std::int64_t> rank({n_slots, d, w}), window({n_slots, d, w}), at_most({n_slots, d, w});
    const std::int64_t* src = cells.data();
    std::int64_t* sz = size.mutable_data();
    std::int64_t* r = rank.mutable_data();
    std::int64_t* wi = window.mutable_data();
    std::int64_t* am = at_most.mutable_data();
    {
        py::gil_scoped_release release;
        for (std::int64_t s = 0; s < n_slots; ++s) {
            const dpm::NodeCounts c = dpm::node_counts(g, src + s * d * nc, d);
            sz[s] = c.size;
            std::copy(c.rank.begin(), c.rank.end(), r + s * d * w);
            std::copy(c.window.begin(), c.window.end(), wi + s * d * w);
            std::copy(c.at_most.begin(), c.at_most.end(), am + s * d * w);
        }
    }
    return py::make_tuple(size, rank, window, at_most);
}

std::int64_t percentile_interval(const F64Array& sorted, double lo, double hi, double target, double scale,
                                 double u) {
    if (sorted.ndim() != 1) throw std::invalid_argument("sorted must be one-dimensional");
    const double* v = sorted.data();
    const std::int64_t m = sorted.size();
    py::gil_scoped_release release;
    return dpm::percentile_interval(v, m, lo, hi, target, scale, u);
}

py::tuple node_counts_sorted(const F64Array& X, double a, double b, double beta, const std::string& mode) {
    std::int64_t n = 0, d = 0;
    const double* x = matrix(X, n, d);
    const dpm::SplitGrid g = dpm::make_grid(a, b, beta, parse_mode(mode));
    const dpm::NodeCounts c = dpm::node_counts_sorted(g, x, n, d);
    const std::int64_t w = g.n_splits;
    py::array_t<std::int64_t> rank({d, w}), window({d, w}), at_most({d, w});
    std::copy(c.rank.begin(), c.rank.end(), rank.mutable_data());
    std::copy(c.window.begin(), c.window.end(), window.mutable_data());
    std::copy(c.at_most.begin(), c.at_most.end(), at_most.mutable_data());
    return py::make_tuple(rank, window, at_most);
}

py::array_t<double> score_candidates(const I64Array& rank, const I64Array& window, double n_tilde,
                                     double t, double q, double alpha) {
    if (rank.size() != window.size()) throw std::invalid_argument("rank and window must have the same size");
    dpm::NodeCounts c;
    c.rank.assign(rank.data(), rank.data() + rank.size());
    c.window.assign(window.data(), window.data() + window.size());
    const std::vector<double> s = dpm::score_candidates(c, n_tilde, dpm::ScoreParams{t, q, alpha});
    py::array_t<double> out(static_cast<py::ssize_t>(s.size()));
    std::copy(s.begin(), s.end(), out.mutable_data());
    return out;
}

py::array_t<double> centreness(const F64Array& r, double n_tilde, double t, double q) {
    dpm::ScoreParams{t, q, 1.0}.validate();
    py::array_t<double> out(r.size());
    for (py::ssize_t i = 0; i < r.size(); ++i)
        out.mutable_data()[i] = dpm::centreness(r.data()[i], n_tilde, t, q);
    return out;
}

py::array_t<double> em_probabilities(const F64Array& scores, double scale) {
    const std::vector<double> p = dpm::em_probabilities(scores.data(), scores.size(), scale);
    py::array_t<double> out(static_cast<py::ssize_t>(p.size()));
    std::copy(p.begin(), p.end(), out.mutable_data());
    return out;
}

std::int64_t em_choice(const F64Array& scores, double scale, double u) {
    return dpm::em_choice(scores.data(), scores.size(), scale, u);
}

py::array_t<std::int64_t> route_points(const F64Array& X, const Tree& tree) {
    std::int64_t n = 0, d = 0;
    const double* x = matrix(X, n, d);
    const dpm::TreeView tv = tree.view();
    py::array_t<std::int64_t> out(n);
    std::int64_t* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        dpm::route_points(x, n, d, tv, o);
    }
    return out;
}

py::tuple slot_sums(const F64Array& X, double a, double b, const Tree& tree, std::int64_t n_slots,
                    double scale) {
    std::int64_t n = 0, d = 0;
    const double* x = matrix(X, n, d);
    if (n_slots < 0) throw std::invalid_argument("n_slots must be >= 0");
    if (!(scale > 0) || !std::isfinite(scale)) throw std::invalid_argument("scale must be finite and > 0");
    const dpm::TreeView tv = tree.view();
    py::array_t<double> sums({n_slots, d});
    py::array_t<std::int64_t> sizes(n_slots);
    std::fill(sums.mutable_data(), sums.mutable_data() + n_slots * d, 0.0);
    std::fill(sizes.mutable_data(), sizes.mutable_data() + n_slots, std::int64_t{0});
    double* s = sums.mutable_data();
    std::int64_t* z = sizes.mutable_data();
    {
        py::gil_scoped_release release;
        dpm::slot_sums(x, n, d, a, b, tv, n_slots, s, z, scale);
    }
    return py::make_tuple(sums, sizes);
}

py::array_t<std::int64_t> nearest_centres(const F64Array& X, const F64Array& centres, int n_threads) {
    std::int64_t n = 0, d = 0, k = 0, dc = 0;
    const double* x = matrix(X, n, d);
    const double* c = matrix(centres, k, dc);
    if (dc != d) throw std::invalid_argument("centres and X must have the same number of columns");
    py::array_t<std::int64_t> out(n);
    std::int64_t* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        dpm::nearest_centres(x, n, d, c, k, o, n_threads);
    }
    return out;
}

py::array_t<std::int64_t> nearest_centres_from(const F64Array& X, const F64Array& centres, const Tree& tree,
                                               int n_threads) {
    std::int64_t n = 0, d = 0, k = 0, dc = 0;
    const double* x = matrix(X, n, d);
    const double* c = matrix(centres, k, dc);
    if (dc != d) throw std::invalid_argument("centres and X must have the same number of columns");
    const dpm::TreeView tv = tree.view();
    py::array_t<std::int64_t> out(n);
    std::int64_t* o = out.mutable_data();
    {
        py::gil_scoped_release release;
        dpm::nearest_centres_from(x, n, d, c, k, tv, o, n_threads);
    }
    return out;
}

void add_gaps(const F64Array& sorted, py::array_t<double, py::array::c_style> acc) {
    if (sorted.ndim() != 1 || acc.ndim() != 1 || acc.shape(0) + 1 != sorted.shape(0))
        throw std::invalid_argument("need sorted (m,) and acc (m - 1,) with m >= 1");
    if (!acc.writeable()) throw std::invalid_argument("acc must be writeable");
    const double* v = sorted.data();
    double* a = acc.mutable_data();
    const std::int64_t m = sorted.shape(0);
    py::gil_scoped_release release;
    dpm::add_gaps(v, m, a);
}

}  // namespace

void register_cluster(py::module_& m) {
    py::class_<Tree>(m, "Tree", "Split tree arrays (feature, threshold, left, right, slot), node 0 = root.")
        .def(py::init<I64Array, F64Array, I64Array, I64Array, I64Array>(), py::arg("feature"),
             py::arg("threshold"), py::arg("left"), py::arg("right"), py::arg("slot"));
    m.def("num_splits", &dpm::num_splits, py::arg("a"), py::arg("b"), py::arg("beta"),
          "floor((b - a) / beta): split candidates per dimension.");
    m.def("level_counts", &level_counts, py::arg("X"), py::arg("a"), py::arg("b"), py::arg("beta"),
          py::arg("window"), py::arg("tree"), py::arg("n_slots"), py::arg("n_threads") = 1,
          "One pass over X (n, d): per active slot its size (n_slots,), and per dimension and "
          "candidate the left rank, the window count and #{x <= s} (each (n_slots, d, W), int64).");
    m.def("cell_codes", &cell_codes, py::arg("X"), py::arg("a"), py::arg("b"), py::arg("beta"),
          py::arg("window"), py::arg("n_threads") = 1,
          "Grid cell of every clipped coordinate of X (n, d): uint8, uint16 or uint32, the narrowest "
          "type that holds the grid's cells.");
    m.def("level_cells_codes", &level_cells_codes, py::arg("codes"), py::arg("a"), py::arg("b"),
          py::arg("beta"), py::arg("window"), py::arg("tree"), py::arg("n_slots"), py::arg("n_threads") = 1,
          "One pass over cell codes (n, d): the per-slot, per-dimension cell histogram "
          "(n_slots, d, n_cells), int64; additive over row chunks.");
    m.def("level_cells_nodes", &level_cells_nodes, py::arg("codes"), py::arg("nodes"), py::arg("a"),
          py::arg("b"), py::arg("beta"), py::arg("window"), py::arg("tree"), py::arg("n_slots"),
          py::arg("n_threads") = 1,
          "level_cells_codes that walks each point on from its node in `nodes` (uint16/uint32, (n,), "
          "updated in place to the tip reached) instead of from the root.");
    m.def("counts_from_cells", &counts_from_cells, py::arg("cells"), py::arg("a"), py::arg("b"),
          py::arg("beta"), py::arg("window"),
          "(size, rank, window, at_most) of level_counts from a summed cell histogram.");
    m.def("percentile_interval", &percentile_interval, py::arg("sorted"), py::arg("lo"), py::arg("hi"),
          py::arg("target"), py::arg("scale"), py::arg("u"),
          "Exponential-mechanism choice of the interval k of (lo, sorted..., hi), weight "
          "exp(-scale*|k - target|) * width, by inverse CDF at u in [0, 1).");
    m.def("node_counts_sorted", &node_counts_sorted, py::arg("X"), py::arg("a"), py::arg("b"),
          py::arg("beta"), py::arg("window"),
          "Sort-based reference of level_counts for one node: (rank, window, at_most), each (d, W).");
    m.def("score_candidates", &score_candidates, py::arg("rank"), py::arg("window"), py::arg("n_tilde"),
          py::arg("t"), py::arg("q"), py::arg("alpha"),
          "Scores c + alpha * e of the candidates (flattened, dimension-major).");
    m.def("centreness", &centreness, py::arg("r"), py::arg("n_tilde"), py::arg("t"), py::arg("q"),
          "Centreness c_{t,q} of Def. 6 at ranks r (unclipped).");
    m.def("em_probabilities", &em_probabilities, py::arg("scores"), py::arg("scale"),
          "Exponential-mechanism probabilities p ∝ exp(scale * score), computed in log space.");
    m.def("em_choice", &em_choice, py::arg("scores"), py::arg("scale"), py::arg("u"),
          "Inverse-CDF exponential-mechanism choice for a uniform draw u in [0, 1).");
    m.def("route_points", &route_points, py::arg("X"), py::arg("tree"),
          "Slot of each row of X after routing it down the tree (int64, -1 = ignored).");
    m.def("nearest_centres", &nearest_centres, py::arg("X"), py::arg("centres"), py::arg("n_threads") = 1,
          "Index of the nearest centre (squared Euclidean, first on ties) of each row of X; int64.");
    m.def("nearest_centres_from", &nearest_centres_from, py::arg("X"), py::arg("centres"), py::arg("tree"),
          py::arg("n_threads") = 1,
          "nearest_centres, starting each row from the centre in the slot of the tip it reaches in "
          "the tree (every tip's slot a centre index) and skipping centres that provably lose.");
    m.def("add_gaps", &add_gaps, py::arg("sorted"), py::arg("acc"),
          "acc[k] += sorted[k+1] - sorted[k], in place (acc must be a float64 C-contiguous array).");
    m.def("slot_sums", &slot_sums, py::arg("X"), py::arg("a"), py::arg("b"), py::arg("tree"),
          py::arg("n_slots"), py::arg("scale") = 1.0,
          "Clipped coordinate sums times scale (n_slots, d) and true sizes (n_slots,) per slot.");
}

}  // namespace privopt::bindings
