#include "hypatia/backends/registry.h"

#include <mutex>
#include <unordered_map>

#include "hypatia/core/error.h"

namespace hypatia {
namespace {
struct Table {
  std::unordered_map<std::type_index, KernelFactory> by_backend[2];
};
Table& table() {
  static Table t;
  return t;
}
void ensure_registered() {
  static std::once_flag once;
  std::call_once(once, [] { register_all_kernels(); });
}
const KernelFactory* find(Backend backend, const Apply& node) {
  ensure_registered();
  auto& t = table();
  std::type_index key(typeid(*node.op));
  auto& m = t.by_backend[static_cast<int>(backend)];
  if (auto it = m.find(key); it != m.end()) return &it->second;
  if (backend == Backend::Cpu) {
    auto& r = t.by_backend[static_cast<int>(Backend::Reference)];
    if (auto it = r.find(key); it != r.end()) return &it->second;
  }
  return nullptr;
}
}  // namespace

void register_kernel(Backend backend, std::type_index op_type, KernelFactory factory) {
  table().by_backend[static_cast<int>(backend)][op_type] = std::move(factory);
}

bool supports(Backend backend, const Apply& node) { return find(backend, node) != nullptr; }

std::unique_ptr<Kernel> make_kernel(Backend backend, const Apply& node) {
  const KernelFactory* f = find(backend, node);
  if (!f)
    throw InternalError(node.op->name() + ": no kernel registered for backend " +
                        (backend == Backend::Cpu ? "cpu" : "reference"));
  return (*f)(node);
}

std::vector<std::type_index> registered_op_types(Backend backend) {
  ensure_registered();
  std::vector<std::type_index> r;
  for (const auto& [k, f] : table().by_backend[static_cast<int>(backend)]) r.push_back(k);
  return r;
}

NDArray& prepare_output(NDArray& cell, const Shape& shape, DType dtype) {
  if (cell.valid() && cell.unique() && cell.writeable() && cell.dtype() == dtype && cell.shape() == shape &&
      cell.is_c_contiguous() && cell.offset() == 0)
    return cell;
  cell = NDArray::empty(shape, dtype);
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
