// Assert and SpecifyShape (ops/checks.h): values, views, gradients, failures as AssertionError
// with the message and the shapes, the rewrites that drop checks that cannot fail, and a failed
// check leaving shared variables as they were.
#include <sstream>

#include "test_util.h"

namespace hypatia {
namespace {
using testing::make_array;
using testing::OpSample;
using testing::random_array;
using testing::random_strided;

int count_ops(const Function& f, const std::string& name) {
  // The nodes whose op's name starts with `name` (each debugprint line after its " |" prefix).
  std::istringstream s(f.debugprint());
  int n = 0;
  for (std::string line; std::getline(s, line);) {
    const size_t p = line.find_first_not_of(" |");
    if (p != std::string::npos && line.compare(p, name.size(), name) == 0) ++n;
  }
  return n;
}

HYP_OPINFO({.name = "assert",
            .build = [](const std::vector<Var>& v) { return assert_op(v[0], {v[1]}, "ok"); },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{
                      {"matrix (2,3)", {random_array({2, 3}, dt, -1, 1, 1), make_array({1}, {}, DType::Bool)}},
                      {"strided (3,4), int condition",
                       {random_strided({3, 4}, dt, -1, 1, 2), make_array({7}, {}, DType::Int32)}},
                      {"0-d, float condition", {random_array({}, dt, -1, 1, 3), make_array({0.5}, {}, dt)}},
                      {"zero-size (0,2)", {NDArray::zeros({0, 2}, dt), make_array({1}, {}, DType::Int64)}}};
                },
            .dtypes = testing::kFloatTypes,
            .grad_inputs = {0}});

HYP_OPINFO({.name = "specify_shape",
            .build =
                [](const std::vector<Var>& v) {
                  return specify_shape(v[0], {v[1], nullptr, v[2]});
                },
            .samples =
                [](DType dt) {
                  return std::vector<OpSample>{{"(2,3,4)",
                                                {random_array({2, 3, 4}, dt, -1, 1, 4),
                                                 make_array({2}, {}, DType::Int64), make_array({4}, {}, DType::Int32)}},
                                               {"strided (3,2,5)",
                                                {random_strided({3, 2, 5}, dt, -1, 1, 5),
                                                 make_array({3}, {}, DType::Int64), make_array({5}, {}, DType::Int64)}},
                                               {"zero-size (0,2,1)",
                                                {NDArray::zeros({0, 2, 1}, dt), make_array({0}, {}, DType::Int64),
                                                 make_array({1}, {}, DType::UInt8)}}};
                },
            .dtypes = testing::kFloatTypes,
            .grad_inputs = {0}});

TEST(Checks, AssertPassesTheValueThroughAndRaisesWithItsMessage) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var y = assert_op(x, {gt(sum(x), constant(0.0, DType::Float64)), gt(shape_i(x, 0), int_constant(1))},
                    "x must have a positive sum");
  EXPECT_EQ(y->owner->op->name(), "Assert{msg='x must have a positive sum'}");
  Function f = function({x}, {y * 2.0});
  EXPECT_ALLCLOSE(f({make_array({1, 2}, {2}, DType::Float64)})[0], make_array({2, 4}, {2}, DType::Float64));
  EXPECT_ERROR(AssertionError, f({make_array({-1, -2}, {2}, DType::Float64)}),
               "x must have a positive sum (Assert: condition 0 of 2 is false");
  EXPECT_ERROR(AssertionError, f({make_array({3}, {1}, DType::Float64)}), "condition 1 of 2 is false");
  // A NaN condition is true, as numpy's bool(nan).
  Var c = variable(scalar_type(DType::Float32), "c");
  Function g = function({x, c}, {assert_op(x, {c})});
  EXPECT_NO_THROW(g({make_array({1}, {1}, DType::Float64), make_array({NAN}, {}, DType::Float32)}));
  EXPECT_ERROR(AssertionError, g({make_array({1}, {1}, DType::Float64), make_array({0}, {}, DType::Float32)}),
               "Theano Assert failed!");
}

TEST(Checks, AssertRefusesConditionsThatAreNotScalars) {
  Var x = variable(vector_type(DType::Float64), "x");
  EXPECT_ERROR(TypeError, assert_op(x, {x}), "condition 0 must be a 0-d value");
}

TEST(Checks, ConstantTrueConditionsAreDroppedAndFalseOnesKept) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var c = variable(scalar_type(DType::Bool), "c");
  Function all_true = function({x}, {assert_op(x, {int_constant(1), constant(2.0, DType::Float64)}) + 1.0});
  EXPECT_EQ(count_ops(all_true, "Assert"), 0) << all_true.debugprint();
  Function one_left = function({x, c}, {assert_op(x, {int_constant(1), c}) + 1.0});
  EXPECT_EQ(count_ops(one_left, "Assert"), 1) << one_left.debugprint();
  EXPECT_ERROR(AssertionError, one_left({make_array({1}, {1}, DType::Float64), make_array({0}, {}, DType::Bool)}),
               "Assert");
  // A constant false condition is kept (not folded away at compile time) and fails each call.
  Function never = function({x}, {assert_op(x, {int_constant(0)}, "never") + 1.0});
  EXPECT_ERROR(AssertionError, never({make_array({1}, {1}, DType::Float64)}), "never");
}

TEST(Checks, AssertGradientIsTheOutputGradient) {
  Var x = variable(vector_type(DType::Float64), "x");
  Var c = variable(scalar_type(DType::Int64), "c");
  Var g = grad(sum(mul(assert_op(x, {c}), x)), x);
  Function f = function({x, c}, {g});
  EXPECT_ALLCLOSE(f({make_array({1, -2}, {2}, DType::Float64), make_array({1}, {}, DType::Int64)})[0],
                  make_array({2, -4}, {2}, DType::Float64));
  EXPECT_ERROR(AssertionError, f({make_array({1, -2}, {2}, DType::Float64), make_array({0}, {}, DType::Int64)}),
               "Assert");
}

TEST(Checks, SpecifyShapeChecksEachGivenAxisAndNamesBothShapes) {
  Var x = variable(matrix_type(DType::Float32), "x");
  Var n = variable(scalar_type(DType::Int32), "n");
  Var y = specify_shape(x, {n, int_constant(3)});
  Function f = function({x, n}, {y + y});
  NDArray v = random_array({2, 3}, DType::Float32, -1, 1, 7);
  EXPECT_ALLCLOSE(f({v, make_array({2}, {}, DType::Int32)})[0], eval(x + x, {{x, v}}));
  EXPECT_ERROR(AssertionError, f({v, make_array({4}, {}, DType::Int32)}),
               "SpecifyShape: expected shape (4, 3), got shape (2, 3)");
  EXPECT_ERROR(AssertionError, f({random_array({2, 4}, DType::Float32, -1, 1, 8), make_array({2}, {}, DType::Int32)}),
               "expected shape (2, 3), got shape (2, 4)");
  // An axis not given is not checked.
  Function g = function({x}, {specify_shape(x, {nullptr, int_constant(3)})});
  EXPECT_NO_THROW(g({random_array({5, 3}, DType::Float32, -1, 1, 9)}));
  EXPECT_ERROR(AssertionError, g({random_array({5, 2}, DType::Float32, -1, 1, 9)}), "expected shape (?, 3)");
  EXPECT_ERROR(TypeError, specify_shape(x, {int_constant(2)}), "a shape of 1 entries was given");
  EXPECT_ERROR(TypeError, specify_shape(x, {constant(2.0, DType::Float64), int_constant(3)}),
               "each length must be a 0-d integer");
}

TEST(Checks, SpecifyShapeGivesItsLengthsToTheGraphAndItsGradient) {
  Var x = variable(matrix_type(DType::Float64), "x");
  Var y = specify_shape(x, {int_constant(2), int_constant(3)});
  // A length read alone is the one given (infer_shape, as Theano's ShapeFeature answers it):
  // folded when compiling, nothing checked. The whole shape reads the checked value.
  Function s0 = function({x}, {shape_i(y, 0)}, FunctionOptions{.on_unused_input = "ignore"});
  EXPECT_EQ(s0.debugprint().find("SpecifyShape"), std::string::npos) << s0.debugprint();
  EXPECT_EQ(s0({random_array({5, 3}, DType::Float64, -1, 1, 12)})[0].get_flat_int(0), 2);
  Function s = function({x}, {shape(y)});
  EXPECT_ERROR(AssertionError, s({random_array({5, 3}, DType::Float64, -1, 1, 12)}), "SpecifyShape");
  Var g = grad(sum(mul(y, y)), x);
  Function f = function({x}, {g});
  NDArray v = random_array({2, 3}, DType::Float64, -1, 1, 10);
  EXPECT_ALLCLOSE(f({v})[0], eval(x * 2.0, {{x, v}}));
  EXPECT_ERROR(AssertionError, f({random_array({3, 3}, DType::Float64, -1, 1, 11)}), "SpecifyShape");
}

TEST(Checks, SpecifyShapeOfALengthKnownStaticallyIsDropped) {
  Var x = variable(TensorType{DType::Float64, {true, false}}, "x");
  Function f = function({x}, {specify_shape(x, {int_constant(1), nullptr}) + 1.0});
  EXPECT_EQ(count_ops(f, "SpecifyShape"), 0) << f.debugprint();
  // Twice the same check: the second reads the first's lengths and is dropped.
  Var m = variable(matrix_type(DType::Float64), "m");
  Var once = specify_shape(m, {int_constant(2), int_constant(3)});
  Function twice = function({m}, {specify_shape(once, {int_constant(2), int_constant(3)}) + 1.0});
  EXPECT_EQ(count_ops(twice, "SpecifyShape"), 1) << twice.debugprint();
}

TEST(Checks, AFailedCheckLeavesSharedVariablesUnchanged) {
  Var w = shared(make_array({1, 2}, {2}, DType::Float64), "w");
  Var x = variable(vector_type(DType::Float64), "x");
  FunctionOptions o;
  o.updates = {{w, w - specify_shape(x, {int_constant(2)})}};
  Function f = function({x}, {}, o);
  f({make_array({1, 1}, {2}, DType::Float64)});
  EXPECT_ALLCLOSE(get_value(w), make_array({0, 1}, {2}, DType::Float64));
  EXPECT_ERROR(AssertionError, f({make_array({1, 1, 1}, {3}, DType::Float64)}), "SpecifyShape");
  EXPECT_ALLCLOSE(get_value(w), make_array({0, 1}, {2}, DType::Float64));
  // The update reads an Assert of its own result's input: the check comes before the write.
  Var ok = variable(scalar_type(DType::Bool), "ok");
  FunctionOptions o2;
  o2.updates = {{w, assert_op(w * 2.0, {ok}, "not ok")}};
  Function g = function({ok}, {}, o2);
  EXPECT_ERROR(AssertionError, g({make_array({0}, {}, DType::Bool)}), "not ok");
  EXPECT_ALLCLOSE(get_value(w), make_array({0, 1}, {2}, DType::Float64));
  g({make_array({1}, {}, DType::Bool)});
  EXPECT_ALLCLOSE(get_value(w), make_array({0, 2}, {2}, DType::Float64));
}

}  // namespace
}  // namespace hypatia
