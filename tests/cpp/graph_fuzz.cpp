#include "graph_fuzz.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <sstream>

#include "hypatia/testing/opinfo.h"

namespace hypatia::testing {

uint32_t FuzzSource::pick(uint32_t n) {
  if (n <= 1) return 0;
  if (seeded_) return static_cast<uint32_t>(rng_() % n);
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | (pos_ < size_ ? data_[pos_++] : 0);
  return v % n;
}

std::string FuzzGraph::describe() const {
  std::ostringstream os;
  for (const auto& s : steps) os << "  " << s << "\n";
  os << "updates: " << updates.size() << ", shared: " << shared.size() << "\n";
  try {
    os << debugprint(outputs, DebugPrintOptions{.print_type = true});
  } catch (const std::exception& e) {
    os << "(debugprint failed: " << e.what() << ")";
  }
  return os.str();
}

namespace {

/// The reference backend runs the graph as written: the oracle every mode is compared with.
std::vector<NDArray> reference_values(const std::vector<Var>& inputs, const std::vector<NDArray>& values,
                                      const std::vector<Var>& outputs) {
  std::vector<In> ins(inputs.begin(), inputs.end());
  std::vector<Out> outs(outputs.begin(), outputs.end());
  FunctionOptions o;
  o.backend = std::string(kReferenceBackend);
  o.on_unused_input = "ignore";
  return function(ins, outs, o)(values);
}

/// Entries whose values must come from their own samples: linear algebra needs well-conditioned
/// matrices (a computed matrix near singularity turns last-ulp differences into anything), and
/// Print writes to stdout.
bool keeps_its_samples(const std::string& name) {
  static const char* const kNames[] = {
      "matrix_inverse", "det",   "eigh",     "eigvalsh", "eig_", "svd",       "qr_",
      "pinv",           "lstsq", "cholesky", "solve",    "expm", "tensorinv", "tensorsolve"};
  for (const char* k : kNames)
    if (name.rfind(k, 0) == 0) return true;
  return false;
}

struct PoolValue {
  Var v;
  NDArray value;  // the reference backend's value
  std::string name;
  bool is_input;
};

class Builder {
 public:
  Builder(FuzzSource& src, FuzzGraph& g) : src_(src), g_(g) {}

  void run(int max_steps) {
    int n = 1 + static_cast<int>(src_.pick(static_cast<uint32_t>(max_steps)));
    for (int i = 0; i < n; ++i) {
      uint32_t k = src_.pick(100);
      if (k < 8 && scan_step()) continue;
      if (k < 14 && ifelse_step()) continue;
      if (k < 20 && random_step()) continue;
      if (k < 26 && float16_step()) continue;
      opinfo_step();
    }
    finish();
  }

 private:
  struct Pending {
    std::vector<Var> inputs;
    std::vector<NDArray> values;
    std::vector<std::pair<Var, NDArray>> shared;
  };

  /// A new free input (or, sometimes, a shared variable) holding `value`.
  Var fresh(const NDArray& value, Pending& p, const std::optional<TensorType>& type = std::nullopt) {
    TensorType t = type ? *type : TensorType::of_value(value);
    std::string name = "x" + std::to_string(g_.inputs.size() + g_.shared.size() + p.inputs.size() + p.shared.size());
    if (is_float(value.dtype()) && src_.chance(12)) {
      Var s = shared(value.copy(), "s_" + name, false, t.broadcastable);
      p.shared.emplace_back(s, value.copy());
      return s;
    }
    Var v = variable(t, name);
    p.inputs.push_back(v);
    p.values.push_back(value);
    return v;
  }

  void commit(Pending& p) {
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      g_.inputs.push_back(p.inputs[i]);
      g_.values.push_back(p.values[i]);
      pool_.push_back({p.inputs[i], p.values[i], p.inputs[i]->name, true});
    }
    for (auto& [s, v] : p.shared) {
      g_.shared.emplace_back(s, v);
      pool_.push_back({s, v, s->name, true});
    }
  }

  /// The reference value of `out` given the graph so far and the pending inputs.
  NDArray evaluate(const Var& out, const Pending& p) {
    std::vector<Var> ins = g_.inputs;
    std::vector<NDArray> vals = g_.values;
    ins.insert(ins.end(), p.inputs.begin(), p.inputs.end());
    vals.insert(vals.end(), p.values.begin(), p.values.end());
    return reference_values(ins, vals, {out})[0];
  }

  void add_result(const Var& out, NDArray value, const std::string& line, const std::string& used) {
    std::string name = "v" + std::to_string(pool_.size());
    pool_.push_back({out, std::move(value), name, false});
    g_.steps.push_back(name + " = " + line);
    if (std::getenv("HYPATIA_FUZZ_TRACE")) std::cerr << "[fuzz] " << g_.steps.back() << std::endl;
    g_.used.push_back(used);
    last_ = pool_.size() - 1;
  }

  std::vector<size_t> matching(const NDArray& sample, const TensorType& type) {
    std::vector<size_t> r;
    for (size_t i = 0; i < pool_.size(); ++i)
      if (pool_[i].v->type == type && pool_[i].value.shape() == sample.shape()) r.push_back(i);
    return r;
  }

  void opinfo_step() {
    const auto& infos = op_infos();
    if (infos.empty()) return;
    const OpInfo& info = infos[src_.pick(static_cast<uint32_t>(infos.size()))];
    if (info.name.find("print") != std::string::npos || info.dtypes.empty()) return;
    DType dt = info.dtypes[src_.pick(static_cast<uint32_t>(info.dtypes.size()))];
    std::vector<OpSample> samples = info.samples(dt);
    if (samples.empty()) return;
    const OpSample& s = samples[src_.pick(static_cast<uint32_t>(samples.size()))];
    bool substitute = !keeps_its_samples(info.name);
    uint32_t sub_seed = src_.pick(1u << 30);
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (attempt == 1 && !substitute) return;
      std::mt19937 choose(sub_seed);
      Pending p;
      std::vector<Var> args;
      std::ostringstream line;
      line << info.name << "[" << dtype_name(dt) << ", " << s.desc << "](";
      for (size_t j = 0; j < s.inputs.size(); ++j) {
        TensorType t = TensorType::of_value(s.inputs[j]);
        std::vector<size_t> cands = attempt == 0 && substitute ? matching(s.inputs[j], t) : std::vector<size_t>{};
        if (j) line << ", ";
        if (!cands.empty() && choose() % 4 != 0) {
          const PoolValue& pv = pool_[cands[choose() % cands.size()]];
          args.push_back(pv.v);
          line << pv.name;
        } else {
          args.push_back(fresh(s.inputs[j], p));
          line << args.back()->name << ":" << t.str() << s.inputs[j].shape().str();
        }
      }
      line << ")";
      try {
        Var out = info.build(args);
        NDArray value = evaluate(out, p);
        commit(p);
        add_result(out, std::move(value), line.str(), info.name);
        if (info.rtol > 0) g_.rtol = std::max(g_.rtol, info.rtol);
        if (info.atol > 0) g_.atol = std::max(g_.atol, info.atol);
        return;
      } catch (const std::exception&) {
        // A computed value the op rejects (an index out of range, a shape that does not fit):
        // the second attempt uses the sample's own values.
      }
    }
  }

  std::vector<size_t> float_values(int min_ndim, int max_ndim) {
    std::vector<size_t> r;
    for (size_t i = 0; i < pool_.size(); ++i) {
      const NDArray& a = pool_[i].value;
      if (is_float(a.dtype()) && a.dtype() != DType::Float16 && a.ndim() >= min_ndim && a.ndim() <= max_ndim &&
          (a.ndim() == 0 || (a.shape(0) >= 1 && a.shape(0) <= 8)) && a.size() <= 4096)
        r.push_back(i);
    }
    return r;
  }

  /// A scan over the leading axis of a float value: h_t = f(g(h_{t-1}, x_t)) from a fresh initial
  /// state, forwards or backwards.
  bool scan_step() {
    std::vector<size_t> c = float_values(1, 3);
    if (c.empty()) return false;
    const PoolValue seq = pool_[c[src_.pick(static_cast<uint32_t>(c.size()))]];
    DType dt = seq.value.dtype();
    Shape elem_shape(std::vector<int64_t>(seq.value.shape().begin() + 1, seq.value.shape().end()));
    std::vector<bool> bc(seq.v->type.broadcastable.begin() + 1, seq.v->type.broadcastable.end());
    Pending p;
    Var h0 = fresh(random_array(elem_shape, dt, -1, 1, src_.pick(1u << 30)), p, TensorType(dt, bc));
    uint32_t bin = src_.pick(4), un = src_.pick(3);
    bool backwards = src_.chance(30);
    auto body = [bin, un](const std::vector<Var>& xs) {
      const Var& x = xs[0];
      const Var& h = xs[1];
      Var m = bin == 0 ? h + x : bin == 1 ? h * x : bin == 2 ? maximum(h, x) : h - x * 0.5;
      // Well-conditioned steps only: sin of a large computed value turned last-ulp differences
      // of a 90,000-element sum into 2e-6 (the 100,000-graph run's one mismatch).
      return std::vector<Var>{un == 0 ? tanh(m) : un == 1 ? sigmoid(m) : m * 0.5};
    };
    try {
      Var out = scan(body, {seq.v}, {h0}, {}, nullptr, backwards)[0];
      NDArray value = evaluate(out, p);
      commit(p);
      static const char* const kBin[] = {"add", "mul", "maximum", "sub_half"};
      static const char* const kUn[] = {"tanh", "sigmoid", "half"};
      add_result(out, std::move(value),
                 std::string("scan") + (backwards ? "[backwards]" : "") + "(" + seq.name + ", h0 " + h0->name +
                     ": h = " + kUn[un] + "(" + kBin[bin] + "(h, x)))",
                 "scan");
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  /// ifelse(c, a, b) on two values of one type, the condition a fresh scalar.
  bool ifelse_step() {
    if (pool_.empty()) return false;
    const PoolValue a = pool_[src_.pick(static_cast<uint32_t>(pool_.size()))];
    std::vector<size_t> same;
    for (size_t i = 0; i < pool_.size(); ++i)
      if (pool_[i].v->type == a.v->type) same.push_back(i);
    const PoolValue b = pool_[same[src_.pick(static_cast<uint32_t>(same.size()))]];
    Pending p;
    Var c = fresh(NDArray::scalar(src_.pick(2), src_.chance(50) ? DType::Int8 : DType::Int64), p);
    try {
      Var out = ifelse(c, a.v, b.v);
      NDArray value = evaluate(out, p);
      commit(p);
      add_result(out, std::move(value), "ifelse(" + c->name + ", " + a.name + ", " + b.name + ")", "ifelse");
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  /// A value times (or plus) a draw of its shape from RandomStreams: the stream's state is a shared
  /// variable with its update, reset before every call so that every mode draws the same numbers.
  bool random_step() {
    std::vector<size_t> c = float_values(0, 3);
    if (c.empty()) return false;
    const PoolValue v = pool_[c[src_.pick(static_cast<uint32_t>(c.size()))]];
    const DType dt = v.value.dtype();
    const uint32_t dist = src_.pick(3);
    RandomStreams rs(src_.pick(1u << 30));
    try {
      Var size = shape(v.v);
      Var draw = dist == 0   ? rs.uniform(size, constant(-1.0, dt), constant(1.0, dt), dt, v.v->ndim())
                 : dist == 1 ? rs.normal(size, constant(0.0, dt), constant(1.0, dt), dt, v.v->ndim())
                             : cast(rs.binomial(size, constant(1.0, DType::Int64), constant(0.5, DType::Float64),
                                                DType::Int64, v.v->ndim()),
                                    dt);
      Var out = src_.chance(50) ? v.v * draw : v.v + draw;
      Pending p;
      for (const auto& [state, next] : rs.state_updates()) p.shared.emplace_back(state, get_value(state).copy());
      NDArray value = evaluate(out, p);
      commit(p);
      for (const auto& [state, next] : rs.state_updates()) {
        g_.updates.emplace_back(state, next);
        rng_states_.push_back(state);
      }
      static const char* const kDist[] = {"uniform", "normal", "binomial"};
      add_result(out, std::move(value), v.name + " with a RandomStreams " + kDist[dist] + " draw", "random_streams");
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  /// float16 as a storage dtype: a float value cast down (or a fresh float16 input or shared
  /// variable, or an earlier float16 result), then one to three elementwise ops on float16 (each
  /// computed in float32 and rounded to float16, in every backend and mode), sometimes a sum, and
  /// sometimes a cast back up. The result joins the pool in float16 (later float16 steps and the
  /// outputs read it); the cast back up joins only when every op was exact in float32 (then both
  /// backends round the same float32 value: a transcendental's last-ulp difference between the
  /// kernels can move a float16 result by a whole float16 ulp, which a later cancellation in
  /// float32 would magnify past the float32 tolerance).
  bool float16_step() {
    Pending p;
    Var h;
    std::string line;
    std::vector<size_t> halves, floats = float_values(0, 3);
    for (size_t i = 0; i < pool_.size(); ++i)
      if (pool_[i].value.dtype() == DType::Float16 && pool_[i].value.size() <= 4096) halves.push_back(i);
    const uint32_t origin = src_.pick(3);
    if (origin == 0 && !halves.empty()) {
      const PoolValue& v = pool_[halves[src_.pick(static_cast<uint32_t>(halves.size()))]];
      h = v.v;
      line = v.name;
    } else if (origin == 1 || floats.empty()) {
      static const Shape kShapes[] = {{}, {5}, {1, 7}, {4, 3}, {33}, {3, 1, 2}};
      const Shape& s = kShapes[src_.pick(6)];
      h = fresh(random_array(s, DType::Float32, -3, 3, src_.pick(1u << 30)).astype(DType::Float16), p);
      line = "a fresh float16 input";
    } else {
      const PoolValue& v = pool_[floats[src_.pick(static_cast<uint32_t>(floats.size()))]];
      h = cast(v.v, DType::Float16);
      line = "cast(" + v.name + ", float16)";
    }
    bool exact = true;
    const int n_ops = 1 + static_cast<int>(src_.pick(3));
    for (int i = 0; i < n_ops; ++i) {
      switch (src_.pick(8)) {
        case 0:
          h = -h;
          line = "neg(" + line + ")";
          break;
        case 1:
          h = abs(h);
          line = "abs(" + line + ")";
          break;
        case 2:
          h = sqr(h);
          line = "sqr(" + line + ")";
          break;
        case 3:
          h = h * constant(0.5, DType::Float16) + constant(0.25, DType::Float16);
          line = line + " * 0.5 + 0.25";
          break;
        case 4:
          h = maximum(h, constant(0.0, DType::Float16));
          line = "relu(" + line + ")";
          break;
        case 5:
          h = h + h * h;
          line = "(" + line + ") + (" + line + ")^2";
          break;
        case 6:
          h = tanh(h);
          line = "tanh(" + line + ")";
          exact = false;
          break;
        default:
          h = sigmoid(h);
          line = "sigmoid(" + line + ")";
          exact = false;
          break;
      }
    }
    if (h->ndim() > 0 && src_.chance(25)) {
      h = sum(h, std::vector<int>{0});
      line = "sum(" + line + ", axis 0)";
      exact = false;  // float32 sums in different orders differ in the last bits
    }
    Var out = h;
    if (exact && src_.chance(40)) {
      out = cast(h, DType::Float32);
      line = "cast(" + line + ", float32)";
    }
    try {
      NDArray value = evaluate(out, p);
      commit(p);
      add_result(out, std::move(value), line, "float16");
      return true;
    } catch (const std::exception&) {
      return false;
    }
  }

  /// Outputs: the last value and some others; then maybe gradients, an Rop and shared updates.
  void finish() {
    if (pool_.empty()) return;
    std::vector<Var> outs;
    for (size_t i = 0; i < pool_.size(); ++i)
      if (!pool_[i].is_input && (i == last_ || src_.chance(30))) outs.push_back(pool_[i].v);
    if (outs.empty()) outs.push_back(pool_.back().v);
    g_.outputs = outs;
    const PoolValue top = pool_[last_];  // a copy: commit() grows the pool
    std::vector<Var> wrt;
    for (const auto& pv : pool_)
      if (pv.is_input && is_float(pv.v->dtype()) && pv.v->dtype() != DType::Float16) wrt.push_back(pv.v);
    bool differentiable = is_float(top.v->dtype()) && top.v->dtype() != DType::Float16 && !top.is_input;
    if (differentiable && !wrt.empty() && src_.chance(40)) {
      Pending p;
      Var w = fresh(random_array(top.value.shape(), top.v->dtype(), -1, 1, src_.pick(1u << 30)), p, top.v->type);
      try {
        GradOptions o;
        o.disconnected_inputs = "ignore";
        std::vector<Var> gs = grad(sum(top.v * w), wrt, o);
        if (std::getenv("HYPATIA_FUZZ_TRACE")) std::cerr << "[fuzz] grads\n" << debugprint(gs) << std::endl;
        std::vector<Var> ins = g_.inputs;
        std::vector<NDArray> vals = g_.values;
        ins.insert(ins.end(), p.inputs.begin(), p.inputs.end());
        vals.insert(vals.end(), p.values.begin(), p.values.end());
        reference_values(ins, vals, gs);
        commit(p);
        for (const Var& gv : gs) g_.outputs.push_back(gv);
        g_.steps.push_back("grad(sum(" + top.name + " * " + w->name + ")) wrt " + std::to_string(wrt.size()) +
                           " inputs");
        g_.used.push_back("grad");
      } catch (const std::exception&) {
        // An op on the path with no gradient.
      }
    }
    if (differentiable && !wrt.empty() && src_.chance(15)) {
      const Var x = wrt[src_.pick(static_cast<uint32_t>(wrt.size()))];
      Pending p;
      NDArray xv = x->is_shared() ? get_value(x)
                                  : g_.values[std::find(g_.inputs.begin(), g_.inputs.end(), x) - g_.inputs.begin()];
      Var e = fresh(random_array(xv.shape(), x->dtype(), -1, 1, src_.pick(1u << 30)), p, x->type);
      try {
        Var r = Rop({top.v}, {x}, {e})[0];
        NDArray value = evaluate(r, p);
        commit(p);
        g_.outputs.push_back(r);
        g_.steps.push_back("Rop(" + top.name + ", " + x->name + ", " + e->name + ")");
        g_.used.push_back("rop");
      } catch (const std::exception&) {
      }
    }
    for (const auto& [s, init] : g_.shared) {
      if (!src_.chance(60) || std::find(rng_states_.begin(), rng_states_.end(), s) != rng_states_.end()) continue;
      std::vector<size_t> c;
      for (size_t i = 0; i < pool_.size(); ++i)
        if (!pool_[i].is_input && pool_[i].v->type == s->type && pool_[i].value.shape() == init.shape()) c.push_back(i);
      if (c.empty()) continue;
      const PoolValue& u = pool_[c[src_.pick(static_cast<uint32_t>(c.size()))]];
      g_.updates.emplace_back(s, u.v);
      g_.steps.push_back("update " + s->name + " <- " + u.name);
      g_.used.push_back("update");
    }
  }

  FuzzSource& src_;
  FuzzGraph& g_;
  std::vector<PoolValue> pool_;
  std::vector<Var> rng_states_;  // RandomStreams states (their updates are the streams')
  size_t last_ = 0;
};

double tolerance(double entry, double fallback) { return std::max(entry, fallback) * 20; }

/// Empty when `got` matches the reference's `want`. With rewrites (every mode but NONE), an element
/// the reference computes as NaN or infinity may be finite: the algebraic cancellations Theano
/// defined (x - x -> 0, 0 * y -> 0) drop the 0 * inf of a graph as written (the gradient of std
/// at a constant input is 0, not NaN). Without rewrites the values must agree exactly in kind.
std::string compare_value(const NDArray& got, const NDArray& want, const FuzzGraph& g, bool rewritten,
                          long* cancelled) {
  if (got.dtype() != want.dtype())
    return std::string("dtype ") + std::string(dtype_name(got.dtype())) + " vs " +
           std::string(dtype_name(want.dtype()));
  DType dt = want.dtype();
  double rtol = is_float(dt) ? tolerance(g.rtol, default_rtol(dt)) : 0;
  double atol = is_float(dt) ? tolerance(g.atol, default_atol(dt)) : 0;
  std::string m = compare_arrays(got, want, rtol, atol);
  if (m.empty() || !rewritten || !is_float(dt) || !(got.shape() == want.shape())) return m;
  long skipped = 0;
  NDArray g2 = got.astype(DType::Float64).copy(), w2 = want.astype(DType::Float64).copy();
  double *gp = g2.data<double>(), *wp = w2.data<double>();
  for (int64_t i = 0; i < w2.size(); ++i)
    if (!std::isfinite(wp[i]) && std::isfinite(gp[i])) {
      gp[i] = wp[i] = 0;
      ++skipped;
    }
  m = compare_arrays(g2, w2, rtol, atol);
  if (m.empty()) *cancelled += skipped;
  return m;
}

}  // namespace

FuzzGraph build_fuzz_graph(FuzzSource& src, int max_steps) {
  FuzzGraph g;
  Builder(src, g).run(max_steps);
  return g;
}

FuzzResult check_fuzz_graph(const FuzzGraph& g) {
  FuzzResult r;
  if (g.outputs.empty()) return r;
  std::vector<Var> ref_outs = g.outputs;
  for (const auto& [s, u] : g.updates) ref_outs.push_back(u);
  for (const auto& [s, init] : g.shared) set_value(s, init.copy());
  std::vector<NDArray> want;
  try {
    want = reference_values(g.inputs, g.values, ref_outs);
  } catch (const std::exception& e) {
    r.failure = std::string("the reference backend failed on the whole graph: ") + e.what();
    return r;
  }
  std::vector<NDArray> saved;
  for (const NDArray& v : g.values) saved.push_back(v.copy());
  std::vector<In> ins(g.inputs.begin(), g.inputs.end());
  std::vector<Out> outs(g.outputs.begin(), g.outputs.end());
  for (const char* mode : {"DebugMode", "FAST_RUN", "FAST_COMPILE", "NONE"}) {
    const bool rewritten = std::string(mode) != "NONE";
    auto fail = [&](const std::string& what) {
      r.failure = std::string(mode) + ": " + what;
      return r;
    };
    FunctionOptions o;
    o.mode = mode;
    o.updates = g.updates;
    o.on_unused_input = "ignore";
    std::vector<NDArray> first;
    try {
      Function f = function(ins, outs, o);
      for (int call = 0; call < 2; ++call) {
        for (const auto& [s, init] : g.shared) set_value(s, init.copy());
        std::vector<NDArray> got = f(g.values);
        for (size_t i = 0; i < got.size(); ++i) {
          std::string m = compare_value(got[i], want[i], g, rewritten, &r.cancelled);
          if (!m.empty()) return fail("output " + std::to_string(i) + " (call " + std::to_string(call + 1) + "): " + m);
          if (call == 1) {
            std::string d = compare_arrays(got[i], first[i], 0, 0);
            if (!d.empty()) return fail("output " + std::to_string(i) + " differs between two calls: " + d);
          }
        }
        for (size_t j = 0; j < g.updates.size(); ++j) {
          std::string m =
              compare_value(get_value(g.updates[j].first), want[g.outputs.size() + j], g, rewritten, &r.cancelled);
          if (!m.empty()) return fail("shared " + g.updates[j].first->name + " after the update: " + m);
        }
        for (size_t i = 0; i < g.values.size(); ++i) {
          std::string m = compare_arrays(g.values[i], saved[i], 0, 0);
          if (!m.empty()) return fail("argument " + g.inputs[i]->name + " was written: " + m);
        }
        if (call == 0) first = std::move(got);
      }
    } catch (const std::exception& e) {
      return fail(std::string("raised where the reference ran: ") + e.what());
    }
  }
  r.ran = true;
  return r;
}

}  // namespace hypatia::testing
