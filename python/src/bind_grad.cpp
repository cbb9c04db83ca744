// Symbolic differentiation: grad, Lop, Rop, jacobian, hessian, grad_clip, verify_grad.
#include <nanobind/stl/function.h>

#include "bindings.h"

namespace hypatia::python {

void init_grad(nb::module_& m) {
  m.def(
      "grad",
      [](Var cost, const std::vector<Var>& wrt, std::vector<Var> consider_constant, std::string disconnected_inputs,
         std::vector<std::pair<Var, Var>> known_grads) {
        GradOptions opts;
        opts.consider_constant = std::move(consider_constant);
        opts.disconnected_inputs = std::move(disconnected_inputs);
        opts.known_grads = std::move(known_grads);
        return grad(cost, wrt, opts);
      },
      "cost"_a.none(), "wrt"_a, "consider_constant"_a = std::vector<Var>{}, "disconnected_inputs"_a = "raise",
      "known_grads"_a = std::vector<std::pair<Var, Var>>{}, "d cost / d wrt for each wrt (reverse mode).");
  m.def("Lop", &Lop, "f"_a, "wrt"_a, "eval_points"_a, "Vector-Jacobian products: sum_i e[i] * d f[i] / d wrt.");
  m.def("Rop", &Rop, "f"_a, "wrt"_a, "eval_points"_a, "Jacobian-vector products: sum_j d f / d wrt[j] * e[j].");
  m.def("jacobian", &jacobian, "expression"_a, "wrt"_a);
  m.def("hessian", &hessian, "cost"_a, "wrt"_a);
  m.def("grad_clip", &grad_clip, "x"_a, "lo"_a, "hi"_a);
  m.def("grad_scale", &grad_scale, "x"_a, "multiplier"_a);
  m.def(
      "verify_grad",
      [](const std::function<Var(const std::vector<Var>&)>& fn, const std::vector<NDArray>& point, int n_tests,
         uint64_t seed, double eps, double abs_tol, double rel_tol) {
        VerifyGradOptions opts;
        opts.n_tests = n_tests;
        opts.seed = seed;
        opts.eps = eps;
        opts.abs_tol = abs_tol;
        opts.rel_tol = rel_tol;
        verify_grad(fn, point, opts);
      },
      "fn"_a, "point"_a, "n_tests"_a = 2, "seed"_a = 42, "eps"_a = 0.0, "abs_tol"_a = 0.0, "rel_tol"_a = 0.0,
      "Checks the gradient of fn at point against finite differences (0 picks the per-dtype default).");
}

}  // namespace hypatia::python
