// Pooling over the last 2 (pool_2d) or 3 (pool_3d) axes (Theano's signal.pool): the forward op
// and its gradient ops, with Theano's window, stride, padding and border rules.
#pragma once
#include <array>
#include <string>
#include <tuple>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// What the pooling ops share. Window k starts at k * stride - pad (in the image's coordinates)
/// and covers ws elements; only real elements take part (padding is not a value), except that
/// average_inc_pad divides by the window's size within the padded image.
struct PoolParams {
  int nd = 2;                              ///< pooled axes: the last nd (2 or 3)
  std::array<int64_t, 3> ws{1, 1, 1};      ///< window
  std::array<int64_t, 3> stride{1, 1, 1};  ///< Theano's st (default: ws)
  std::array<int64_t, 3> pad{0, 0, 0};     ///< zeros on each side (needs ignore_border)
  bool ignore_border = false;              ///< drop a last partial window (True) or keep it
  std::string mode = "max";                ///< max, sum, average_inc_pad, average_exc_pad

  auto tie() const { return std::make_tuple(nd, ws, stride, pad, ignore_border, mode); }
  /// The output size along pooled axis d for an input of size v (Theano's Pool.out_shape).
  int64_t out_size(int d, int64_t v) const;
  /// "ws=(2, 2), stride=(2, 2), max"...
  std::string str() const;
  /// Checks the values; ValueError / NotImplementedError naming `who`.
  void check(const char* who) const;
};

/// pool(x): x of ndim >= nd, pooled over its last nd axes.
class Pool : public OpWithProps<Pool> {
 public:
  PoolParams p;
  explicit Pool(PoolParams params) : p(std::move(params)) {}
  auto props() const { return p.tie(); }
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  /// max: MaxPoolGrad(x, out, g); sum / average: AveragePoolGrad(x, g).
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
};

/// The gradient of max pooling: inputs (x, out, gz); gz of each window goes to every element of
/// the window equal to its max (Theano's rule for ties). Output shaped like x.
class MaxPoolGrad : public OpWithProps<MaxPoolGrad> {
 public:
  PoolParams p;
  explicit MaxPoolGrad(PoolParams params) : p(std::move(params)) {}
  auto props() const { return p.tie(); }
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  /// x, out: zero; gz: DownsampleFactorMaxGradGrad(x, out, g).
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
};

/// The gradient of sum / average pooling: inputs (x, gz); each window's gz (divided by its size
/// for the averages) added to every element of the window. Output shaped like x.
class AveragePoolGrad : public OpWithProps<AveragePoolGrad> {
 public:
  PoolParams p;
  explicit AveragePoolGrad(PoolParams params) : p(std::move(params)) {}
  auto props() const { return p.tie(); }
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  /// x: zero; gz: Pool(g) in the same mode.
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// The gradient of MaxPoolGrad with respect to gz: inputs (x, out, ggx); output shaped like out:
/// each window's entry is ggx at the window's max (the last such element when several tie).
class DownsampleFactorMaxGradGrad : public OpWithProps<DownsampleFactorMaxGradGrad> {
 public:
  PoolParams p;
  explicit DownsampleFactorMaxGradGrad(PoolParams params) : p(std::move(params)) {}
  auto props() const { return p.tie(); }
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  /// x, out: zero; ggx: MaxPoolGrad(x, out, g).
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
};

Var pool(Var x, PoolParams p);
Var max_pool_grad(Var x, Var out, Var gz, PoolParams p);
Var average_pool_grad(Var x, Var gz, PoolParams p);
Var max_pool_grad_grad(Var x, Var out, Var ggx, PoolParams p);

}  // namespace hypatia
