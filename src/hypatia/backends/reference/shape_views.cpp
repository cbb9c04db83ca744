// Kernels of DimShuffle, Shape, Shape_i, MakeVector and Alloc (views and small copies).
#include <sstream>

#include "hypatia/backends/shape_kernels_impl.h"
#include "hypatia/ops/shape.h"

namespace hypatia {

namespace kernel_util {

int64_t read_int_scalar(const NDArray& a, const std::string& op, const char* role) {
  if (a.ndim() != 0 || !(is_integer(a.dtype()) || is_bool(a.dtype())))
    fail<ValueError>(op, ": ", role, " must be a 0-d integer array, got ", a.describe());
  return dispatch_dtype(a.dtype(), [&](auto t) -> int64_t {
    using T = decltype(t);
    return static_cast<int64_t>(*a.data<T>());
  });
}

std::vector<int64_t> read_int_vector(const NDArray& a, const std::string& op, const char* role) {
  if (a.ndim() != 1 || !(is_integer(a.dtype()) || is_bool(a.dtype())))
    fail<ValueError>(op, ": ", role, " must be an integer vector, got ", a.describe());
  std::vector<int64_t> r(a.shape(0));
  dispatch_dtype(a.dtype(), [&](auto t) {
    using T = decltype(t);
    for (int64_t i = 0; i < a.shape(0); ++i)
      r[i] = static_cast<int64_t>(*reinterpret_cast<const T*>(a.raw() + i * a.strides()[0]));
  });
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
    const int nd = static_cast<int>(args.in.size()) - 1;
    Shape shape;
    for (int i = 0; i < nd; ++i) {
      int64_t s = read_int_scalar(*args.in[i + 1], "Alloc", "each shape entry");
      if (s < 0) fail<ValueError>("Alloc: shape entry ", i, " is negative (", s, ")");
      shape.push_back(s);
    }
    if (v.ndim() > nd)
      fail<ValueError>("Alloc: the value ", v.describe(), " has more dimensions than the shape ", shape.str());
    const int off = nd - v.ndim();
    for (int i = 0; i < v.ndim(); ++i) {
      const int64_t vs = v.shape(i), os = shape[off + i];
      if (vs == os) continue;
      if (vs != 1 || (i < static_cast<int>(value_bc.size()) && !value_bc[i]))
        fail<ValueError>("Alloc: cannot broadcast the value ", v.describe(), " (broadcastable ",
                         value_bc.size() == static_cast<size_t>(v.ndim()) ? "as typed" : "unknown", ") to the shape ",
                         shape.str(), ": dimension ", i, " has length ", vs);
    }
    NDArray& out = prepare_output(*args.out[0], shape, v.dtype());
    out.assign(v.broadcast_to(shape));
  }
};

std::unique_ptr<Kernel> make_alloc_kernel(const Apply& node) {
  auto k = std::make_unique<AllocKernel>();
  k->value_bc = node.inputs[0]->type.broadcastable;
  return k;
}

}  // namespace

void register_shape_view_kernels() {
  register_simple_kernel<DimShuffle>(Backend::Reference, dimshuffle_kernel);
  register_simple_kernel<ShapeOp>(Backend::Reference, shape_kernel);
  register_simple_kernel<ShapeI>(Backend::Reference, shape_i_kernel);
  register_simple_kernel<MakeVector>(Backend::Reference, make_vector_kernel);
  register_kernel(Backend::Reference, typeid(Alloc), make_alloc_kernel);
}

void register_shape_copy_kernels() {}

}  // namespace hypatia
