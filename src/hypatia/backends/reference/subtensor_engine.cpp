// Index resolution, gather and scatter for the subtensor family (numpy semantics).
#include "hypatia/backends/subtensor_engine.h"

#include <cstring>
#include <sstream>

#include "hypatia/backends/shape_kernels_impl.h"
#include "hypatia/core/strided_loop.h"

namespace hypatia::subtensor_engine {

using Kind = IndexEntry::Kind;
using Bound = IndexEntry::Bound;
using kernel_util::read_int_scalar;

namespace {

bool has_arrays(const IndexSpec& spec) {
  for (const auto& e : spec)
    if (e.kind == Kind::IntArray || e.kind == Kind::BoolArray) return true;
  return false;
}

// Python's slice.indices(n) followed by the view (any int64 bounds and step, without overflow).
NDArray apply_slice(const NDArray& p, int ax, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) {
  int64_t first = 0, end = 0;
  slice_indices(p.shape(ax), start, stop, step, &first, &end);
  return p.slice(ax, first, end, step);
}

[[noreturn]] void out_of_bounds(const std::string& op, int64_t i, int axis, int64_t n) {
  fail<IndexError>(op, ": index ", i, " is out of bounds for axis ", axis, " with size ", n);
}

// Copies (or adds) `n` elements between strided runs; `add` only for arithmetic types.
template <class T>
void run_copy(std::byte* d, int64_t ds, const std::byte* s, int64_t ss, int64_t n, bool add) {
  if (!add) {
    if (ds == static_cast<int64_t>(sizeof(T)) && ss == static_cast<int64_t>(sizeof(T))) {
      std::memcpy(d, s, static_cast<size_t>(n) * sizeof(T));
      return;
    }
    for (int64_t i = 0; i < n; ++i, d += ds, s += ss) std::memcpy(d, s, sizeof(T));
    return;
  }
  for (int64_t i = 0; i < n; ++i, d += ds, s += ss) {
    T a, b;
    std::memcpy(&a, d, sizeof(T));
    std::memcpy(&b, s, sizeof(T));
    a = static_cast<T>(a + b);
    std::memcpy(d, &a, sizeof(T));
  }
}

// Runs the block copy/add for every position of the broadcast index.
void block_loop(const Resolved& r, const NDArray& other_perm, bool to_view, bool add) {
  const NDArray& p = r.view;
  const int nb = r.bshape.size();
  Shape rshape;
  Strides view_strides, other_strides;
  for (int d = 0, j = 0; d < p.ndim(); ++d) {
    if (j < static_cast<int>(r.adv_axes.size()) && r.adv_axes[j] == d) {
      ++j;
      continue;
    }
    rshape.push_back(p.shape(d));
    view_strides.push_back(p.strides()[d]);
  }
  for (int d = nb; d < other_perm.ndim(); ++d) other_strides.push_back(other_perm.strides()[d]);
  const int64_t nbtot = r.bshape.prod();
  if (nbtot == 0 || rshape.prod() == 0) return;
  const Strides& dst_st = to_view ? view_strides : other_strides;
  const Strides& src_st = to_view ? other_strides : view_strides;
  StridedLoop<2> loop(rshape, {&dst_st, &src_st});
  std::vector<const int64_t*> idx;
  std::vector<int64_t> axis_stride;
  for (size_t j = 0; j < r.arrays.size(); ++j) {
    idx.push_back(r.arrays[j].data<int64_t>());
    axis_stride.push_back(p.strides()[r.adv_axes[j]]);
  }
  std::array<int64_t, kMaxNdim> bidx{};
  int64_t other_off = 0;
  dispatch_dtype(p.dtype(), [&](auto t) {
    using T = decltype(t);
    for (int64_t b = 0; b < nbtot; ++b) {
      int64_t view_off = 0;
      for (size_t j = 0; j < idx.size(); ++j) view_off += idx[j][b] * axis_stride[j];
      std::byte* vp = p.raw() + view_off;
      std::byte* op = other_perm.raw() + other_off;
      loop.run({to_view ? vp : op, to_view ? op : vp},
               [add](const std::array<std::byte*, 2>& q, const std::array<int64_t, 2>& s, int64_t n) {
                 if constexpr (std::is_same_v<T, bool>) {
                   if (add) {
                     std::byte* d = q[0];
                     const std::byte* sp = q[1];
                     for (int64_t i = 0; i < n; ++i, d += s[0], sp += s[1])
                       *reinterpret_cast<bool*>(d) = *reinterpret_cast<bool*>(d) || *reinterpret_cast<const bool*>(sp);
                     return;
                   }
                 }
                 run_copy<T>(q[0], s[0], q[1], s[1], n, add);
               });
      for (int d = nb - 1; d >= 0; --d) {
        if (++bidx[d] < r.bshape[d]) {
          other_off += other_perm.strides()[d];
          break;
        }
        other_off -= (r.bshape[d] - 1) * other_perm.strides()[d];
        bidx[d] = 0;
      }
    }
  });
}

// The permutation that moves the broadcast dims (at insert_pos) of a result to the front.
std::vector<int> front_perm(const Resolved& r) {
  const int nd = r.result_shape.size(), nb = r.bshape.size();
  std::vector<int> perm;
  for (int d = 0; d < nb; ++d) perm.push_back(r.insert_pos + d);
  for (int d = 0; d < nd; ++d)
    if (d < r.insert_pos || d >= r.insert_pos + nb) perm.push_back(d);
  return perm;
}

bool broadcastable_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const int off = to.size() - from.size();
  for (int d = 0; d < from.size(); ++d)
    if (from[d] != 1 && from[d] != to[off + d]) return false;
  return true;
}

}  // namespace

Resolved resolve(const std::string& op, const IndexSpec& spec, const NDArray& x, std::span<NDArray* const> idx) {
  Resolved r;
  r.advanced = has_arrays(spec);
  NDArray p = x;
  int ax = 0, xa = 0;
  size_t k = 0;
  std::vector<NDArray> raw;
  std::vector<int> raw_x_axis;
  int first_adv = -1, last_adv = -1;
  auto next_input = [&]() -> const NDArray& {
    if (k >= idx.size()) fail<ValueError>(op, ": missing index inputs (", idx.size(), " given)");
    return *idx[k++];
  };
  auto bound_value = [&](Bound b, int64_t v, const char* role) -> std::optional<int64_t> {
    if (b == Bound::None) return std::nullopt;
    if (b == Bound::Const) return v;
    return read_int_scalar(next_input(), op, role);
  };
  auto need_axes = [&](int n) {
    if (ax + n > p.ndim()) fail<IndexError>(op, ": too many indices for an array of shape ", x.shape().str());
  };
  for (size_t pos = 0; pos < spec.size(); ++pos) {
    const IndexEntry& e = spec[pos];
    switch (e.kind) {
      case Kind::Int: {
        need_axes(1);
        const int64_t i = *bound_value(e.a, e.av, "an integer index");
        const int64_t n = p.shape(ax);
        const int64_t v = i < 0 ? i + n : i;
        if (v < 0 || v >= n) out_of_bounds(op, i, xa, n);
        if (!r.advanced) {
          p = p.select(ax, v);
        } else {
          raw.push_back(NDArray::scalar(static_cast<double>(v), DType::Int64));
          raw_x_axis.push_back(xa);
          r.adv_axes.push_back(ax);
          if (first_adv < 0) first_adv = static_cast<int>(pos);
          last_adv = static_cast<int>(pos);
          ++ax;
        }
        ++xa;
        break;
      }
      case Kind::Slice: {
        need_axes(1);
        auto start = bound_value(e.a, e.av, "a slice start");
        auto stop = bound_value(e.b, e.bv, "a slice stop");
        auto step = bound_value(e.c, e.cv, "a slice step");
        if (step && *step == 0) fail<ValueError>(op, ": slice step cannot be zero");
        p = apply_slice(p, ax, start, stop, step.value_or(1));
        ++ax;
        ++xa;
        break;
      }
      case Kind::NewAxis: {
        Shape s = p.shape();
        Strides st = p.strides();
        s.insert(ax, 1);
        st.insert(ax, 0);
        p = p.as_strided(s, st);
        ++ax;
        break;
      }
      case Kind::IntArray: {
        need_axes(1);
        const NDArray& a = next_input();
        if (!is_integer(a.dtype())) fail<IndexError>(op, ": index arrays must be integers, got ", a.describe());
        raw.push_back(a);
        raw_x_axis.push_back(xa);
        r.adv_axes.push_back(ax);
        if (first_adv < 0) first_adv = static_cast<int>(pos);
        last_adv = static_cast<int>(pos);
        ++ax;
        ++xa;
        break;
      }
      case Kind::BoolArray: {
        const NDArray& m = next_input();
        if (!is_bool(m.dtype()) || m.ndim() == 0)
          fail<IndexError>(op, ": a mask must be a boolean array of at least 1 dimension, got ", m.describe());
        const int kd = m.ndim();
        need_axes(kd);
        for (int d = 0; d < kd; ++d)
          if (m.shape(d) != p.shape(ax + d))
            fail<IndexError>(op, ": boolean index did not match indexed array along axis ", xa + d,
                             "; size of axis is ", p.shape(ax + d), " but size of corresponding boolean axis is ",
                             m.shape(d));
        std::vector<std::vector<int64_t>> nz(kd);
        kernel_util::for_each_index(m.shape(), [&](const int64_t* i) {
          if (*reinterpret_cast<const bool*>(m.raw() + kernel_util::offset_of(i, m.strides())))
            for (int d = 0; d < kd; ++d) nz[d].push_back(i[d]);
        });
        for (int d = 0; d < kd; ++d) {
          raw.push_back(NDArray::from_vector(nz[d]));
          raw_x_axis.push_back(xa + d);
          r.adv_axes.push_back(ax + d);
        }
        if (first_adv < 0) first_adv = static_cast<int>(pos);
        last_adv = static_cast<int>(pos);
        ax += kd;
        xa += kd;
        break;
      }
    }
  }
  r.view = p;
  if (!r.advanced) {
    r.result_shape = p.shape();
    return r;
  }
  // Broadcast the index arrays together (numpy rules).
  int bnd = 0;
  for (const auto& a : raw) bnd = std::max(bnd, a.ndim());
  Shape b;
  b.resize(bnd, 1);
  for (const auto& a : raw) {
    const int off = bnd - a.ndim();
    for (int d = 0; d < a.ndim(); ++d) {
      const int64_t s = a.shape(d);
      if (s == b[off + d] || s == 1) continue;
      if (b[off + d] == 1) {
        b[off + d] = s;
        continue;
      }
      std::ostringstream shapes;
      for (const auto& q : raw) shapes << " " << q.shape().str();
      fail<IndexError>(op, ": shape mismatch: indexing arrays could not be broadcast together with shapes",
                       shapes.str());
    }
  }
  // The index arrays are materialized at the broadcast shape (int64), and the result has it too:
  // broadcast views of index arrays can make it too big.
  check_shape_size(op, b, DType::Int64);
  r.bshape = b;
  for (size_t j = 0; j < raw.size(); ++j) {
    NDArray a = raw[j].broadcast_to(b).astype(DType::Int64);
    const int64_t n = p.shape(r.adv_axes[j]);
    int64_t* v = a.data<int64_t>();
    for (int64_t i = 0; i < a.size(); ++i) {
      if (v[i] < -n || v[i] >= n) out_of_bounds(op, v[i], raw_x_axis[j], n);
      if (v[i] < 0) v[i] += n;
    }
    r.arrays.push_back(a);
  }
  bool adjacent = true;
  for (int q = first_adv; q <= last_adv; ++q)
    if (spec[q].kind == Kind::Slice || spec[q].kind == Kind::NewAxis) adjacent = false;
  r.insert_pos = adjacent ? r.adv_axes[0] : 0;
  Shape rest;
  for (int d = 0, j = 0; d < p.ndim(); ++d) {
    if (j < static_cast<int>(r.adv_axes.size()) && r.adv_axes[j] == d) {
      ++j;
      continue;
    }
    rest.push_back(p.shape(d));
  }
  Shape out;
  for (int d = 0; d < r.insert_pos; ++d) out.push_back(rest[d]);
  for (int d = 0; d < b.size(); ++d) out.push_back(b[d]);
  for (int d = r.insert_pos; d < rest.size(); ++d) out.push_back(rest[d]);
  check_shape_size(op, out, x.dtype());
  r.result_shape = out;
  return r;
}

NDArray& inc_subtensor_output(const IncSubtensor& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  const NDArray& y = *args.in[1];
  if (y.dtype() != x.dtype())
    fail<ValueError>(op.name(), ": y has dtype ", dtype_name(y.dtype()), " but x has ", dtype_name(x.dtype()));
  if (op.inplace) {
    *args.out[0] = x;
    return *args.out[0];
  }
  NDArray& out = prepare_output(*args.out[0], x.shape(), x.dtype());
  out.assign(x);
  return out;
}

void gather(const Resolved& r, NDArray& out) {
  std::vector<int> perm = front_perm(r);
  block_loop(r, out.transpose(perm), /*to_view=*/false, /*add=*/false);
}

void scatter(const std::string& op, const Resolved& r, const NDArray& y, bool set) {
  if (!broadcastable_to(y.shape(), r.result_shape))
    fail<ValueError>(op, ": cannot broadcast y of shape ", y.shape().str(), " to the indexed region of shape ",
                     r.result_shape.str());
  NDArray yb = y.broadcast_to(r.result_shape);
  if (!r.advanced) {
    if (set) {
      r.view.assign(yb);
      return;
    }
    Resolved basic = r;
    basic.bshape = Shape{};
    block_loop(basic, yb, /*to_view=*/true, /*add=*/true);
    return;
  }
  std::vector<int> perm = front_perm(r);
  block_loop(r, yb.transpose(perm), /*to_view=*/true, /*add=*/!set);
}

}  // namespace hypatia::subtensor_engine
