// Every sample of the OpInfo table, and its gradient, run on a device backend and compared with
// the CPU: the CUDA backend on a GPU (test_cuda.cpp) and the emulated GPU everywhere
// (test_backend.cpp), which checks placement and the transfers it inserts for every op.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "hypatia/backends/backend.h"
#include "hypatia/testing/opinfo.h"
#include "test_util.h"

namespace hypatia::testing {

struct Conformance {
  std::string failures;  // one line per sample whose result or error differs from the CPU's
  int compared = 0;      // samples run on both
  int on_device = 0;     // nodes the backend itself ran (not its fallback)
};

/// `run` false: compiles only (the CUDA backend without a GPU, test_cuda_modules.cpp): the
/// backend's compile must fail where the CPU's does, and only there.
inline Conformance compare_op_infos_with_cpu(const std::string& backend, bool run = true) {
  Conformance r;
  auto compile = [](const std::vector<Var>& ins, const Var& y, const std::string& b) {
    FunctionOptions o;
    o.backend = b;
    o.on_unused_input = "ignore";
    return function(std::vector<In>(ins.begin(), ins.end()), {y}, o);
  };
  for (const OpInfo& info : op_infos())
    for (DType dt : info.dtypes)
      for (const OpSample& s : info.samples(dt)) {
        std::vector<Var> ins;
        for (size_t i = 0; i < s.inputs.size(); ++i) {
          std::string name(1, 'x');  // (not "x" + to_string: gcc 12 warns of a false overlap)
          name += std::to_string(i);
          ins.push_back(variable(TensorType::of_value(s.inputs[i]), name));
        }
        Var y;
        try {
          y = info.build(ins);
        } catch (const Error&) {
          continue;
        }
        NDArray want, got;
        std::string err_c, err_d;
        try {
          Function fc = compile(ins, y, "cpu");
          if (run) want = fc(s.inputs)[0];
        } catch (const std::exception& e) {
          err_c = e.what();
        }
        try {
          Function fd = compile(ins, y, backend);
          for (const auto& n : fd.toposort()) r.on_device += get_backend(backend).provider(*n)->name() == backend;
          if (run) got = fd(s.inputs)[0];
        } catch (const std::exception& e) {
          err_d = e.what();
        }
        ++r.compared;
        const std::string where = info.name + " " + std::string(dtype_name(dt)) + " [" + s.desc + "]";
        if (err_c.empty() != err_d.empty()) {
          r.failures +=
              where + ": cpu '" + err_c.substr(0, 200) + "' vs " + backend + " '" + err_d.substr(0, 200) + "'\n";
          continue;
        }
        if (!err_c.empty() || !run) continue;
        // The tolerances of the result's dtype (exp of int8 is float32, the var of int64
        // float64): transcendental functions differ by an ulp or two, sums by their order.
        const double rtol = std::max(info.rtol, default_rtol(want.dtype()));
        const double atol = std::max(info.atol, default_atol(want.dtype()));
        if (!got.on_host()) {
          r.failures += where + ": the result is on " + got.device().str() + ", not the host\n";
          continue;
        }
        if (std::string d = compare_arrays(got, want, rtol, atol); !d.empty())
          r.failures += where + ": " + d.substr(0, 300) + "\n";
      }
  return r;
}

/// The gradient of sum(op(inputs)) with respect to every float input, compiled for `backend`
/// and for the CPU, on each sample the CPU tests check gradients on (`run` false: compiled only).
inline Conformance compare_op_info_gradients_with_cpu(const std::string& backend, bool run = true) {
  Conformance r;
  auto compile = [](const std::vector<Var>& vars, const std::vector<Var>& g, const std::string& b) {
    FunctionOptions o;
    o.backend = b;
    o.on_unused_input = "ignore";
    return function(std::vector<In>(vars.begin(), vars.end()), std::vector<Out>(g.begin(), g.end()), o);
  };
  for (const OpInfo& info : op_infos()) {
    if (!info.differentiable) continue;
    for (DType dt : info.dtypes) {
      if (dt != DType::Float32 && dt != DType::Float64) continue;
      for (const OpSample& s : info.samples(dt)) {
        bool empty = false;
        for (const auto& a : s.inputs) empty |= a.size() == 0;
        if (!s.check_grad || empty) continue;
        std::vector<int> wrt = info.grad_inputs;
        if (wrt.empty())
          for (size_t i = 0; i < s.inputs.size(); ++i)
            if (is_float(s.inputs[i].dtype())) wrt.push_back(static_cast<int>(i));
        std::vector<Var> vars, all;
        std::vector<NDArray> vals;
        for (size_t i = 0; i < s.inputs.size(); ++i) {
          if (std::find(wrt.begin(), wrt.end(), static_cast<int>(i)) != wrt.end()) {
            std::string name(1, 'x');
            name += std::to_string(i);
            vars.push_back(variable(TensorType::of_value(s.inputs[i]), name));
            vals.push_back(s.inputs[i]);
            all.push_back(vars.back());
          } else {
            all.push_back(constant(s.inputs[i]));
          }
        }
        std::vector<Var> g;
        try {
          Var out = info.build(all);
          if (!is_float(out->dtype())) out = cast(out, dt);
          g = grad(sum(out), vars);
        } catch (const Error&) {
          continue;
        }
        const std::string where = info.name + " " + std::string(dtype_name(dt)) + " [" + s.desc + "]";
        try {
          Function fc = compile(vars, g, "cpu");
          Function fd = compile(vars, g, backend);
          for (const auto& n : fd.toposort()) r.on_device += get_backend(backend).provider(*n)->name() == backend;
          ++r.compared;
          if (!run) continue;
          const auto want = fc(vals);
          const auto got = fd(vals);
          for (size_t k = 0; k < want.size(); ++k)
            if (std::string d = compare_arrays(got[k], want[k], default_rtol(dt) * 10, default_atol(dt) * 10);
                !d.empty())
              r.failures += where + " d/dx" + std::to_string(k) + ": " + d.substr(0, 300) + "\n";
        } catch (const std::exception& e) {
          r.failures += where + ": " + std::string(e.what()).substr(0, 300) + "\n";
        }
      }
    }
  }
  return r;
}

}  // namespace hypatia::testing
