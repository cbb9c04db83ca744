// Kernels of the nnet family (declarations shared by the registration file).
#pragma once
#include "hypatia/backends/registry.h"
#include "hypatia/ops/nnet.h"

namespace hypatia::nnet_detail {

/// Reference (naive) kernels: the test oracle.
void softmax_reference(const Softmax& op, const KernelArgs& args);
void crossentropy_1hot_reference(const CrossentropyCategorical1Hot& op, const KernelArgs& args);
void crossentropy_1hot_grad_reference(const CrossentropyCategorical1HotGrad& op, const KernelArgs& args);
/// The fused cross-entropy's kernels take `one_for_all`: whether b's (Dx: dy's) type is
/// broadcastable, so that one element serves every class (row); otherwise it needs one per class
/// (row), as Elemwise's broadcasting does.
void crossentropy_softmax_reference(const CrossentropySoftmax1HotWithBias& op, const KernelArgs& args,
                                    bool one_for_all);
void crossentropy_softmax_dx_reference(const CrossentropySoftmax1HotWithBiasDx& op, const KernelArgs& args,
                                       bool one_for_all);
/// CrossentropySoftmax1HotWithBias's checks of its runtime shapes: b of one element per class (or
/// one, where its type is broadcastable), labels one per row (ValueError naming the op and the shapes).
void check_xent_softmax_shapes(const char* who, const NDArray& x, const NDArray& b, const NDArray& labels,
                               bool one_for_all);
/// CrossentropySoftmax1HotWithBiasDx's: dy of one element per row (or one, where its type is
/// broadcastable), labels one per row.
void check_xent_dx_shapes(const char* who, const NDArray& dy, const NDArray& sm, const NDArray& labels,
                          bool one_for_all);
/// The labels themselves (a view) once check_labels accepted them.
void check_labels_kernel(const CheckLabels& op, const KernelArgs& args);
/// CPU kernel: SIMD rows (last axis) or column blocks (other axes), OpenMP above a size threshold.
void softmax_cpu(const Softmax& op, const KernelArgs& args);
/// CPU kernel: the SIMD softmax and log_softmax rows of x + b, rows on the thread pool.
void crossentropy_softmax_cpu(const CrossentropySoftmax1HotWithBias& op, const KernelArgs& args, bool one_for_all);
/// CPU kernel: dy * softmax (a loop the compiler vectorizes), then the label's element, rows on the thread pool.
void crossentropy_softmax_dx_cpu(const CrossentropySoftmax1HotWithBiasDx& op, const KernelArgs& args, bool one_for_all);
/// Registers `fn(op, args, one_for_all)` as OpT's kernel on `backend`, one_for_all read from the
/// type of the node's input `input` (broadcastable along its axis 0).
template <class OpT>
void register_xent_kernel(std::string_view backend, void (*fn)(const OpT&, const KernelArgs&, bool), int input) {
  struct K final : Kernel {
    const OpT* op;
    void (*fn)(const OpT&, const KernelArgs&, bool);
    bool one_for_all;
    void run(const KernelArgs& a) override { fn(*op, a, one_for_all); }
  };
  register_kernel(backend, typeid(OpT), [fn, input](const Apply& node) -> std::unique_ptr<Kernel> {
    auto k = std::make_unique<K>();
    k->op = static_cast<const OpT*>(node.op.get());
    k->fn = fn;
    k->one_for_all = node.inputs[input]->type.broadcastable[0];
    return k;
  });
}

/// Reads label i (any integer dtype) of a labels vector.
int64_t label_at(const NDArray& labels, int64_t i);
/// Checks that coding has as many rows as labels has entries and every label is in
/// [0, n_classes); throws ValueError / IndexError naming `who`, the row and the label.
void check_labels(const char* who, const NDArray& coding, const NDArray& labels);
/// The shapes' part of check_labels (ValueError), for kernels that check the values elsewhere.
void check_label_shapes(const char* who, const NDArray& coding, const NDArray& labels);
/// check_labels' IndexError for `label` at `row` with `classes` classes. `label` is label_at's (a
/// uint64 label past int64's range wraps; it is named as the unsigned value the user gave).
[[noreturn]] void label_out_of_range(const char* who, int64_t label, DType label_dtype, int64_t row, int64_t classes);

}  // namespace hypatia::nnet_detail

namespace hypatia::nnet_detail {

/// Calls f(float{}) or f(double{}) for a float dtype; throws TypeError naming `who` otherwise.
template <class F>
void dispatch_float(DType dt, const std::string& who, F&& f) {
  if (dt == DType::Float32)
    f(float{});
  else if (dt == DType::Float64)
    f(double{});
  else
    fail<TypeError>(who, ": expected a float array, got ", dtype_name(dt));
}

}  // namespace hypatia::nnet_detail
