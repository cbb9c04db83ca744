// Program::runner(): how scan and the other ops with inner functions run their bodies, once per
// step, without a call's lease, locks or per-run release.
#include <cstring>
#include <utility>

#include "hypatia/runtime/program.h"
#include "hypatia/runtime/program_frame.h"

namespace hypatia {

using program_detail::with_node_context;

/// Program::runner(): a frame of its own, no lease and no per-run release; a scalar path over
/// one 8-byte slot per cell when the body allows it.
class Program::Runner final : public InnerRunner {
 public:
  explicit Runner(Program& p) : p_(p), f_(p.make_frame()) {
    f_->keep_intermediates = true;
    lean_ = !p.debug_mode && !p.profile && !p.pre_step && !p.post_step && p.shared.empty() && p.updates.empty() &&
            !p.check_rewrites && p.first_shared_destroyer == p.steps.size();
    // (Not for a body compiled for a device: its values, constants included, are in device memory.)
    scalar_ = lean_ && !p.any_lazy_ && !p.io_device && plan_scalars();
  }

  void run(std::span<const NDArray> args, std::span<NDArray> outs) override {
    if (!lean_) return p_.run(args, outs);
    HYP_ASSERT(args.size() == p_.inputs.size() && outs.size() == p_.outputs.size());
    Frame& f = *f_;
    for (size_t i = 0; i < args.size(); ++i) p_.bind_input(f, i, args[i], args);
    // The previous run's outputs, when the caller no longer shares them, are this run's buffers.
    for (size_t i = 0; i < outs.size(); ++i) {
      NDArray& cell = f.storage[p_.outputs[i].cell];
      if (p_.cell_kind[p_.outputs[i].cell] == CellKind::Intermediate && !cell.valid() && outs[i].valid() &&
          outs[i].unique() && outs[i].writeable())
        cell = std::move(outs[i]);
      outs[i].reset();
    }
    p_.run_steps(f, 0, p_.steps.size());
    // Indices and labels checked on the device (KernelTraits::device_checks): each run raises its
    // own (a wait per run: the next run's launches clear the checks' words).
    if (p_.any_device_checks_) p_.check_on_device(f);
    for (size_t i = 0; i < outs.size(); ++i) {
      const int c = p_.outputs[i].cell;
      size_t j = 0;
      while (j < i && p_.outputs[j].cell != c) ++j;
      if (j < i)
        outs[i] = outs[j];
      else if (p_.cell_kind[c] == CellKind::Intermediate)
        outs[i] = std::move(f.storage[c]);
      else
        outs[i] = f.storage[c];
    }
  }

  bool scalar() const override { return scalar_; }

  void run_scalars(const std::byte* const* in, std::byte* const* out) override {
    // The nodes read the inputs where they lie and write the outputs where they go.
    for (const Patch& q : patches_) {
      const std::byte* v = q.from_output ? out[q.src] : in[q.src];
      std::memcpy(q.dst, &v, sizeof v);  // a slot of ptr_in_ or ptr_out_
    }
    run_bound();
    // Outputs that are inputs, constants or another output's value.
    for (const OutCopy& o : out_copies_)
      copy_element(out[o.k], o.input >= 0 ? in[o.input] : o.output >= 0 ? out[o.output] : o.slot, o.size);
  }

  bool scalar_slots(std::vector<std::vector<void*>>& in, std::vector<std::vector<void*>>& out) override {
    if (!scalar_ || !out_copies_.empty()) return false;
    in.assign(p_.inputs.size(), {});
    out.assign(p_.outputs.size(), {});
    for (const Patch& q : patches_) (q.from_output ? out : in)[q.src].push_back(q.dst);
    return true;
  }

  void run_bound() override {
    const Call* c = calls_.data();
    const Call* const end = c + calls_.size();
    try {
      for (; c != end; ++c) c->kernel->run_scalars(c->in, c->out);
    } catch (const Cancelled&) {
      throw;
    } catch (...) {
      rethrow_with_context(static_cast<size_t>(c - calls_.data()));
      throw;
    }
  }

  void release() override {
    for (size_t c = 0; c < f_->storage.size(); ++c)
      if (p_.cell_kind[c] != CellKind::Constant) f_->storage[c].reset();
  }

 private:
  static void copy_element(std::byte* dst, const std::byte* src, uint8_t size) {
    switch (size) {
      case 1:
        *dst = *src;
        return;
      case 2:
        std::memcpy(dst, src, 2);
        return;
      case 4:
        std::memcpy(dst, src, 4);
        return;
      default:
        std::memcpy(dst, src, 8);
        return;
    }
  }
  std::byte* slot(int c) { return reinterpret_cast<std::byte*>(&slots_[static_cast<size_t>(c)]); }

  /// Whether every value is a 0-d array of at most 8 bytes and every kernel has a scalar path;
  /// if so, lays out the slots and each step's element pointers.
  bool plan_scalars() {
    const Program& p = p_;
    auto small = [](const TensorType& t) { return t.ndim() == 0 && itemsize(t.dtype) <= 8; };
    for (const InputSlot& s : p.inputs)
      if (!small(s.type)) return false;
    for (size_t t = 0; t < p.steps.size(); ++t) {
      const Step& st = p.steps[t];
      if (st.check_devices || !f_->kernels[t]->has_scalar_path()) return false;
      for (const Var& v : st.node->inputs)
        if (!small(v->type)) return false;
      for (int k = 0; k < st.node->nout(); ++k)
        if (!small(st.node->output_ptr(k)->type)) return false;
    }
    for (const OutputSlot& o : p.outputs)
      if (p.cell_kind[o.cell] == CellKind::Constant && p.constants[o.cell].ndim() != 0) return false;
    slots_.assign(p.cell_kind.size(), 0);
    for (size_t c = 0; c < p.cell_kind.size(); ++c)
      if (p.cell_kind[c] == CellKind::Constant) {
        const NDArray& v = p.constants[c];
        if (v.ndim() != 0 || v.itemsize() > 8) return false;
        std::memcpy(slot(static_cast<int>(c)), v.raw(), static_cast<size_t>(v.itemsize()));
      }
    // Each step reads slots; an input's readers are pointed at the argument and an output's
    // producer and readers at the output's element on every run.
    std::vector<uint8_t> cell_size(p.cell_kind.size(), 8);
    std::vector<int> input_of(p.cell_kind.size(), -1), output_of(p.cell_kind.size(), -1);
    for (size_t c = 0; c < p.cell_kind.size(); ++c)
      if (p.cell_kind[c] == CellKind::Constant) cell_size[c] = static_cast<uint8_t>(p.constants[c].itemsize());
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      cell_size[p.inputs[i].cell] = static_cast<uint8_t>(itemsize(p.inputs[i].type.dtype));
      input_of[p.inputs[i].cell] = static_cast<int>(i);
    }
    for (const Step& st : p.steps)
      for (size_t k = 0; k < st.out.size(); ++k)
        cell_size[st.out[k]] = static_cast<uint8_t>(itemsize(st.node->output_ptr(static_cast<int>(k))->type.dtype));
    for (size_t k = 0; k < p.outputs.size(); ++k) {
      const int c = p.outputs[k].cell;
      OutCopy copy{static_cast<uint32_t>(k), input_of[c], output_of[c], slot(c), cell_size[c]};
      if (copy.input < 0 && copy.output < 0 && p.cell_kind[c] == CellKind::Intermediate)
        output_of[c] = static_cast<int>(k);  // written in place by its producer
      else
        out_copies_.push_back(copy);
    }
    // (index in ptr_in_ or ptr_out_, argument or output number) to point at on each run.
    std::vector<std::pair<uint32_t, uint32_t>> in_patch, out_patch_in, out_patch_out;
    for (size_t t = 0; t < p.steps.size(); ++t) {
      const Step& st = p.steps[t];
      first_in_.push_back(static_cast<uint32_t>(ptr_in_.size()));
      first_out_.push_back(static_cast<uint32_t>(ptr_out_.size()));
      for (int c : st.in) {
        const auto idx = static_cast<uint32_t>(ptr_in_.size());
        if (input_of[c] >= 0) in_patch.emplace_back(idx, static_cast<uint32_t>(input_of[c]));
        if (output_of[c] >= 0) out_patch_in.emplace_back(idx, static_cast<uint32_t>(output_of[c]));
        ptr_in_.push_back(slot(c));
      }
      for (int c : st.out) {
        if (output_of[c] >= 0)
          out_patch_out.emplace_back(static_cast<uint32_t>(ptr_out_.size()), static_cast<uint32_t>(output_of[c]));
        ptr_out_.push_back(slot(c));
      }
    }
    // Pointers into ptr_in_ and ptr_out_ are taken once both are laid out.
    for (size_t t = 0; t < p.steps.size(); ++t)
      calls_.push_back({f_->kernels[t].get(), ptr_in_.data() + first_in_[t], ptr_out_.data() + first_out_[t]});
    for (const auto& [idx, i] : in_patch) patches_.push_back({&ptr_in_[idx], i, false});
    for (const auto& [idx, k] : out_patch_in) patches_.push_back({&ptr_in_[idx], k, true});
    for (const auto& [idx, k] : out_patch_out) patches_.push_back({&ptr_out_[idx], k, true});
    return true;
  }

  /// A scalar step failed: runs the node once more on arrays through the regular path, so that
  /// the error carries the node's context as it would outside the loop.
  void rethrow_with_context(size_t t) {
    const Step& st = p_.steps[t];
    std::vector<NDArray> ins, outs(st.out.size());
    for (size_t i = 0; i < st.in.size(); ++i) {
      NDArray a = NDArray::empty({}, st.node->inputs[i]->type.dtype);
      std::memcpy(a.raw(), ptr_in_[first_in_[t] + i], static_cast<size_t>(a.itemsize()));
      ins.push_back(std::move(a));
    }
    std::vector<NDArray*> pin, pout;
    for (auto& a : ins) pin.push_back(&a);
    for (auto& a : outs) pout.push_back(&a);
    const KernelArgs a{pin, pout};
    with_node_context(*st.node, a, [&] { f_->kernels[t]->run(a); });
  }

  Program& p_;
  std::unique_ptr<Frame> f_;
  bool lean_ = false, scalar_ = false;
  std::vector<uint64_t> slots_;
  std::vector<const std::byte*> ptr_in_;
  std::vector<std::byte*> ptr_out_;
  std::vector<uint32_t> first_in_, first_out_;
  /// Per run: argument (or output) src's element pointer goes to *dst, a slot of ptr_in_ or
  /// ptr_out_.
  struct Patch {
    void* dst;
    uint32_t src;
    bool from_output;
  };
  std::vector<Patch> patches_;
  /// Per step: its kernel and its pointer lists.
  struct Call {
    Kernel* kernel;
    const std::byte* const* in;
    std::byte* const* out;
  };
  std::vector<Call> calls_;
  /// An output copied at the end of a run: from argument `input`, else from output `output`,
  /// else from its slot (a constant).
  struct OutCopy {
    uint32_t k;
    int input, output;
    const std::byte* slot;
    uint8_t size;
  };
  std::vector<OutCopy> out_copies_;
};

std::unique_ptr<InnerRunner> Program::runner() { return std::make_unique<Runner>(*this); }

}  // namespace hypatia
