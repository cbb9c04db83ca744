// Kernels of the random family: MRGUniform (reference: one thread over every stream; the CPU
// kernel in backends/cpu/random_cpu.cpp splits the streams across threads, same bits),
// MultinomialFromUniform and ChoiceFromUniform (Theano's C code, in its order and precision).
#include "hypatia/backends/random_kernels.h"

#include <vector>

#include "hypatia/backends/mrg_generate.h"
#include "hypatia/backends/registry.h"
#include "hypatia/core/error.h"

namespace hypatia {

void register_random_cpu_kernels();

void mrg_uniform_run(const MRGUniform& op, const KernelArgs& args, const MrgGenerateFn& generate) {
  const NDArray& rstate = *args.in[0];
  op.check_inputs(args.in);
  const NDArray& size = *args.in[1];
  Shape shape;
  for (int i = 0; i < op.ndim; ++i) shape.push_back(size.get_flat_int(i));
  const int64_t n_streams = rstate.shape(0);
  // The new state: the input's buffer (in place) or a fresh copy; worked on C-contiguous.
  NDArray& state = op.inplace ? prepare_inplace_output(*args.out[0], rstate, rstate.shape(), DType::Int32, op, 0)
                              : prepare_output(*args.out[0], rstate.shape(), DType::Int32);
  if (!op.inplace) state.assign(rstate);
  NDArray work = state.is_c_contiguous() ? state : state.copy();
  NDArray& sample = prepare_output(*args.out[1], shape, op.dtype);
  const int64_t n = sample.size();
  if (op.dtype == DType::Float32)
    generate(work.data<int32_t>(), n_streams, sample.data<float>(), nullptr, n);
  else
    generate(work.data<int32_t>(), n_streams, nullptr, sample.data<double>(), n);
  if (work.data<int32_t>() != state.data<int32_t>()) state.assign(work);
}

namespace {

void mrg_uniform_reference(const MRGUniform& op, const KernelArgs& args) {
  mrg_uniform_run(op, args, [](int32_t* states, int64_t ns, float* f, double* d, int64_t n) {
    if (f) mrg::generate(states, ns, 0, ns, f, n);
    if (d) mrg::generate(states, ns, 0, ns, d, n);
  });
}

/// pvals (rows, outcomes) and unis (rows * n) as doubles and the count n, checked.
struct FromUniformInputs {
  int64_t rows, outcomes, n;
};

FromUniformInputs check_from_uniform(const std::string& who, const KernelArgs& args) {
  const NDArray& pvals = *args.in[0];
  const NDArray& unis = *args.in[1];
  const int64_t n = args.in[2]->get_flat_int(0);
  if (n < 0) fail<ValueError>(who, ": n must be >= 0, got ", n);
  const int64_t rows = pvals.shape(0);
  if (unis.shape(0) != rows * n)
    fail<ValueError>(who, ": unis.shape[0] != pvals.shape[0] * n (", unis.shape(0), " uniforms for ", rows,
                     " rows and n = ", n, ")");
  return {rows, pvals.shape(1), n};
}

void multinomial_kernel(const MultinomialFromUniform& op, const KernelArgs& args) {
  const auto [rows, outcomes, n] = check_from_uniform(op.name(), args);
  const NDArray& pvals = *args.in[0];
  const NDArray& unis = *args.in[1];
  NDArray& z = prepare_output(*args.out[0], pvals.shape(), op.odtype);
  z.fill(0.0);
  dispatch_dtype(op.odtype, [&](auto otag) {
    using O = decltype(otag);
    O* zd = z.data<O>();
    for (int64_t c = 0; c < n; ++c)
      for (int64_t r = 0; r < rows; ++r) {
        const double u = unis.get_flat(c * rows + r);
        double cum = 0.0;  // Theano sums the probabilities in double
        for (int64_t m = 0; m < outcomes; ++m) {
          cum += pvals.get_flat(r * outcomes + m);
          if (cum > u) {
            zd[r * outcomes + m] = static_cast<O>(zd[r * outcomes + m] + O(1));
            break;
          }
        }
      }
  });
}

template <class P, class O>
void choice_rows(const ChoiceFromUniform& op, const KernelArgs& args, const FromUniformInputs& in, O* z) {
  const NDArray& pvals = *args.in[0];
  const NDArray& unis = *args.in[1];
  std::vector<P> p(static_cast<size_t>(in.rows * in.outcomes));
  for (int64_t i = 0; i < in.rows * in.outcomes; ++i) p[i] = static_cast<P>(pvals.get_flat(i));
  for (int64_t c = 0; c < in.n; ++c)
    for (int64_t r = 0; r < in.rows; ++r) {
      const double u = unis.get_flat(c * in.rows + r);
      P* row = p.data() + r * in.outcomes;
      double cum = 0.0;
      for (int64_t m = 0; m < in.outcomes; ++m) {
        cum += row[m];
        if (cum > u) {
          z[r * in.n + c] = static_cast<O>(m);
          if (c == in.n - 1 || op.replace) break;
          // Theano's renormalization: the running sum restarts from the probabilities before m
          // (cum - p[m], in pvals' dtype), adds those from m on, and divides the row by it.
          P sum = static_cast<P>(cum - row[m]);
          row[m] = 0;
          for (int64_t k = m; k < in.outcomes; ++k) sum = sum + row[k];
          for (int64_t k = 0; k < in.outcomes; ++k) row[k] = row[k] / sum;
          break;
        }
      }
    }
}

void choice_kernel(const ChoiceFromUniform& op, const KernelArgs& args) {
  const FromUniformInputs in = check_from_uniform(op.name(), args);
  if (!op.replace && in.n > in.outcomes)
    fail<ValueError>(op.name(), ": cannot sample without replacement ", in.n, " values from ", in.outcomes,
                     " outcomes");
  NDArray& z = prepare_output(*args.out[0], {in.rows, in.n}, op.odtype);
  z.fill(-1.0);
  dispatch_dtype(op.odtype, [&](auto otag) {
    using O = decltype(otag);
    if (args.in[0]->dtype() == DType::Float32)
      choice_rows<float>(op, args, in, z.data<O>());
    else
      choice_rows<double>(op, args, in, z.data<O>());
  });
}

}  // namespace

void register_random_kernels() {
  register_simple_kernel<MRGUniform>(kReferenceBackend, &mrg_uniform_reference);
  register_simple_kernel<MultinomialFromUniform>(kReferenceBackend, &multinomial_kernel);
  register_simple_kernel<ChoiceFromUniform>(kReferenceBackend, &choice_kernel);
  register_random_cpu_kernels();
}

}  // namespace hypatia
