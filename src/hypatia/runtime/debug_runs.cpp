#include "hypatia/runtime/debug_runs.h"

#include <cmath>
#include <cstring>
#include <sstream>
#include <string>

#include "hypatia/core/error.h"

namespace hypatia {

int64_t first_difference(const NDArray& a, const NDArray& b, bool exact) {
  if (a.valid() != b.valid()) return 0;
  if (!a.valid()) return -1;
  if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return 0;
  const bool f32 = a.dtype() == DType::Float32;
  const double rtol = exact ? 0 : (f32 ? 1e-4 : 1e-7), atol = exact ? 0 : (f32 ? 1e-5 : 1e-10);
  for (int64_t i = 0; i < a.size(); ++i) {
    const double x = a.get_flat(i), y = b.get_flat(i);
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x == y) continue;
    if (!(std::abs(x - y) <= atol + rtol * std::abs(y))) return i;
  }
  return -1;
}

bool values_close(const NDArray& a, const NDArray& b, bool exact) { return first_difference(a, b, exact) < 0; }

NDArray noncontiguous_copy(const NDArray& x) {
  if (!x.valid() || x.ndim() == 0 || x.size() == 0 || x.device().kind != DeviceKind::Host)
    return x.valid() ? x.copy() : x;
  Shape big = x.shape();
  const int last = x.ndim() - 1;
  big[last] = x.shape(last) * 2;
  NDArray view = NDArray::empty(big, x.dtype()).slice(last, 0, big[last], 2);
  view.assign(x);
  return view;
}

namespace {

/// "element 3: 0.1 vs 0.10000000000000002" for the first element where a and b differ.
std::string difference(const NDArray& a, const NDArray& b, bool exact) {
  const int64_t i = first_difference(a, b, exact);
  if (i < 0 || !a.valid() || !b.valid() || a.dtype() != b.dtype() || !(a.shape() == b.shape())) return "";
  std::ostringstream os;
  os.precision(17);
  os << "; flat element " << i << ": " << a.get_flat(i) << " vs " << b.get_flat(i);
  return os.str();
}

/// An array of out's shape and dtype full of garbage: NaN for floats (all bits set: it survives
/// any arithmetic a kernel does with it), 0xA5 bytes otherwise.
NDArray garbage_like(const NDArray& out) {
  NDArray g = NDArray::empty(out.shape(), out.dtype());
  if (g.size() > 0) std::memset(g.raw(), is_float(out.dtype()) ? 0xFF : 0xA5, g.nbytes());
  return g;
}

void run_on(Kernel& kernel, std::vector<NDArray>& in, std::vector<NDArray>& out) {
  std::vector<NDArray*> pi, po;
  for (auto& x : in) pi.push_back(&x);
  for (auto& x : out) po.push_back(&x);
  kernel.run(KernelArgs{pi, po});
}

}  // namespace

void check_kernel_variations(const Apply& node, Kernel& kernel, std::span<NDArray* const> inputs,
                             const std::vector<NDArray>& before, const std::vector<bool>& destroyed,
                             std::span<NDArray* const> outputs) {
  for (const NDArray& x : before)
    if (x.valid() && x.device().kind != DeviceKind::Host) return;
  for (const NDArray* o : outputs)
    if (!o->valid() || o->device().kind != DeviceKind::Host) return;
  // Again on the same inputs (an overwritten one: a copy of its old value), into garbage: bit for
  // bit, unless a copy changed an input's layout (which may change the order of a sum).
  std::vector<NDArray> in, out;
  bool same_layout = true;
  for (size_t i = 0; i < before.size(); ++i) {
    if (!destroyed[i]) {
      in.push_back(*inputs[i]);
      continue;
    }
    in.push_back(before[i].valid() ? before[i].copy() : before[i]);
    same_layout = same_layout && (!inputs[i]->valid() || inputs[i]->is_c_contiguous());
  }
  for (const NDArray* o : outputs) out.push_back(garbage_like(*o));
  run_on(kernel, in, out);
  for (size_t o = 0; o < outputs.size(); ++o)
    if (!values_close(out[o], *outputs[o], same_layout))
      fail<InternalError>("DebugMode: output ", o, " of ", node.op->name(),
                          " differs between two runs on the same inputs (", outputs[o]->describe(), " then ",
                          out[o].valid() ? out[o].describe() : "none", difference(*outputs[o], out[o], same_layout),
                          "): the kernel is not deterministic or read the output buffer it was given "
                          "(BadThunkOutput, repeated run)");
  // On non-contiguous copies of its inputs: the same values within rounding.
  bool any_strided = false;
  in.clear();
  for (const NDArray& x : before) {
    in.push_back(x.valid() ? noncontiguous_copy(x) : x);
    any_strided |= x.valid() && !in.back().is_c_contiguous();
  }
  if (!any_strided) return;
  out.assign(outputs.size(), NDArray());
  run_on(kernel, in, out);
  for (size_t o = 0; o < outputs.size(); ++o)
    if (!values_close(out[o], *outputs[o], /*exact=*/false)) {
      std::string layouts;
      for (size_t i = 0; i < in.size(); ++i)
        layouts += (i ? ", " : "") + (in[i].valid() ? in[i].describe() : std::string("none"));
      fail<InternalError>("DebugMode: output ", o, " of ", node.op->name(),
                          " differs when its inputs are not contiguous (", outputs[o]->describe(), " vs ",
                          out[o].valid() ? out[o].describe() : "none", difference(*outputs[o], out[o], false),
                          "; inputs ", layouts, "; BadThunkOutput, strided inputs)");
    }
}

}  // namespace hypatia
