// Helpers shared by the shape and subtensor op files (internal).
#pragma once
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia::detail {

/// The value of a 0-d integer constant, or nullopt.
std::optional<int64_t> constant_int(const Var& v);
/// "(True, False)" for error messages.
std::string bc_str(const std::vector<bool>& bc);
/// Casts an integer 0-d variable to int64 (unchanged when it already is).
Var as_int64(Var v);
/// Requires a 0-d integer input; throws TypeError naming the op and the role.
void check_int_scalar(const std::string& op, const Var& v, const char* role);

}  // namespace hypatia::detail

namespace hypatia::detail {
/// Entry i of an int vector as a 0-d int64 variable (folds constants and MakeVector inputs).
Var vector_entry(const Var& v, int i);
/// Entry i of a constant or MakeVector-built vector when it is a constant.
std::optional<int64_t> vector_entry_constant(const Var& v, int i);
/// Product of 0-d int64 variables, folding constants (0 when a constant is 0). Throws ValueError
/// starting with `who` when the constants' product does not fit in int64: no array has that size.
Var shape_product(const std::vector<Var>& dims, const std::string& who);
/// Sum of 0-d int64 variables, folding constants; ValueError starting with `who` on overflow.
Var shape_sum(const std::vector<Var>& dims, const std::string& who);
}  // namespace hypatia::detail
