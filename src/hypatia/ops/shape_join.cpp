// Reshape, flatten, Join, Split, stack, ARange, Eye, Tile, Repeat and their builders.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "hypatia/core/checked.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/reduce.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/shape_util.h"
#include "hypatia/ops/subtensor.h"

namespace hypatia {

using detail::as_int64;
using detail::bc_str;
using detail::constant_int;

namespace detail {

Var vector_entry(const Var& v, int i) {
  if (v->is_constant()) return int_constant(v->data.get_flat_int(i));
  if (v->owner && dynamic_cast<const MakeVector*>(v->owner->op.get())) return as_int64(v->owner->inputs[i]);
  return as_int64(subtensor(v, {Index(i)}));
}

std::optional<int64_t> vector_entry_constant(const Var& v, int i) {
  if (v->is_constant()) return v->data.get_flat_int(i);
  if (v->owner && dynamic_cast<const MakeVector*>(v->owner->op.get())) return constant_int(v->owner->inputs[i]);
  return std::nullopt;
}

Var shape_product(const std::vector<Var>& dims, const std::string& who) {
  for (const Var& d : dims)
    if (constant_int(d) == 0) return int_constant(0);
  int64_t c = 1;
  Var r;
  for (const Var& d : dims) {
    if (auto k = constant_int(d)) {
      auto p = checked_mul(c, *k);
      if (!p) fail<ValueError>(who, ": the product of the lengths ", c, " and ", *k, " does not fit in int64");
      c = *p;
      continue;
    }
    r = r ? mul(r, d) : d;
  }
  if (!r) return int_constant(c);
  return c == 1 ? r : mul(r, int_constant(c));
}

Var shape_sum(const std::vector<Var>& dims, const std::string& who) {
  int64_t c = 0;
  Var r;
  for (const Var& d : dims) {
    if (auto k = constant_int(d)) {
      auto s = checked_add(c, *k);
      if (!s) fail<ValueError>(who, ": the sum of the lengths ", c, " and ", *k, " does not fit in int64");
      c = *s;
      continue;
    }
    r = r ? add(r, d) : d;
  }
  if (!r) return int_constant(c);
  return c == 0 ? r : add(r, int_constant(c));
}

}  // namespace detail

using detail::shape_product;
using detail::vector_entry;
using detail::vector_entry_constant;

namespace {
void check_int_vector(const std::string& op, const Var& v, const char* role) {
  if (!v) fail<TypeError>(op, ": ", role, " is null");
  if (v->ndim() != 1 || !is_integer(v->dtype()))
    fail<TypeError>(op, ": ", role, " must be an integer vector, got ", v->type.str());
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// Reshape

std::string Reshape::name() const { return "Reshape{" + std::to_string(ndim) + "}"; }

std::vector<TensorType> Reshape::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 2) fail<TypeError>(name(), ": expected 2 inputs (x, shape), got ", inputs.size());
  const Var& shp = inputs[1];
  check_int_vector(name(), shp, "the shape");
  if (shp->type.broadcastable[0] && ndim != 1)
    fail<TypeError>(name(), ": the shape vector has length 1 but the op reshapes to ", ndim, " dimensions");
  if (shp->is_constant() && shp->data.shape(0) != ndim)
    fail<TypeError>(name(), ": the shape vector has length ", shp->data.shape(0), ", expected ", ndim);
  if (shp->owner && dynamic_cast<const MakeVector*>(shp->owner->op.get()) &&
      static_cast<int>(shp->owner->inputs.size()) != ndim)
    fail<TypeError>(name(), ": the shape vector has length ", shp->owner->inputs.size(), ", expected ", ndim);
  std::vector<bool> bc(ndim, false);
  if (shp->is_constant() || (shp->owner && dynamic_cast<const MakeVector*>(shp->owner->op.get())))
    for (int i = 0; i < ndim; ++i) bc[i] = vector_entry_constant(shp, i) == 1;
  return {TensorType(inputs[0]->dtype(), bc)};
}

namespace {
/// Whether v can be seen to be >= 0 (so it is not reshape's -1): a non-negative constant, an
/// array size (Shape_i), or a sum, product, floor quotient, maximum or cast of such (a few levels).
/// A reshape to such entries has exactly those sizes, and its inferred shape stays small: the
/// general form, which also covers a -1 entry, mentions the product of every input and output
/// size, and a chain of reshapes compounds that (the shape rewrites then spent a compile lifting
/// shapes through an unshared convolution's gradient of a gradient).
bool never_negative(const Var& v, int depth = 6) {
  if (auto c = constant_int(v)) return *c >= 0;
  if (!v->owner || depth == 0) return false;
  const Op& op = *v->owner->op;
  if (typeid(op) == typeid(ShapeI)) return true;
  const auto* e = dynamic_cast<const Elemwise*>(&op);
  if (!e) return false;
  switch (e->scalar) {
    case ScalarOpKind::Maximum:
      return std::any_of(v->owner->inputs.begin(), v->owner->inputs.end(),
                         [&](const Var& x) { return never_negative(x, depth - 1); });
    case ScalarOpKind::Add:
    case ScalarOpKind::Mul:
    case ScalarOpKind::IntDiv:
    case ScalarOpKind::Cast:
      return std::all_of(v->owner->inputs.begin(), v->owner->inputs.end(),
                         [&](const Var& x) { return never_negative(x, depth - 1); });
    default:
      return false;
  }
}
}  // namespace

std::vector<ShapeVars> Reshape::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  const Var& shp = node.inputs[1];
  ShapeVars e;
  bool all_known = true;
  for (int i = 0; i < ndim; ++i) {
    e.push_back(vector_entry(shp, i));
    if (!never_negative(e.back())) all_known = false;
  }
  if (all_known) return {e};
  Var total = shape_product(in[0], name());
  // prod(e) over all entries is -(product of the others) when one entry is -1.
  Var prod_all = shape_product(e, name());
  Var missing = int_div(total, maximum(neg(prod_all), int_constant(1)));
  ShapeVars r;
  for (int i = 0; i < ndim; ++i) {
    auto c = constant_int(e[i]);
    if (c && *c != -1)
      r.push_back(e[i]);
    else if (c)
      r.push_back(missing);
    else
      r.push_back(switch_(eq(e[i], int_constant(-1)), missing, e[i]));
  }
  return {r};
}

std::vector<Var> Reshape::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var& x = node.inputs[0];
  if (!output_grads[0]) return {nullptr, nullptr};
  return {reshape(output_grads[0], make_vector(shape_vars(x)), x->ndim()), nullptr};
}

std::vector<Var> Reshape::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  if (!eval_points[0]) return {nullptr};
  return {reshape(eval_points[0], node.inputs[1], ndim)};
}

std::vector<std::vector<bool>> Reshape::connection_pattern(const Apply&) const { return {{true}, {false}}; }

Var reshape(Var x, const std::vector<int64_t>& shape) {
  if (!x) fail<TypeError>("reshape: input is null");
  int minus = 0;
  for (int64_t s : shape) {
    if (s == -1)
      ++minus;
    else if (s < 0)
      fail<ValueError>("reshape: invalid shape entry ", s);
  }
  if (minus > 1) fail<ValueError>("reshape: can only specify one unknown dimension (-1)");
  NDArray v = NDArray::from_vector<int64_t>(shape, Shape{static_cast<int64_t>(shape.size())});
  return reshape(x, constant(v), static_cast<int>(shape.size()));
}

Var reshape(Var x, Var shape, int ndim) {
  if (!x) fail<TypeError>("reshape: input is null");
  return apply_op1(std::make_shared<Reshape>(ndim), {x, shape});
}

Var flatten(Var x, int ndim) {
  if (!x) fail<TypeError>("flatten: input is null");
  if (ndim < 1 || (ndim > x->ndim() && x->ndim() > 0) || (x->ndim() == 0 && ndim != 1))
    fail<ValueError>("flatten: ndim ", ndim, " is out of range for an input of type ", x->type.str());
  ShapeVars s = shape_vars(x);
  ShapeVars out(s.begin(), s.begin() + (ndim - 1));
  out.push_back(shape_product(ShapeVars(s.begin() + (ndim - 1), s.end()), "flatten"));
  return reshape(x, make_vector(out), ndim);
}

// ---------------------------------------------------------------------------------------------
// Join, stack

std::string Join::name() const { return "Join{axis=" + std::to_string(axis) + "}"; }

std::vector<TensorType> Join::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.empty()) fail<TypeError>(name(), ": expected at least one input");
  const int nd = inputs[0]->ndim();
  if (nd == 0) fail<TypeError>(name(), ": cannot join 0-d tensors");
  if (axis < 0 || axis >= nd) fail<TypeError>(name(), ": axis ", axis, " is out of range for ", nd, "-d inputs");
  DType dt = inputs[0]->dtype();
  std::vector<bool> bc(nd, false);
  for (size_t k = 0; k < inputs.size(); ++k) {
    const TensorType& t = inputs[k]->type;
    if (t.ndim() != nd)
      fail<TypeError>(name(), ": all inputs must have ", nd, " dimensions like input 0, but input ", k, " is ",
                      t.str());
    dt = promote_types(dt, t.dtype);
    for (int d = 0; d < nd; ++d)
      if (d != axis && t.broadcastable[d]) bc[d] = true;
  }
  if (inputs.size() == 1) bc[axis] = inputs[0]->type.broadcastable[axis];
  return {TensorType(dt, bc)};
}

std::vector<ShapeVars> Join::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  const int nd = node.inputs[0]->ndim();
  ShapeVars s(nd);
  for (int d = 0; d < nd; ++d) {
    if (d == axis) {
      ShapeVars parts;
      for (const auto& x : in) parts.push_back(x[d]);
      s[d] = detail::shape_sum(parts, name());
      continue;
    }
    s[d] = in[0][d];
    for (size_t k = 0; k < in.size(); ++k)
      if (!node.inputs[k]->type.broadcastable[d]) {
        s[d] = in[k][d];
        break;
      }
  }
  return {s};
}

std::vector<Var> Join::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var& gz = output_grads[0];
  std::vector<Var> g(node.inputs.size(), nullptr);
  if (!gz) return g;
  std::vector<Var> sizes;
  for (const Var& x : node.inputs) sizes.push_back(shape_i(x, axis));
  std::vector<Var> parts = split(gz, make_vector(sizes), static_cast<int>(sizes.size()), axis);
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const Var& x = node.inputs[k];
    if (!is_float(x->dtype())) continue;
    g[k] = patternbroadcast(parts[k]->dtype() == x->dtype() ? parts[k] : cast(parts[k], x->dtype()),
                            x->type.broadcastable);
  }
  return g;
}

std::vector<Var> Join::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  bool any = false;
  for (const Var& e : eval_points) any |= e != nullptr;
  if (!any) return {nullptr};
  std::vector<Var> xs;
  for (size_t k = 0; k < eval_points.size(); ++k)
    xs.push_back(eval_points[k] ? eval_points[k] : zeros_like(node.inputs[k]));
  return {concatenate(xs, axis)};
}

Var concatenate(const std::vector<Var>& xs, int axis) {
  if (xs.empty()) fail<ValueError>("concatenate: need at least one tensor to join");
  for (const Var& x : xs)
    if (!x) fail<TypeError>("concatenate: an input is null");
  if (xs[0]->ndim() == 0) fail<TypeError>("Join: cannot join 0-d tensors (", xs[0]->type.str(), ")");
  const int ax = normalize_axis(axis, xs[0]->ndim(), "Join");
  return apply_op1(std::make_shared<Join>(ax), xs);
}

Var stack(const std::vector<Var>& xs, int axis) {
  if (xs.empty()) fail<ValueError>("stack: need at least one tensor to stack");
  const int nd = xs[0]->ndim();
  const int ax = normalize_axis(axis, nd + 1, "stack");
  std::vector<Var> parts;
  for (const Var& x : xs) {
    if (!x) fail<TypeError>("stack: an input is null");
    if (x->ndim() != nd) fail<TypeError>("stack: all inputs must have ", nd, " dimensions, got ", x->type.str());
    std::vector<int> pat;
    for (int d = 0; d < nd; ++d) {
      if (d == ax) pat.push_back(-1);
      pat.push_back(d);
    }
    if (ax == nd) pat.push_back(-1);
    parts.push_back(dimshuffle(x, pat));
  }
  return concatenate(parts, ax);
}

// ---------------------------------------------------------------------------------------------
// Split

std::string Split::name() const { return "Split{" + std::to_string(n_splits) + "}"; }

std::vector<TensorType> Split::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 2) fail<TypeError>(name(), ": expected 2 inputs (x, sizes), got ", inputs.size());
  const Var& x = inputs[0];
  if (axis < 0 || axis >= x->ndim())
    fail<TypeError>(name(), ": axis ", axis, " is out of range for an input of type ", x->type.str());
  check_int_vector(name(), inputs[1], "the sizes");
  if (n_splits < 1) fail<TypeError>(name(), ": n_splits must be at least 1");
  TensorType t = x->type;
  t.broadcastable[axis] = false;
  return std::vector<TensorType>(n_splits, t);
}

std::vector<ShapeVars> Split::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  std::vector<ShapeVars> r;
  for (int i = 0; i < n_splits; ++i) {
    ShapeVars s = in[0];
    s[axis] = vector_entry(node.inputs[1], i);
    r.push_back(s);
  }
  return r;
}

std::vector<Var> Split::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  bool any = false;
  for (const Var& g : output_grads) any |= g != nullptr;
  if (!any) return {nullptr, nullptr};
  std::vector<Var> parts;
  auto* self = const_cast<Apply*>(&node);
  for (int i = 0; i < n_splits; ++i) parts.push_back(output_grads[i] ? output_grads[i] : zeros_like(self->output(i)));
  Var g = concatenate(parts, axis);
  const Var& x = node.inputs[0];
  if (g->dtype() != x->dtype()) g = cast(g, x->dtype());
  return {patternbroadcast(g, x->type.broadcastable), nullptr};
}

std::vector<Var> Split::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  if (!eval_points[0]) return std::vector<Var>(n_splits, nullptr);
  return split(eval_points[0], node.inputs[1], n_splits, axis);
}

std::vector<std::vector<bool>> Split::connection_pattern(const Apply&) const {
  return {std::vector<bool>(n_splits, true), std::vector<bool>(n_splits, false)};
}

AliasMap Split::view_map() const { return AliasMap(n_splits, std::vector<int>{0}); }

std::vector<Var> split(Var x, Var sizes, int n_splits, int axis) {
  if (!x) fail<TypeError>("split: input is null");
  if (x->ndim() == 0) fail<TypeError>("Split: cannot split a 0-d tensor");
  const int ax = normalize_axis(axis, x->ndim(), "Split");
  return apply_op(std::make_shared<Split>(n_splits, ax), {x, sizes});
}

std::vector<Var> split(Var x, const std::vector<int64_t>& sizes, int axis) {
  for (int64_t s : sizes)
    if (s < 0) fail<ValueError>("Split: split sizes must be non-negative, got ", s);
  NDArray v = NDArray::from_vector<int64_t>(sizes, Shape{static_cast<int64_t>(sizes.size())});
  return split(x, constant(v), static_cast<int>(sizes.size()), axis);
}

// ---------------------------------------------------------------------------------------------
// ARange, Eye

std::string ARange::name() const { return "ARange{dtype='" + std::string(dtype_name(dtype)) + "'}"; }

std::vector<TensorType> ARange::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 3) fail<TypeError>(name(), ": expected 3 inputs (start, stop, step), got ", inputs.size());
  const char* roles[] = {"start", "stop", "step"};
  for (int k = 0; k < 3; ++k)
    if (inputs[k]->ndim() != 0 || is_bool(inputs[k]->dtype()))
      fail<TypeError>(name(), ": ", roles[k], " must be a 0-d number, got ", inputs[k]->type.str());
  if (is_bool(dtype)) fail<TypeError>(name(), ": the output dtype cannot be bool");
  return {TensorType(dtype, {false})};
}

std::vector<ShapeVars> ARange::infer_shape(const Apply& node, const std::vector<ShapeVars>&) const {
  const Var &start = node.inputs[0], &stop = node.inputs[1], &step = node.inputs[2];
  bool ints = is_integer(start->dtype()) && is_integer(stop->dtype()) && is_integer(step->dtype());
  Var n;
  if (ints) {
    auto a = constant_int(start), b = constant_int(stop), c = constant_int(step);
    if (a && b && c && *c != 0) {
      // Constant bounds: the length in 128 bits (stop - start overflows int64 at the extremes).
      const __int128 span = static_cast<__int128>(*b) - *a, st = *c;
      const __int128 len = st > 0 ? (span > 0 ? (span - 1) / st + 1 : 0) : (span < 0 ? (-span - 1) / -st + 1 : 0);
      if (len > std::numeric_limits<int64_t>::max())
        fail<ValueError>(name(), ": the range from ", *a, " to ", *b, " by ", *c,
                         " has more elements than int64 holds");
      return {{int_constant(static_cast<int64_t>(len))}};
    }
    // ceil((stop - start) / step) with floor division: -((start - stop) // step).
    n = neg(int_div(sub(as_int64(start), as_int64(stop)), as_int64(step)));
  } else if (start->is_constant() && stop->is_constant() && step->is_constant()) {
    // Constant bounds: the length as the kernel computes it (in double).
    const double len = std::ceil((stop->data.get_flat(0) - start->data.get_flat(0)) / step->data.get_flat(0));
    if (!std::isfinite(len) || len >= 9223372036854775808.0)
      fail<ValueError>(name(), ": the length of the range (", len, ") is not a finite int64");
    return {{int_constant(len > 0 ? static_cast<int64_t>(len) : 0)}};
  } else {
    n = cast(ceil(true_div(sub(stop, start), step)), DType::Int64);
  }
  return {{maximum(n, int_constant(0))}};
}

std::vector<Var> ARange::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var& gz = output_grads[0];
  std::vector<Var> g(3, nullptr);
  if (!gz) return g;
  const Var &start = node.inputs[0], &step = node.inputs[2];
  if (is_float(start->dtype())) g[0] = cast(sum(gz), start->dtype());
  if (is_float(step->dtype())) {
    Var idx = cast(arange(int_constant(0), shape_i(gz, 0), int_constant(1), DType::Int64), gz->dtype());
    g[2] = cast(sum(mul(gz, idx)), step->dtype());
  }
  return g;
}

std::vector<std::vector<bool>> ARange::connection_pattern(const Apply&) const { return {{true}, {false}, {true}}; }

Var arange(Var start, Var stop, Var step, DType dt) {
  if (!start || !stop || !step) fail<TypeError>("arange: an input is null");
  return apply_op1(std::make_shared<ARange>(dt), {start, stop, step});
}

Var arange(int64_t stop) { return arange(int_constant(0), int_constant(stop), int_constant(1), DType::Int64); }

std::string Eye::name() const { return "Eye{dtype='" + std::string(dtype_name(dtype)) + "'}"; }

std::vector<TensorType> Eye::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 3) fail<TypeError>(name(), ": expected 3 inputs (n, m, k), got ", inputs.size());
  const char* roles[] = {"n", "m", "k"};
  for (int k = 0; k < 3; ++k) detail::check_int_scalar(name(), inputs[k], roles[k]);
  return {TensorType(dtype, {constant_int(inputs[0]) == 1, constant_int(inputs[1]) == 1})};
}

std::vector<ShapeVars> Eye::infer_shape(const Apply& node, const std::vector<ShapeVars>&) const {
  return {{as_int64(node.inputs[0]), as_int64(node.inputs[1])}};
}

std::vector<Var> Eye::grad(const Apply&, const std::vector<Var>&) const { return {nullptr, nullptr, nullptr}; }

std::vector<std::vector<bool>> Eye::connection_pattern(const Apply&) const { return {{false}, {false}, {false}}; }

Var eye(Var n, Var m, Var k, DType dt) {
  if (!n || !m || !k) fail<TypeError>("eye: an input is null");
  return apply_op1(std::make_shared<Eye>(dt), {n, m, k});
}

Var eye(int64_t n, DType dt) {
  if (n < 0) fail<ValueError>("eye: negative dimension ", n);
  return eye(int_constant(n), int_constant(n), int_constant(0), dt);
}

// ---------------------------------------------------------------------------------------------
// Tile

std::string Tile::name() const {
  std::ostringstream os;
  os << "Tile{reps=(";
  for (size_t i = 0; i < reps.size(); ++i) os << (i ? ", " : "") << reps[i];
  if (reps.size() == 1) os << ",";
  os << ")}";
  return os.str();
}

std::vector<TensorType> Tile::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 1) fail<TypeError>(name(), ": expected 1 input, got ", inputs.size());
  const TensorType& t = inputs[0]->type;
  const int nd = static_cast<int>(reps.size());
  if (nd < t.ndim())
    fail<TypeError>(name(), ": needs at least ", t.ndim(), " repetitions for an input of type ", t.str());
  const int off = nd - t.ndim();
  std::vector<bool> bc(nd);
  for (int i = 0; i < nd; ++i) {
    if (reps[i] < 0) fail<TypeError>(name(), ": repetitions must be non-negative");
    bc[i] = reps[i] == 1 && (i < off || t.broadcastable[i - off]);
  }
  return {TensorType(t.dtype, bc)};
}

std::vector<ShapeVars> Tile::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  const int nd = static_cast<int>(reps.size());
  const int off = nd - node.inputs[0]->ndim();
  ShapeVars s;
  for (int i = 0; i < nd; ++i) {
    if (i < off)
      s.push_back(int_constant(reps[i]));
    else
      s.push_back(shape_product({in[0][i - off], int_constant(reps[i])}, name()));
  }
  return {s};
}

std::vector<Var> Tile::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var& gz = output_grads[0];
  const Var& x = node.inputs[0];
  if (!gz) return {nullptr};
  const int nd = static_cast<int>(reps.size());
  const int off = nd - x->ndim();
  ShapeVars xs = shape_vars(x);
  ShapeVars split_shape;
  std::vector<int> axes;
  for (int i = 0; i < nd; ++i) {
    split_shape.push_back(int_constant(reps[i]));
    split_shape.push_back(i < off ? int_constant(1) : xs[i - off]);
    axes.push_back(2 * i);
  }
  Var g = sum(reshape(gz, make_vector(split_shape), 2 * nd), axes);
  if (g->dtype() != x->dtype()) g = cast(g, x->dtype());
  return {reshape(g, make_vector(xs), x->ndim())};
}

std::vector<Var> Tile::rop(const Apply&, const std::vector<Var>& eval_points) const {
  if (!eval_points[0]) return {nullptr};
  return {tile(eval_points[0], reps)};
}

Var tile(Var x, const std::vector<int64_t>& reps) {
  if (!x) fail<TypeError>("tile: input is null");
  for (int64_t r : reps)
    if (r < 0) fail<ValueError>("tile: repetitions must be non-negative, got ", r);
  std::vector<int64_t> r = reps;
  while (static_cast<int>(r.size()) < x->ndim()) r.insert(r.begin(), 1);
  return apply_op1(std::make_shared<Tile>(r), {x});
}

// ---------------------------------------------------------------------------------------------
// Repeat

std::string Repeat::name() const { return "Repeat{axis=" + std::to_string(axis) + "}"; }

std::vector<TensorType> Repeat::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() != 2) fail<TypeError>(name(), ": expected 2 inputs (x, repeats), got ", inputs.size());
  const Var &x = inputs[0], &r = inputs[1];
  if (axis < 0 || axis >= x->ndim())
    fail<TypeError>(name(), ": axis ", axis, " is out of range for an input of type ", x->type.str());
  if (r->ndim() > 1 || !is_integer(r->dtype()))
    fail<TypeError>(name(), ": repeats must be a 0-d or 1-d integer tensor, got ", r->type.str());
  TensorType t = x->type;
  t.broadcastable[axis] = t.broadcastable[axis] && constant_int(r) == 1;
  return {t};
}

std::vector<ShapeVars> Repeat::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  ShapeVars s = in[0];
  const Var& r = node.inputs[1];
  if (r->ndim() == 0)
    s[axis] = shape_product({s[axis], as_int64(r)}, name());
  else
    s[axis] = as_int64(sum(r));
  return {s};
}

std::vector<Var> Repeat::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  const Var& gz = output_grads[0];
  const Var &x = node.inputs[0], &r = node.inputs[1];
  if (!gz) return {nullptr, nullptr};
  Var g;
  if (r->ndim() == 0) {
    // Each input element owns r consecutive output elements along the axis.
    ShapeVars xs = shape_vars(x);
    ShapeVars s;
    for (int d = 0; d < x->ndim(); ++d) {
      s.push_back(xs[d]);
      if (d == axis) s.push_back(as_int64(r));
    }
    g = sum(reshape(gz, make_vector(s), x->ndim() + 1), std::vector<int>{axis + 1});
  } else {
    // Segment sums: differences of a zero-padded cumulative sum at the segment ends.
    ShapeVars zs = shape_vars(gz);
    zs[axis] = int_constant(1);
    Var cz = concatenate({zeros(zs, gz->dtype()), cumsum(gz, axis)}, axis);
    Var ends = cumsum(as_int64(r));
    Var starts = sub(ends, as_int64(r));
    g = sub(take(cz, ends, axis), take(cz, starts, axis));
  }
  if (g->dtype() != x->dtype()) g = cast(g, x->dtype());
  return {g, nullptr};
}

std::vector<Var> Repeat::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  if (!eval_points[0]) return {nullptr};
  return {apply_op1(std::make_shared<Repeat>(axis), {eval_points[0], node.inputs[1]})};
}

std::vector<std::vector<bool>> Repeat::connection_pattern(const Apply&) const { return {{true}, {false}}; }

Var repeat(Var x, Var repeats, std::optional<int> axis) {
  if (!x || !repeats) fail<TypeError>("repeat: an input is null");
  if (!axis) {
    x = flatten(x, 1);
    axis = 0;
  }
  if (x->ndim() == 0) fail<TypeError>("Repeat: cannot repeat a 0-d tensor along an axis");
  const int ax = normalize_axis(*axis, x->ndim(), "Repeat");
  return apply_op1(std::make_shared<Repeat>(ax), {x, repeats});
}

Var repeat(Var x, int64_t repeats, std::optional<int> axis) {
  if (repeats < 0) fail<ValueError>("Repeat: repeats must be non-negative, got ", repeats);
  return repeat(std::move(x), int_constant(repeats), axis);
}

// ---------------------------------------------------------------------------------------------
// roll, flip

Var roll(Var x, Var shift, std::optional<int> axis) {
  if (!x || !shift) fail<TypeError>("roll: an input is null");
  detail::check_int_scalar("roll", shift, "the shift");
  if (!axis) {
    if (x->ndim() == 0) return x;
    return reshape(roll(flatten(x, 1), shift, 0), make_vector(shape_vars(x)), x->ndim());
  }
  if (x->ndim() == 0) fail<TypeError>("roll: cannot roll a 0-d tensor along an axis");
  const int ax = normalize_axis(*axis, x->ndim(), "roll");
  // x[k:] followed by x[:k] along the axis, with k = n - shift mod n (0 when n is 0).
  Var n = shape_i(x, ax);
  Var k = sub(n, mod(as_int64(shift), maximum(n, int_constant(1))));
  std::vector<Index> head(ax, all()), tail(ax, all());
  head.push_back(sl(k, {}));
  tail.push_back(sl({}, k));
  return concatenate({subtensor(x, head), subtensor(x, tail)}, ax);
}

Var roll(Var x, int64_t shift, std::optional<int> axis) { return roll(std::move(x), int_constant(shift), axis); }

Var flip(Var x, int axis) {
  if (!x) fail<TypeError>("flip: input is null");
  const int ax = normalize_axis(axis, x->ndim(), "flip");
  std::vector<Index> idx(ax, all());
  idx.push_back(sl({}, {}, -1));
  return subtensor(x, idx);
}

}  // namespace hypatia
