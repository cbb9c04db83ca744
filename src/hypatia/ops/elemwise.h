// Elementwise ops: a scalar op lifted to tensors with numpy broadcasting (Theano's Elemwise).
#pragma once
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "hypatia/core/ndarray.h"
#include "hypatia/graph/graph.h"

namespace hypatia {

/// Every scalar operation an Elemwise node can apply. Functors live in scalar_functors.h.
enum class ScalarOpKind : uint8_t {
  // binary arithmetic
  Add,
  Sub,
  Mul,
  TrueDiv,
  IntDiv,
  Mod,
  Pow,
  Maximum,
  Minimum,
  ArcTan2,
  // comparisons and logic (output bool for comparisons)
  Eq,
  Neq,
  Lt,
  Le,
  Gt,
  Ge,
  And,
  Or,
  Xor,
  // unary
  Neg,
  Abs,
  Sign,
  Reciprocal,
  Sqr,
  Sqrt,
  Exp,
  Exp2,
  Expm1,
  Log,
  Log2,
  Log10,
  Log1p,
  Sin,
  Cos,
  Tan,
  ArcSin,
  ArcCos,
  ArcTan,
  Sinh,
  Cosh,
  Tanh,
  ArcSinh,
  ArcCosh,
  ArcTanh,
  Sigmoid,
  Softplus,
  Erf,
  Erfc,
  Erfinv,
  Gamma,
  GammaLn,
  Psi,
  TriGamma,
  Floor,
  Ceil,
  Round,
  Trunc,
  Invert,
  IsNan,
  IsInf,
  Cast,
  Identity,
  // ternary
  Clip,
  Switch,
};

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

/// The output shape of an Elemwise node at run time, given its input arrays and their static
/// broadcastable patterns. A dim broadcasts only where the input's type says broadcastable (PyTensor's
/// rule); throws ValueError naming `op`, every input's shape and the fix otherwise. Never allocates
/// unless it throws.
Shape elemwise_broadcast_shape(const Op& op, std::span<NDArray* const> in,
                               const std::vector<std::vector<bool>>& broadcastable);

/// The checks of an elementwise node's kernel (elemwise_broadcast_shape; an overwritten input
/// `inplace` >= 0 must have the result's shape), for Op::check_runtime_inputs.
void check_elemwise_inputs(const Op& op, const Apply& node, std::span<NDArray* const> in, int inplace);

/// Applies scalar op k elementwise; pads lower-ndim inputs on the left (numpy broadcasting).
Var elemwise(ScalarOpKind k, std::vector<Var> inputs);

Var add(Var a, Var b);
Var sub(Var a, Var b);
Var mul(Var a, Var b);
Var true_div(Var a, Var b);
Var int_div(Var a, Var b);
Var mod(Var a, Var b);
Var pow(Var a, Var b);
Var maximum(Var a, Var b);
Var minimum(Var a, Var b);
Var arctan2(Var a, Var b);
Var eq(Var a, Var b);
Var neq(Var a, Var b);
Var lt(Var a, Var b);
Var le(Var a, Var b);
Var gt(Var a, Var b);
Var ge(Var a, Var b);
Var and_(Var a, Var b);
Var or_(Var a, Var b);
Var xor_(Var a, Var b);
Var neg(Var x);
Var abs(Var x);
Var sign(Var x);
Var reciprocal(Var x);
Var sqr(Var x);
Var sqrt(Var x);
Var exp(Var x);
Var exp2(Var x);
Var expm1(Var x);
/// log(x); log(erfc(y)) of a float y is built as stable_log_erfc(y).
Var log(Var x);
/// log(erfc(y)), finite with a finite gradient where erfc(y) underflows (a switch between
/// log(erfc(min(y, t))) and the asymptotic series at max(y, t)).
Var stable_log_erfc(Var y);
Var log2(Var x);
Var log10(Var x);
Var log1p(Var x);
Var sin(Var x);
Var cos(Var x);
Var tan(Var x);
Var arcsin(Var x);
Var arccos(Var x);
Var arctan(Var x);
Var sinh(Var x);
Var cosh(Var x);
Var tanh(Var x);
Var arcsinh(Var x);
Var arccosh(Var x);
Var arctanh(Var x);
Var sigmoid(Var x);
Var softplus(Var x);
Var erf(Var x);
Var erfc(Var x);
Var erfinv(Var x);
Var gamma(Var x);
Var gammaln(Var x);
Var psi(Var x);
/// Trigamma, the derivative of psi (polygamma of order 1).
Var trigamma(Var x);
Var floor(Var x);
Var ceil(Var x);
Var round(Var x);  // half to even, like numpy
Var trunc(Var x);
Var invert(Var x);  // bitwise not (logical not for bool)
Var isnan(Var x);
Var isinf(Var x);
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
