// Elementwise ops: a scalar op lifted to tensors with numpy broadcasting (Theano's Elemwise).
#pragma once
#include <iterator>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "hypatia/core/ndarray.h"
#include "hypatia/graph/graph.h"

namespace hypatia {

/// Every scalar operation an Elemwise node can apply, one per row of scalar_ops.def (in its order).
/// Functors live in scalar_functors.h.
enum class ScalarOpKind : uint8_t {
#define HYP_SCALAR_OP(Kind, ...) Kind,
#include "hypatia/ops/scalar_ops.def"
};

/// Number of scalar ops (rows of scalar_ops.def).
inline constexpr int kNumScalarOps = 0
#define HYP_SCALAR_OP(...) +1
#include "hypatia/ops/scalar_ops.def"
    ;

/// The output-dtype rule of a scalar op (the Rule column of scalar_ops.def, which describes each).
enum class ScalarDTypeRule : uint8_t { Same, NoBool, BoolToInt8, Float, Bitwise, Compare, Predicate, Select, Cast };
/// Which SIMD loops backends/cpu/elemwise_simd.cpp has for a scalar op: none, float32 and float64, float64 only.
enum class ScalarSimd : uint8_t { None, All, F64 };

/// The properties of one scalar op (a row of scalar_ops.def).
struct ScalarOpInfo {
  std::string_view name;
  int arity;
  ScalarDTypeRule rule;
  int cost;
  ScalarSimd simd;
};

inline constexpr ScalarOpInfo kScalarOpInfos[] = {
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, Cost, Simd, ...) \
  {Name, Arity, ScalarDTypeRule::Rule, Cost, ScalarSimd::Simd},
#include "hypatia/ops/scalar_ops.def"
};
static_assert(std::size(kScalarOpInfos) == static_cast<size_t>(kNumScalarOps));
static_assert(static_cast<int>(ScalarOpKind::Switch) == kNumScalarOps - 1, "Switch must stay the last scalar op");

constexpr const ScalarOpInfo& scalar_op_info(ScalarOpKind k) { return kScalarOpInfos[static_cast<size_t>(k)]; }

/// Lower-case name ("add", "true_div", "switch") used in op names and error messages.
std::string_view scalar_op_name(ScalarOpKind k);
/// Number of inputs the scalar op takes (1, 2 or 3).
int scalar_op_arity(ScalarOpKind k);
/// Rough cost of one element against an add (1): 8 for the transcendental functions (exp, log,
/// tanh, sin, sigmoid, erf, pow, ... : their SIMD kernels take 0.6-1.4 ns per float64 element
/// where an add streams at about 0.1), 4 for division and square root, 1 otherwise. The CPU
/// kernels scale the threading threshold by it (openmp_elemwise_minsize counts add-elements).
int scalar_op_cost(ScalarOpKind k);

/// A scalar op lifted to tensors. All inputs have the same ndim (builders pad with DimShuffle);
/// dims broadcast where an input's type says broadcastable. `inplace` maps output 0 to the input
/// whose buffer it overwrites (-1: none), for the optimizer's in-place pass.
class Elemwise : public OpWithProps<Elemwise> {
 public:
  ScalarOpKind scalar;
  /// Output dtype for Cast (ignored otherwise).
  DType cast_to = DType::Float64;
  int inplace = -1;

  explicit Elemwise(ScalarOpKind k, DType cast = DType::Float64, int inplace_input = -1)
      : scalar(k), cast_to(cast), inplace(inplace_input) {}
  auto props() const { return std::make_tuple(scalar, cast_to, inplace); }
  /// "Elemwise{add,no_inplace}", "Elemwise{mul,inplace}", "Elemwise{Cast{float32}}".
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
  AliasMap destroy_map() const override;
  bool checks_runtime_inputs() const override { return true; }
  /// The broadcast check of elemwise_broadcast_shape, and that an overwritten input has the result's shape.
  void check_runtime_inputs(const Apply& node, std::span<NDArray* const> in) const override;
};

/// Output shape of a broadcasting node from its input shapes (the first non-broadcastable
/// input's length on each dim; 1 where the output is broadcastable).
ShapeVars broadcast_infer_shape(const Apply& node, const std::vector<ShapeVars>& in);

/// Output dtype of scalar op `k` on inputs of these dtypes (numpy rules).
DType elemwise_output_dtype(ScalarOpKind k, const std::vector<DType>& in, DType cast_to = DType::Float64);

/// The type the kernels cast inputs to before applying ScalarFn<k> (the promoted type for
/// comparisons, the input type for isnan/isinf/cast, else the output type). Switch's condition is
/// read as bool; this is the type of its two value inputs.
DType elemwise_compute_dtype(ScalarOpKind k, const std::vector<DType>& in, DType out);

/// The static broadcastable patterns of a node's inputs, one bit per dim (bit d set: dim d is
/// broadcastable), built once per kernel so that the per-call check below reads no vector<bool>.
struct BroadcastPattern {
  struct Input {
    uint32_t mask = 0;
    int ndim = 0;
  };
  std::vector<Input> inputs;

  BroadcastPattern() = default;
  explicit BroadcastPattern(const Apply& node);
};

/// The output shape of an Elemwise node at run time, given its input arrays and their static
/// broadcastable patterns. A dim broadcasts only where the input's type says broadcastable (PyTensor's
/// rule); throws ValueError naming `op`, every input's shape and the fix otherwise. Never allocates
/// unless it throws.
Shape elemwise_broadcast_shape(const Op& op, std::span<NDArray* const> in, const BroadcastPattern& broadcastable);

/// The checks of an elementwise node's kernel (elemwise_broadcast_shape; an overwritten input
/// `inplace` >= 0 must have the result's shape), for Op::check_runtime_inputs.
void check_elemwise_inputs(const Op& op, const Apply& node, std::span<NDArray* const> in, int inplace);

/// Applies scalar op k elementwise; pads lower-ndim inputs on the left (numpy broadcasting).
Var elemwise(ScalarOpKind k, std::vector<Var> inputs);

/// The builder of every scalar op whose row in scalar_ops.def says Build = Gen or Decl:
/// `Var exp(Var x)`, `Var add(Var a, Var b)`, ... (the Cpp column names them). log(x) of erfc(y) of a
/// float y is built as stable_log_erfc(y).
#define HYP_BUILDER_DECL_1(Cpp) Var Cpp(Var x);
#define HYP_BUILDER_DECL_2(Cpp) Var Cpp(Var a, Var b);
#define HYP_BUILDER_DECL_Gen(Arity, Cpp) HYP_BUILDER_DECL_##Arity(Cpp)
#define HYP_BUILDER_DECL_Decl(Arity, Cpp) HYP_BUILDER_DECL_##Arity(Cpp)
#define HYP_BUILDER_DECL_Hand(Arity, Cpp)
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, Cost, Simd, Build, Cpp, ...) HYP_BUILDER_DECL_##Build(Arity, Cpp)
#include "hypatia/ops/scalar_ops.def"
#undef HYP_BUILDER_DECL_Hand
#undef HYP_BUILDER_DECL_Decl
#undef HYP_BUILDER_DECL_Gen
#undef HYP_BUILDER_DECL_2
#undef HYP_BUILDER_DECL_1

/// log(erfc(y)), finite with a finite gradient where erfc(y) underflows (a switch between
/// log(erfc(min(y, t))) and the asymptotic series at max(y, t)).
Var stable_log_erfc(Var y);
Var cast(Var x, DType dt);
Var clip(Var x, Var lo, Var hi);
/// where(cond, a, b): a where cond is true, else b.
Var switch_(Var cond, Var a, Var b);
inline Var where(Var c, Var a, Var b) { return switch_(std::move(c), std::move(a), std::move(b)); }

/// A 0-d constant holding v with a dtype that fits `like` (numpy's rule for Python scalars:
/// a float tensor keeps its dtype; an integer tensor keeps it for integral v, else floatX).
Var scalar_like(double v, const Var& like);

Var operator+(const Var& a, const Var& b);
Var operator-(const Var& a, const Var& b);
Var operator*(const Var& a, const Var& b);
Var operator/(const Var& a, const Var& b);
Var operator%(const Var& a, const Var& b);
Var operator-(const Var& a);
Var operator+(const Var& a, double b);
Var operator-(const Var& a, double b);
Var operator*(const Var& a, double b);
Var operator/(const Var& a, double b);
Var operator+(double a, const Var& b);
Var operator-(double a, const Var& b);
Var operator*(double a, const Var& b);
Var operator/(double a, const Var& b);

}  // namespace hypatia
