// verify_grad: checks a graph's symbolic gradient against finite differences (Theano's
// theano.gradient.verify_grad). It compiles functions, so it sits above compile/.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "hypatia/core/error.h"
#include "hypatia/core/ndarray.h"
#include "hypatia/graph/graph.h"

namespace hypatia {

struct VerifyGradOptions {
  int n_tests = 2;
  uint64_t seed = 42;
  /// Finite-difference step; 0 picks 1e-4 for float64 and 1e-2 for float32... (Theano's table).
  double eps = 0;
  double abs_tol = 0;  // 0 picks per dtype
  double rel_tol = 0;  // 0 picks per dtype
};

/// Thrown by verify_grad when analytic and numeric gradients disagree.
class GradientError : public ValueError {
 public:
  using ValueError::ValueError;
};

/// Checks the gradient of fn(inputs) at `point` against central finite differences of a random
/// projection of its output. Throws GradientError naming the input, the max errors and tolerances.
void verify_grad(const std::function<Var(const std::vector<Var>&)>& fn, const std::vector<NDArray>& point,
                 const VerifyGradOptions& opts = {});

}  // namespace hypatia
