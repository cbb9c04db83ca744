// Program: the flat, precomputed schedule that a Function runs (thunks over storage cells).
#pragma once
#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hypatia/backends/registry.h"
#include "hypatia/compile/profile.h"
#include "hypatia/graph/fgraph.h"
#include "hypatia/rewrite/rewriter.h"

namespace hypatia {

/// What kind of value a storage cell holds.
enum class CellKind : uint8_t { Input, Shared, Constant, Intermediate };

/// A compiled function's schedule and storage. Built by function(); run by Function.
class Program {
 public:
  struct Thunk {
    std::unique_ptr<Kernel> kernel;
    /// DebugMode only: the node's reference kernel, run beside `kernel` and compared.
    std::unique_ptr<Kernel> reference;
    std::shared_ptr<Apply> node;
    std::vector<NDArray*> in, out;
    /// Intermediate cells whose last reader is this thunk (freed after it when gc is on).
    std::vector<int> free_after;
  };
  struct InputSlot {
    int cell;
    TensorType type;
    std::string name;
    std::optional<NDArray> default_value;
  };
  struct SharedSlot {
    int cell;
    std::shared_ptr<SharedCell> shared;
  };
  struct UpdateSlot {
    std::shared_ptr<SharedCell> shared;
    Var variable;
    int value_cell;
    bool may_alias_leaf;
  };
  struct OutputSlot {
    int cell;
    bool borrow;
    /// The value may share memory with an input, shared or constant cell (copy unless borrow).
    bool may_alias_leaf;
  };

  std::string name;
  std::unique_ptr<FunctionGraph> fgraph;
  std::vector<NDArray> storage;
  std::vector<CellKind> cell_kind;
  std::vector<Thunk> thunks;
  std::vector<InputSlot> inputs;
  std::vector<SharedSlot> shared;
  std::vector<UpdateSlot> updates;
  std::vector<OutputSlot> outputs;
  /// Cells emptied after every call: inputs, shared values and (with gc) intermediates.
  std::vector<int> release_cells;
  bool allow_input_downcast = false;
  /// DebugMode: every thunk is checked against its reference kernel, and inputs outside its
  /// destroy_map must come out unchanged (Theano's BadThunkOutput / BadDestroyMap).
  bool debug_mode = false;
  bool allow_gc = true;
  std::unique_ptr<Profile> profile;
  /// What the rewrite pipeline did at compile time.
  RewriteStats rewrite_stats;

  /// Fills release_cells from cell_kind and allow_gc (call once the cells are final).
  void finalize();

  /// Runs one call: args.size() == inputs.size(), outs.size() == outputs.size().
  void run(std::span<const NDArray> args, std::span<NDArray> outs);

 private:
  void bind_input(size_t i, const NDArray& arg);
  void run_thunks();
  void run_debug(Thunk& th);
  void release_intermediates();
};

}  // namespace hypatia
