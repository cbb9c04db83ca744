// Neural-network ops and builders.
#include "hypatia/ops/nnet.h"

#include <sstream>

#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/subtensor.h"

namespace hypatia {

// ---------------------------------------------------------------------------------------------
// Softmax / LogSoftmax

std::string Softmax::name() const {
  std::ostringstream os;
  os << (log ? "LogSoftmax" : "Softmax") << "{axis=" << axis << "}";
  return os.str();
}

std::vector<TensorType> Softmax::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 1) fail<TypeError>(name(), ": expected 1 input, got ", inputs.size());
  const TensorType& t = inputs[0]->type;
  if (!is_float(t.dtype)) fail<TypeError>(name(), ": expected a float tensor, got ", t.str());
  if (axis < 0 || axis >= t.ndim())
    fail<TypeError>(name(), ": expected an input with more than ", axis, " dims, got ", t.str());
  return {t};
}

std::vector<ShapeVars> Softmax::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  return {in[0]};
}

namespace {
/// The gradient through y = softmax(x) along `axis` of g w.r.t. y: y * (g - sum(g * y)).
Var softmax_backward(const Var& g, const Var& y, int axis) {
  return mul(y, sub(g, sum(mul(g, y), std::vector<int>{axis}, true)));
}
}  // namespace

std::vector<Var> Softmax::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var& g = output_grads[0];
  if (!g) return {nullptr};
  Var y = const_cast<Apply&>(node).output(0);
  if (!log) return {softmax_backward(g, y, axis)};
  return {sub(g, mul(exp(y), sum(g, std::vector<int>{axis}, true)))};
}

std::vector<Var> Softmax::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  const Var& v = eval_points[0];
  if (!v) return {nullptr};
  Var y = const_cast<Apply&>(node).output(0);
  if (!log) return {mul(y, sub(v, sum(mul(v, y), std::vector<int>{axis}, true)))};
  return {sub(v, sum(mul(exp(y), v), std::vector<int>{axis}, true))};
}

Var softmax(Var x, int axis) {
  const char* who = "softmax";
  if (x->ndim() == 0) fail<TypeError>(who, ": expected a tensor with at least 1 dim, got ", x->type.str());
  return apply_op1(std::make_shared<Softmax>(normalize_axis(axis, x->ndim(), who), false), {x});
}

Var log_softmax(Var x, int axis) {
  const char* who = "log_softmax";
  if (x->ndim() == 0) fail<TypeError>(who, ": expected a tensor with at least 1 dim, got ", x->type.str());
  return apply_op1(std::make_shared<Softmax>(normalize_axis(axis, x->ndim(), who), true), {x});
}

// ---------------------------------------------------------------------------------------------
// Categorical cross-entropy with integer labels

namespace {
void check_coding_and_labels(const std::string& who, const Var& coding, const Var& labels) {
  if (coding->ndim() != 2 || !is_float(coding->dtype()))
    fail<TypeError>(who, ": expected coding_dist to be a float matrix, got ", coding->type.str());
  if (labels->ndim() != 1 || !is_integer(labels->dtype()))
    fail<TypeError>(who, ": expected labels to be an integer vector, got ", labels->type.str());
}
}  // namespace

std::vector<TensorType> CrossentropyCategorical1Hot::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 2) fail<TypeError>(name(), ": expected 2 inputs (coding_dist, labels), got ", inputs.size());
  check_coding_and_labels(name(), inputs[0], inputs[1]);
  return {TensorType(inputs[0]->dtype(), {inputs[0]->type.broadcastable[0]})};
}

std::vector<ShapeVars> CrossentropyCategorical1Hot::infer_shape(const Apply& node,
                                                                const std::vector<ShapeVars>& in) const {
  return {{in[0][0]}};
}

std::vector<std::vector<bool>> CrossentropyCategorical1Hot::connection_pattern(const Apply& node) const {
  return {{true}, {false}};
}

std::vector<Var> CrossentropyCategorical1Hot::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var& g = output_grads[0];
  if (!g) return {nullptr, nullptr};
  Var gc = g->dtype() == node.inputs[0]->dtype() ? g : cast(g, node.inputs[0]->dtype());
  return {apply_op1(std::make_shared<CrossentropyCategorical1HotGrad>(), {gc, node.inputs[0], node.inputs[1]}),
          nullptr};
}

std::vector<TensorType> CrossentropyCategorical1HotGrad::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 3) fail<TypeError>(name(), ": expected 3 inputs (g, coding_dist, labels), got ", inputs.size());
  check_coding_and_labels(name(), inputs[1], inputs[2]);
  if (inputs[0]->ndim() != 1 || inputs[0]->dtype() != inputs[1]->dtype())
    fail<TypeError>(name(), ": expected g to be a ", dtype_name(inputs[1]->dtype()), " vector, got ",
                    inputs[0]->type.str());
  return {inputs[1]->type};
}

std::vector<ShapeVars> CrossentropyCategorical1HotGrad::infer_shape(const Apply& node,
                                                                    const std::vector<ShapeVars>& in) const {
  return {in[1]};
}

std::vector<TensorType> CheckLabels::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 2) fail<TypeError>(name(), ": expected 2 inputs (coding_dist, labels), got ", inputs.size());
  check_coding_and_labels(name(), inputs[0], inputs[1]);
  return {inputs[1]->type};
}

std::vector<ShapeVars> CheckLabels::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  return {in[1]};
}

std::vector<std::vector<bool>> CheckLabels::connection_pattern(const Apply& node) const { return {{false}, {false}}; }

std::vector<Var> CheckLabels::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  return {nullptr, nullptr};
}

// ---------------------------------------------------------------------------------------------
// The cross-entropy of a softmax with integer labels, fused, and its gradient

namespace {
void check_dy(const std::string& who, const Var& dy, DType dt) {
  if (dy->ndim() != 1 || dy->dtype() != dt)
    fail<TypeError>(who, ": expected dy to be a ", dtype_name(dt), " vector, got ", dy->type.str());
}

/// Whether g is zeros_like's fill of zeros: the gradient T.grad gives an output of a
/// several-output op that the cost does not read (the softmax when only the nll is used).
bool zeros_fill(const Var& g) {
  if (!g->owner || typeid(*g->owner->op) != typeid(Alloc)) return false;
  const Var& v = g->owner->inputs[0];
  return v->is_constant() && v->data.size() == 1 && v->data.get_flat(0) == 0.0;
}
}  // namespace

std::vector<TensorType> CrossentropySoftmax1HotWithBias::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 3) fail<TypeError>(name(), ": expected 3 inputs (x, b, labels), got ", inputs.size());
  check_coding_and_labels(name(), inputs[0], inputs[2]);
  const TensorType& x = inputs[0]->type;
  const TensorType& b = inputs[1]->type;
  if (b.ndim() != 1 || b.dtype != x.dtype)
    fail<TypeError>(name(), ": expected b to be a ", dtype_name(x.dtype), " vector (one per class), got ", b.str());
  if (x.broadcastable[1] && !b.broadcastable[0])
    fail<TypeError>(name(), ": x ", x.str(), " has one class but b ", b.str(), " may have more");
  return {TensorType(x.dtype, {x.broadcastable[0]}), TensorType(x.dtype, {x.broadcastable[0], x.broadcastable[1]})};
}

std::vector<ShapeVars> CrossentropySoftmax1HotWithBias::infer_shape(const Apply& node,
                                                                    const std::vector<ShapeVars>& in) const {
  return {{in[0][0]}, in[0]};
}

std::vector<std::vector<bool>> CrossentropySoftmax1HotWithBias::connection_pattern(const Apply& node) const {
  return {{true, true}, {true, true}, {false, false}};
}

std::vector<Var> CrossentropySoftmax1HotWithBias::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var& x = node.inputs[0];
  const Var& b = node.inputs[1];
  const DType dt = x->dtype();
  Var sm = const_cast<Apply&>(node).output(1);
  Var dx;
  if (const Var& g = output_grads[0]; g && !zeros_fill(g))
    dx = crossentropy_softmax_1hot_with_bias_dx(g->dtype() == dt ? g : cast(g, dt), sm, node.inputs[2]);
  if (const Var& g = output_grads[1]; g && !zeros_fill(g)) {
    Var t = softmax_backward(g->dtype() == dt ? g : cast(g, dt), sm, 1);
    dx = dx ? add(dx, t) : t;
  }
  if (!dx) return {nullptr, nullptr, nullptr};
  Var db = sum(dx, std::vector<int>{0});
  if (b->type.broadcastable[0]) db = sum(db, std::vector<int>{0}, true);
  return {dx, db, nullptr};
}

std::vector<TensorType> CrossentropySoftmax1HotWithBiasDx::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 3) fail<TypeError>(name(), ": expected 3 inputs (dy, sm, labels), got ", inputs.size());
  check_coding_and_labels(name(), inputs[1], inputs[2]);
  check_dy(name(), inputs[0], inputs[1]->dtype());
  return {inputs[1]->type};
}

std::vector<ShapeVars> CrossentropySoftmax1HotWithBiasDx::infer_shape(const Apply& node,
                                                                      const std::vector<ShapeVars>& in) const {
  return {in[1]};
}

std::vector<std::vector<bool>> CrossentropySoftmax1HotWithBiasDx::connection_pattern(const Apply& node) const {
  return {{true}, {true}, {false}};
}

std::vector<Var> CrossentropySoftmax1HotWithBiasDx::grad(const Apply& node,
                                                         const std::vector<Var>& output_grads) const {
  const Var& g = output_grads[0];
  if (!g) return {nullptr, nullptr, nullptr};
  const Var &dy = node.inputs[0], &sm = node.inputs[1], &labels = node.inputs[2];
  const DType dt = sm->dtype();
  Var gc = g->dtype() == dt ? g : cast(g, dt);
  // dx = dy[:, None] * (sm - one_hot): d/d dy = sum(g * (sm - one_hot)) along the rows, d/d sm = g * dy[:, None].
  Var classes = arange(int_constant(0), shape_i(sm, 1), int_constant(1), DType::Int64);
  Var one_hot = cast(eq(dimshuffle(classes, {-1, 0}), dimshuffle(labels, {0, -1})), dt);
  Var gdy = sum(mul(gc, sub(sm, one_hot)), std::vector<int>{1});
  if (dy->type.broadcastable[0]) gdy = sum(gdy, std::vector<int>{0}, true);
  return {gdy, mul(gc, dimshuffle(dy, {0, -1})), nullptr};
}

std::vector<Var> crossentropy_softmax_1hot_with_bias(Var x, Var b, Var labels) {
  const char* who = "crossentropy_softmax_1hot_with_bias";
  if (x->ndim() != 2 || !is_float(x->dtype()))
    fail<TypeError>(who, ": expected a float matrix of logits, got ", x->type.str());
  if (b->dtype() != x->dtype() && is_float(b->dtype())) b = cast(b, x->dtype());
  if (b->ndim() == 0) b = dimshuffle(b, {-1});
  return apply_op(std::make_shared<CrossentropySoftmax1HotWithBias>(), {x, b, labels});
}

Var crossentropy_softmax_1hot_with_bias_dx(Var dy, Var sm, Var labels) {
  if (dy->dtype() != sm->dtype() && is_float(dy->dtype()) && is_float(sm->dtype())) dy = cast(dy, sm->dtype());
  if (dy->ndim() == 0) dy = dimshuffle(dy, {-1});
  return apply_op1(std::make_shared<CrossentropySoftmax1HotWithBiasDx>(), {dy, sm, labels});
}

// ---------------------------------------------------------------------------------------------
// Builders from elementwise ops

Var relu(Var x, double alpha) {
  if (alpha == 0.0) return mul(scalar_like(0.5, x), add(x, abs(x)));
  Var f1 = scalar_like(0.5 * (1 + alpha), x);
  Var f2 = scalar_like(0.5 * (1 - alpha), x);
  return add(mul(f1, x), mul(f2, abs(x)));
}

Var hard_sigmoid(Var x) {
  Var y = add(mul(scalar_like(0.2, x), x), scalar_like(0.5, x));
  return clip(y, scalar_like(0.0, y), scalar_like(1.0, y));
}

Var categorical_crossentropy(Var coding_dist, Var true_dist) {
  if (is_integer(true_dist->dtype()) && true_dist->ndim() == coding_dist->ndim() - 1) {
    check_coding_and_labels("categorical_crossentropy", coding_dist, true_dist);
    if (const Apply* n = coding_dist->owner; n && typeid(*n->op) == typeid(Softmax) && coding_dist->ndim() == 2) {
      const auto& sm = static_cast<const Softmax&>(*n->op);
      if (!sm.log && sm.axis == 1) return softmax_crossentropy_labels(n->inputs[0], true_dist);
    }
    return apply_op1(std::make_shared<CrossentropyCategorical1Hot>(), {coding_dist, true_dist});
  }
  if (true_dist->ndim() != coding_dist->ndim() || coding_dist->ndim() < 1)
    fail<TypeError>(
        "categorical_crossentropy: expected true_dist to be an integer vector of labels or a tensor "
        "like coding_dist ",
        coding_dist->type.str(), ", got ", true_dist->type.str());
  const int last = coding_dist->ndim() - 1;
  // Of a softmax over the summed axis: its log computed as log_softmax (finite where a
  // probability underflows to 0, so 0 * log(0) = NaN never appears; the gradient is stable too).
  if (const Apply* n = coding_dist->owner; n && typeid(*n->op) == typeid(Softmax)) {
    const auto& sm = static_cast<const Softmax&>(*n->op);
    if (!sm.log && sm.axis == last)
      return neg(sum(mul(true_dist, log_softmax(n->inputs[0], last)), std::vector<int>{last}));
  }
  return neg(sum(mul(true_dist, log(coding_dist)), std::vector<int>{last}));
}

Var softmax_crossentropy_labels(Var logits, Var labels) {
  if (logits->ndim() != 2 || !is_float(logits->dtype()))
    fail<TypeError>("softmax_crossentropy_labels: expected a float matrix of logits, got ", logits->type.str());
  check_coding_and_labels("softmax_crossentropy_labels", logits, labels);
  // No bias: a zero broadcast to every class (a constant of one element).
  return crossentropy_softmax_1hot_with_bias(logits, constant(NDArray::zeros({1}, logits->dtype())), labels)[0];
}

Var binary_crossentropy(Var output, Var target) {
  Var one = scalar_like(1.0, output);
  return neg(add(mul(target, log(output)), mul(sub(one, target), log(sub(one, output)))));
}

}  // namespace hypatia
