// The CPU plan of fused programs (backends/cpu/composite_program.h): scalar mul/add/sub/neg steps
// fold into the SIMD pass of a neighbouring step, results are bitwise those of the unfused graph
// (same operations, same order, same rounding) on every path (flat, strided, broadcast, tails,
// threads), and the number of passes is what the folding promises.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>

#include "hypatia/backends/cpu/composite_program.h"
#include "hypatia/hypatia.h"
#include "test_util.h"

namespace hypatia {
namespace {

using testing::random_array;

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

/// Whether two arrays hold the same bits (NaNs of any payload count as equal).
std::string bitwise_diff(const NDArray& a, const NDArray& b) {
  if (!(a.shape() == b.shape()) || a.dtype() != b.dtype()) return "shape or dtype differ";
  NDArray ca = a.copy(), cb = b.copy();
  const int64_t n = ca.size();
  for (int64_t i = 0; i < n; ++i) {
    const double x = ca.dtype() == DType::Float32 ? ca.data<float>()[i] : ca.data<double>()[i];
    const double y = cb.dtype() == DType::Float32 ? cb.data<float>()[i] : cb.data<double>()[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    if (x != y || std::signbit(x) != std::signbit(y))
      return "element " + std::to_string(i) + ": " + num(x) + " vs " + num(y);
  }
  return "";
}

/// Compiles fn(x) in FAST_RUN (fused) and FAST_COMPILE (one Elemwise per op); returns the fused
/// function's outputs after checking they equal the unfused ones bit for bit.
std::vector<NDArray> check_bitwise(const std::function<std::vector<Var>(Var)>& fn, const NDArray& xv) {
  Var x = variable(tensor_type(xv.dtype(), xv.ndim()), "x");
  FunctionOptions fast, slow;
  fast.mode = "FAST_RUN";
  slow.mode = "FAST_COMPILE";
  std::vector<Out> outs;
  for (const Var& o : fn(x)) outs.push_back(o);
  Function f = function({x}, outs, fast), g = function({x}, outs, slow);
  std::vector<NDArray> a = f({xv}), b = g({xv});
  for (size_t k = 0; k < a.size(); ++k) EXPECT_EQ(bitwise_diff(a[k], b[k]), "") << "output " << k;
  return a;
}

/// The passes the CPU kernel of the first fused node of fn(x) makes per tile.
int passes_of(const std::function<std::vector<Var>(Var)>& fn, DType dt = DType::Float32) {
  Var x = variable(tensor_type(dt, 1), "x");
  std::vector<Out> outs;
  for (const Var& o : fn(x)) outs.push_back(o);
  Function f = function({x}, outs);
  for (const auto& node : f.toposort()) {
    std::vector<int> values;
    if (const auto* c = dynamic_cast<const Composite*>(node->op.get())) {
      values.push_back(c->nvalues() - 1);
      return TileProgram(c->name(), *c, values, TileProgram::scalar_inputs(*node)).passes();
    }
    if (const auto* m = dynamic_cast<const MultiComposite*>(node->op.get()))
      return TileProgram(m->name(), *m, m->outputs, TileProgram::scalar_inputs(*node)).passes();
  }
  ADD_FAILURE() << "no fused node in\n" << f.debugprint();
  return -1;
}

Var chain6(const Var& x) { return tanh(exp(x * 0.5 + 0.25) - 1.5) * 2.0; }

/// Values with the special cases in the middle of ordinary ones.
NDArray with_specials(int64_t n, DType dt, uint64_t seed) {
  NDArray a = random_array({n}, dt, -3, 3, seed);
  const double inf = std::numeric_limits<double>::infinity();
  const double specials[] = {0.0, -0.0, inf, -inf, std::nan(""), 1e-40, -1e-300, 88.0, -100.0, 1e30};
  for (int64_t i = 0; i < 10 && i < n; ++i) {
    const int64_t at = (i * 97 + 13) % n;
    if (dt == DType::Float32)
      a.data<float>()[at] = static_cast<float>(specials[i]);
    else
      a.data<double>()[at] = specials[i];
  }
  return a;
}

TEST(TileProgram, ScalarStepsFoldIntoTheirNeighbours) {
  EXPECT_EQ(passes_of([](Var x) { return std::vector<Var>{chain6(x)}; }), 2);  // exp pass, tanh pass
  EXPECT_EQ(passes_of([](Var x) { return std::vector<Var>{x * 0.5 + 0.25}; }), 1);
  EXPECT_EQ(passes_of([](Var x) { return std::vector<Var>{((x + 1.0) * 2.0) - 3.0}; }), 1);
  EXPECT_EQ(passes_of([](Var x) { return std::vector<Var>{3.0 - exp(-x) * 2.0}; }), 1);
  // Two multiplications in a row do not merge (x * 6 rounds differently): two passes.
  EXPECT_EQ(passes_of([](Var x) { return std::vector<Var>{exp(x) * 2.0 * 3.0}; }), 2);
  // An intermediate that is also an output is stored, and its consumer reads it.
  EXPECT_EQ(passes_of([](Var x) {
              Var a = x * 2.0 + 1.0;
              return std::vector<Var>{a, exp(a)};
            }),
            2);
}

TEST(TileProgram, FoldedResultsEqualTheUnfusedGraphBitwise) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{5003}}) {
      const NDArray xv = with_specials(n, dt, 11 + n);
      check_bitwise([](Var x) { return std::vector<Var>{chain6(x)}; }, xv);
      check_bitwise([](Var x) { return std::vector<Var>{2.0 - tanh(-(x - 0.5)) * 3.0 + 1.0}; }, xv);
      check_bitwise([](Var x) { return std::vector<Var>{sigmoid(x * 1.5 - 0.5) * 0.5}; }, xv);
      check_bitwise([](Var x) { return std::vector<Var>{(exp(x) + x) * 0.25, -(x * 3.0)}; }, xv);
      check_bitwise(
          [](Var x) {
            Var a = x * 2.0 + 1.0;
            return std::vector<Var>{a, sin(a) - 1.0};
          },
          xv);
      // The float64 kernels of simd_math-inl.h with folded maps (log10, cosh and arccosh have no
      // folded variants: their maps run as passes of their own), huge sin/cos arguments among
      // ordinary ones (the Payne-Hanek lanes), and the double-double kernels.
      check_bitwise(
          [](Var x) {
            return std::vector<Var>{log10(abs(x) * 2.0 + 0.5) * 3.0 - 1.0,
                                    cosh(x * 0.5) + 1.0,
                                    softplus(x * 4.0 - 1.0),
                                    cos(x * 3e5) * 2.0 + 0.5,
                                    log1p(abs(x) * 0.5) - expm1(x * 0.1),
                                    arccosh(abs(x) + 1.0) * 0.5};
          },
          xv);
      // Found by tests/python/test_fusion_chains.py: e - 1.5 is stored, so e = exp(x) may not
      // become it in place while (e - 1.5) * 2 is still computed from e.
      check_bitwise(
          [](Var x) {
            Var a = exp(x) - 1.5, b = a * 2.0;
            return std::vector<Var>{a, b, b + a};
          },
          xv);
    }
  }
}

TEST(TileProgram, StridedAndBroadcastOperandsTakeTheScalarPath) {
  // A transposed matrix input (strided runs) and a column broadcast against it.
  NDArray m = random_array({37, 29}, DType::Float32, -2, 2, 5);
  Var x = variable(matrix_type(DType::Float32), "x");
  Var c = variable(col_type(DType::Float32), "c");
  Var out = tanh(transpose(x) * 0.5 + 0.25) * 2.0 - exp(c * 0.5 - 1.0);
  FunctionOptions fast, slow;
  fast.mode = "FAST_RUN";
  slow.mode = "FAST_COMPILE";
  NDArray cv = random_array({29, 1}, DType::Float32, -1, 1, 6);
  NDArray a = function({x, c}, {out}, fast)({m, cv})[0], b = function({x, c}, {out}, slow)({m, cv})[0];
  EXPECT_EQ(bitwise_diff(a, b), "");
}

TEST(TileProgram, LargeArraysSplitAcrossThreadsGiveTheSameValues) {
  // Above openmp_elemwise_minsize, chunks of one flat run go to the threads (chunk bounds at
  // multiples of 16 elements, tiles and tails inside each chunk).
  // (One size under the sanitizers: the same chunking, a quarter of the work.)
  for (int64_t n : testing::kSanitizerBuild ? std::vector<int64_t>{300001} : std::vector<int64_t>{300001, 1 << 20}) {
    const NDArray xv = with_specials(n, DType::Float32, 3);
    check_bitwise([](Var x) { return std::vector<Var>{chain6(x)}; }, xv);
    check_bitwise([](Var x) { return std::vector<Var>{x * 2.0 - 1.0, exp(x) * 0.5}; }, xv);
  }
}

}  // namespace
}  // namespace hypatia
