// Program: the flat, precomputed schedule that a Function runs (thunks over storage cells).
#pragma once
#include <chrono>
#include <functional>
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
    /// For a node that overwrites shared variables: their cells, and the cells of views of them
    /// (dead by then; emptied so that the buffer's only holders are the cell and the variable).
    std::vector<int> shared_cells, view_cells;
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
    /// The value was computed in the shared variable's own buffer (an in-place node).
    bool in_place = false;
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
  /// Thunks from this index on overwrite shared variables: they run after all others, and only
  /// after each of them has checked its inputs (Op::check_runtime_inputs), so that a failing call
  /// changes no shared variable.
  size_t first_shared_destroyer = 0;
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
  /// DebugMode: checks the rewrites' replacements on each call's arguments (compile/debug_check.h).
  std::function<void(std::span<const NDArray>)> check_rewrites;
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
  void run_thunks(size_t begin, size_t end);
  /// Checks the shared-variable-overwriting thunks' inputs, and gives each overwritten shared
  /// value a buffer of its own (a copy when something outside the call holds it).
  void prepare_shared_destroyers();
  void run_debug(Thunk& th);
  void release_intermediates();
};

}  // namespace hypatia
