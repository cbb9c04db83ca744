// The checks of a program's steps (Program, program.h): DebugMode's run of a step against its
// reference kernel (run_debug), the placement check at finalize (each kernel's inputs on the
// device it reads them on), and the per-call check of the devices a step's inputs are on.
#include "hypatia/core/cancel.h"
#include "hypatia/core/error.h"
#include "hypatia/runtime/debug_runs.h"
#include "hypatia/runtime/program_frame.h"

namespace hypatia {

void Program::run_debug(Frame& f, size_t t) {
  const Step& st = steps[t];
  const KernelArgs a = f.args(st, t);
  Kernel& kernel = *f.kernels[t];
  // Run once: a Print must print once; a transfer's arrays are not all in host memory, where
  // the comparisons below read.
  if (st.node->op->has_side_effects() || st.node->op->moves_between_devices()) {
    kernel.run(a);
    return;
  }
  const AliasMap dm = st.node->op->destroy_map();
  std::vector<bool> destroyed(a.in.size(), false);
  for (const auto& o : dm)
    for (int i : o) destroyed[i] = true;
  std::vector<NDArray> before, ref_in, ref_out(a.out.size());
  for (NDArray* x : a.in) {
    before.push_back(x->valid() ? x->copy() : NDArray());
    ref_in.push_back(x->valid() ? x->copy() : NDArray());
  }
  kernel.run(a);
  check_cancelled();  // a parallel kernel stops early when cancelled: its output is partial
  for (size_t i = 0; i < a.in.size(); ++i)
    if (!destroyed[i] && !values_close(*a.in[i], before[i], /*exact=*/true))
      fail<InternalError>("DebugMode: ", st.node->op->name(), " changed its input ", i,
                          " which its destroy_map does not declare (BadDestroyMap)");
  std::vector<NDArray*> rin, rout;
  for (auto& x : ref_in) rin.push_back(&x);
  for (auto& x : ref_out) rout.push_back(&x);
  f.references[t]->run(KernelArgs{rin, rout});
  for (size_t o = 0; o < a.out.size(); ++o)
    if (!values_close(*a.out[o], ref_out[o], /*exact=*/false))
      fail<InternalError>("DebugMode: output ", o, " of ", st.node->op->name(),
                          " differs from the reference kernel's (", a.out[o]->valid() ? a.out[o]->describe() : "none",
                          " vs ", ref_out[o].valid() ? ref_out[o].describe() : "none", "; BadThunkOutput)");
  // Again: into garbage outputs (bit for bit), and on strided copies (debug_runs.h).
  check_kernel_variations(*st.node, kernel, a.in, before, destroyed, a.out);
}

void Program::check_placement() const {
  // Where each cell's value is at compile time: an argument on the host (on the device for an
  // inner function of a device node), a shared variable where placement put it, a constant where
  // it lives, a step's output on its kernel's device.
  std::vector<DeviceKind> where(cell_kind.size(), DeviceKind::Host);
  for (size_t c = 0; c < cell_kind.size(); ++c)
    if (cell_kind[c] == CellKind::Input && io_device)
      where[c] = io_device->kind;
    else if (cell_kind[c] == CellKind::Constant && constants[c].valid())
      where[c] = constants[c].device().kind;
  for (const SharedSlot& sh : shared) where[sh.cell] = sh.device;
  for (const Step& st : steps) {
    const Op& op = *st.node->op;
    // A kernel reads its inputs in its device's memory, but those read on the host and those of
    // a kernel reading shapes only (a transfer reads either side).
    if (!op.moves_between_devices() && !st.any_device)
      for (size_t i = 0; i < st.in.size(); ++i) {
        const DeviceKind want = i < 64 && (st.host_inputs >> i & 1) ? DeviceKind::Host : st.device;
        const int c = st.in[i];
        const Step* from = producer_[c] >= 0 ? &steps[producer_[c]] : nullptr;
        // (A transfer's output is checked on each call instead: check_devices, a TypeError, as the
        // user's own transfers in a graph without placement may be wrong.)
        if ((from && from->node->op->moves_between_devices()) || where[c] == want) continue;
        fail<InternalError>(op.name(), ": placement left input ", i, " (",
                            from ? "the output of " + from->node->op->name()
                                 : std::string(cell_kind[c] == CellKind::Shared     ? "a shared variable"
                                               : cell_kind[c] == CellKind::Constant ? "a constant"
                                                                                    : "an argument"),
                            ") in ", Device::of(where[c]).str(), " memory, but the kernel that runs it (backend '",
                            backend->name(), "') reads it in ", Device::of(want).str(), " memory");
      }
    for (int c : st.out) where[c] = st.device;  // (a transfer's output is never compared)
  }
}

void Program::check_input_devices(const Step& st, const KernelArgs& a) const {
  if (st.any_device) return;
  for (size_t i = 0; i < a.in.size(); ++i) {
    const DeviceKind want = i < 64 && (st.host_inputs >> i & 1) ? DeviceKind::Host : st.device;
    if (a.in[i]->valid() && a.in[i]->device().kind != want)
      fail<TypeError>(st.node->op->name(), ": input ", i, " is on ", a.in[i]->device().str(), " (", a.in[i]->describe(),
                      ") but this node reads it in ", Device::of(want).str(), " memory (backend '", backend->name(),
                      "'); the graph needs a transfer (", want == DeviceKind::Host ? "HostFromGpu" : "GpuFromHost",
                      ") before it");
  }
}

}  // namespace hypatia
