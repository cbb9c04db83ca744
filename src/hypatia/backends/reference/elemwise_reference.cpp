// Reference kernel of Elemwise: casts every input to the compute type, broadcasts it to the output
// shape, and applies ScalarFn element by element through a plain multi-index. The test oracle.
#include <array>
#include <vector>

#include "hypatia/backends/registry.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/scalar_functors.h"

namespace hypatia {
namespace {

/// Calls body(output element pointer, input element pointers) for every element of `out`.
template <class F>
void for_each_element(const std::vector<NDArray>& xs, const NDArray& out, F&& body) {
  const int nd = out.ndim();
  const Shape& shape = out.shape();
  const int64_t n = out.size();
  std::array<int64_t, kMaxNdim> idx{};
  std::array<const std::byte*, 3> p{};
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rem = flat;
    for (int d = nd - 1; d >= 0; --d) {
      idx[d] = rem % shape[d];
      rem /= shape[d];
    }
    auto at = [&](const NDArray& a) {
      std::byte* q = a.raw();
      for (int d = 0; d < nd; ++d) q += idx[d] * a.strides()[d];
      return q;
    };
    for (size_t i = 0; i < xs.size(); ++i) p[i] = at(xs[i]);
    body(at(out), p);
  }
}

template <ScalarOpKind Kd, class T>
void reference_loop(const std::vector<NDArray>& xs, const NDArray& out) {
  using Fn = ScalarFn<Kd>;
  for_each_element(xs, out, [](std::byte* o, const std::array<const std::byte*, 3>& p) {
    if constexpr (Kd == ScalarOpKind::Switch) {
      auto r = Fn::apply(load_element<bool>(p[0]), load_element<T>(p[1]), load_element<T>(p[2]));
      *reinterpret_cast<decltype(r)*>(o) = r;
    } else if constexpr (Fn::arity == 1) {
      auto r = Fn::apply(load_element<T>(p[0]));
      *reinterpret_cast<decltype(r)*>(o) = r;
    } else if constexpr (Fn::arity == 2) {
      auto r = Fn::apply(load_element<T>(p[0]), load_element<T>(p[1]));
      *reinterpret_cast<decltype(r)*>(o) = r;
    } else {
      auto r = Fn::apply(load_element<T>(p[0]), load_element<T>(p[1]), load_element<T>(p[2]));
      *reinterpret_cast<decltype(r)*>(o) = r;
    }
  });
}

void compute(const Elemwise& op, DType compute_dt, const std::vector<NDArray>& xs, const NDArray& out) {
  if (op.scalar == ScalarOpKind::Cast) {
    dispatch_storage_dtype(compute_dt, [&](auto from) {
      using From = decltype(from);
      dispatch_storage_dtype(out.dtype(), [&](auto to) {
        using To = decltype(to);
        for_each_element(xs, out, [](std::byte* o, const std::array<const std::byte*, 3>& p) {
          *reinterpret_cast<To*>(o) = scalar_math::convert<To>(load_element<From>(p[0]));
        });
      });
    });
    return;
  }
  dispatch_scalar_kind(op.scalar, [&](auto kc) {
    constexpr ScalarOpKind Kd = decltype(kc)::value;
    dispatch_dtype(compute_dt, [&](auto t) {
      using T = decltype(t);
      if constexpr (ScalarFn<Kd>::template supports<T>)
        reference_loop<Kd, T>(xs, out);
      else
        fail<InternalError>(op.name(), ": no scalar function for compute type ", dtype_name(compute_dt));
    });
  });
}

class ElemwiseReferenceKernel final : public Kernel {
 public:
  explicit ElemwiseReferenceKernel(const Apply& node) : op_(static_cast<const Elemwise&>(*node.op)), bc_(node) {
    std::vector<DType> dts;
    for (const Var& v : node.inputs) dts.push_back(v->dtype());
    out_dtype_ = node.output_ptr(0)->dtype();
    compute_dtype_ = elemwise_compute_dtype(op_.scalar, dts, out_dtype_);
  }

  void run(const KernelArgs& args) override {
    const Shape shape = elemwise_broadcast_shape(op_, args.in, bc_);
    std::vector<NDArray> xs;
    for (size_t i = 0; i < args.in.size(); ++i) {
      const DType t = (op_.scalar == ScalarOpKind::Switch && i == 0) ? DType::Bool : compute_dtype_;
      const NDArray& a = *args.in[i];
      xs.push_back((a.dtype() == t ? a : a.astype(t)).broadcast_to(shape));
    }
    NDArray out;
    if (op_.inplace >= 0) {
      const NDArray& target = *args.in[op_.inplace];
      if (!(target.shape() == shape) || target.dtype() != out_dtype_)
        fail<ValueError>(op_.name(), ": the overwritten input ", op_.inplace, " is ", target.describe(),
                         " but the output is ", dtype_name(out_dtype_), " ", shape.str());
      *args.out[0] = target;
      out = target;
    } else {
      out = prepare_output(*args.out[0], shape, out_dtype_);
    }
    compute(op_, compute_dtype_, xs, out);
  }

 private:
  const Elemwise& op_;
  BroadcastPattern bc_;
  DType out_dtype_;
  DType compute_dtype_;
};

}  // namespace

/// Registers the reference Elemwise kernel.
void register_elemwise_reference_kernels() {
  register_kernel(kReferenceBackend, typeid(Elemwise), [](const Apply& node) -> std::unique_ptr<Kernel> {
    return std::make_unique<ElemwiseReferenceKernel>(node);
  });
}

}  // namespace hypatia
