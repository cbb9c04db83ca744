// TileProgram (composite_program.h): planning which scalar steps fold into their neighbours, and
// evaluating the passes on one tile. Compiled without floating-point contraction (CMakeLists.txt)
// so that the scalar fallback of a folded step rounds as the unfused steps do.
#include "hypatia/backends/cpu/composite_program.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "hypatia/backends/cpu/elemwise_simd.h"
#include "hypatia/backends/cpu/half_simd.h"
#include "hypatia/core/error.h"

namespace hypatia {

bool TileProgram::Affine::compose(ScalarOpKind kind, int s, bool s_first) {
  auto negate = [&] {  // -(((v + c0) * c1) + c2) = ((v + c0) * -c1) + -c2, exactly
    if (c[1].set())
      c[1].neg = !c[1].neg;
    else
      c[1] = Slot{-1, true};
    if (c[2].set()) c[2].neg = !c[2].neg;
    stage = std::max(stage, 2);
  };
  switch (kind) {
    case ScalarOpKind::Neg:
      negate();
      return true;
    case ScalarOpKind::Add:
    case ScalarOpKind::Sub:
      if (kind == ScalarOpKind::Sub && s_first) {  // s - v = (v * -1) + s
        if (stage > 2 || c[2].set()) return false;
        negate();
        c[2] = Slot{s, false};
        stage = 3;
        return true;
      }
      // v - s = v + (-s)
      if (stage == 0) {
        c[0] = Slot{s, kind == ScalarOpKind::Sub};
        stage = 1;
      } else if (stage <= 2) {
        c[2] = Slot{s, kind == ScalarOpKind::Sub};
        stage = 3;
      } else {
        return false;
      }
      return true;
    case ScalarOpKind::Mul:
      if (stage > 1) return false;
      c[1] = Slot{s, false};
      stage = 2;
      return true;
    default:
      return false;
  }
}

namespace {

// A Switch step of a fused program: every value is of the program's dtype, its condition too (a
// float mask, dropout's use_noise), true where nonzero, NaN included, as the Elemwise kernel's
// conversion of the condition to bool gives. (The Elemwise loop reads a bool condition: fed a
// float one it read its first byte, and 1.0 was false.)
template <class T>
void switch_on_values(std::byte* out, int64_t os, const std::byte* const* in, const int64_t* is, int64_t n, bool) {
  for (int64_t i = 0; i < n; ++i) {
    T c, a, b;
    std::memcpy(&c, in[0] + i * is[0], sizeof(T));
    std::memcpy(&a, in[1] + i * is[1], sizeof(T));
    std::memcpy(&b, in[2] + i * is[2], sizeof(T));
    const T r = c != T(0) ? a : b;
    std::memcpy(out + i * os, &r, sizeof(T));
  }
}

}  // namespace

TileProgram::Buffers& TileProgram::scratch() {
  struct alignas(64) Aligned {
    Buffers b;
  };
  thread_local std::unique_ptr<Aligned> mine;
  if (!mine) mine = std::make_unique<Aligned>();
  return mine->b;
}

std::vector<bool> TileProgram::scalar_inputs(const Apply& node) {
  std::vector<bool> r;
  for (const Var& v : node.inputs) {
    const auto& bc = v->type.broadcastable;
    r.push_back(std::all_of(bc.begin(), bc.end(), [](bool b) { return b; }));
  }
  return r;
}

bool TileProgram::folds(ScalarOpKind kind, int nargs) const {
  if (!simd_supports(kind, prog_.dtype)) return false;
  // simd_supports: the row of scalar_ops.def says the op has a SIMD loop (unary or binary).
  return nargs == 1 || nargs == 2;
}

bool TileProgram::takes_pre(const CompositeStep& s) const {
  // Rounding and storing float16 apply the map in their conversion loop.
  if (s.kind == ScalarOpKind::Cast) return prog_.value_dtype(s.args[0]) == prog_.dtype;
  return s.args.size() == 1 && folds(s.kind, 1);
}

TileProgram::TileProgram(const std::string& who, const CompositeProgram& prog, const std::vector<int>& outputs,
                         const std::vector<bool>& scalar_inputs)
    : prog_(prog), item_(static_cast<int64_t>(itemsize(prog.dtype))) {
  out_of_.assign(prog.nvalues(), -1);
  for (size_t k = 0; k < outputs.size(); ++k) out_of_[outputs[k]] = static_cast<int>(k);
  // A float16 step value widened back to float32 is read from its rounding's buffer: no buffer
  // of its own (unless it is an output, which a copy writes).
  alias_.resize(prog.nvalues());
  slot_.assign(prog.nvalues(), -1);
  int slots = 0;
  for (int v = 0; v < prog.nvalues(); ++v) {
    alias_[v] = v;
    if (v < prog.nin) continue;
    const CompositeStep& st = prog.steps[v - prog.nin];
    const int a = st.kind == ScalarOpKind::Cast ? st.args[0] : -1;
    if (a >= prog.nin && prog.value_dtype(a) != prog.dtype && out_of_[v] < 0)
      alias_[v] = alias_[a];
    else
      slot_[v] = slots++;
  }
  HYP_ASSERT(prog.nin <= kMaxInputs && slots <= kMaxSteps && static_cast<int>(outputs.size()) <= kMaxOutputs &&
                 !prog.steps.empty(),
             who, ": too many inputs, steps or outputs for the CPU kernel");
  plan(who, outputs, scalar_inputs);
  // A float16 output is stored by a Narrow pass; steps read its rounding from a buffer.
  where_out_ = out_of_;
  for (int v = prog.nin; v < prog.nvalues(); ++v)
    if (prog.value_dtype(v) != prog.dtype) where_out_[v] = -1;
}

void TileProgram::add_exec(const std::string& who, ScalarOpKind kind, std::vector<int> args, const Affine& pre,
                           int dest) {
  auto [fn, writes] = elemwise_inner_fn(Elemwise(kind), prog_.dtype);
  HYP_ASSERT(fn != nullptr && writes == prog_.dtype, who, ": step ", scalar_op_name(kind), " has no ",
             dtype_name(prog_.dtype), " loop");
  if (kind == ScalarOpKind::Switch) dispatch_dtype(prog_.dtype, [&](auto t) { fn = &switch_on_values<decltype(t)>; });
  exec_.push_back(Exec{kind, std::move(args), pre, Affine{}, dest, fn, simd_supports(kind, prog_.dtype)});
}

void TileProgram::plan(const std::string& who, const std::vector<int>& outputs,
                       const std::vector<bool>& scalar_inputs) {
  const int nin = prog_.nin, nval = prog_.nvalues();
  const bool fold = prog_.dtype == DType::Float32 || prog_.dtype == DType::Float64;
  auto scalar = [&](int v) { return v < nin && v < static_cast<int>(scalar_inputs.size()) && scalar_inputs[v]; };
  std::vector<int> uses(nval, 0);
  for (const auto& s : prog_.steps)
    for (int a : s.args) ++uses[a];
  std::vector<int> wanted = outputs;
  if (wanted.empty()) wanted.push_back(nval - 1);
  for (int v : wanted) ++uses[v];

  // Pass 1: which step values are affine maps of another value (virtual), and which of those
  // must still be stored (an output, or the argument of a step that cannot fold them).
  std::vector<bool> virt(nval, false), need(nval, false);
  std::vector<int> base(nval), link(nval, -1);
  std::vector<Affine> aff(nval);
  for (int v = 0; v < nval; ++v) base[v] = v;
  for (size_t j = 0; j < prog_.steps.size(); ++j) {
    const auto& s = prog_.steps[j];
    const int v = nin + static_cast<int>(j);
    const int na = static_cast<int>(s.args.size());
    int other = -1, sc = -1;
    bool s_first = false;
    if (fold && na == 1 && s.kind == ScalarOpKind::Neg) {
      other = s.args[0];
    } else if (fold && na == 2 &&
               (s.kind == ScalarOpKind::Add || s.kind == ScalarOpKind::Sub || s.kind == ScalarOpKind::Mul) &&
               scalar(s.args[0]) != scalar(s.args[1])) {
      s_first = scalar(s.args[0]);
      sc = s.args[s_first ? 0 : 1];
      other = s.args[s_first ? 1 : 0];
    }
    if (other >= 0) {
      Affine a = virt[other] ? aff[other] : Affine{};
      int b = virt[other] ? base[other] : other;
      if (!a.compose(s.kind, sc, s_first)) {  // start a new map on the stored `other`
        need[other] = true;
        a = Affine{};
        b = other;
        a.compose(s.kind, sc, s_first);
      }
      virt[v] = true;
      base[v] = b;
      aff[v] = a;
      link[v] = other;
      continue;
    }
    for (int a : s.args)
      if (virt[a] && !takes_pre(s)) need[a] = true;
  }
  for (int v : wanted)
    if (virt[v]) need[v] = true;

  // Pass 2: the passes, in step order. A stored map of value b becomes b's pass's post map when
  // that pass is the latest and nothing else reads b or the values between; else its own pass.
  std::vector<int> exec_of(nval, -1);
  for (size_t j = 0; j < prog_.steps.size(); ++j) {
    const auto& s = prog_.steps[j];
    const int v = nin + static_cast<int>(j);
    if (virt[v]) {
      if (!need[v]) continue;
      const int b = base[v];
      bool chain = b >= nin && !virt[b] && exec_of[b] >= 0 && exec_of[b] == static_cast<int>(exec_.size()) - 1;
      std::vector<bool> on_chain(nval, false);
      on_chain[v] = true;
      for (int w = link[v]; chain && w != b; w = link[w]) {
        chain = uses[w] == 1 && !need[w];
        on_chain[w] = true;
      }
      chain = chain && uses[b] == 1 && out_of_[b] < 0;
      // b's own value is gone once its pass writes v: no other map may be based on it (as
      // exp(x) * 2 is, when exp(x) - 1.5 is stored and exp(x) * 2 is computed from exp(x)).
      for (int w = nin; chain && w < nval; ++w) chain = !(virt[w] && base[w] == b && !on_chain[w]);
      if (chain) {
        Exec& e = exec_[exec_of[b]];
        chain = e.half == Half::None && e.post.identity() && folds(e.kind, static_cast<int>(e.args.size()));
        if (chain) {
          e.post = aff[v];
          e.dest = v;
          exec_of[v] = exec_of[b];
          continue;
        }
      }
      add_exec(who, ScalarOpKind::Identity, {b}, aff[v], v);
      exec_of[v] = static_cast<int>(exec_.size()) - 1;
      continue;
    }
    Affine pre;
    std::vector<int> args = s.args;
    if (args.size() == 1 && virt[args[0]] && !need[args[0]]) {
      pre = aff[args[0]];
      args[0] = base[args[0]];
    }
    if (s.kind == ScalarOpKind::Cast) {
      // Steps reading v: its uses less its own output's.
      plan_cast(who, v, args[0], pre, uses[v] - (out_of_[v] >= 0 ? 1 : 0), exec_of);
      continue;
    }
    add_exec(who, s.kind, std::move(args), pre, v);
    exec_of[v] = static_cast<int>(exec_.size()) - 1;
  }
}

void TileProgram::plan_cast(const std::string& who, int v, int arg, const Affine& pre, int readers,
                            std::vector<int>& exec_of) {
  auto push = [&](Half h, int from, const Affine& map) {
    exec_.push_back(Exec{ScalarOpKind::Cast, {from}, map, Affine{}, v, nullptr, false, h});
    exec_of[v] = static_cast<int>(exec_.size()) - 1;
  };
  if (prog_.value_dtype(v) == prog_.dtype) {  // float16 -> float32
    if (arg < prog_.nin) return push(Half::Widen, arg, Affine{});
    // The rounded tile already holds the value: read it there, or copy it to the output.
    if (alias_[v] != v) return;
    add_exec(who, ScalarOpKind::Identity, {arg}, pre, v);
    exec_of[v] = static_cast<int>(exec_.size()) - 1;
    return;
  }
  // float32 -> float16: round into a buffer when steps read the value, store when it is an output.
  const bool store = out_of_[v] >= 0;
  if (readers > 0 || !store) push(Half::Round, arg, pre);
  if (store) readers > 0 ? push(Half::Narrow, v, Affine{}) : push(Half::Narrow, arg, pre);
}

void TileProgram::constants(const Affine& a, const std::byte* const* in, double* c) const {
  for (int k = 0; k < 3; ++k) {
    const Slot& s = a.c[k];
    double v;
    if (s.input < 0)
      v = k == 1 ? 1.0 : -0.0;
    else if (prog_.dtype == DType::Float32)
      v = *reinterpret_cast<const float*>(in[s.input]);
    else
      v = *reinterpret_cast<const double*>(in[s.input]);
    c[k] = s.neg ? -v : v;
  }
}

namespace {

/// x = ((x + c0) * c1) + c2 over m strided elements (the fallback of a folded step).
template <class T>
void affine_strided(const std::byte* src, int64_t ss, std::byte* dst, int64_t ds, int64_t m, const double* c) {
  const T c0 = static_cast<T>(c[0]), c1 = static_cast<T>(c[1]), c2 = static_cast<T>(c[2]);
  for (int64_t i = 0; i < m; ++i) {
    const T x = *reinterpret_cast<const T*>(src + i * ss);
    const T s = x + c0;
    const T p = s * c1;
    *reinterpret_cast<T*>(dst + i * ds) = p + c2;
  }
}

}  // namespace

void TileProgram::eval(const std::byte* const* in, const int64_t* is, std::byte* const* out, const int64_t* os,
                       int64_t m, Buffers& buf) const {
  const int nin = prog_.nin;
  auto where = [&](int v, const std::byte*& p, int64_t& st) {
    v = alias_[v];
    if (v < nin) {
      p = in[v];
      st = is[v];
    } else if (const int o = where_out_[v]; o >= 0) {
      p = out[o];
      st = os[o];
    } else {
      p = reinterpret_cast<const std::byte*>(buf[slot_[v]].data());
      st = item_;
    }
  };
  for (const Exec& e : exec_) {
    std::array<const std::byte*, 3> ptr{};
    std::array<int64_t, 3> str{};
    const int na = static_cast<int>(e.args.size());
    for (int k = 0; k < na; ++k) where(e.args[k], ptr[k], str[k]);
    const std::byte* dst_c;
    int64_t ds;
    if (e.half == Half::Narrow) {
      const int o = out_of_[e.dest];
      dst_c = out[o];
      ds = os[o];
    } else {
      where(e.dest, dst_c, ds);
    }
    if (e.half != Half::None)
      run_half(e, ptr[0], str[0], const_cast<std::byte*>(dst_c), ds, in, m, buf);
    else
      run_exec(e, ptr, str, const_cast<std::byte*>(dst_c), ds, in, m, buf);
  }
}

void TileProgram::run_half(const Exec& e, const std::byte* src, int64_t ss, std::byte* dst, int64_t ds,
                           const std::byte* const* in, int64_t m, Buffers& buf) const {
  constexpr int64_t kF = sizeof(float), kH = sizeof(half);
  if (e.half == Half::Widen) {
    if (ss == kH && ds == kF)
      return cpu::widen_f16(reinterpret_cast<const half*>(src), reinterpret_cast<float*>(dst), m);
    for (int64_t i = 0; i < m; ++i)
      *reinterpret_cast<float*>(dst + i * ds) = reinterpret_cast<const half*>(src + i * ss)->to_float();
    return;
  }
  double c[3];
  constants(e.pre, in, c);
  const float cf[3] = {static_cast<float>(c[0]), static_cast<float>(c[1]), static_cast<float>(c[2])};
  const float* map = e.pre.identity() ? nullptr : cf;
  const auto* x = reinterpret_cast<const float*>(src);
  // Strided sources, and maps before a strided store, go through the spare buffer first.
  if (ss != kF || (map && e.half == Half::Narrow && ds != kH)) {
    auto* tmp = reinterpret_cast<std::byte*>(buf[kMaxSteps].data());
    affine_strided<float>(src, ss, tmp, kF, m, c);
    x = reinterpret_cast<const float*>(tmp);
    map = nullptr;
  }
  if (e.half == Half::Round) return cpu::round_f16(x, reinterpret_cast<float*>(dst), m, map);
  if (ds == kH) return cpu::narrow_f16(x, reinterpret_cast<half*>(dst), m, map);
  for (int64_t i = 0; i < m; ++i) *reinterpret_cast<half*>(dst + i * ds) = half(x[i]);
}

void TileProgram::run_exec(const Exec& e, std::array<const std::byte*, 3>& ptr, std::array<int64_t, 3>& str,
                           std::byte* dst, int64_t ds, const std::byte* const* in, int64_t m, Buffers& buf) const {
  const int na = static_cast<int>(e.args.size());
  const bool f32 = prog_.dtype == DType::Float32;
  const bool has_pre = !e.pre.identity(), has_post = !e.post.identity();
  if (!has_pre && !has_post) return e.fn(dst, ds, ptr.data(), str.data(), m, e.simd);
  double c[6];
  constants(e.pre, in, c);
  constants(e.post, in, c + 3);
  bool flat = e.simd && ds == item_ && m >= 8;
  for (int k = 0; k < na; ++k) flat = flat && (str[k] == item_ || (na == 2 && str[k] == 0));
  if (flat && na == 1) return simd_unary(e.kind, prog_.dtype, ptr[0], dst, m, c);
  if (flat && na == 2) return simd_binary(e.kind, prog_.dtype, ptr[0], str[0] == 0, ptr[1], str[1] == 0, dst, m, c + 3);
  // Strided operands or few elements: the pre map into the spare buffer, the step, the post map
  // in place.
  if (has_pre) {
    auto* tmp = reinterpret_cast<std::byte*>(buf[kMaxSteps].data());
    (f32 ? affine_strided<float> : affine_strided<double>)(ptr[0], str[0], tmp, item_, m, c);
    ptr[0] = tmp;
    str[0] = item_;
  }
  e.fn(dst, ds, ptr.data(), str.data(), m, e.simd);
  if (has_post) (f32 ? affine_strided<float> : affine_strided<double>)(dst, ds, dst, ds, m, c + 3);
}

}  // namespace hypatia
