// Kernels of Scan (the loop: the body, a sub-program, once per step) and ScanGrad (BPTT: the
// body's vector-Jacobian product from the last step back). The same kernels serve every host
// backend, and Scan's every device backend (scan_kernels.h); the body runs on the backend that
// runs the node.
#include "hypatia/backends/scan_kernels.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>

#include "hypatia/backends/backend.h"
#include "hypatia/backends/ifelse_kernels.h"
#include "hypatia/core/cancel.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/ifelse.h"
#include "hypatia/ops/scan.h"

namespace hypatia {
namespace {

/// Writes the element pointer p into a kernel's pointer slot (InnerRunner::scalar_slots).
void bind_scalar(void* slot, const std::byte* p) { std::memcpy(slot, &p, sizeof p); }

std::string who_of(const ScanInfo& info, const char* what) {
  return std::string(what) + (info.name.empty() ? "" : "{" + info.name + "}");
}

Shape element_shape(const NDArray& a) { return Shape(a.shape().begin() + 1, a.shape().end()); }

Shape with_length(int64_t n, const Shape& elem) {
  Shape s = elem;
  s.insert(0, n);
  return s;
}

/// Checks the sequences against n steps and returns the number of steps each can give.
void check_sequences(const std::string& who, const ScanInfo& info, const KernelArgs& a, int64_t n) {
  for (size_t s = 0; s < info.seq_taps.size(); ++s) {
    const NDArray& x = *a.in[1 + s];
    const int64_t span = info.seq_taps[s].back() - info.seq_taps[s].front();
    if (x.ndim() < 1 || x.shape(0) < n + span)
      fail<ValueError>(who, ": sequence ", s, " has ", x.ndim() < 1 ? 0 : x.shape(0), " entries; ", n,
                       " steps with taps [", info.seq_taps[s].front(), ", ", info.seq_taps[s].back(), "] need ",
                       n + span);
  }
}

/// The initial window of state k, checked (at least window() entries on the first axis; the last
/// window() are used, as Theano takes the initial values nearest the first step).
NDArray window_of(const std::string& who, const ScanInfo& info, const KernelArgs& a, size_t k) {
  const NDArray& w = *a.in[1 + info.seq_taps.size() + k];
  const int64_t need = info.window(static_cast<int>(k));
  if (w.ndim() < 1 || w.shape(0) < need)
    fail<ValueError>(who, ": state ", k, " reads ", need, " past values (taps down to ", info.state_taps[k].front(),
                     ") but its initial value has ", w.ndim() < 1 ? 0 : w.shape(0), " entries on its first axis");
  return w.shape(0) == need ? w : w.slice(0, w.shape(0) - need, w.shape(0), 1);
}

bool truthy(const NDArray& c) { return c.size() > 0 && c.get_flat(0) != 0.0; }

/// dst = src for a step's row: one memcpy when both are contiguous (the common case), else assign.
void copy_row(const NDArray& dst, const NDArray& src) {
  if (src.dtype() == dst.dtype() && src.is_c_contiguous() && dst.is_c_contiguous())
    std::memcpy(dst.data<std::byte>(), src.data<std::byte>(), static_cast<size_t>(src.nbytes()));
  else
    dst.assign(src);
}

/// Whether a 0-d element of dtype `dt` at p is non-zero (an until condition).
bool element_true(const std::byte* p, DType dt) {
  return dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v != T(0);
  });
}

/// Drops the runner's references to the loop's buffers when the kernel returns or throws.
struct ReleaseRunner {
  InnerRunner* r;
  ~ReleaseRunner() { r->release(); }
};

class ScanKernel final : public Kernel {
 public:
  ScanKernel(const Scan& op, LoopMemory mem) : op_(op), mem_(std::move(mem)) {}
  void bind_inner(std::vector<std::shared_ptr<InnerProgram>> programs) override {
    body_ = std::move(programs.at(0));
    runner_ = body_->runner();
    scalar_ = runner_->scalar() && mem_.device.is_host();  // (element pointers are host pointers)
  }

  void run(const KernelArgs& a) override {
    const ScanInfo& info = op_.info;
    const std::string who = who_of(info, "Scan");
    if (!body_) fail<NotImplementedError>(who, ": its body is compiled only within a function");
    const int64_t n = a.in[0]->get_flat_int(0);
    if (n < 0) fail<ValueError>(who, ": n_steps is negative (", n, ")");
    check_sequences(who, info, a, n);
    const size_t n_state = info.state_taps.size();
    const size_t n_nitsot = static_cast<size_t>(info.n_nitsot);
    // State buffers: the initial window then one row per step; an untraced state keeps a ring of
    // window + 1 rows (step t writes row (window + t) mod L and reads the window before it). On
    // elements every ring has the longest such length, so that the loop's element pointers repeat
    // with one period (scalar_steps).
    Loop L;
    L.buf.resize(n_state);
    L.win.resize(n_state);
    L.len.resize(n_state);
    int64_t ring = 1;
    for (size_t k = 0; k < n_state; ++k) ring = std::max<int64_t>(ring, info.window(static_cast<int>(k)) + 1);
    for (size_t k = 0; k < n_state; ++k) {
      const NDArray w = window_of(who, info, a, k);
      L.win[k] = info.window(static_cast<int>(k));
      const int64_t traced_rows =
          scalar_ ? n : first_rows(n, element_shape(w).prod() * static_cast<int64_t>(w.itemsize()));
      L.len[k] = info.state_traced[k] ? L.win[k] + traced_rows : scalar_ ? ring : L.win[k] + 1;
      L.buf[k] = mem_.empty(with_length(L.len[k], element_shape(w)), w.dtype());
      mem_.copy(L.buf[k].slice(0, 0, L.win[k], 1), w);
    }
    L.nitsot.resize(n_nitsot);
    int64_t done = 0;
    {
      ReleaseRunner release{runner_.get()};
      done = scalar_ ? scalar_steps(a, n, L) : array_steps(who, a, n, L);
    }
    last_steps_ = done;
    // Outputs: traces (the rows of the steps run), final values, nit-sot traces.
    for (size_t k = 0; k < n_state; ++k) {
      if (info.state_traced[k]) {
        *a.out[k] = L.buf[k].slice(0, L.win[k], L.win[k] + done, 1);
        continue;
      }
      if (done == 0 && k < info.state_last_of_trace.size() && info.state_last_of_trace[k])
        fail<IndexError>(who, ": output ", k, " is the last step of a loop that ran no step (index -1 is out of ",
                         "bounds for axis 0 with size 0)");
      const NDArray last = L.buf[k].select(0, (L.win[k] + done - 1) % L.len[k]);
      *a.out[k] = mem_.empty(last.shape(), last.dtype());
      mem_.copy(*a.out[k], last);
    }
    for (size_t j = 0; j < n_nitsot; ++j) {
      if (L.nitsot[j].valid() && done > 0) {
        *a.out[n_state + j] = L.nitsot[j].slice(0, 0, done, 1);
      } else {
        // No step ran: the element shape is unknown; zeros on every axis but broadcastable ones.
        const TensorType& t = op_.inner_outputs[n_state + j]->type;
        Shape s{0};
        for (int d = 0; d < t.ndim(); ++d) s.push_back(t.broadcastable[d] ? 1 : 0);
        *a.out[n_state + j] = mem_.empty(s, t.dtype);  // (no element)
      }
    }
  }

 private:
  /// The rows a trace of `row_bytes` per step starts with (on arrays): all n_steps, but for an
  /// until loop, whose n_steps is a bound often far above the steps it runs, as many as its last
  /// call ran, and at least 64 MiB' worth (and kUntilRows), doubled as the steps need (grow_rows).
  /// (A fresh buffer costs page faults on the host, about 0.6 ms per MB written on the 2-core
  /// VM: allocating a 1 GiB bound took 89 ms per call against 17 ms for the 150 MB written; a
  /// trace of the last call's size comes from the allocator's cache, as a fixed loop's does.)
  static constexpr int64_t kUntilRows = 64, kUntilBytes = int64_t{64} << 20;
  int64_t first_rows(int64_t n, int64_t row_bytes) const {
    if (!op_.info.until) return n;
    return std::min(n, std::max({kUntilRows, kUntilBytes / std::max<int64_t>(1, row_bytes), last_steps_}));
  }
  /// The steps the last call ran (an until loop's first_rows).
  int64_t last_steps_ = 0;

  /// The loop's buffers: per state its buffer, window and length; per nit-sot output its trace.
  struct Loop {
    std::vector<NDArray> buf;
    std::vector<int64_t> win, len;
    std::vector<NDArray> nitsot;
  };

  /// `buf` (rows along axis 0, the first `used` of them written) with room for at least `need`
  /// rows, at most `most`: twice as many rows, the written ones copied over.
  NDArray grow_rows(const NDArray& buf, int64_t used, int64_t need, int64_t most) const {
    const int64_t rows = std::min(most, std::max(need, 2 * buf.shape(0)));
    Shape s = buf.shape();
    s[0] = rows;
    NDArray bigger = mem_.empty(s, buf.dtype());
    if (used > 0) mem_.copy(bigger.slice(0, 0, used, 1), buf.slice(0, 0, used, 1));
    return bigger;
  }

  /// Steps on arrays (the body's runner per step, outputs copied into the buffers); returns the
  /// number of steps run.
  int64_t array_steps(const std::string& who, const KernelArgs& a, int64_t n, Loop& L) {
    const ScanInfo& info = op_.info;
    const size_t n_seq = info.seq_taps.size(), n_state = info.state_taps.size();
    const size_t n_nitsot = static_cast<size_t>(info.n_nitsot);
    auto row_of = [&](size_t k, int64_t pos) { return L.buf[k].select(0, pos % L.len[k]); };
    args_.assign(op_.inner_inputs.size(), NDArray());
    outs_.resize(op_.inner_outputs.size());
    const size_t ns_base = static_cast<size_t>(info.n_seq_inputs() + info.n_state_inputs());
    for (int j = 0; j < info.n_nonseq; ++j) args_[ns_base + j] = *a.in[1 + n_seq + n_state + j];
    int64_t done = n;
    for (int64_t t = 0; t < n; ++t) {
      // A traced state's buffer (an until loop's starts short) has room for this step's row.
      for (size_t k = 0; k < n_state; ++k)
        if (info.state_traced[k] && L.win[k] + t >= L.len[k]) {
          L.buf[k] = grow_rows(L.buf[k], L.win[k] + t, L.win[k] + t + 1, L.win[k] + n);
          L.len[k] = L.buf[k].shape(0);
        }
      size_t i = 0;
      for (size_t s = 0; s < n_seq; ++s)
        for (int tap : info.seq_taps[s]) args_[i++] = a.in[1 + s]->select(0, t + tap - info.seq_taps[s].front());
      for (size_t k = 0; k < n_state; ++k)
        for (int tap : info.state_taps[k]) args_[i++] = row_of(k, L.win[k] + t + tap);
      runner_->run(args_, outs_);
      for (size_t k = 0; k < n_state; ++k) {
        const NDArray row = row_of(k, L.win[k] + t);
        if (!(outs_[k].shape() == row.shape()))
          fail<ValueError>(who, ": at step ", t, " the body's output ", k, " has shape ", outs_[k].shape().str(),
                           " but its state has shape ", row.shape().str(),
                           " (a recurrent state keeps the shape of its initial value)");
        mem_.copy(row, outs_[k]);
      }
      for (size_t j = 0; j < n_nitsot; ++j) {
        const NDArray& v = outs_[n_state + j];
        if (t == 0)
          L.nitsot[j] = mem_.empty(with_length(first_rows(n, v.size() * static_cast<int64_t>(v.itemsize())), v.shape()),
                                   v.dtype());
        if (t >= L.nitsot[j].shape(0)) L.nitsot[j] = grow_rows(L.nitsot[j], t, t + 1, n);
        const NDArray row = L.nitsot[j].select(0, t);
        if (!(v.shape() == row.shape()))
          fail<ValueError>(who, ": at step ", t, " the body's output ", n_state + j, " has shape ", v.shape().str(),
                           "; earlier steps gave ", row.shape().str());
        mem_.copy(row, v);
      }
      if (info.until && outs_.back().size() > 0 && mem_.truthy(outs_.back())) {
        done = t + 1;
        break;
      }
      check_cancelled();
    }
    for (auto& x : args_) x = NDArray();
    for (auto& x : outs_) x = NDArray();
    return done;
  }

  /// Steps on elements, for a body of 0-d values whose kernels all have a scalar path: each step
  /// reads its inputs where they lie (sequence entries, state rows) and writes its outputs into
  /// the buffers' rows, with no array built per step. The element pointers are laid out before
  /// the loop: one table per phase of the rings (they share one length, so the pointers into them
  /// repeat with that period), and the pointers that advance with t (sequences, traced states,
  /// nit-sots) as base + t * stride. Returns the number of steps run.
  int64_t scalar_steps(const KernelArgs& a, int64_t n, Loop& L) {
    const ScanInfo& info = op_.info;
    const size_t n_seq = info.seq_taps.size(), n_state = info.state_taps.size();
    const size_t n_nitsot = static_cast<size_t>(info.n_nitsot);
    const size_t n_in = op_.inner_inputs.size(), n_out = op_.inner_outputs.size();
    int64_t period = 1;
    for (size_t k = 0; k < n_state; ++k)
      if (!info.state_traced[k]) period = L.len[k];
    std::vector<const std::byte*> in_tab(static_cast<size_t>(period) * n_in);
    std::vector<std::byte*> out_tab(static_cast<size_t>(period) * n_out);
    std::vector<Moving> in_moving, out_moving;
    size_t i = 0;
    for (size_t s = 0; s < n_seq; ++s) {
      const NDArray& x = *a.in[1 + s];
      for (int tap : info.seq_taps[s])
        in_moving.push_back(
            {static_cast<uint32_t>(i++), x.raw() + (tap - info.seq_taps[s].front()) * x.strides()[0], x.strides()[0]});
    }
    for (size_t k = 0; k < n_state; ++k) {
      std::byte* base = L.buf[k].raw();
      const int64_t isz = static_cast<int64_t>(L.buf[k].itemsize()), head = L.win[k] % L.len[k];
      for (int tap : info.state_taps[k]) {
        if (info.state_traced[k]) {
          in_moving.push_back({static_cast<uint32_t>(i), base + (head + tap) * isz, isz});
        } else {
          for (int64_t p = 0; p < period; ++p)
            in_tab[static_cast<size_t>(p) * n_in + i] = base + ((head + p + tap + L.len[k]) % L.len[k]) * isz;
        }
        ++i;
      }
      if (info.state_traced[k]) {
        out_moving.push_back({static_cast<uint32_t>(k), base + head * isz, isz});
      } else {
        for (int64_t p = 0; p < period; ++p)
          out_tab[static_cast<size_t>(p) * n_out + k] = base + ((head + p) % L.len[k]) * isz;
      }
    }
    for (int j = 0; j < info.n_nonseq; ++j, ++i)
      for (int64_t p = 0; p < period; ++p)
        in_tab[static_cast<size_t>(p) * n_in + i] = a.in[1 + n_seq + n_state + static_cast<size_t>(j)]->raw();
    for (size_t j = 0; j < n_nitsot; ++j) {
      const DType dt = op_.inner_outputs[n_state + j]->type.dtype;
      if (n > 0) L.nitsot[j] = NDArray::empty({n}, dt);
      out_moving.push_back({static_cast<uint32_t>(n_state + j), L.nitsot[j].raw(), static_cast<int64_t>(itemsize(dt))});
    }
    uint64_t cond = 0;
    const DType cond_dtype = op_.inner_outputs.back()->type.dtype;
    if (info.until)
      for (int64_t p = 0; p < period; ++p)
        out_tab[static_cast<size_t>(p) * n_out + n_out - 1] = reinterpret_cast<std::byte*>(&cond);
    InnerRunner& body = *runner_;
    std::vector<std::vector<void*>> in_slots, out_slots;
    if (body.scalar_slots(in_slots, out_slots))
      return bound_steps(n, period, in_tab, out_tab, in_moving, out_moving, in_slots, out_slots, cond, cond_dtype);
    // Locals the loop keeps in registers across the body's calls.
    const Moving *in_m = in_moving.data(), *in_m_end = in_m + in_moving.size();
    const Moving *out_m = out_moving.data(), *out_m_end = out_m + out_moving.size();
    const std::byte** in = in_tab.data();
    std::byte** out = out_tab.data();
    const bool until = info.until;
    int64_t p = 0;
    for (int64_t t = 0; t < n; ++t) {
      for (const Moving* m = in_m; m != in_m_end; ++m) in[m->slot] = m->base + t * m->stride;
      for (const Moving* m = out_m; m != out_m_end; ++m) out[m->slot] = const_cast<std::byte*>(m->base) + t * m->stride;
      body.run_scalars(in, out);
      if (++p == period) {
        p = 0;
        in = in_tab.data();
        out = out_tab.data();
      } else {
        in += n_in;
        out += n_out;
      }
      if (until && element_true(reinterpret_cast<const std::byte*>(&cond), cond_dtype)) return t + 1;
      check_cancelled();
    }
    return n;
  }

  struct Moving {
    uint32_t slot;
    const std::byte* base;
    int64_t stride;
  };

  /// scalar_steps when the body takes its element pointers in slots of its own
  /// (InnerRunner::scalar_slots): each step writes only the pointers that change into those
  /// slots (the moving ones, and the ring entries that differ between phases; the rest once).
  int64_t bound_steps(int64_t n, int64_t period, const std::vector<const std::byte*>& in_tab,
                      const std::vector<std::byte*>& out_tab, const std::vector<Moving>& in_moving,
                      const std::vector<Moving>& out_moving, const std::vector<std::vector<void*>>& in_slots,
                      const std::vector<std::vector<void*>>& out_slots, const uint64_t& cond, DType cond_dtype) {
    const size_t n_in = in_slots.size(), n_out = out_slots.size();
    struct Move {
      void* slot;
      const std::byte* base;
      int64_t stride;
    };
    struct Put {
      void* slot;
      const std::byte* ptr;
    };
    std::vector<Move> moves;
    std::vector<std::vector<Put>> puts(static_cast<size_t>(period));
    std::vector<bool> in_moves(n_in, false), out_moves(n_out, false);
    for (const Moving& m : in_moving) {
      in_moves[m.slot] = true;
      for (void* s : in_slots[m.slot]) moves.push_back({s, m.base, m.stride});
    }
    for (const Moving& m : out_moving) {
      out_moves[m.slot] = true;
      for (void* s : out_slots[m.slot]) moves.push_back({s, m.base, m.stride});
    }
    // A table entry: bound once when every phase has the same pointer, else per phase.
    auto place = [&](const std::vector<void*>& slots, auto at) {
      bool same = true;
      for (int64_t p = 1; p < period; ++p) same = same && at(p) == at(0);
      for (void* s : slots) {
        if (same) {
          bind_scalar(s, at(0));
        } else {
          for (int64_t p = 0; p < period; ++p) puts[static_cast<size_t>(p)].push_back({s, at(p)});
        }
      }
    };
    for (size_t i = 0; i < n_in; ++i)
      if (!in_moves[i]) place(in_slots[i], [&](int64_t p) { return in_tab[static_cast<size_t>(p) * n_in + i]; });
    for (size_t k = 0; k < n_out; ++k)
      if (!out_moves[k])
        place(out_slots[k], [&](int64_t p) -> const std::byte* { return out_tab[static_cast<size_t>(p) * n_out + k]; });
    const Move *mv = moves.data(), *mv_end = mv + moves.size();
    const bool until = op_.info.until;
    InnerRunner& body = *runner_;
    int64_t p = 0;
    for (int64_t t = 0; t < n; ++t) {
      for (const Move* m = mv; m != mv_end; ++m) bind_scalar(m->slot, m->base + t * m->stride);
      for (const Put& q : puts[static_cast<size_t>(p)]) bind_scalar(q.slot, q.ptr);
      body.run_bound();
      if (++p == period) p = 0;
      if (until && element_true(reinterpret_cast<const std::byte*>(&cond), cond_dtype)) return t + 1;
      check_cancelled();
    }
    return n;
  }

  const Scan& op_;
  LoopMemory mem_;
  std::shared_ptr<InnerProgram> body_;
  std::unique_ptr<InnerRunner> runner_;
  bool scalar_ = false;
  std::vector<NDArray> args_, outs_;
};

/// dst += src elementwise in host memory (same shape; dst writeable, float).
void add_host(const NDArray& dst, const NDArray& src) {
  const NDArray s = src.dtype() == dst.dtype() ? src.ascontiguous() : src.astype(dst.dtype());
  NDArray d = dst.is_c_contiguous() ? dst : dst.copy();
  const int64_t n = d.size();
  dispatch_dtype(d.dtype(), [&](auto tag) {
    using T = decltype(tag);
    T* __restrict o = d.data<T>();
    const T* __restrict x = s.data<T>();
    for (int64_t i = 0; i < n; ++i) o[i] = static_cast<T>(o[i] + x[i]);
  });
  if (d.data<std::byte>() != dst.data<std::byte>()) dst.assign(d);
}

class ScanGradKernel final : public Kernel {
 public:
  ScanGradKernel(const ScanGrad& op, LoopMemory mem) : op_(op), mem_(std::move(mem)) {}
  void bind_inner(std::vector<std::shared_ptr<InnerProgram>> programs) override {
    body_ = std::move(programs.at(0));
    runner_ = body_->runner();
  }

  void run(const KernelArgs& a) override {
    const ScanInfo& info = op_.info;
    const std::string who = who_of(info, "ScanGrad");
    if (!body_) fail<NotImplementedError>(who, ": its body is compiled only within a function");
    const size_t n_seq = info.seq_taps.size(), n_state = info.state_taps.size();
    const size_t n_fwd = op_.forward_input_types.size();
    const size_t n_outs = n_state + static_cast<size_t>(info.n_nitsot);
    const size_t n_nonseq = static_cast<size_t>(info.n_nonseq);
    const size_t n_nitsot = static_cast<size_t>(info.n_nitsot);
    const size_t g_base = n_fwd + n_outs;  // the output gradients follow the traces
    // The steps the forward pass ran: the traces' length (until may stop early).
    int64_t n = a.in[0]->get_flat_int(0);
    if (n_outs > 0) n = a.in[n_fwd]->shape(0);
    check_sequences(who, info, a, n);
    // Per output, the step whose gradient a Row or Last form gives (-1: none, or no step ran).
    using Form = ScanGrad::OutputGradient::Form;
    std::vector<int64_t> g_step(n_outs, -1);
    std::vector<NDArray> g_row(n_outs);  // that gradient, broadcast to a step's shape
    for (size_t o = 0; o < n_outs; ++o) {
      const ScanGrad::OutputGradient& f = op_.g_form[o];
      if (f.form != Form::Row && f.form != Form::Last) continue;
      const int64_t k = f.form == Form::Last ? n - 1 : f.row < 0 ? f.row + n : f.row;
      if (f.form == Form::Row && (k < 0 || k >= n))
        fail<IndexError>(who, ": the gradient of output ", o, " is given at step ", f.row,
                         ", out of bounds for a trace of ", n, " steps");
      g_step[o] = k;
      const NDArray& v = *a.in[g_base + o];
      const Shape elem = element_shape(*a.in[n_fwd + o]);
      bool fits = v.ndim() <= static_cast<int>(elem.size());
      for (int d = 1; fits && d <= v.ndim(); ++d)
        fits = v.shape(v.ndim() - d) == 1 || v.shape(v.ndim() - d) == elem[static_cast<int>(elem.size()) - d];
      if (!fits)
        fail<ValueError>(who, ": the gradient of output ", o, " at step ", f.row, " has shape ", v.shape().str(),
                         "; the output's steps have shape ", elem.str());
      g_row[o] = v.broadcast_to(elem);
    }
    // State values: position p < window is the initial window's row p, else trace row p - window.
    // Their pending gradients: a ring of window + 1 cells (step t consumes position window + t
    // and adds into the window before it; the consumed cell serves position t - 1). A cell is an
    // array of its own, or empty for zeros: a step's gradient lands in an empty cell by taking
    // over the body's output buffer, and a consumed cell becomes the step's cotangent as it is,
    // so an RNN's state gradient is neither added to zeros nor copied between steps.
    std::vector<NDArray> windows(n_state);
    std::vector<std::vector<NDArray>> pend(n_state);
    std::vector<int64_t> win(n_state);
    for (size_t k = 0; k < n_state; ++k) {
      windows[k] = window_of(who, info, a, k);
      win[k] = info.window(static_cast<int>(k));
      pend[k].resize(static_cast<size_t>(win[k] + 1));
    }
    auto value_at = [&](size_t k, int64_t p) {
      return p < win[k] ? windows[k].select(0, p) : a.in[n_fwd + k]->select(0, p - win[k]);
    };
    auto cell = [&](size_t k, int64_t p) -> NDArray& { return pend[k][static_cast<size_t>(p % (win[k] + 1))]; };
    // Buffers of consumed cells, for the body's next outputs: one is taken once nothing else
    // holds it (the runner keeps its last arguments until its next run).
    std::vector<NDArray> spare;
    auto recycle = [&](NDArray& x) {
      if (x.valid() && spare.size() < 8) spare.push_back(std::move(x));
      x = NDArray();
    };
    auto take_spare = [&](const Shape& shape, DType dt) {
      for (auto it = spare.begin(); it != spare.end(); ++it)
        if (it->unique() && it->shape() == shape && it->dtype() == dt) {
          NDArray r = std::move(*it);
          spare.erase(it);
          return r;
        }
      return NDArray();
    };
    // Adds the body's output `out` (which it may take over) into state k's pending cell c.
    // dst += src (same shape).
    auto add_into = [&](const NDArray& dst, const NDArray& src) {
      if (!(dst.shape() == src.shape()))
        fail<ValueError>(who, ": a gradient of shape ", src.shape().str(), " for a value of shape ", dst.shape().str());
      mem_.add(dst, src);
    };
    // The body returned the new sum of an accumulated gradient: usually `sum` itself, overwritten
    // in place; else a buffer of its own that becomes the sum (the old one goes back to the body
    // as its next output buffer), or a value that is copied.
    auto take_sum = [&](NDArray& sum, NDArray& out) {
      if (out.shares_buffer(sum) && out.raw() == sum.raw()) return;
      if (!(out.shape() == sum.shape()))
        fail<ValueError>(who, ": a gradient of shape ", out.shape().str(), " for a value of shape ", sum.shape().str());
      if (out.unique() && out.writeable() && out.dtype() == sum.dtype() && out.is_c_contiguous())
        std::swap(sum, out);
      else
        mem_.copy(sum, out);
    };
    auto add_pending = [&](NDArray& c, NDArray& out, size_t k) {
      if (c.valid()) {
        add_into(c, out);
        return;
      }
      const Shape shape = element_shape(windows[k]);
      if (!(out.shape() == shape))
        fail<ValueError>(who, ": a gradient of shape ", out.shape().str(), " for a value of shape ", shape.str());
      if (out.unique() && out.writeable() && out.is_c_contiguous() && out.dtype() == windows[k].dtype()) {
        c = std::move(out);
        out = take_spare(shape, c.dtype());  // the body's next output buffer
        return;
      }
      c = take_spare(shape, windows[k].dtype());
      if (!c.valid()) c = mem_.empty(shape, windows[k].dtype());
      mem_.copy(c, out);
    };
    // Gradients of the outer inputs (sequences, non-sequences), zero to start; a sequence whose
    // gradient the body does not compute (pruned: nothing reads it) gets a broadcast zero.
    std::vector<bool> seq_needed(n_seq, false);
    {
      std::vector<size_t> seq_of;
      for (size_t s = 0; s < n_seq; ++s) seq_of.insert(seq_of.end(), info.seq_taps[s].size(), s);
      for (int m : op_.grad_of)
        if (static_cast<size_t>(m) < seq_of.size()) seq_needed[seq_of[static_cast<size_t>(m)]] = true;
    }
    std::vector<NDArray> dseq(n_seq), dns(n_nonseq);
    for (size_t s = 0; s < n_seq; ++s) {
      const NDArray& x = *a.in[1 + s];
      dseq[s] = seq_needed[s] ? mem_.zeros(x.shape(), x.dtype()) : mem_.zeros({}, x.dtype()).broadcast_to(x.shape());
    }
    for (size_t j = 0; j < n_nonseq; ++j) {
      const NDArray& x = *a.in[1 + n_seq + n_state + j];
      dns[j] = mem_.zeros(x.shape(), x.dtype());
    }
    // Where each forward inner input lives: (kind, index, tap).
    struct Slot {
      int kind;  // 0 sequence, 1 state, 2 non-sequence
      size_t index;
      int tap;
    };
    std::vector<Slot> slots;
    for (size_t s = 0; s < n_seq; ++s)
      for (int tap : info.seq_taps[s]) slots.push_back({0, s, tap});
    for (size_t k = 0; k < n_state; ++k)
      for (int tap : info.state_taps[k]) slots.push_back({1, k, tap});
    for (size_t j = 0; j < n_nonseq; ++j) slots.push_back({2, j, 0});
    const size_t n_inner = slots.size();
    args_.assign(op_.vjp_inputs.size(), NDArray());
    outs_.resize(op_.vjp_outputs.size());
    for (size_t j = 0; j < n_nonseq; ++j) args_[n_inner - n_nonseq + j] = *a.in[1 + n_seq + n_state + j];
    ReleaseRunner release{runner_.get()};
    const int64_t stop = info.truncate_gradient >= 0 ? std::max<int64_t>(0, n - info.truncate_gradient) : 0;
    if (n == 0)  // no step ran: a final value's gradient is its initial value's
      for (size_t k = 0; k < n_state; ++k)
        if (op_.g_form[k].form == Form::Last) {
          NDArray& c = cell(k, win[k] - 1);
          c = mem_.empty(element_shape(windows[k]), windows[k].dtype());
          mem_.copy(c, g_row[k]);
        }
    const size_t n_grad = op_.grad_of.size(), n_step = op_.step_of.size();
    std::vector<NDArray> traces(n_step);  // the step outputs' traces, allocated at the first step
    // The cotangents: per output, its gradient at step t (or none), plus for a state what later
    // steps sent back (its pending cell, taken). Zeros where neither is.
    std::vector<NDArray> held(op_.cot_of.size()), zero_rows(op_.cot_of.size());
    auto gradient_at = [&](size_t o, int64_t t) {
      const NDArray& g = *a.in[g_base + o];
      switch (op_.g_form[o].form) {
        case Form::Trace:
          return g.select(0, t);
        case Form::Row:
        case Form::Last:
          return t == g_step[o] ? g_row[o] : NDArray();
        case Form::None:
          break;
      }
      return NDArray();
    };
    for (int64_t t = n - 1; t >= stop; --t) {
      for (size_t i = 0; i < n_inner - n_nonseq; ++i) {
        const Slot& sl = slots[i];
        args_[i] = sl.kind == 0 ? a.in[1 + sl.index]->select(0, t + sl.tap - info.seq_taps[sl.index].front())
                                : value_at(sl.index, win[sl.index] + t + sl.tap);
      }
      for (size_t c = 0; c < op_.cot_of.size(); ++c) {
        const size_t o = static_cast<size_t>(op_.cot_of[c]);
        const NDArray g = gradient_at(o, t);
        if (o < n_state) held[c] = std::move(cell(o, win[o] + t));
        NDArray& p = held[c];
        if (p.valid() && g.valid()) add_into(p, g);
        if (p.valid()) {
          args_[n_inner + c] = p;
        } else if (g.valid()) {
          args_[n_inner + c] = g;
        } else {
          if (!zero_rows[c].valid()) {
            const NDArray& like = o < n_state ? windows[o] : *a.in[n_fwd + o];
            zero_rows[c] = mem_.zeros(element_shape(like), like.dtype());
          }
          args_[n_inner + c] = zero_rows[c];
        }
      }
      // The body's outputs at step t: state rows, nit-sot rows. A state without a cotangent (not
      // a float) has its cell emptied all the same.
      const size_t known = n_inner + op_.cot_of.size();
      for (size_t k = 0; k < n_state; ++k) {
        args_[known + k] = value_at(k, win[k] + t);
        recycle(cell(k, win[k] + t));
      }
      for (size_t j = 0; j < n_nitsot; ++j) args_[known + n_state + j] = a.in[n_fwd + n_state + j]->select(0, t);
      for (size_t m = 0; m < op_.grad_of.size(); ++m)
        if (op_.acc_of[m] >= 0)
          args_[static_cast<size_t>(op_.acc_of[m])] = dns[slots[static_cast<size_t>(op_.grad_of[m])].index];
      runner_->run(args_, outs_);
      for (size_t m = 0; m < op_.grad_of.size(); ++m) {
        const Slot& sl = slots[static_cast<size_t>(op_.grad_of[m])];
        if (op_.acc_of[m] >= 0) {
          args_[static_cast<size_t>(op_.acc_of[m])] = NDArray();
          take_sum(dns[sl.index], outs_[m]);
        } else if (sl.kind == 0) {
          add_into(dseq[sl.index].select(0, t + sl.tap - info.seq_taps[sl.index].front()), outs_[m]);
        } else if (sl.kind == 1) {
          add_pending(cell(sl.index, win[sl.index] + t + sl.tap), outs_[m], sl.index);
        } else {
          add_into(dns[sl.index], outs_[m]);
        }
      }
      for (size_t k = 0; k < n_step; ++k) {
        const NDArray& v = outs_[n_grad + k];
        if (!traces[k].valid()) traces[k] = mem_.empty(with_length(n, v.shape()), v.dtype());
        const NDArray row = traces[k].select(0, t);
        if (!(v.shape() == row.shape()))
          fail<ValueError>(who, ": at step ", t, " the body's step output ", k, " has shape ", v.shape().str(),
                           "; later steps gave ", row.shape().str());
        mem_.copy(row, v);
      }
      for (size_t c = 0; c < held.size(); ++c) {  // the consumed cells' buffers, free again
        args_[n_inner + c] = NDArray();
        recycle(held[c]);
      }
      check_cancelled();
    }
    for (size_t k = 0; k < n_step; ++k) {
      if (traces[k].valid()) {
        if (stop > 0) mem_.fill_zero(traces[k].slice(0, 0, stop, 1));  // steps truncation skipped
        continue;
      }
      // No step ran: (n, 0, d) zeros, d the non-sequence's dimension the product keeps.
      const TensorType& t = op_.vjp_outputs[n_grad + k]->type;
      const NDArray& w = *a.in[1 + n_seq + n_state + static_cast<size_t>(op_.step_of[k] / 2)];
      Shape s{n};
      for (int d = 0; d < t.ndim(); ++d)
        s.push_back(t.broadcastable[d] ? 1 : d + 1 == t.ndim() ? w.shape(op_.step_of[k] % 2) : 0);
      traces[k] = mem_.zeros(s, t.dtype);
    }
    for (auto& x : args_) x = NDArray();
    for (auto& x : outs_) x = NDArray();
    for (size_t s = 0; s < n_seq; ++s) *a.out[s] = dseq[s];
    for (size_t k = 0; k < n_state; ++k) {
      // The gradient of the initial value as given (which may hold more rows than the window).
      const NDArray& w = *a.in[1 + n_seq + k];
      NDArray d = mem_.zeros(w.shape(), w.dtype());
      if (stop == 0)  // truncated: no gradient reaches the initial values
        for (int64_t p = 0; p < win[k]; ++p)
          if (cell(k, p).valid()) mem_.copy(d.select(0, w.shape(0) - win[k] + p), cell(k, p));
      *a.out[n_seq + k] = d;
    }
    for (size_t j = 0; j < n_nonseq; ++j) *a.out[n_seq + n_state + j] = dns[j];
    for (size_t k = 0; k < n_step; ++k) *a.out[n_seq + n_state + n_nonseq + k] = traces[k];
  }

 private:
  const ScanGrad& op_;
  LoopMemory mem_;
  std::shared_ptr<InnerProgram> body_;
  std::unique_ptr<InnerRunner> runner_;
  std::vector<NDArray> args_, outs_;
};

}  // namespace

LoopMemory host_loop_memory() {
  return LoopMemory{.device = Device::host(),
                    .copy = copy_row,
                    .add = add_host,
                    .fill_zero = [](const NDArray& dst) { dst.fill(0.0); },
                    .truthy = truthy};
}

std::unique_ptr<Kernel> make_scan_kernel(const Scan& op, LoopMemory memory) {
  return std::make_unique<ScanKernel>(op, std::move(memory));
}

std::unique_ptr<Kernel> make_scan_grad_kernel(const ScanGrad& op, LoopMemory memory) {
  return std::make_unique<ScanGradKernel>(op, std::move(memory));
}

bool graph_runs_on_device(const Backend& backend, const std::vector<Var>& outputs) {
  std::unordered_set<const Apply*> seen;
  std::vector<const Apply*> stack;
  for (const Var& v : outputs)
    if (v->owner) stack.push_back(v->owner);
  while (!stack.empty()) {
    const Apply* node = stack.back();
    stack.pop_back();
    if (!seen.insert(node).second) continue;
    const Backend* p = backend.provider(*node);
    if (!p) return false;
    // (a shape reader reads its input where it lies: nothing moves; index arithmetic runs on the
    // host by the backend's choice, its scalars crossing; the user's transfers are placement's to
    // keep or drop: gpu_from_host of a value the device has leaves the graph)
    if (p->device_kind() == DeviceKind::Host && !p->traits(*node)->any_device_inputs && !is_index_arithmetic(*node) &&
        !node->op->moves_between_devices())
      return false;
    for (const Var& in : node->inputs)
      if (in->owner) stack.push_back(in->owner);
  }
  return true;
}

void register_device_control_flow(std::string_view backend, std::function<LoopMemory()> memory) {
  KernelTraits loop;
  loop.host_inputs = {0};  // the number of steps
  loop.accepts = [name = std::string(backend)](const Apply& node) {
    return graph_runs_on_device(get_backend(name), node.op->inner_functions().at(0).outputs);
  };
  register_kernel(
      backend, typeid(Scan),
      [memory](const Apply& node) { return make_scan_kernel(static_cast<const Scan&>(*node.op), memory()); }, loop);
  register_kernel(
      backend, typeid(ScanGrad),
      [memory](const Apply& node) { return make_scan_grad_kernel(static_cast<const ScanGrad&>(*node.op), memory()); },
      loop);
  register_kernel(
      backend, typeid(IfElse),
      [](const Apply& node) { return make_ifelse_kernel(static_cast<const IfElse&>(*node.op)); },
      KernelTraits{.host_inputs = {0}});
}

void register_scan_kernels() {
  for (std::string_view b : {kReferenceBackend, kCpuBackend}) {
    register_kernel(b, typeid(Scan), [](const Apply& node) -> std::unique_ptr<Kernel> {
      return make_scan_kernel(static_cast<const Scan&>(*node.op), host_loop_memory());
    });
    register_kernel(b, typeid(ScanGrad), [](const Apply& node) -> std::unique_ptr<Kernel> {
      return make_scan_grad_kernel(static_cast<const ScanGrad&>(*node.op), host_loop_memory());
    });
  }
}

}  // namespace hypatia
