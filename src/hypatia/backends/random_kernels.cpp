// Kernels of the random family: MRGUniform (reference: one thread over every stream; the CPU
// kernel in backends/cpu/random_cpu.cpp splits the streams across threads, same bits),
// MultinomialFromUniform and ChoiceFromUniform (Theano's C code, in its order and precision).
#include "hypatia/backends/random_kernels.h"

#include <vector>

#include "hypatia/backends/mrg_generate.h"
#include "hypatia/backends/registry.h"
#include "hypatia/core/error.h"
#include "hypatia/core/legacy_random.h"
#include "hypatia/ops/random_streams.h"

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

void check_choice_count(const ChoiceFromUniform& op, const FromUniformInputs& in) {
  if (!op.replace && in.n > in.outcomes)
    fail<ValueError>(op.name(), ": cannot sample without replacement ", in.n, " values from ", in.outcomes,
                     " outcomes");
}

namespace {

void mrg_uniform_reference(const MRGUniform& op, const KernelArgs& args) {
  mrg_uniform_run(op, args, [](int32_t* states, int64_t ns, float* f, double* d, int64_t n) {
    if (f) mrg::generate(states, ns, 0, ns, f, n);
    if (d) mrg::generate(states, ns, 0, ns, d, n);
  });
}

void multinomial_kernel(const MultinomialFromUniform& op, const KernelArgs& args) {
  // Plain variables, not a structured binding: the lambda below captures them (clang < 16 cannot).
  const FromUniformInputs in = check_from_uniform(op.name(), args);
  const int64_t rows = in.rows, outcomes = in.outcomes, n = in.n;
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
  check_choice_count(op, in);
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

// ---------------------------------------------------------------------------------------------
// RandomFunction

/// numpy's broadcast of the parameters' shapes (ValueError naming the op when they do not).
Shape broadcast_shapes(const std::string& who, const std::vector<const NDArray*>& xs) {
  int nd = 0;
  for (const NDArray* x : xs) nd = std::max(nd, x->ndim());
  Shape out;
  for (int d = 0; d < nd; ++d) out.push_back(1);
  for (const NDArray* x : xs)
    for (int d = 0; d < x->ndim(); ++d) {
      const int o = nd - x->ndim() + d;
      const int64_t n = x->shape(d);
      if (out[o] == 1)
        out[o] = n;
      else if (n != 1 && n != out[o])
        fail<ValueError>(who, ": shape mismatch: the parameters ", x->describe(), " cannot be broadcast to ",
                         out.str());
    }
  return out;
}

/// A parameter's values broadcast to the draws' shape (numpy's broadcasting against the size;
/// ValueError naming the op when it does not fit): one value when it has one element.
template <class T>
struct ParamValues {
  std::vector<T> v;
  bool scalar = false;
  T operator[](size_t i) const { return scalar ? v[0] : v[i]; }
};

template <class T>
ParamValues<T> broadcast_values(const std::string& who, const NDArray& x, const Shape& shape) {
  if (x.ndim() > shape.size())
    fail<ValueError>(who, ": the parameter ", x.describe(), " has more dimensions than the size ", shape.str());
  for (int d = 0; d < x.ndim(); ++d) {
    const int64_t n = x.shape(d), want = shape[shape.size() - x.ndim() + d];
    if (n != 1 && n != want)
      fail<ValueError>(who, ": shape mismatch: the parameter ", x.describe(), " cannot be broadcast to the size ",
                       shape.str());
  }
  ParamValues<T> r;
  r.scalar = x.size() == 1;
  const NDArray b = (r.scalar ? x : x.broadcast_to(shape)).astype(dtype_of<T>());
  r.v.assign(b.data<T>(), b.data<T>() + b.size());
  return r;
}

/// How many parameter combinations to check: one when every parameter is a single value.
template <class... P>
size_t check_count(size_t n, const P&... ps) {
  return (ps.scalar && ...) ? std::min<size_t>(n, 1) : n;
}

/// Runs f, turning the generator's std::invalid_argument / overflow_error (numpy's ValueError /
/// OverflowError messages) into Hypatia's errors naming the op.
template <class F>
void numpy_checked(const std::string& who, F&& f) {
  try {
    f();
  } catch (const std::overflow_error& e) {  // numpy's OverflowError ("Range exceeds valid bounds")
    fail<ValueError>(who, ": ", e.what());
  } catch (const std::invalid_argument& e) {
    fail<ValueError>(who, ": ", e.what());
  }
}

void random_function_kernel(const RandomFunction& op, const KernelArgs& args) {
  const std::string who = op.name();
  const NDArray& state_in = *args.in[0];
  if (state_in.ndim() != 1 || state_in.shape(0) != kRandomStateWords || state_in.dtype() != DType::UInt32)
    fail<ValueError>(who, ": the state must be a uint32 vector of ", kRandomStateWords, " words, got ",
                     state_in.describe());
  legacy_random::MT19937State st;
  {
    const NDArray words = state_in.is_c_contiguous() ? state_in : state_in.copy();
    numpy_checked(who, [&] { legacy_random::load(st, words.data<uint32_t>()); });
  }
  const NDArray& size = *args.in[1];
  const bool size_none = size.size() == 0;
  Shape base;
  for (int64_t i = 0; i < size.size(); ++i) {
    const int64_t d = size.get_flat_int(i);
    if (d < 0) fail<ValueError>(who, ": negative dimensions are not allowed, got size ", size.describe());
    base.push_back(d);
  }
  const int out_ndim = static_cast<int>(op.broadcastable.size());
  if (!size_none && out_ndim != base.size() + op.ndim_added())
    fail<ValueError>(who, ": the size ", base.str(), " has ", base.size(), " entries for draws of ", out_ndim,
                     " dimensions");
  std::vector<const NDArray*> params(args.in.begin() + 2, args.in.end());
  NDArray* out_cell = args.out[1];
  // Writes the int64 or double draws into the output, cast to its dtype as Theano does.
  auto emit = [&](const Shape& shape, auto&& draw) {
    NDArray& out = prepare_output(*out_cell, shape, op.dtype);
    dispatch_dtype(op.dtype, [&](auto tag) {
      using O = decltype(tag);
      O* o = out.data<O>();
      for (int64_t i = 0; i < out.size(); ++i) o[i] = static_cast<O>(draw(i));
    });
  };
  auto check_ndim = [&](const Shape& shape) {
    if (static_cast<int>(shape.size()) != out_ndim)
      fail<ValueError>(who, ": the parameters give draws of shape ", shape.str(), " but the output has ", out_ndim,
                       " dimensions");
  };
  numpy_checked(who, [&] {
    switch (op.dist) {
      case RandomDist::Uniform:
      case RandomDist::Normal:
      case RandomDist::Gamma:
      case RandomDist::Beta:
      case RandomDist::Poisson: {
        const Shape shape = size_none ? broadcast_shapes(who, params) : base;
        check_ndim(shape);
        std::vector<ParamValues<double>> p;
        for (const NDArray* x : params) p.push_back(broadcast_values<double>(who, *x, shape));
        int64_t total = 1;
        for (int64_t d : shape) total *= d;
        bool all_scalar = true;
        for (const auto& q : p) all_scalar = all_scalar && q.scalar;
        const size_t n = all_scalar ? std::min<int64_t>(total, 1) : static_cast<size_t>(total);
        // numpy checks every parameter before it draws anything.
        for (size_t i = 0; i < n; ++i) switch (op.dist) {
            case RandomDist::Uniform:
              legacy_random::check_uniform(p[0][i], p[1][i]);
              break;
            case RandomDist::Normal:
              legacy_random::check_normal(p[1][i]);
              break;
            case RandomDist::Gamma:
              legacy_random::check_gamma(p[0][i], p[1][i]);
              break;
            case RandomDist::Beta:
              legacy_random::check_beta(p[0][i], p[1][i]);
              break;
            default:
              legacy_random::check_poisson(p[0][i]);
          }
        switch (op.dist) {
          case RandomDist::Uniform:
            emit(shape, [&](int64_t i) { return legacy_random::uniform(st, p[0][i], p[1][i]); });
            break;
          case RandomDist::Normal:
            emit(shape, [&](int64_t i) { return legacy_random::legacy_normal(st, p[0][i], p[1][i]); });
            break;
          case RandomDist::Gamma:
            emit(shape, [&](int64_t i) { return legacy_random::legacy_gamma(st, p[0][i], p[1][i]); });
            break;
          case RandomDist::Beta:
            emit(shape, [&](int64_t i) { return legacy_random::legacy_beta(st, p[0][i], p[1][i]); });
            break;
          default:
            emit(shape, [&](int64_t i) { return legacy_random::legacy_random_poisson(st, p[0][i]); });
        }
        break;
      }
      case RandomDist::Binomial: {
        const Shape shape = size_none ? broadcast_shapes(who, params) : base;
        check_ndim(shape);
        const auto n = broadcast_values<int64_t>(who, *params[0], shape);
        const auto p = broadcast_values<double>(who, *params[1], shape);
        for (size_t i = 0; i < check_count(std::max(n.v.size(), p.v.size()), n, p); ++i)
          legacy_random::check_binomial(n[i], p[i]);
        emit(shape, [&](int64_t i) { return legacy_random::legacy_random_binomial(st, p[i], n[i]); });
        break;
      }
      case RandomDist::RandomIntegers: {
        // Theano draws each element with its own RandomState.random_integers(low, high) call.
        const Shape shape = size_none ? broadcast_shapes(who, params) : base;
        check_ndim(shape);
        const auto lo = broadcast_values<int64_t>(who, *params[0], shape);
        const auto hi = broadcast_values<int64_t>(who, *params[1], shape);
        for (size_t i = 0; i < check_count(std::max(lo.v.size(), hi.v.size()), lo, hi); ++i)
          legacy_random::check_random_integers(lo[i], hi[i]);
        emit(shape, [&](int64_t i) { return legacy_random::random_integers(st, lo[i], hi[i]); });
        break;
      }
      case RandomDist::Choice: {
        // One RandomState.choice(a, size, replace, p) call: a an integer or a vector of values.
        const NDArray& a = *params[0];
        if (a.ndim() > 1) fail<ValueError>(who, ": a.ndim (", a.ndim(), ") must be 0 or 1");
        const NDArray& pv = *params[2];
        if (pv.ndim() != 1) fail<ValueError>(who, ": p.ndim (", pv.ndim(), ") must be 1");
        const int64_t pop = a.ndim() == 0 ? a.get_flat_int(0) : a.shape(0);
        const Shape shape = size_none ? Shape{} : base;
        check_ndim(shape);
        int64_t count = 1;
        for (int64_t d : shape) count *= d;
        if (a.ndim() == 1 && pop == 0 && count != 0) throw std::invalid_argument("a must be non-empty");
        const std::vector<double> p =
            pv.size() == 0 ? std::vector<double>{} : broadcast_values<double>(who, pv, {pv.shape(0)}).v;
        if (!p.empty() && static_cast<int64_t>(p.size()) != pop)
          throw std::invalid_argument("a and p must have same size");
        std::vector<int64_t> idx(static_cast<size_t>(count));
        legacy_random::legacy_choice(st, pop, count, params[1]->get_flat_int(0) != 0, p.empty() ? nullptr : p.data(),
                                     idx.data());
        if (a.ndim() == 0) {
          emit(shape, [&](int64_t i) { return idx[i]; });
        } else {
          const NDArray values = a.astype(DType::Float64);
          emit(shape, [&](int64_t i) { return values.data<double>()[idx[i]]; });
        }
        break;
      }
      case RandomDist::Permutation: {
        // One RandomState.permutation(n) per element of the size, in C order.
        const int64_t n = params[0]->get_flat_int(0);
        if (params[0]->size() != 1) fail<ValueError>(who, ": n must be a scalar, got ", params[0]->describe());
        if (n < 0) throw std::invalid_argument("n must be >= 0");
        Shape shape = size_none ? Shape{} : base;
        shape.push_back(n);
        check_ndim(shape);
        NDArray tmp = NDArray::empty(shape, DType::Int64);
        for (int64_t r = 0; r < (n == 0 ? 0 : tmp.size() / n); ++r)
          legacy_random::legacy_permutation(st, n, tmp.data<int64_t>() + r * n);
        emit(shape, [&](int64_t i) { return tmp.data<int64_t>()[i]; });
        break;
      }
      case RandomDist::Multinomial: {
        // Theano's multinomial_helper: one RandomState.multinomial(n, pvals) per element of the
        // size; pvals summing to a little over 1 (within 1e-5), or whose last entry is below 5e-5,
        // are scaled by 1 - 5e-5 first (in pvals' dtype).
        const NDArray& pvals = *params[1];
        const int64_t k = pvals.shape(pvals.ndim() - 1);
        Shape lead;
        for (int d = 0; d + 1 < pvals.ndim(); ++d) lead.push_back(pvals.shape(d));
        NDArray pv_lead =
            pvals.reshape(lead.size() == 0 ? Shape{1, k} : Shape{pvals.size() / std::max<int64_t>(k, 1), k});
        const NDArray pfirst = NDArray::empty(lead, DType::Int8);  // pvals[..., 0]'s shape, for broadcasting
        const Shape shape = size_none ? broadcast_shapes(who, {params[0], &pfirst}) : base;
        Shape out_shape = shape;
        out_shape.push_back(k);
        check_ndim(out_shape);
        const auto n = broadcast_values<int64_t>(who, *params[0], shape);
        // Row index of pvals for each element of the size.
        NDArray rows = NDArray::empty(lead, DType::Int64);
        for (int64_t i = 0; i < rows.size(); ++i) rows.data<int64_t>()[i] = i;
        const auto row = broadcast_values<int64_t>(who, rows, shape);
        const bool f32 = pvals.dtype() == DType::Float32;
        NDArray counts = NDArray::empty(out_shape, DType::Int64);
        std::vector<double> pvi(static_cast<size_t>(k));
        const size_t elements = static_cast<size_t>(counts.size() / std::max<int64_t>(k, 1));
        for (size_t e = 0; e < elements; ++e) {
          for (int64_t j = 0; j < k; ++j) pvi[j] = pv_lead.get_flat(row[e] * k + j);
          auto sum = [&] {
            double s = 0;
            float sf = 0;
            for (double v : pvi) f32 ? void(sf += static_cast<float>(v)) : void(s += v);
            return f32 ? static_cast<double>(sf) : s;
          };
          const double total = sum();
          if ((total > 1.0 && total < 1.0 + 1e-5) || (k > 0 && pvi[k - 1] < 5e-5))
            for (double& v : pvi)
              v = f32 ? static_cast<double>(static_cast<float>(v) * static_cast<float>(1.0 - 5e-5)) : v * (1.0 - 5e-5);
          legacy_random::legacy_multinomial(st, n[e], pvi.data(), k, counts.data<int64_t>() + e * k);
        }
        emit(out_shape, [&](int64_t i) { return counts.data<int64_t>()[i]; });
        break;
      }
    }
  });
  NDArray& state_out = prepare_output(*args.out[0], {kRandomStateWords}, DType::UInt32);
  legacy_random::save(st, state_out.data<uint32_t>());
}

}  // namespace

void register_random_kernels() {
  register_simple_kernel<MRGUniform>(kReferenceBackend, &mrg_uniform_reference);
  register_simple_kernel<MultinomialFromUniform>(kReferenceBackend, &multinomial_kernel);
  register_simple_kernel<ChoiceFromUniform>(kReferenceBackend, &choice_kernel);
  register_simple_kernel<RandomFunction>(kReferenceBackend, &random_function_kernel);
  register_random_cpu_kernels();
}

}  // namespace hypatia
