// Kernels of DimShuffle, Shape, Shape_i, MakeVector and Alloc (views and small copies).
#include <optional>
#include <sstream>

#include "hypatia/backends/shape_kernels_impl.h"
#include "hypatia/ops/shape.h"

namespace hypatia {

namespace kernel_util {

int64_t read_int_scalar(const NDArray& a, const std::string& op, const char* role) {
  if (a.ndim() != 0 || !(is_integer(a.dtype()) || is_bool(a.dtype())))
    fail<ValueError>(op, ": ", role, " must be a 0-d integer array, got ", a.describe());
  // Exact, and a uint64 past INT64_MAX saturates (a wrapped negative value would be a different
  // index or a negative length).
  return a.get_flat_int(0);
}

std::vector<int64_t> read_int_vector(const NDArray& a, const std::string& op, const char* role) {
  if (a.ndim() != 1 || !(is_integer(a.dtype()) || is_bool(a.dtype())))
    fail<ValueError>(op, ": ", role, " must be an integer vector, got ", a.describe());
  std::vector<int64_t> r(a.shape(0));
  for (int64_t i = 0; i < a.shape(0); ++i) r[i] = a.get_flat_int(i);
  return r;
}

}  // namespace kernel_util

namespace {
using kernel_util::read_int_scalar;

void dimshuffle_kernel(const DimShuffle& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  const int nd = static_cast<int>(op.input_broadcastable.size());
  if (x.ndim() != nd) fail<ValueError>(op.name(), ": expected an input of ", nd, " dimensions, got ", x.describe());
  std::vector<bool> used(nd, false);
  Shape shape;
  Strides strides;
  for (int p : op.pattern) {
    if (p < 0) {
      shape.push_back(1);
      strides.push_back(0);
    } else {
      used[p] = true;
      shape.push_back(x.shape(p));
      strides.push_back(x.strides()[p]);
    }
  }
  for (int i = 0; i < nd; ++i)
    if (!used[i] && x.shape(i) != 1)
      fail<ValueError>(op.name(), ": input axis ", i, " is dropped and must have length 1, but the input is ",
                       x.describe());
  *args.out[0] = x.as_strided(shape, strides);
}

void rebroadcast_kernel(const Rebroadcast& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  if (x.ndim() != static_cast<int>(op.flags.size()))
    fail<ValueError>(op.name(), ": expected an input of ", op.flags.size(), " dimensions, got ", x.describe());
  for (int i = 0; i < x.ndim(); ++i)
    if (op.flags[i] == 1 && x.shape(i) != 1)
      fail<ValueError>(op.name(), ": axis ", i, " is marked broadcastable but the input has shape ", x.shape().str());
  *args.out[0] = x;
}

void shape_kernel(const ShapeOp&, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  NDArray& out = prepare_output(*args.out[0], Shape{x.ndim()}, DType::Int64);
  for (int i = 0; i < x.ndim(); ++i) out.data<int64_t>()[i] = x.shape(i);
}

void shape_i_kernel(const ShapeI& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  if (op.i >= x.ndim()) fail<ValueError>(op.name(), ": the input has only ", x.ndim(), " dimensions: ", x.describe());
  NDArray& out = prepare_output(*args.out[0], Shape{}, DType::Int64);
  *out.data<int64_t>() = x.shape(op.i);
}

void make_vector_kernel(const MakeVector& op, const KernelArgs& args) {
  const int64_t n = static_cast<int64_t>(args.in.size());
  NDArray& out = prepare_output(*args.out[0], Shape{n}, DType::Int64);
  for (int64_t i = 0; i < n; ++i) out.data<int64_t>()[i] = read_int_scalar(*args.in[i], op.name(), "each input");
}

// Alloc needs the value's broadcastable pattern to reject a run-time broadcast the type does
// not declare (its gradient would otherwise have the wrong shape).
struct AllocKernel final : Kernel {
  std::vector<bool> value_bc;
  void run(const KernelArgs& args) override {
    const NDArray& v = *args.in[0];
    const Shape shape = kernel_util::alloc_shape(args, value_bc);
    NDArray& out = prepare_output(*args.out[0], shape, v.dtype());
    out.assign(v.broadcast_to(shape));
  }
};

}  // namespace

Shape kernel_util::alloc_shape(const KernelArgs& args, const std::vector<bool>& value_bc) {
  {
    const NDArray& v = *args.in[0];
    const int nd = static_cast<int>(args.in.size()) - 1;
    Shape shape;
    for (int i = 0; i < nd; ++i) {
      int64_t s = read_int_scalar(*args.in[i + 1], "Alloc", "each shape entry");
      if (s < 0) fail<ValueError>("Alloc: shape entry ", i, " is negative (", s, ")");
      shape.push_back(s);
    }
    // Before any broadcast or allocation: a product past int64 would wrap to a small buffer.
    check_shape_size("Alloc", shape, v.dtype());
    if (v.ndim() > nd)
      fail<ValueError>("Alloc: the value ", v.describe(), " has more dimensions than the shape ", shape.str());
    const int off = nd - v.ndim();
    for (int i = 0; i < v.ndim(); ++i) {
      const int64_t vs = v.shape(i), os = shape[off + i];
      if (vs == os) continue;
      if (vs != 1)
        fail<ValueError>("Alloc: cannot broadcast the value ", v.describe(), " to the shape ", shape.str(),
                         ": value dimension ", i, " has length ", vs);
      if (i < static_cast<int>(value_bc.size()) && !value_bc[i])
        fail<ValueError>("Alloc: cannot broadcast the value ", v.describe(), " to the shape ", shape.str(),
                         ": value dimension ", i, " has length 1 but is not broadcastable in the value's type");
    }
    return shape;
  }
}

namespace {

std::unique_ptr<Kernel> make_alloc_kernel(const Apply& node) {
  auto k = std::make_unique<AllocKernel>();
  k->value_bc = node.inputs[0]->type.broadcastable;
  return k;
}

// numpy's _attempt_nocopy_reshape: strides that view `a` with `shape`, when they exist.
std::optional<Strides> nocopy_strides(const NDArray& a, const Shape& shape) {
  std::array<int64_t, kMaxNdim> od{}, os{};
  int ond = 0;
  for (int i = 0; i < a.ndim(); ++i)
    if (a.shape(i) != 1) {
      od[ond] = a.shape(i);
      os[ond] = a.strides()[i];
      ++ond;
    }
  const int nnd = shape.size();
  Strides ns;
  ns.resize(nnd);
  int oi = 0, oj = 1, ni = 0, nj = 1;
  while (ni < nnd && oi < ond) {
    int64_t np = shape[ni], op = od[oi];
    while (np != op) {
      if (np < op)
        np *= shape[nj++];
      else
        op *= od[oj++];
    }
    for (int ok = oi; ok < oj - 1; ++ok)
      if (os[ok] != od[ok + 1] * os[ok + 1]) return std::nullopt;
    ns[nj - 1] = os[oj - 1];
    for (int nk = nj - 1; nk > ni; --nk) ns[nk - 1] = ns[nk] * shape[nk];
    ni = nj++;
    oi = oj++;
  }
  const int64_t last = ni >= 1 ? ns[ni - 1] : static_cast<int64_t>(a.itemsize());
  for (int nk = ni; nk < nnd; ++nk) ns[nk] = last;
  return ns;
}

void reshape_kernel(const Reshape& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  std::vector<int64_t> req = kernel_util::read_int_vector(*args.in[1], op.name(), "the shape");
  if (static_cast<int>(req.size()) != op.ndim)
    fail<ValueError>(op.name(), ": the shape has ", req.size(), " entries, expected ", op.ndim);
  Shape shape;
  int unknown = -1;
  for (int i = 0; i < op.ndim; ++i) {
    if (req[i] == -1) {
      if (unknown >= 0) fail<ValueError>(op.name(), ": can only specify one unknown dimension (-1)");
      unknown = i;
      shape.push_back(1);
      continue;
    }
    if (req[i] < 0) fail<ValueError>(op.name(), ": invalid shape entry ", req[i]);
    shape.push_back(req[i]);
  }
  auto req_str = [&] {
    std::ostringstream s;
    s << "(";
    for (size_t i = 0; i < req.size(); ++i) s << (i ? ", " : "") << req[i];
    s << (req.size() == 1 ? ",)" : ")");
    return s.str();
  };
  // A product past int64 would wrap (an empty array reshaped to (2**32, 2**32) would pass as 0).
  const auto checked = checked_shape_size(shape, x.itemsize());
  if (!checked)
    fail<ValueError>(op.name(), ": cannot reshape ", x.describe(), " into shape ", req_str(),
                     ": an array of that shape and dtype ", dtype_name(x.dtype()),
                     " is too big (its size in bytes does not fit in int64)");
  const int64_t known = *checked;
  auto mismatch = [&] {
    fail<ValueError>(op.name(), ": cannot reshape an array of size ", x.size(), " (", x.describe(), ") into shape ",
                     req_str());
  };
  if (unknown >= 0) {
    if (known == 0 || x.size() % known != 0) mismatch();
    shape[unknown] = x.size() / known;
  } else if (known != x.size()) {
    mismatch();
  }
  if (x.size() == 0) {
    *args.out[0] = x.as_strided(shape, c_strides(shape, x.itemsize()));
    return;
  }
  if (auto st = nocopy_strides(x, shape)) {
    *args.out[0] = x.as_strided(shape, *st);
    return;
  }
  NDArray& out = prepare_output(*args.out[0], x.shape(), x.dtype());
  out.assign(x);
  out = out.as_strided(shape, c_strides(shape, x.itemsize()));
}

void split_kernel(const Split& op, const KernelArgs& args) {
  const NDArray& x = *args.in[0];
  std::vector<int64_t> sizes = kernel_util::read_int_vector(*args.in[1], op.name(), "the sizes");
  if (x.ndim() <= op.axis) fail<ValueError>(op.name(), ": axis ", op.axis, " is out of range for ", x.describe());
  if (static_cast<int>(sizes.size()) != op.n_splits)
    fail<ValueError>(op.name(), ": expected ", op.n_splits, " split sizes, got ", sizes.size());
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) fail<ValueError>(op.name(), ": split sizes must be non-negative, got ", s);
    // A wrapped sum could equal the axis length and give views past the end of the buffer.
    auto t = checked_add(total, s);
    if (!t)
      fail<ValueError>(op.name(), ": the split sizes sum past int64 but axis ", op.axis, " of the input has length ",
                       x.shape(op.axis), " (", x.describe(), ")");
    total = *t;
  }
  if (total != x.shape(op.axis))
    fail<ValueError>(op.name(), ": the split sizes sum to ", total, " but axis ", op.axis, " of the input has length ",
                     x.shape(op.axis), " (", x.describe(), ")");
  int64_t off = 0;
  for (int i = 0; i < op.n_splits; ++i) {
    *args.out[i] = x.slice(op.axis, off, off + sizes[i], 1);
    off += sizes[i];
  }
}

}  // namespace

void register_shape_view_kernels() {
  register_simple_kernel<DimShuffle>(kReferenceBackend, dimshuffle_kernel);
  register_simple_kernel<Rebroadcast>(kReferenceBackend, rebroadcast_kernel);
  // Shapes are read from any device's arrays (no transfer is placed before them).
  register_simple_kernel<ShapeOp>(kReferenceBackend, shape_kernel, KernelTraits{.any_device_inputs = true});
  register_simple_kernel<ShapeI>(kReferenceBackend, shape_i_kernel, KernelTraits{.any_device_inputs = true});
  register_simple_kernel<MakeVector>(kReferenceBackend, make_vector_kernel);
  register_kernel(kReferenceBackend, typeid(Alloc), make_alloc_kernel);
  register_simple_kernel<Reshape>(kReferenceBackend, reshape_kernel);
  register_simple_kernel<Split>(kReferenceBackend, split_kernel);
}

}  // namespace hypatia
