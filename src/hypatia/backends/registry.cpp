// Output-cell helpers shared by every backend's kernels (the backends and their kernel tables:
// backend.cpp).
#include "hypatia/backends/registry.h"

#include "hypatia/core/error.h"
#include "hypatia/core/strided_loop.h"

namespace hypatia {

void Kernel::bind_inner(std::vector<std::shared_ptr<InnerProgram>>) {
  throw InternalError("Kernel::bind_inner: this kernel runs no inner functions");
}

void Kernel::run_scalars(const std::byte* const*, std::byte* const*) {
  throw InternalError("Kernel::run_scalars: this kernel has no scalar path");
}

void InnerRunner::run_bound() { throw InternalError("InnerRunner::run_bound: this body has no scalar slots"); }

void InnerRunner::run_scalars(const std::byte* const*, std::byte* const*) {
  throw InternalError("InnerRunner::run_scalars: this body is not all scalars");
}

std::unique_ptr<InnerRunner> InnerProgram::runner() {
  struct Calls final : InnerRunner {
    InnerProgram* p;
    void run(std::span<const NDArray> args, std::span<NDArray> outs) override { p->run(args, outs); }
  };
  auto r = std::make_unique<Calls>();
  r->p = this;
  return r;
}

std::vector<int> Kernel::run_lazy(const KernelArgs&, std::span<const bool>) {
  throw InternalError("Kernel::run_lazy: this kernel is not lazy");
}
namespace {

/// Whether the cell holds a buffer of its own that a kernel may overwrite as an array of `shape`
/// and `dtype` (its layout checked by the caller).
bool reusable(const NDArray& cell, const Shape& shape, DType dtype) {
  return cell.valid() && cell.unique() && cell.writeable() && cell.dtype() == dtype && cell.shape() == shape &&
         cell.offset() == 0;
}

}  // namespace

NDArray& prepare_output(NDArray& cell, const Shape& shape, DType dtype) {
  if (reusable(cell, shape, dtype) && cell.is_c_contiguous()) return cell;
  cell = NDArray::empty(shape, dtype);
  return cell;
}

NDArray& prepare_output_following(NDArray& cell, const Shape& shape, DType dtype,
                                  std::span<const NDArray* const> like) {
  const std::optional<Strides> st = strides_following(shape, itemsize(dtype), like);
  if (!st) return prepare_output(cell, shape, dtype);
  if (reusable(cell, shape, dtype) && cell.strides() == *st) return cell;
  cell = NDArray::empty(shape, dtype).as_strided(shape, *st);
  return cell;
}

NDArray& prepare_inplace_output(NDArray& cell, const NDArray& target, const Shape& shape, DType dtype, const Op& op,
                                int input) {
  if (!(target.shape() == shape) || target.dtype() != dtype)
    fail<ValueError>(op.name(), ": the overwritten input ", input, " is ", target.describe(), " but the output is ",
                     dtype_name(dtype), " ", shape.str());
  // Memory that must not be written (read-only, or elements that share bytes) is copied first:
  // in-place is an optimization, never a licence to write there.
  cell = target.can_write_in_place() ? target : target.copy();
  return cell;
}

}  // namespace hypatia
