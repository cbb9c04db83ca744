// oneDNN's convolution primitives as the CPU convolution's second implementation (float32;
// forward and the input gradient, where its blocked-layout JIT kernels measured faster than
// im2col + GEMM: BENCHMARKS.md). The batch is split over Hypatia's thread pool and each task runs
// the primitive on its images with one OpenMP thread (oneDNN is built on OpenMP in Debian; its
// teams collapse beside a busy core, issue 9). Primitives are cached per shape, parameters and
// images per task together with their reorders; the inputs are reordered from NCHW to the
// primitive's layout and the output back, per task, into scratch memory of that task.
#include "hypatia/backends/cpu/conv_onednn.h"

#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <vector>

#include "hypatia/backends/cpu/onednn_threads.h"
#include "hypatia/backends/cpu/thread_pool.h"
#include "hypatia/core/error.h"

namespace hypatia::conv_detail {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::engine& cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

/// A primitive with the scratchpad it needs: user-provided, one per execution (the library's own
/// scratchpad is shared between threads, and the tasks run at once).
struct WithScratch {
  dnnl::primitive prim;
  memory::desc scratch_md;
  bool valid() const { return static_cast<bool>(prim); }
};

/// A reorder from one layout to another (none when they are equal), made once with its primitive.
WithScratch make_reorder(const memory::desc& from, const memory::desc& to) {
  if (from == to) return {};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::reorder::primitive_desc pd(cpu_engine(), from, cpu_engine(), to, attr);
  return {dnnl::reorder(pd), pd.scratchpad_desc()};
}

void run_reorder(dnnl::stream& st, const WithScratch& r, const memory& from, const memory& to) {
  memory scratch(r.scratch_md, cpu_engine());
  r.prim.execute(st, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}, {DNNL_ARG_SCRATCHPAD, scratch}});
}

/// A convolution primitive for `nb` images, with the layouts it chose and the reorders from and
/// to NCHW / (G)OIHW.
struct Prim {
  WithScratch conv;
  memory::desc in_md, wei_md, out_md;                 // the primitive's layouts
  memory::desc user_in_md, user_wei_md, user_out_md;  // NCHW / (G)OIHW
  WithScratch in_reorder, wei_reorder, out_reorder;
};

std::shared_ptr<Prim> make_prim(OnednnConv kind, const Conv2dParams& p, const Conv2dShape& s, int64_t nb) {
  auto& eng = cpu_engine();
  const memory::dims img{nb, s.c, s.h, s.w}, out{nb, s.o, s.ho, s.wo};
  const memory::dims wei =
      s.g == 1 ? memory::dims{s.o, s.cg, s.kh, s.kw} : memory::dims{s.g, s.o / s.g, s.cg, s.kh, s.kw};
  const memory::dims strides{p.stride_h, p.stride_w}, dil{p.dil_h - 1, p.dil_w - 1}, pl{s.ph, s.pw},
      pr{s.ph_end, s.pw_end};
  const memory::desc any_img(img, dt::f32, tag::any), any_out(out, dt::f32, tag::any), any_wei(wei, dt::f32, tag::any);
  auto prim = std::make_shared<Prim>();
  prim->user_in_md = memory::desc(kind == OnednnConv::Forward ? img : out, dt::f32, tag::nchw);
  prim->user_out_md = memory::desc(kind == OnednnConv::Forward ? out : img, dt::f32, tag::nchw);
  prim->user_wei_md = memory::desc(wei, dt::f32, s.g == 1 ? tag::oihw : tag::goihw);
  const dnnl::convolution_forward::desc fd(
      kind == OnednnConv::Forward ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training,
      dnnl::algorithm::convolution_direct, any_img, any_wei, any_out, strides, dil, pl, pr);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const dnnl::convolution_forward::primitive_desc fpd(fd, attr, eng);
  if (kind == OnednnConv::Forward) {
    prim->conv = {dnnl::convolution_forward(fpd), fpd.scratchpad_desc()};
    prim->in_md = fpd.src_desc(), prim->wei_md = fpd.weights_desc(), prim->out_md = fpd.dst_desc();
  } else {
    const dnnl::convolution_backward_data::desc bd(dnnl::algorithm::convolution_direct, any_img, any_wei, any_out,
                                                   strides, dil, pl, pr);
    const dnnl::convolution_backward_data::primitive_desc bpd(bd, attr, eng, fpd);
    prim->conv = {dnnl::convolution_backward_data(bpd), bpd.scratchpad_desc()};
    prim->in_md = bpd.diff_dst_desc(), prim->wei_md = bpd.weights_desc(), prim->out_md = bpd.diff_src_desc();
  }
  prim->in_reorder = make_reorder(prim->user_in_md, prim->in_md);
  prim->wei_reorder = make_reorder(prim->user_wei_md, prim->wei_md);
  prim->out_reorder = make_reorder(prim->out_md, prim->user_out_md);
  return prim;
}

std::shared_ptr<Prim> cached_prim(OnednnConv kind, const Conv2dParams& p, const Conv2dShape& s, int64_t nb) {
  static std::mutex mu;
  static std::map<ConvKey, std::shared_ptr<Prim>> cache;
  const ConvKey k = conv_key(kind, p, s, nb);
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(k);
    if (it != cache.end()) return it->second;
  }
  std::shared_ptr<Prim> prim = make_prim(kind, p, s, nb);  // outside the lock: JIT compilation
  std::lock_guard<std::mutex> lock(mu);
  return cache.emplace(k, prim).first->second;
}

/// The filters as C-contiguous float32 (G)OIHW in correlation order (flipped when the op convolves).
NDArray correlation_filters(const NDArray& kern, const Conv2dParams& p) {
  NDArray k = kern;
  if (p.flip) {
    const int64_t kh = kern.shape(2), kw = kern.shape(3);
    k = kern.slice(2, kh - 1, -1, -1).slice(3, kw - 1, -1, -1);
  }
  return k.ascontiguous();
}

}  // namespace

ConvKey conv_key(OnednnConv kind, const Conv2dParams& p, const Conv2dShape& s, int64_t n) {
  return {static_cast<int64_t>(kind),
          n,
          s.c,
          s.h,
          s.w,
          s.o,
          s.kh,
          s.kw,
          s.ph,
          s.pw,
          s.ph_end,
          s.pw_end,
          p.stride_h,
          p.stride_w,
          p.dil_h,
          p.dil_w,
          s.g};
}

bool onednn_conv2d(OnednnConv kind, const Conv2dParams& p, const Conv2dShape& s, const NDArray& in0,
                   const NDArray& kern0, NDArray& out) {
  if (in0.dtype() != DType::Float32 || kern0.dtype() != DType::Float32 || s.n == 0) return false;
  const NDArray in = in0.ascontiguous();
  const NDArray kern = correlation_filters(kern0, p);
  const int threads = parallel_threads();
  const int64_t tasks = std::max<int64_t>(1, std::min<int64_t>(s.n, threads));
  const int64_t per_in = kind == OnednnConv::Forward ? s.c * s.h * s.w : s.o * s.ho * s.wo;
  const int64_t per_out = kind == OnednnConv::Forward ? s.o * s.ho * s.wo : s.c * s.h * s.w;
  try {
    // Every primitive this call runs is made here, before any task starts (its errors surface in
    // this thread); the weights are reordered once per layout.
    std::vector<std::shared_ptr<Prim>> prims(static_cast<size_t>(tasks));
    for (int64_t t = 0; t < tasks; ++t) {
      const auto [n0, n1] = task_range(s.n, tasks, t);
      prims[static_cast<size_t>(t)] = cached_prim(kind, p, s, n1 - n0);
    }
    const std::shared_ptr<Prim>& first = prims[0];
    auto& eng = cpu_engine();
    memory user_wei(first->user_wei_md, eng, const_cast<float*>(kern.data<float>()));
    memory wei = user_wei;
    if (first->wei_reorder.valid()) {
      OneOmpThread one;
      dnnl::stream st(eng);
      wei = memory(first->wei_md, eng);
      run_reorder(st, first->wei_reorder, user_wei, wei);
      st.wait();
    }
    auto body = [&](int64_t t) {
      const auto [n0, n1] = task_range(s.n, tasks, t);
      if (n1 <= n0) return;
      OneOmpThread one;
      const std::shared_ptr<Prim>& prim = prims[static_cast<size_t>(t)];
      dnnl::stream st(eng);
      memory w = wei;
      if (prim->wei_md != first->wei_md) {  // another batch size chose another layout
        w = memory(prim->wei_md, eng);
        run_reorder(st, prim->wei_reorder, user_wei, w);
      }
      memory user_in(prim->user_in_md, eng, const_cast<float*>(in.data<float>() + n0 * per_in));
      memory user_out(prim->user_out_md, eng, out.data<float>() + n0 * per_out);
      memory src = user_in, dst = user_out;
      if (prim->in_reorder.valid()) {
        src = memory(prim->in_md, eng);
        run_reorder(st, prim->in_reorder, user_in, src);
      }
      if (prim->out_reorder.valid()) dst = memory(prim->out_md, eng);
      memory scratch(prim->conv.scratch_md, eng);
      if (kind == OnednnConv::Forward)
        prim->conv.prim.execute(
            st, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratch}});
      else
        prim->conv.prim.execute(st, {{DNNL_ARG_DIFF_DST, src},
                                     {DNNL_ARG_WEIGHTS, w},
                                     {DNNL_ARG_DIFF_SRC, dst},
                                     {DNNL_ARG_SCRATCHPAD, scratch}});
      if (prim->out_reorder.valid()) run_reorder(st, prim->out_reorder, dst, user_out);
      st.wait();
    };
    if (tasks <= 1)
      body(0);
    else
      parallel_for(tasks, threads, body);
  } catch (const dnnl::error&) {
    return false;  // no oneDNN implementation for these parameters: the caller runs im2col
  }
  return true;
}

}  // namespace hypatia::conv_detail
