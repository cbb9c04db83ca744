// Reductions (sum prod mean var std max min argmax argmin all any) and cumulative ops.
#pragma once
#include <optional>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// Axes to reduce: nullopt means all axes. Negative axes count from the end.
using Axes = std::optional<std::vector<int>>;

Var sum(Var x, Axes axes = std::nullopt, bool keepdims = false);
Var prod(Var x, Axes axes = std::nullopt, bool keepdims = false);
Var mean(Var x, Axes axes = std::nullopt, bool keepdims = false);
/// Variance with `ddof` delta degrees of freedom (numpy's var).
Var var(Var x, Axes axes = std::nullopt, bool keepdims = false, int ddof = 0);
Var std(Var x, Axes axes = std::nullopt, bool keepdims = false, int ddof = 0);
Var max(Var x, Axes axes = std::nullopt, bool keepdims = false);
Var min(Var x, Axes axes = std::nullopt, bool keepdims = false);
/// Index of the max along one axis (all axes flattened when nullopt), int64.
Var argmax(Var x, std::optional<int> axis = std::nullopt, bool keepdims = false);
Var argmin(Var x, std::optional<int> axis = std::nullopt, bool keepdims = false);
Var all(Var x, Axes axes = std::nullopt, bool keepdims = false);
Var any(Var x, Axes axes = std::nullopt, bool keepdims = false);
/// Cumulative sum/product along axis (flattened when nullopt).
Var cumsum(Var x, std::optional<int> axis = std::nullopt);
Var cumprod(Var x, std::optional<int> axis = std::nullopt);

}  // namespace hypatia
