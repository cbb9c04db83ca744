// debugprint: the text form of a graph that Theano users know.
#pragma once
#include <string>
#include <vector>

#include "hypatia/graph/fgraph.h"

namespace hypatia {

struct DebugPrintOptions {
  /// Print each variable's type after its name.
  bool print_type = false;
  /// Stop descending at this depth (-1: no limit).
  int depth = -1;
  /// After each node: the rewrite that made it and the user line its ancestor was built on
  /// ("  [by fusion; built at train.py:12]").
  bool provenance = false;
};

/// Theano-style tree for each output:
///   Elemwise{add,no_inplace} [id A] ''   2
///    |dot [id B] ''   1
///    |b [id C]
/// The trailing number is the node's position in `order` (the execution order) when given.
std::string debugprint(const std::vector<Var>& outputs, const DebugPrintOptions& opts = {},
                       const std::vector<std::shared_ptr<Apply>>* order = nullptr);
std::string debugprint(const Var& output, const DebugPrintOptions& opts = {});
std::string debugprint(const FunctionGraph& fg, const DebugPrintOptions& opts = {});

}  // namespace hypatia
