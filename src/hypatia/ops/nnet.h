// Neural-network ops (Theano's T.nnet): softmax, log_softmax, relu, cross-entropies.
// sigmoid and softplus are elementwise ops (ops/elemwise.h), available here through that header.
#pragma once
#include <string>
#include <vector>

#include "hypatia/graph/graph.h"
#include "hypatia/ops/elemwise.h"

namespace hypatia {

/// softmax (log = false) or log_softmax (log = true) along `axis` (normalized), computed stably:
/// with m the max along the axis and rest the sum of exp(x - m) over the other elements,
///   softmax = exp(x - m) / (1 + rest),   log_softmax = (x - m) - log1p(rest),
/// so that no logit is added to anything before the subtraction (log_softmax of float32
/// [1e5, 1e5] is -log(2), not the -0.6953 that x - (m + log(sum)) rounds to) and rest is not
/// rounded into 1 before the log. The kernels are within a few ulp of the exact values (tests/
/// python/test_softmax_stability.py). -inf logits give 0 (softmax) and -inf (log_softmax) when
/// the slice has a finite max; a slice with a NaN, a +inf or no finite logit is NaN throughout
/// (numpy's exp(x - max) / sum gives the same). Float inputs of ndim >= 1.
class Softmax : public OpWithProps<Softmax> {
 public:
  int axis;
  bool log;

  Softmax(int normalized_axis, bool log_softmax) : axis(normalized_axis), log(log_softmax) {}
  auto props() const { return std::make_tuple(axis, log); }
  /// "Softmax{axis=1}", "LogSoftmax{axis=0}".
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  /// softmax: y * (g - sum(g * y)); log_softmax: g - exp(y) * sum(g) (sums along the axis). Both
  /// use only the output, so they stay finite wherever the output is.
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
};

/// Negative log-likelihood of integer labels: out[i] = -log(coding[i, labels[i]]) for a float
/// matrix `coding` and an integer vector `labels` (one per row). A label outside [0, n_classes)
/// throws IndexError naming the op, the row and the label.
class CrossentropyCategorical1Hot : public OpWithProps<CrossentropyCategorical1Hot> {
 public:
  auto props() const { return std::make_tuple(); }
  std::string name() const override { return "CrossentropyCategorical1Hot"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// Gradient of CrossentropyCategorical1Hot w.r.t. coding: inputs (g, coding, labels); output
/// zeros shaped like coding except out[i, labels[i]] = -g[i] / coding[i, labels[i]].
class CrossentropyCategorical1HotGrad : public OpWithProps<CrossentropyCategorical1HotGrad> {
 public:
  auto props() const { return std::make_tuple(); }
  std::string name() const override { return "CrossentropyCategorical1HotGrad"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
};

/// Checks that every label of an integer vector is a class of `coding` (a float matrix of one
/// row per label): inputs (coding, labels), output the labels themselves (a view). A label
/// outside [0, n_classes) throws IndexError naming the row and the label, as
/// CrossentropyCategorical1Hot does (Theano had none: an index through it is a label checked as
/// the cross-entropies check theirs, a negative one an error instead of counting from the end).
class CheckLabels : public OpWithProps<CheckLabels> {
 public:
  auto props() const { return std::make_tuple(); }
  std::string name() const override { return "CheckLabels"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
  AliasMap view_map() const override { return {{1}}; }
};

/// The cross-entropy of the softmax of x + b with integer labels, in one pass over each row
/// (Theano's crossentropy_softmax_1hot_with_bias): inputs x (a float matrix of logits), b (a
/// vector of x's dtype, one per class, or broadcastable: one for all) and labels (an integer
/// vector, one per row); outputs nll[i] = -log_softmax(x + b)[i, labels[i]] and sm = softmax(x +
/// b), in Softmax's stable form (z = x + b, m its row's first max, rest the sum of exp(z - m) over
/// the other elements: nll = log1p(rest) - (z[label] - m), sm = exp(z - m) / (1 + rest); a row
/// with a NaN, a +inf or no finite logit is NaN). A label outside [0, n_classes) throws
/// IndexError naming the op, the row and the label. The gradient w.r.t. x and b is
/// CrossentropySoftmax1HotWithBiasDx's softmax - one-hot, never a division by a probability.
class CrossentropySoftmax1HotWithBias : public OpWithProps<CrossentropySoftmax1HotWithBias> {
 public:
  auto props() const { return std::make_tuple(); }
  std::string name() const override { return "CrossentropySoftmax1HotWithBias"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// The gradient of CrossentropySoftmax1HotWithBias's nll w.r.t. its logits (Theano's
/// CrossentropySoftmax1HotWithBiasDx): inputs (dy, sm, labels): dy a float vector (one per row, or
/// broadcastable), sm the softmax, labels as above; output dx[i, j] = dy[i] * (sm[i, j] - (j ==
/// labels[i])). Labels are checked as CrossentropySoftmax1HotWithBias checks them.
class CrossentropySoftmax1HotWithBiasDx : public OpWithProps<CrossentropySoftmax1HotWithBiasDx> {
 public:
  auto props() const { return std::make_tuple(); }
  std::string name() const override { return "CrossentropySoftmax1HotWithBiasDx"; }
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// exp(x) / sum(exp(x)) along `axis` (negative counts from the end), computed stably.
Var softmax(Var x, int axis = -1);
/// log(softmax(x)) along `axis`, computed stably as x - max - log(sum(exp(x - max))).
Var log_softmax(Var x, int axis = -1);
/// Rectifier: max(x, 0) when alpha == 0, else the leaky rectifier x for x > 0, alpha * x below
/// (Theano's formulas: 0.5 * (x + |x|), and 0.5 * (1 + alpha) * x + 0.5 * (1 - alpha) * |x|).
Var relu(Var x, double alpha = 0.0);
/// Piecewise-linear approximation of sigmoid: clip(0.2 * x + 0.5, 0, 1).
Var hard_sigmoid(Var x);
/// Cross-entropy between a distribution `coding_dist` (rows of a matrix) and `true_dist`: either
/// an integer vector of labels, one per row (-log(coding[i, label[i]])), or a matrix of the same
/// shape holding one-hot rows or probabilities (-sum(true * log(coding)) per row). Of a softmax
/// over the last axis it builds the stable forms directly (softmax_crossentropy_labels, and
/// log_softmax for the log), so every mode and the gradient are stable.
Var categorical_crossentropy(Var coding_dist, Var true_dist);
/// -log_softmax(logits)[i, labels[i]] for a float matrix of logits and integer labels: the stable
/// form of categorical_crossentropy(softmax(logits), labels), whose gradient, softmax - onehot, never
/// divides by a probability. categorical_crossentropy builds it when its coding_dist is a softmax:
/// the nll of CrossentropySoftmax1HotWithBias with no bias (a broadcast zero), one pass per row,
/// and its gradient one more.
Var softmax_crossentropy_labels(Var logits, Var labels);
/// {nll, softmax(x + b)} by CrossentropySoftmax1HotWithBias (Theano's
/// crossentropy_softmax_1hot_with_bias); b may be a vector, one per class, or a number (broadcast);
/// a float b of another dtype is cast to x's.
std::vector<Var> crossentropy_softmax_1hot_with_bias(Var x, Var b, Var labels);
/// dy[:, None] * (sm - one_hot(labels)) by CrossentropySoftmax1HotWithBiasDx (dy a vector, one per
/// row, or a number; a float dy of another dtype is cast to sm's).
Var crossentropy_softmax_1hot_with_bias_dx(Var dy, Var sm, Var labels);
/// Elementwise -(target * log(output) + (1 - target) * log(1 - output)).
Var binary_crossentropy(Var output, Var target);

}  // namespace hypatia
