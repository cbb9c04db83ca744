// Control flow on the CUDA backend. IfElse: the generic lazy kernel (ifelse_kernels.h), the
// condition read on the host, the branches' values left on the device. Scan and ScanGrad: the generic loops
// (backends/scan_kernels.h) with their buffers in device memory. The body, compiled for this backend with device
// arguments and outputs, runs step after step on the device's stream; state rows, traces and gradient sums are copied
// and added on the device (generated elementwise kernels), and nothing crosses to the host but an `until` loop's
// condition (one wait per step). A loop whose body has a node this backend cannot run stays on the CPU, with its body.
#include <map>
#include <mutex>

#include "hypatia/backends/backend.h"
#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/backends/cuda/cuda_kernel_util.h"
#include "hypatia/backends/scan_kernels.h"
#include "hypatia/ops/elemwise.h"

namespace hypatia::cuda {
namespace {

/// dst += src: the elementwise add of their dtypes, written in place into dst (any strides).
void add_on_device(const NDArray& dst, const NDArray& src) {
  static std::mutex mu;
  static auto* mods = new std::map<std::pair<int, int>, ElemModule>;  // (leaked: used until exit)
  const ElemModule* m = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    const std::pair<int, int> key{static_cast<int>(dst.dtype()), static_cast<int>(src.dtype())};
    auto it = mods->find(key);
    if (it == mods->end())
      it = mods->emplace(key, ElemModule(elemwise_spec(ScalarOpKind::Add, {dst.dtype(), src.dtype()}, dst.dtype()),
                                         "CUDA add (a scan gradient's sum)"))
               .first;
    m = &it->second;
  }
  NDArray d = dst, s = src;
  NDArray* o[] = {&d};
  NDArray* i[] = {&d, &s};
  m->run(dst.shape(), o, i);
}

/// dst = 0: a device zero of its dtype (made once) broadcast into it.
void zero_on_device(const NDArray& dst) {
  static std::mutex mu;
  static auto* zeros = new std::map<int, NDArray>;  // (leaked: device memory freed at exit otherwise)
  NDArray z;
  {
    std::lock_guard<std::mutex> lock(mu);
    NDArray& cached = (*zeros)[static_cast<int>(dst.dtype())];
    if (!cached.valid()) {
      // Made on queue 0 (outside calls: every function's queue waits for its earlier work), not
      // on this call's queue, which other functions' calls reading it would not wait for.
      const int q = current_queue();
      set_current_queue(0);
      try {
        cached = NDArray::zeros({}, dst.dtype()).to_device(Device::cuda());
      } catch (...) {
        set_current_queue(q);
        throw;
      }
      set_current_queue(q);
    }
    z = cached;
  }
  // (ElemModule::run takes inputs of the output's ndim: the zero as a 1 x ... x 1 view.)
  Shape ones;
  for (int k = 0; k < dst.ndim(); ++k) ones.push_back(1);
  NDArray d = dst, zb = z.reshape(ones);
  NDArray* o[] = {&d};
  NDArray* i[] = {&zb};
  copy_module(dst.dtype()).run(dst.shape(), o, i);
}

LoopMemory device_loop_memory() {
  return LoopMemory{.device = Device::cuda(),
                    .copy =
                        [](const NDArray& dst, const NDArray& src) {
                          NDArray d = dst;
                          copy_into(d, src);
                        },
                    .add = add_on_device,
                    .fill_zero = zero_on_device,
                    .truthy = [](const NDArray& a) { return a.to_device(Device::host()).get_flat(0) != 0.0; }};
}

}  // namespace

void register_cuda_loop_kernels() { register_device_control_flow(kCudaBackend, device_loop_memory); }

}  // namespace hypatia::cuda
