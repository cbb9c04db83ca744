// The generic conformance suite: for every OpInfo entry, dtype and sample, the CPU kernel against
// the reference kernel (and the entry's own expected values), infer_shape against the computed
// shape, and the gradient against finite differences. Coverage tests fail when an op has a
// kernel but no entry, or a scalar op (a row of scalar_ops.def) has no entry building it.
#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <set>
#include <typeindex>

#include "hypatia/grad/grad_ops.h"
#include "test_util.h"

namespace hypatia::testing {
namespace {

struct Case {
  const OpInfo* info;
  DType dtype;
};

std::vector<Var> make_vars(const std::vector<NDArray>& inputs) {
  std::vector<Var> vars;
  for (size_t i = 0; i < inputs.size(); ++i)
    vars.push_back(variable(TensorType::of_value(inputs[i]), "x" + std::to_string(i)));
  return vars;
}

std::vector<std::pair<Var, NDArray>> bind_inputs(const std::vector<Var>& vars, const std::vector<NDArray>& inputs) {
  std::vector<std::pair<Var, NDArray>> r;
  for (size_t i = 0; i < vars.size(); ++i) r.emplace_back(vars[i], inputs[i]);
  return r;
}

class OpInfoTest : public ::testing::TestWithParam<size_t> {
 protected:
  const OpInfo& info() const { return op_infos()[GetParam()]; }
  double rtol(DType dt) const { return info().rtol > 0 ? info().rtol : default_rtol(dt); }
  double atol(DType dt) const { return info().atol > 0 ? info().atol : default_atol(dt); }
};

/// The CPU result in DebugMode: FAST_RUN rewrites, and every node of the rewritten graph checked
/// against its reference kernel and its destroy_map as it runs.
NDArray eval_debug_mode(const Var& out, const std::vector<Var>& vars, const std::vector<NDArray>& values) {
  std::vector<In> ins;
  for (const auto& v : vars) ins.emplace_back(v);
  FunctionOptions o;
  o.mode = "DebugMode";
  o.on_unused_input = "ignore";
  return function(ins, {Out(out)}, o)(values)[0];
}

TEST_P(OpInfoTest, CpuMatchesReference) {
  const OpInfo& op = info();
  for (DType dt : op.dtypes)
    for (const OpSample& s : op.samples(dt)) {
      SCOPED_TRACE(op.name + " " + std::string(dtype_name(dt)) + " " + s.desc);
      auto vars = make_vars(s.inputs);
      Var out = op.build(vars);
      NDArray ref = eval(out, bind_inputs(vars, s.inputs), kReferenceBackend);
      NDArray cpu = eval_debug_mode(out, vars, s.inputs);
      EXPECT_EQ(cpu.dtype(), out->dtype());
      EXPECT_EQ(ref.dtype(), out->dtype());
      EXPECT_EQ(out->type.check_value(cpu), "");
      EXPECT_ALLCLOSE(cpu, ref, rtol(out->dtype()), atol(out->dtype()));
      if (op.expected) {
        EXPECT_ALLCLOSE(cpu, op.expected(s.inputs), rtol(out->dtype()), atol(out->dtype()));
      }
    }
}

TEST_P(OpInfoTest, InferShapeMatchesComputedShape) {
  const OpInfo& op = info();
  for (DType dt : op.dtypes)
    for (const OpSample& s : op.samples(dt)) {
      SCOPED_TRACE(op.name + " " + std::string(dtype_name(dt)) + " " + s.desc);
      auto vars = make_vars(s.inputs);
      Var out = op.build(vars);
      if (!out->owner) continue;
      const Apply& node = *out->owner;
      std::vector<ShapeVars> in_shapes;
      for (const auto& in : node.inputs) in_shapes.push_back(shape_vars(in));
      auto shapes = node.op->infer_shape(node, in_shapes);
      if (shapes.empty()) continue;
      ASSERT_EQ(static_cast<int>(shapes.size()), node.nout());
      NDArray value = eval(out, bind_inputs(vars, s.inputs));
      const ShapeVars& sv = shapes[out->index];
      ASSERT_EQ(static_cast<int>(sv.size()), value.ndim()) << node.op->name();
      for (int d = 0; d < value.ndim(); ++d) {
        NDArray len = eval(sv[d], bind_inputs(vars, s.inputs));
        EXPECT_EQ(len.ndim(), 0);
        EXPECT_EQ(static_cast<int64_t>(len.get_flat(0)), value.shape(d)) << node.op->name() << " axis " << d;
      }
    }
}

TEST_P(OpInfoTest, GradientMatchesFiniteDifferences) {
  const OpInfo& op = info();
  if (!op.differentiable) GTEST_SKIP() << op.name << " is not differentiable";
  for (DType dt : op.dtypes) {
    if (!is_float(dt)) continue;
    for (const OpSample& s : op.samples(dt)) {
      if (!s.check_grad) continue;
      bool empty = false;
      for (const auto& a : s.inputs) empty |= a.size() == 0;
      if (empty) continue;
      SCOPED_TRACE(op.name + " " + std::string(dtype_name(dt)) + " " + s.desc);
      std::vector<int> wrt = op.grad_inputs;
      if (wrt.empty())
        for (size_t i = 0; i < s.inputs.size(); ++i)
          if (is_float(s.inputs[i].dtype())) wrt.push_back(static_cast<int>(i));
      std::vector<NDArray> point;
      for (int i : wrt) point.push_back(s.inputs[i]);
      auto fn = [&](const std::vector<Var>& xs) {
        std::vector<Var> all;
        for (size_t i = 0; i < s.inputs.size(); ++i) {
          auto it = std::find(wrt.begin(), wrt.end(), static_cast<int>(i));
          all.push_back(it != wrt.end() ? xs[it - wrt.begin()] : constant(s.inputs[i]));
        }
        Var out = op.build(all);
        return is_float(out->dtype()) ? out : cast(out, dt);
      };
      EXPECT_NO_THROW(verify_grad(fn, point)) << [&] {
        try {
          verify_grad(fn, point);
        } catch (const std::exception& e) {
          return std::string(e.what());
        }
        return std::string();
      }();
    }
  }
}

std::string case_name(const ::testing::TestParamInfo<size_t>& p) {
  std::string n = op_infos()[p.param].name;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n + "_" + std::to_string(p.param);
}

INSTANTIATE_TEST_SUITE_P(Ops, OpInfoTest, ::testing::Range<size_t>(0, op_infos().size()), case_name);

TEST(OpInfoCoverage, EveryOpWithAKernelHasAnEntry) {
  std::set<std::type_index> covered;
  for (const OpInfo& op : op_infos())
    for (DType dt : op.dtypes) {
      auto samples = op.samples(dt);
      if (samples.empty()) continue;
      auto vars = make_vars(samples[0].inputs);
      for (const auto& n : toposort({op.build(vars)})) covered.insert(typeid(*n->op));
      break;
    }
  // Ops exercised by their own suites (test_grad.cpp, test_backend.cpp, test_scan.cpp) rather than
  // the table.
  std::set<std::type_index> elsewhere{
      typeid(DisconnectedGradOp), typeid(GradClipOp),     typeid(GradScaleOp), typeid(MapIndexOp),
      typeid(DeviceFromHost),     typeid(HostFromDevice), typeid(Scan),        typeid(ScanGrad)};
  std::vector<std::string> missing;
  for (auto t : registered_op_types(kReferenceBackend))
    if (!covered.count(t) && !elsewhere.count(t)) {
      int status = 0;
      std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(t.name(), nullptr, nullptr, &status), std::free);
      const std::string n = status == 0 ? name.get() : t.name();
      // Ops local to other test files (test_lazy.cpp's Count) register kernels too when the whole
      // suite runs in one process; no library op lives in an anonymous namespace.
      if (n.find("(anonymous namespace)") == std::string::npos) missing.push_back(n);
    }
  EXPECT_TRUE(missing.empty()) << "ops with kernels but no OpInfo entry: " << ::testing::PrintToString(missing);
}

TEST(OpInfoCoverage, EveryScalarOpHasAnEntry) {
  // Elemwise is one op type for every scalar op: each row of scalar_ops.def needs an entry whose
  // graph applies it.
  std::set<ScalarOpKind> covered;
  for (const OpInfo& op : op_infos())
    for (DType dt : op.dtypes) {
      auto samples = op.samples(dt);
      if (samples.empty()) continue;
      auto vars = make_vars(samples[0].inputs);
      for (const auto& n : toposort({op.build(vars)}))
        if (const auto* e = dynamic_cast<const Elemwise*>(n->op.get())) covered.insert(e->scalar);
      break;
    }
  std::vector<std::string> missing;
  for (int k = 0; k < kNumScalarOps; ++k)
    if (!covered.count(static_cast<ScalarOpKind>(k)))
      missing.emplace_back(scalar_op_name(static_cast<ScalarOpKind>(k)));
  EXPECT_TRUE(missing.empty()) << "scalar ops (rows of scalar_ops.def) with no OpInfo entry: "
                               << ::testing::PrintToString(missing);
}

}  // namespace
}  // namespace hypatia::testing
