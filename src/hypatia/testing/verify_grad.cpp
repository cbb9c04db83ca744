#include "hypatia/testing/verify_grad.h"

#include <cmath>
#include <random>
#include <sstream>

#include "hypatia/compile/function.h"
#include "hypatia/grad/grad.h"
#include "hypatia/graph/printing.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/reduce.h"

namespace hypatia {

void verify_grad(const std::function<Var(const std::vector<Var>&)>& fn, const std::vector<NDArray>& point,
                 const VerifyGradOptions& opts) {
  std::vector<Var> vars;
  for (size_t i = 0; i < point.size(); ++i)
    vars.push_back(variable(TensorType::of_value(point[i]), "input" + std::to_string(i)));
  Var out = fn(vars);
  if (!out) fail<ValueError>("verify_grad: fn returned a null variable");
  if (!is_float(out->dtype())) fail<TypeError>("verify_grad: fn's output must be float; got ", out->type.str());
  std::vector<In> ins(vars.begin(), vars.end());
  FunctionOptions fo;
  fo.on_unused_input = "ignore";
  NDArray out_val = function(ins, {Out(out)}, fo)(point)[0];

  std::vector<int> diff;
  for (size_t i = 0; i < point.size(); ++i)
    if (is_float(point[i].dtype())) diff.push_back(static_cast<int>(i));
  if (diff.empty()) fail<ValueError>("verify_grad: no float input to differentiate");
  const bool single = out->dtype() == DType::Float32 ||
                      std::any_of(diff.begin(), diff.end(), [&](int i) { return point[i].dtype() == DType::Float32; });
  const double eps = opts.eps > 0 ? opts.eps : (single ? 1e-3 : 1e-6);
  const double abs_tol = opts.abs_tol > 0 ? opts.abs_tol : (single ? 3e-2 : 1e-4);
  const double rel_tol = opts.rel_tol > 0 ? opts.rel_tol : (single ? 3e-2 : 1e-4);

  std::mt19937_64 rng(opts.seed);
  std::uniform_real_distribution<double> u(0.5, 1.5);
  for (int test = 0; test < opts.n_tests; ++test) {
    // cost = sum(out * t) for a random projection t.
    NDArray t = NDArray::empty(out_val.shape(), out->dtype());
    for (int64_t k = 0; k < t.size(); ++k) {
      double r = u(rng) * ((rng() & 1) ? 1 : -1);
      if (t.dtype() == DType::Float32)
        t.data<float>()[k] = static_cast<float>(r);
      else
        t.data<double>()[k] = r;
    }
    Var tv = constant(t);
    Var cost = sum(mul(out, tv));
    std::vector<Var> wrt;
    for (int i : diff) wrt.push_back(vars[i]);
    std::vector<Var> g = grad(cost, wrt, GradOptions{.disconnected_inputs = "ignore"});
    std::vector<Out> outs{Out(cost)};
    for (auto& gi : g) outs.emplace_back(gi);
    Function f = function(ins, outs, fo);
    auto analytic = f(point);
    Function fc = function(ins, {Out(cost)}, fo);
    for (size_t k = 0; k < diff.size(); ++k) {
      int i = diff[k];
      NDArray x = point[i].copy();
      std::vector<NDArray> args = point;
      args[i] = x;
      NDArray a = analytic[1 + k];
      if (!(a.shape() == x.shape()))
        fail<GradientError>("verify_grad: gradient of input ", i, " has shape ", a.shape().str(), "; input has ",
                            x.shape().str());
      double max_abs = 0, max_rel = 0;
      int64_t worst = -1;
      for (int64_t e = 0; e < x.size(); ++e) {
        double orig = x.get_flat(e);
        auto set = [&](double v) {
          if (x.dtype() == DType::Float32)
            x.data<float>()[e] = static_cast<float>(v);
          else
            x.data<double>()[e] = v;
        };
        set(orig + eps);
        double fp = fc(args)[0].get_flat(0);
        set(orig - eps);
        double fm = fc(args)[0].get_flat(0);
        set(orig);
        double num = (fp - fm) / (2 * eps);
        double an = a.get_flat(e);
        double ae = std::abs(an - num);
        double re = ae / std::max(std::abs(an) + std::abs(num), 1e-300);
        if (ae > abs_tol && re > rel_tol && (ae > max_abs || worst < 0)) {
          max_abs = ae;
          max_rel = re;
          worst = e;
        }
        if (std::isnan(an) != std::isnan(num)) {
          worst = e;
          max_abs = NAN;
        }
      }
      if (worst >= 0) {
        std::ostringstream os;
        os << "verify_grad: the analytic gradient of input " << i << " (" << x.describe()
           << ") disagrees with finite differences at flat index " << worst << ": analytic " << a.get_flat(worst)
           << "; max abs error " << max_abs << " (tol " << abs_tol << "), rel error " << max_rel << " (tol " << rel_tol
           << "), eps " << eps << "\nGraph:\n"
           << debugprint(out);
        throw GradientError(os.str());
      }
    }
  }
}

}  // namespace hypatia
