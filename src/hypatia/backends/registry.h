// Kernels: the interface a backend's kernels implement, and registration by backend name
// (the backends themselves: backends/backend.h).
#pragma once
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <typeindex>
#include <vector>

#include "hypatia/core/ndarray.h"
#include "hypatia/graph/graph.h"

namespace hypatia {

/// The built-in backends' names (for backends/ code and tests; nothing above backends/ names a
/// backend). Reference kernels are naive and serve as the test oracle; CPU kernels are fast.
inline constexpr std::string_view kReferenceBackend = "reference";
inline constexpr std::string_view kCpuBackend = "cpu";

/// The storage a kernel reads and writes. An output cell may hold the previous call's array:
/// a kernel may reuse it (see prepare_output) or replace it.
struct KernelArgs {
  std::span<NDArray* const> in;
  std::span<NDArray* const> out;
};

/// A private way to run an inner program many times in a row (a loop's body, once per step):
/// made once by the kernel that loops, used by that kernel only (not thread-safe), it keeps a
/// frame of its own between runs, so that a step costs the body's kernels and little else.
class InnerRunner {
 public:
  virtual ~InnerRunner() = default;
  /// One run, as InnerProgram::run. The outputs may share memory with the arguments and with
  /// the body's constants: the caller reads them (or copies them) and does not write them.
  virtual void run(std::span<const NDArray> args, std::span<NDArray> outs) = 0;
  /// Whether run_scalars can be used: every inner input and output is 0-d (of at most 8 bytes)
  /// and every node of the body has a scalar path (Kernel::has_scalar_path).
  virtual bool scalar() const { return false; }
  /// One run on elements: in[i] points at inner input i's element, out[k] at where inner output
  /// k's element is written (no output element overlaps an input's). Only when scalar().
  virtual void run_scalars(const std::byte* const* in, std::byte* const* out);
  /// For a loop that places the element pointers itself (only when scalar()): per inner input and
  /// per inner output, the slots its element pointer goes to (each slot holds a pointer, written
  /// with memcpy: a slot need not be aligned); false when the body needs run_scalars (an output that is an input or a
  /// constant is copied after its nodes). Then run_bound() runs the nodes on what the slots hold.
  /// Saves run_scalars' copying of every pointer through its argument lists on each step.
  virtual bool scalar_slots(std::vector<std::vector<void*>>& in, std::vector<std::vector<void*>>& out) { return false; }
  virtual void run_bound();
  /// Drops the references to the last run's arguments and outputs (the loop is over).
  virtual void release() {}
};

/// A compiled inner function (Op::inner_functions) that a kernel runs: a sub-program of the
/// function's program (runtime/program.h implements it). run() is thread-safe and re-entrant.
class InnerProgram {
 public:
  virtual ~InnerProgram() = default;
  /// One run: args.size() == the inner inputs, outs.size() == the inner outputs. An array left in
  /// outs[i] by the previous run that nothing else references is reused as output i's buffer.
  virtual void run(std::span<const NDArray> args, std::span<NDArray> outs) = 0;
  /// A runner for many runs in a row by one kernel (the default calls run()).
  virtual std::unique_ptr<InnerRunner> runner();
};

/// A kernel bound to one Apply node; built once at compile time, run on every call.
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(const KernelArgs& args) = 0;
  /// Receives the compiled inner functions of its node's op, in Op::inner_functions() order,
  /// right after it is built. Kernels of ops without inner functions never receive any.
  virtual void bind_inner(std::vector<std::shared_ptr<InnerProgram>> programs);
  /// The kernel of an op with lazy inputs (Op::lazy_inputs): called with the inputs computed so
  /// far (`ready[i]`; a lazy input not computed yet is an empty cell), it returns the inputs it
  /// needs before it can finish, or nothing once it has written its outputs. The runtime computes
  /// what it asked for and calls again (Theano's lazy thunks).
  virtual std::vector<int> run_lazy(const KernelArgs& args, std::span<const bool> ready);
  /// Whether run_scalars computes this node when all its inputs and outputs are 0-d: a loop body
  /// of scalars then runs without building arrays (InnerRunner::run_scalars). The result must be
  /// the one run() gives, bit for bit.
  virtual bool has_scalar_path() const { return false; }
  /// in[i] points at input i's element, out[k] at where output k's element is written; the
  /// element types are the node's. Only when has_scalar_path().
  virtual void run_scalars(const std::byte* const* in, std::byte* const* out);
  /// Kernels that check their inputs on the device (KernelTraits::device_checks: index vectors
  /// read in device memory) queue the check with their work, which records what it found (and
  /// goes on without reading or writing out of bounds). Once the call has waited for the device,
  /// the runtime calls this on each such kernel that ran: a failed check throws the error the
  /// host's check would have (IndexError naming the axis, the index and the size).
  virtual void raise_device_errors() {}
};

using KernelFactory = std::function<std::unique_ptr<Kernel>(const Apply& node)>;

/// What a backend's kernel needs of its node beyond the op type.
struct KernelTraits {
  /// Whether the kernel runs this node (its dtypes, say); null: every node of the op type. A
  /// node it refuses goes to the backend's fallback.
  std::function<bool(const Apply& node)> accepts;
  /// Inputs the kernel reads in host memory whatever its backend's device (shape vectors, the
  /// 0-d alpha and beta of a product): function()'s placement moves none of them to the device.
  std::vector<int> host_inputs;
  /// When set, host_inputs per node instead (a Python op on a device reads its inputs that are
  /// not device values on the host). Read through host_inputs_for.
  std::function<std::vector<int>(const Apply& node)> host_inputs_of;
  std::vector<int> host_inputs_for(const Apply& node) const {
    return host_inputs_of ? host_inputs_of(node) : host_inputs;
  }
  /// The kernel reads only its inputs' shapes (Shape, Shape_i): they may be on any device.
  bool any_device_inputs = false;
  /// The kernel's run() only queues device work on its backend's stream (through its
  /// Recorder), whose arguments depend on nothing but its inputs' buffers, shapes and strides and
  /// the values of its host inputs: a recording of it replays what run() would do again.
  bool recordable = false;
  /// The kernel checks inputs on the device (Kernel::raise_device_errors): a call of a function
  /// with such a node waits for the device before the nodes that overwrite shared variables run
  /// (or, without them, before its outputs are returned), and fails there if a check failed. Its
  /// op must not overwrite shared variables (Op::check_runtime_inputs stays the default).
  bool device_checks = false;
};

/// Registers the kernel factory of op type `op_type` on the backend named `backend` (replacing an
/// earlier one); the backend must be registered (backends/backend.h).
void register_kernel(std::string_view backend, std::type_index op_type, KernelFactory factory,
                     KernelTraits traits = {});
/// Whether the backend named `backend` (or its fallback) has a kernel for node's op.
bool supports(std::string_view backend, const Apply& node);
/// Builds the kernel for `node` on the backend named `backend` (or its fallback); throws
/// NotImplementedError naming the op and the backends when there is none.
std::unique_ptr<Kernel> make_kernel(std::string_view backend, const Apply& node);

/// Registers `fn(op, args)` as the kernel of OpT on `backend`: for kernels with no per-node state.
template <class OpT>
void register_simple_kernel(std::string_view backend, void (*fn)(const OpT& op, const KernelArgs& args),
                            KernelTraits traits = {}) {
  struct SimpleKernel final : Kernel {
    const OpT* op;
    void (*fn)(const OpT&, const KernelArgs&);
    void run(const KernelArgs& a) override { fn(*op, a); }
  };
  register_kernel(
      backend, typeid(OpT),
      [fn](const Apply& node) -> std::unique_ptr<Kernel> {
        auto k = std::make_unique<SimpleKernel>();
        k->op = static_cast<const OpT*>(node.op.get());
        k->fn = fn;
        return k;
      },
      std::move(traits));
}

/// Every op type with a kernel of the backend named `backend` itself (for coverage tests).
std::vector<std::type_index> registered_op_types(std::string_view backend);

/// Makes `cell` a C-contiguous array of `shape` and `dtype`, reusing its buffer when it is
/// already such a writeable array that nothing else references; returns it.
NDArray& prepare_output(NDArray& cell, const Shape& shape, DType dtype);
/// prepare_output for an elementwise result: laid out as the inputs `like` agree to
/// (strides_following: a Fortran-ordered or transposed input gives an output in its order, as
/// numpy's order "K"), C order otherwise.
NDArray& prepare_output_following(NDArray& cell, const Shape& shape, DType dtype, std::span<const NDArray* const> like);
/// The output cell of a node whose output overwrites its input `input` (`target`, per its
/// destroy_map): checks that the target has the output's shape and dtype (ValueError naming `op`
/// otherwise) and makes the cell a handle on the target's buffer, or on a copy of it when the
/// target cannot be written in place (read-only memory, overlapping elements).
NDArray& prepare_inplace_output(NDArray& cell, const NDArray& target, const Shape& shape, DType dtype, const Op& op,
                                int input);

/// Registers the built-in backends and every kernel family (called once, lazily, by the first
/// backend lookup).
void register_all_kernels();

}  // namespace hypatia
