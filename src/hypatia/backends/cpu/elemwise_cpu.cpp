// CPU kernel of Elemwise: one function per (scalar op, compute type) resolved when the kernel is
// built, driven by StridedLoop (broadcast dims get stride 0, mergeable dims merge, so same-shape
// contiguous operands become one flat run). Flat runs of float32/float64 use the Highway loops,
// other flat runs simple loops the compiler vectorizes, the rest a strided scalar loop. Above
// config().openmp_elemwise_minsize elements the runs are split across the thread pool's threads.
#include <algorithm>
#include <array>
#include <vector>

#include "hypatia/backends/cpu/elemwise_inner.h"
#include "hypatia/backends/cpu/elemwise_simd.h"
#include "hypatia/backends/cpu/half_simd.h"
#include "hypatia/backends/cpu/parallel_loop.h"
#include "hypatia/backends/registry.h"
#include "hypatia/core/config.h"
#include "hypatia/core/error.h"
#include "hypatia/core/strided_loop.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/scalar_functors.h"

namespace hypatia {
namespace {

template <ScalarOpKind Kd, class T>
void elemwise_inner(std::byte* out, int64_t os, const std::byte* const* in, const int64_t* is, int64_t n, bool simd) {
  using Fn = ScalarFn<Kd>;
  using R = scalar_result_t<Kd, T>;
  using I0 = scalar_input_t<Kd, T, 0>;
  constexpr int N = Fn::arity;
  auto ld = [&](int k, int64_t i) -> T { return load_element<T>(in[k] + i * is[k]); };
  bool flat = os == static_cast<int64_t>(sizeof(R));
  for (int k = 0; k < N; ++k) {
    const int64_t sz = (Kd == ScalarOpKind::Switch && k == 0) ? 1 : static_cast<int64_t>(sizeof(T));
    flat = flat && (is[k] == 0 || is[k] == sz);
  }
  if constexpr (std::is_floating_point_v<T> && std::is_same_v<R, T> && N == 1) {
    // A float unary op with a SIMD loop uses it whatever the length and the strides (strided runs
    // through a buffer), so that results do not depend on the layout: the SIMD exp or tanh may
    // differ from the C library's by an ulp.
    if (simd && !flat) {
      alignas(64) T buf[256];
      for (int64_t i0 = 0; i0 < n; i0 += 256) {
        const int64_t m = std::min<int64_t>(256, n - i0);
        for (int64_t i = 0; i < m; ++i) buf[i] = ld(0, i0 + i);
        simd_unary(Kd, dtype_of<T>(), buf, buf, m);
        for (int64_t i = 0; i < m; ++i) *reinterpret_cast<T*>(out + (i0 + i) * os) = buf[i];
      }
      return;
    }
  }
  if (flat) {
    R* o = reinterpret_cast<R*>(out);
    if constexpr (std::is_floating_point_v<T> && std::is_same_v<R, T> && N <= 2) {
      // A unary op takes its SIMD loop at any length (see above); a binary op's is exact either
      // way, and a few elements are cheaper without the dispatch.
      if (simd && (N == 1 || n >= 8)) {
        if constexpr (N == 1) {
          if (is[0] != 0) return simd_unary(Kd, dtype_of<T>(), in[0], out, n);
          // One element broadcast: computed once, by the same SIMD loop.
          T v = *reinterpret_cast<const T*>(in[0]);
          simd_unary(Kd, dtype_of<T>(), &v, &v, 1);
          std::fill(o, o + n, v);
          return;
        } else {
          if (is[0] != 0 || is[1] != 0)
            return simd_binary(Kd, dtype_of<T>(), in[0], is[0] == 0, in[1], is[1] == 0, out, n);
        }
      }
    }
    if constexpr (N == 1) {
      const T* a = reinterpret_cast<const T*>(in[0]);
      if constexpr (std::is_same_v<T, bool>) {
        for (int64_t i = 0; i < n; ++i) o[i] = Fn::apply(ld(0, i));
      } else if (is[0] != 0) {
        for (int64_t i = 0; i < n; ++i) o[i] = Fn::apply(a[i]);
      } else {
        const R v = Fn::apply(a[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = v;
      }
      return;
    } else if constexpr (N == 2 && !std::is_same_v<T, bool>) {
      const T* a = reinterpret_cast<const T*>(in[0]);
      const T* b = reinterpret_cast<const T*>(in[1]);
      if (is[0] != 0 && is[1] != 0) {
        for (int64_t i = 0; i < n; ++i) o[i] = Fn::apply(a[i], b[i]);
      } else if (is[0] == 0 && is[1] != 0) {
        const T av = a[0];
        for (int64_t i = 0; i < n; ++i) o[i] = Fn::apply(av, b[i]);
      } else if (is[0] != 0) {
        const T bv = b[0];
        for (int64_t i = 0; i < n; ++i) o[i] = Fn::apply(a[i], bv);
      } else {
        const R v = Fn::apply(a[0], b[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = v;
      }
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    R r;
    if constexpr (N == 1)
      r = Fn::apply(ld(0, i));
    else if constexpr (N == 2)
      r = Fn::apply(ld(0, i), ld(1, i));
    else
      r = Fn::apply(load_element<I0>(in[0] + i * is[0]), ld(1, i), ld(2, i));
    *reinterpret_cast<R*>(out + i * os) = r;
  }
}

/// One element, as elemwise_inner computes it for n = 1 on contiguous operands (the same SIMD call
/// for a float unary op, the scalar function otherwise): a loop body's step on elements
/// (Kernel::run_scalars) without the loop's set-up.
template <ScalarOpKind Kd, class T>
void elemwise_one(std::byte* out, const std::byte* const* in, bool simd) {
  using Fn = ScalarFn<Kd>;
  using R = scalar_result_t<Kd, T>;
  using I0 = scalar_input_t<Kd, T, 0>;
  constexpr int N = Fn::arity;
  if constexpr (std::is_floating_point_v<T> && std::is_same_v<R, T> && N == 1)
    if (simd) return simd_unary(Kd, dtype_of<T>(), in[0], out, 1);
  R r;
  if constexpr (N == 1)
    r = Fn::apply(load_element<T>(in[0]));
  else if constexpr (N == 2)
    r = Fn::apply(load_element<T>(in[0]), load_element<T>(in[1]));
  else
    r = Fn::apply(load_element<I0>(in[0]), load_element<T>(in[1]), load_element<T>(in[2]));
  *reinterpret_cast<R*>(out) = r;
}

template <class From, class To>
void cast_inner(std::byte* out, int64_t os, const std::byte* const* in, const int64_t* is, int64_t n, bool) {
  if (os == static_cast<int64_t>(sizeof(To)) && is[0] == static_cast<int64_t>(sizeof(From))) {
    To* o = reinterpret_cast<To*>(out);
    const From* a = reinterpret_cast<const From*>(in[0]);
    if constexpr (std::is_same_v<From, bool>) {
      // Bytes, any non-zero one true (load_element's reading), through restrict pointers and a
      // select: a loop gcc vectorizes (convert(byte != 0) stayed scalar: 2.5x numpy's bool ->
      // float32).
      const uint8_t* __restrict b = reinterpret_cast<const uint8_t*>(in[0]);
      To* __restrict ob = o;
      for (int64_t i = 0; i < n; ++i) ob[i] = static_cast<To>(b[i] > 0 ? 1 : 0);
    } else if constexpr (std::is_same_v<From, half> && std::is_same_v<To, float>)
      cpu::widen_f16(a, o, static_cast<size_t>(n));
    else if constexpr (std::is_same_v<From, float> && std::is_same_v<To, half>)
      cpu::narrow_f16(a, o, static_cast<size_t>(n));
    else
      for (int64_t i = 0; i < n; ++i) o[i] = scalar_math::convert<To>(a[i]);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    *reinterpret_cast<To*>(out + i * os) = scalar_math::convert<To>(load_element<From>(in[0] + i * is[0]));
}

/// The inner function of `op` for compute type `compute`, and the dtype it writes.
std::pair<InnerFn, DType> pick_inner(const Elemwise& op, DType compute) {
  if (op.scalar == ScalarOpKind::Cast) {
    InnerFn f = dispatch_storage_dtype(compute, [&](auto from) {
      return dispatch_storage_dtype(op.cast_to,
                                    [&](auto to) -> InnerFn { return &cast_inner<decltype(from), decltype(to)>; });
    });
    return {f, op.cast_to};
  }
  return dispatch_scalar_kind(op.scalar, [&](auto kc) {
    constexpr ScalarOpKind Kd = decltype(kc)::value;
    return dispatch_dtype(compute, [&](auto t) -> std::pair<InnerFn, DType> {
      using T = decltype(t);
      if constexpr (ScalarFn<Kd>::template supports<T>)
        return {&elemwise_inner<Kd, T>, dtype_of<scalar_result_t<Kd, T>>()};
      else
        return {nullptr, compute};
    });
  });
}

using OneFn = void (*)(std::byte* out, const std::byte* const* in, bool simd);

/// elemwise_one for `op` and `compute` (a cast: its n = 1 loop).
OneFn pick_one(const Elemwise& op, DType compute) {
  if (op.scalar == ScalarOpKind::Cast) return nullptr;
  return dispatch_scalar_kind(op.scalar, [&](auto kc) {
    constexpr ScalarOpKind Kd = decltype(kc)::value;
    return dispatch_dtype(compute, [&](auto t) -> OneFn {
      using T = decltype(t);
      if constexpr (ScalarFn<Kd>::template supports<T>)
        return &elemwise_one<Kd, T>;
      else
        return nullptr;
    });
  });
}

}  // namespace

std::pair<InnerFn, DType> elemwise_inner_fn(const Elemwise& op, DType compute) { return pick_inner(op, compute); }

namespace {

class ElemwiseCpuKernel final : public Kernel {
 public:
  explicit ElemwiseCpuKernel(const Apply& node) : op_(static_cast<const Elemwise&>(*node.op)), bc_(node) {
    std::vector<DType> dts;
    for (const Var& v : node.inputs) dts.push_back(v->dtype());
    out_dtype_ = node.output_ptr(0)->dtype();
    const DType compute = elemwise_compute_dtype(op_.scalar, dts, out_dtype_);
    auto [fn, writes] = pick_inner(op_, compute);
    HYP_ASSERT(fn != nullptr, op_.name(), ": no scalar function for compute type ", dtype_name(compute));
    HYP_ASSERT(writes == out_dtype_, op_.name(), ": scalar function writes ", dtype_name(writes), ", node says ",
               dtype_name(out_dtype_));
    inner_ = fn;
    one_ = pick_one(op_, compute);
    simd_ = simd_supports(op_.scalar, compute);
    cost_ = scalar_op_cost(op_.scalar);
    scalar_path_ = true;
    for (size_t i = 0; i < dts.size(); ++i) {
      want_[i] = (op_.scalar == ScalarOpKind::Switch && i == 0) ? DType::Bool : compute;
      // The scalar path reads the inputs as they are: only when none needs a conversion.
      scalar_path_ = scalar_path_ && dts[i] == want_[i];
      elem_size_[i] = static_cast<int64_t>(itemsize(want_[i]));
    }
  }

  bool has_scalar_path() const override { return scalar_path_; }
  // The path run() takes for 0-d operands (one element, contiguous strides).
  void run_scalars(const std::byte* const* in, std::byte* const* out) override {
    if (one_) return one_(out[0], in, simd_);
    inner_(out[0], static_cast<int64_t>(itemsize(out_dtype_)), in, elem_size_.data(), 1, simd_);
  }

  void run(const KernelArgs& args) override {
    const Shape shape = elemwise_broadcast_shape(op_, args.in, bc_);
    const int n_in = static_cast<int>(args.in.size());
    std::array<const NDArray*, 3> src{};
    for (int i = 0; i < n_in; ++i) {
      const NDArray& a = *args.in[i];
      if (a.dtype() == want_[i]) {
        src[i] = &a;
      } else {
        NDArray& s = prepare_output(scratch_[i], a.shape(), want_[i]);
        s.assign(a);
        src[i] = &s;
      }
    }
    NDArray* out = op_.inplace >= 0 ? &prepare_inplace_output(*args.out[0], *args.in[op_.inplace], shape, out_dtype_,
                                                              op_, op_.inplace)
                                    : &prepare_output_following(*args.out[0], shape, out_dtype_,
                                                                std::span<const NDArray* const>(src.data(), n_in));
    const int64_t total = shape.prod();
    // Fast path: C-contiguous operands of the output's shape (or single elements), below the
    // threading threshold (or on one thread): one call of the inner loop, no stride bookkeeping.
    if (!parallel_worth(parallel_work(total, cost_)) && out->is_c_contiguous()) {
      bool flat = true;
      std::array<const std::byte*, 3> p{};
      std::array<int64_t, 3> ps{};
      for (int i = 0; i < n_in && flat; ++i) {
        const NDArray& a = *src[i];
        if (a.size() == 1 && total != 1) {
          ps[i] = 0;
        } else {
          flat = a.shape() == shape && a.is_c_contiguous();
          ps[i] = static_cast<int64_t>(itemsize(a.dtype()));
        }
        p[i] = a.raw();
      }
      if (flat) {
        if (total > 0)
          inner_(out->raw(), static_cast<int64_t>(itemsize(out_dtype_)), p.data(), ps.data(), total, simd_);
        return;
      }
    }
    const BroadcastOperands<4> ops(*out, std::span<const NDArray* const>(src.data(), n_in));
    switch (n_in) {
      case 1:
        return run_loop<2>(shape, ops);
      case 2:
        return run_loop<3>(shape, ops);
      default:
        return run_loop<4>(shape, ops);
    }
  }

 private:
  template <int M>
  void run_loop(const Shape& shape, const BroadcastOperands<4>& ops) const {
    const InnerFn fn = inner_;
    const bool simd = simd_;
    ops.run_parallel<M>(
        shape,
        [fn, simd](const std::array<std::byte*, M>& p, const std::array<int64_t, M>& s, int64_t n) {
          fn(p[0], s[0], p.data() + 1, s.data() + 1, n, simd);
        },
        cost_);
  }

  const Elemwise& op_;
  BroadcastPattern bc_;
  DType out_dtype_;
  std::array<DType, 3> want_{};
  std::array<NDArray, 3> scratch_;
  InnerFn inner_ = nullptr;
  OneFn one_ = nullptr;  // one element (run_scalars); a cast runs inner_ on one
  bool simd_ = false;
  bool scalar_path_ = false;
  std::array<int64_t, 3> elem_size_{};
  int cost_ = 1;  // scalar_op_cost: the threading threshold's weight
};

}  // namespace

/// Registers the CPU Elemwise kernel.
void register_elemwise_cpu_kernels() {
  register_kernel(kCpuBackend, typeid(Elemwise), [](const Apply& node) -> std::unique_ptr<Kernel> {
    return std::make_unique<ElemwiseCpuKernel>(node);
  });
}

}  // namespace hypatia
