// Subtensor, AdvancedSubtensor, IncSubtensor (basic and advanced) and the indexing builders.
#include "hypatia/ops/subtensor.h"

#include <sstream>

#include "hypatia/core/checked.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/shape.h"
#include "hypatia/ops/shape_util.h"

namespace hypatia {

using detail::as_int64;
using detail::constant_int;
using Kind = IndexEntry::Kind;
using Bound = IndexEntry::Bound;

// ---------------------------------------------------------------------------------------------
// Index helpers

Index::Index(Var v) {
  if (!v) fail<TypeError>("Index: the index variable is null");
  if (v->ndim() == 0 && is_integer(v->dtype())) {
    kind = Kind::Int;
    i = IndexBound(v);
    return;
  }
  kind = Kind::Array;
  array = std::move(v);
}

Index sl(IndexBound start, IndexBound stop, IndexBound step) {
  Index r;
  r.kind = Index::Kind::Slice;
  r.start = std::move(start);
  r.stop = std::move(stop);
  r.step = std::move(step);
  return r;
}

Index newaxis() {
  Index r;
  r.kind = Index::Kind::NewAxis;
  return r;
}

Index ellipsis() {
  Index r;
  r.kind = Index::Kind::Ellipsis;
  return r;
}

std::vector<std::tuple<Kind, Bound, int64_t, Bound, int64_t, Bound, int64_t>> index_spec_key(const IndexSpec& spec) {
  std::vector<std::tuple<Kind, Bound, int64_t, Bound, int64_t, Bound, int64_t>> r;
  for (const auto& e : spec) r.push_back(e.key());
  return r;
}

namespace {

std::string bound_str(Bound b, int64_t v) {
  if (b == Bound::None) return "";
  if (b == Bound::Const) return std::to_string(v);
  return "int64";
}

// Number of index inputs an entry takes.
int n_inputs_of(const IndexEntry& e) {
  if (e.kind == Kind::IntArray || e.kind == Kind::BoolArray) return 1;
  return (e.a == Bound::Input) + (e.b == Bound::Input) + (e.c == Bound::Input);
}

int n_index_inputs(const IndexSpec& spec) {
  int n = 0;
  for (const auto& e : spec) n += n_inputs_of(e);
  return n;
}

bool has_arrays(const IndexSpec& spec) {
  for (const auto& e : spec)
    if (e.kind == Kind::IntArray || e.kind == Kind::BoolArray) return true;
  return false;
}

// Broadcastable flag of a sliced axis: true only when the slice of a length-1 axis is known to
// keep its one element.
bool slice_broadcastable(bool in_bc, const IndexEntry& e) {
  if (!in_bc || e.a == Bound::Input || e.b == Bound::Input || e.c == Bound::Input) return false;
  std::optional<int64_t> a, b;
  if (e.a == Bound::Const) a = e.av;
  if (e.b == Bound::Const) b = e.bv;
  const int64_t step = e.c == Bound::Const ? e.cv : 1;
  return slice_length(1, a, b, step) == 1;
}

// Integer arithmetic on 0-d int64 variables that folds constants (checked: a result past int64 is
// left to the op, which wraps like numpy, instead of overflowing here).
Var ifold(ScalarOpKind k, const Var& a, const Var& b) {
  auto ca = constant_int(a), cb = constant_int(b);
  if (ca && cb) {
    int64_t x = *ca, y = *cb;
    std::optional<int64_t> r;
    switch (k) {
      case ScalarOpKind::Add:
        r = checked_add(x, y);
        break;
      case ScalarOpKind::Sub:
        r = checked_sub(x, y);
        break;
      case ScalarOpKind::Maximum:
        r = std::max(x, y);
        break;
      case ScalarOpKind::Minimum:
        r = std::min(x, y);
        break;
      case ScalarOpKind::IntDiv:
        if (y != 0) r = checked_floor_div(x, y);
        break;
      default:
        break;
    }
    if (r) return int_constant(*r);
  }
  return as_int64(elemwise(k, {a, b}));
}

// Symbolic clamp of a slice bound (Python semantics) for a constant step sign.
Var clamp_bound(const Var& v, const Var& n, bool positive_step) {
  const Var lower = positive_step ? int_constant(0) : int_constant(-1);
  const Var upper = positive_step ? n : ifold(ScalarOpKind::Add, n, int_constant(-1));
  auto neg_case = [&] { return ifold(ScalarOpKind::Maximum, ifold(ScalarOpKind::Add, n, v), lower); };
  auto pos_case = [&] { return ifold(ScalarOpKind::Minimum, v, upper); };
  if (auto c = constant_int(v)) return *c < 0 ? neg_case() : pos_case();
  return as_int64(switch_(lt(v, int_constant(0)), neg_case(), pos_case()));
}

// Symbolic length of a slice; null when the step is symbolic.
Var slice_length_var(const Var& n, const IndexEntry& e, const std::vector<Var>& in, int& k) {
  Var start, stop;
  if (e.a == Bound::Const)
    start = int_constant(e.av);
  else if (e.a == Bound::Input)
    start = as_int64(in[k++]);
  if (e.b == Bound::Const)
    stop = int_constant(e.bv);
  else if (e.b == Bound::Input)
    stop = as_int64(in[k++]);
  if (e.c == Bound::Input) {
    ++k;
    return nullptr;
  }
  const int64_t step = clamp_slice_step(e.c == Bound::Const ? e.cv : 1);
  const bool pos = step > 0;
  Var a = start ? clamp_bound(start, n, pos) : (pos ? int_constant(0) : ifold(ScalarOpKind::Add, n, int_constant(-1)));
  Var b = stop ? clamp_bound(stop, n, pos) : (pos ? n : int_constant(-1));
  // a and b are clamped to [-1, n], so diff lies in [-n, n]; (diff - 1) // s + 1 is ceil(diff / s)
  // without the diff + s - 1 that overflows for a huge step (x[::2**63 - 1]).
  Var diff = pos ? ifold(ScalarOpKind::Sub, b, a) : ifold(ScalarOpKind::Sub, a, b);
  const int64_t s = pos ? step : -step;
  Var len = s == 1
                ? diff
                : ifold(ScalarOpKind::Add,
                        ifold(ScalarOpKind::IntDiv, ifold(ScalarOpKind::Add, diff, int_constant(-1)), int_constant(s)),
                        int_constant(1));
  return ifold(ScalarOpKind::Maximum, len, int_constant(0));
}

// Walks a spec against x's type and the index inputs: checks them and returns the output type.
TensorType indexed_type(const std::string& op, const IndexSpec& spec, const TensorType& xt, const std::vector<Var>& idx,
                        bool advanced) {
  if (static_cast<int>(idx.size()) != n_index_inputs(spec))
    fail<TypeError>(op, ": expected ", n_index_inputs(spec), " index inputs, got ", idx.size());
  const bool adv = has_arrays(spec);
  if (adv != advanced)
    fail<TypeError>(op, adv ? ": array indices need the advanced op" : ": the advanced op needs an array index");
  int ax = 0, k = 0;
  std::vector<bool> before, after, bshape_bc;
  int bnd = 0;  // ndim of the broadcast of the index arrays
  std::vector<std::vector<bool>> arrays_bc;
  int first_adv = -1, last_adv = -1;
  bool seen_adv = false;
  auto need_axes = [&](int n) {
    if (ax + n > xt.ndim())
      fail<TypeError>(op, ": too many indices for a tensor of type ", xt.str(), " (", ax + n, " axes indexed)");
  };
  auto check_scalar = [&](Bound b, const char* role) {
    if (b != Bound::Input) return;
    detail::check_int_scalar(op, idx[k], role);
    ++k;
  };
  for (size_t p = 0; p < spec.size(); ++p) {
    const IndexEntry& e = spec[p];
    auto& dims = seen_adv ? after : before;
    switch (e.kind) {
      case Kind::Int:
        need_axes(1);
        check_scalar(e.a, "an integer index");
        ++ax;
        if (adv) {
          if (first_adv < 0) first_adv = static_cast<int>(p);
          last_adv = static_cast<int>(p);
          seen_adv = true;
        }
        break;
      case Kind::Slice:
        need_axes(1);
        check_scalar(e.a, "a slice start");
        check_scalar(e.b, "a slice stop");
        check_scalar(e.c, "a slice step");
        if (e.c == Bound::Const && e.cv == 0) fail<ValueError>(op, ": slice step cannot be zero");
        dims.push_back(slice_broadcastable(xt.broadcastable[ax], e));
        ++ax;
        break;
      case Kind::NewAxis:
        dims.push_back(true);
        break;
      case Kind::IntArray:
      case Kind::BoolArray: {
        const Var& a = idx[k++];
        if (e.kind == Kind::IntArray && !is_integer(a->dtype()))
          fail<TypeError>(op, ": an index array must have an integer dtype, got ", a->type.str());
        if (e.kind == Kind::BoolArray && (!is_bool(a->dtype()) || a->ndim() == 0))
          fail<TypeError>(op, ": a mask must be a boolean array of at least 1 dimension, got ", a->type.str());
        const int consumed = e.kind == Kind::IntArray ? 1 : a->ndim();
        need_axes(consumed);
        ax += consumed;
        arrays_bc.push_back(e.kind == Kind::IntArray ? a->type.broadcastable : std::vector<bool>{false});
        if (first_adv < 0) first_adv = static_cast<int>(p);
        last_adv = static_cast<int>(p);
        seen_adv = true;
        break;
      }
    }
  }
  for (int d = ax; d < xt.ndim(); ++d) (seen_adv ? after : before).push_back(xt.broadcastable[d]);
  if (!adv) return TensorType(xt.dtype, before);
  for (const auto& b : arrays_bc) bnd = std::max(bnd, static_cast<int>(b.size()));
  bshape_bc.assign(bnd, true);
  for (const auto& b : arrays_bc) {
    const int off = bnd - static_cast<int>(b.size());
    for (size_t d = 0; d < b.size(); ++d)
      if (!b[d]) bshape_bc[off + d] = false;
  }
  // numpy: the broadcast dims replace the indexed axes when the advanced entries are adjacent.
  bool adjacent = true;
  for (int p = first_adv; p <= last_adv; ++p) {
    const Kind kd = spec[p].kind;
    if (kd != Kind::Int && kd != Kind::IntArray && kd != Kind::BoolArray) adjacent = false;
  }
  std::vector<bool> out;
  if (adjacent) {
    out = before;
    out.insert(out.end(), bshape_bc.begin(), bshape_bc.end());
    out.insert(out.end(), after.begin(), after.end());
  } else {
    out = bshape_bc;
    out.insert(out.end(), before.begin(), before.end());
    out.insert(out.end(), after.begin(), after.end());
  }
  return TensorType(xt.dtype, out);
}

std::vector<Var> index_inputs(const Apply& node, int first) {
  return std::vector<Var>(node.inputs.begin() + first, node.inputs.end());
}

Var apply_indexing(const IndexSpec& spec, const Var& x, const std::vector<Var>& idx) {
  std::vector<Var> in{x};
  in.insert(in.end(), idx.begin(), idx.end());
  if (has_arrays(spec)) return apply_op1(std::make_shared<AdvancedSubtensor>(spec), in);
  return apply_op1(std::make_shared<Subtensor>(spec), in);
}

Var apply_inc(const IndexSpec& spec, bool set, const Var& x, const Var& y, const std::vector<Var>& idx) {
  std::vector<Var> in{x, y};
  in.insert(in.end(), idx.begin(), idx.end());
  return apply_op1(std::make_shared<IncSubtensor>(spec, set), in);
}

// Symbolic output shape of an indexing op; empty when it cannot be expressed (symbolic step,
// boolean mask).
ShapeVars indexed_shape(const IndexSpec& spec, const ShapeVars& xs, const std::vector<Var>& idx, bool& ok) {
  ok = true;
  const bool adv = has_arrays(spec);
  int ax = 0, k = 0;
  ShapeVars before, after;
  std::vector<ShapeVars> arrays;
  std::vector<std::vector<bool>> arrays_bc;
  bool seen_adv = false;
  int first_adv = -1, last_adv = -1;
  for (size_t p = 0; p < spec.size(); ++p) {
    const IndexEntry& e = spec[p];
    auto& dims = seen_adv ? after : before;
    switch (e.kind) {
      case Kind::Int:
        if (e.a == Bound::Input) ++k;
        ++ax;
        if (adv) {
          if (first_adv < 0) first_adv = static_cast<int>(p);
          last_adv = static_cast<int>(p);
          seen_adv = true;
        }
        break;
      case Kind::Slice: {
        Var len = slice_length_var(xs[ax], e, idx, k);
        if (!len) ok = false;
        dims.push_back(len);
        ++ax;
        break;
      }
      case Kind::NewAxis:
        dims.push_back(int_constant(1));
        break;
      case Kind::IntArray:
        arrays.push_back(shape_vars(idx[k]));
        arrays_bc.push_back(idx[k]->type.broadcastable);
        ++k;
        ++ax;
        if (first_adv < 0) first_adv = static_cast<int>(p);
        last_adv = static_cast<int>(p);
        seen_adv = true;
        break;
      case Kind::BoolArray:
        ok = false;
        return {};
    }
  }
  for (int d = ax; d < static_cast<int>(xs.size()); ++d) (seen_adv ? after : before).push_back(xs[d]);
  if (!adv) return before;
  int bnd = 0;
  for (const auto& a : arrays) bnd = std::max(bnd, static_cast<int>(a.size()));
  ShapeVars bshape(bnd);
  for (int d = 0; d < bnd; ++d) {
    for (size_t j = 0; j < arrays.size(); ++j) {
      const int off = bnd - static_cast<int>(arrays[j].size());
      if (d < off) continue;
      if (!bshape[d] || !arrays_bc[j][d - off]) bshape[d] = arrays[j][d - off];
      if (!arrays_bc[j][d - off]) break;
    }
    if (!bshape[d]) bshape[d] = int_constant(1);
  }
  bool adjacent = true;
  for (int p = first_adv; p <= last_adv; ++p)
    if (spec[p].kind == Kind::Slice || spec[p].kind == Kind::NewAxis) adjacent = false;
  ShapeVars out;
  if (adjacent) {
    out = before;
    out.insert(out.end(), bshape.begin(), bshape.end());
  } else {
    out = bshape;
    out.insert(out.end(), before.begin(), before.end());
  }
  out.insert(out.end(), after.begin(), after.end());
  return out;
}

}  // namespace

bool indexes_by_leading_vectors(const Apply& node, const IndexSpec& spec, size_t first) {
  if (spec.empty() || node.inputs.size() < first || node.inputs.size() - first != spec.size()) return false;
  for (size_t i = 0; i < spec.size(); ++i) {
    const TensorType& t = node.inputs[first + i]->type;
    if (spec[i].kind != IndexEntry::Kind::IntArray || t.ndim() != 1 || !is_integer(t.dtype)) return false;
  }
  return true;
}

std::string index_spec_str(const IndexSpec& spec) {
  std::ostringstream os;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (i) os << ", ";
    const IndexEntry& e = spec[i];
    switch (e.kind) {
      case Kind::Int:
        os << bound_str(e.a, e.av);
        break;
      case Kind::Slice:
        os << bound_str(e.a, e.av) << ":" << bound_str(e.b, e.bv) << ":" << bound_str(e.c, e.cv);
        break;
      case Kind::NewAxis:
        os << "newaxis";
        break;
      case Kind::IntArray:
        os << "int[]";
        break;
      case Kind::BoolArray:
        os << "bool[]";
        break;
    }
  }
  return os.str();
}

// ---------------------------------------------------------------------------------------------
// Subtensor

std::string Subtensor::name() const { return "Subtensor{" + index_spec_str(spec) + "}"; }

std::vector<TensorType> Subtensor::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.empty()) fail<TypeError>(name(), ": expected x and index inputs, got no input");
  return {indexed_type(name(), spec, inputs[0]->type, std::vector<Var>(inputs.begin() + 1, inputs.end()), false)};
}

std::vector<ShapeVars> Subtensor::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  bool ok = true;
  ShapeVars s = indexed_shape(spec, in[0], index_inputs(node, 1), ok);
  if (!ok) return {};
  return {s};
}

std::vector<Var> Subtensor::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  std::vector<Var> g(node.inputs.size(), nullptr);
  const Var& x = node.inputs[0];
  if (!output_grads[0] || !is_float(x->dtype())) return g;
  Var gz = output_grads[0]->dtype() == x->dtype() ? output_grads[0] : cast(output_grads[0], x->dtype());
  g[0] = apply_inc(spec, false, zeros_like(x), gz, index_inputs(node, 1));
  return g;
}

std::vector<Var> Subtensor::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  if (!eval_points[0]) return {nullptr};
  return {apply_indexing(spec, eval_points[0], index_inputs(node, 1))};
}

std::vector<std::vector<bool>> Subtensor::connection_pattern(const Apply& node) const {
  std::vector<std::vector<bool>> c(node.inputs.size(), std::vector<bool>{false});
  c[0][0] = true;
  return c;
}

// ---------------------------------------------------------------------------------------------
// AdvancedSubtensor

std::string AdvancedSubtensor::name() const { return "AdvancedSubtensor{" + index_spec_str(spec) + "}"; }

std::vector<TensorType> AdvancedSubtensor::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.empty()) fail<TypeError>(name(), ": expected x and index inputs, got no input");
  return {indexed_type(name(), spec, inputs[0]->type, std::vector<Var>(inputs.begin() + 1, inputs.end()), true)};
}

std::vector<ShapeVars> AdvancedSubtensor::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  bool ok = true;
  ShapeVars s = indexed_shape(spec, in[0], index_inputs(node, 1), ok);
  if (!ok) return {};
  return {s};
}

std::vector<Var> AdvancedSubtensor::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  std::vector<Var> g(node.inputs.size(), nullptr);
  const Var& x = node.inputs[0];
  if (!output_grads[0] || !is_float(x->dtype())) return g;
  Var gz = output_grads[0]->dtype() == x->dtype() ? output_grads[0] : cast(output_grads[0], x->dtype());
  g[0] = apply_inc(spec, false, zeros_like(x), gz, index_inputs(node, 1));
  return g;
}

std::vector<Var> AdvancedSubtensor::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  if (!eval_points[0]) return {nullptr};
  return {apply_indexing(spec, eval_points[0], index_inputs(node, 1))};
}

std::vector<std::vector<bool>> AdvancedSubtensor::connection_pattern(const Apply& node) const {
  std::vector<std::vector<bool>> c(node.inputs.size(), std::vector<bool>{false});
  c[0][0] = true;
  return c;
}

// ---------------------------------------------------------------------------------------------
// IncSubtensor

IncSubtensor::IncSubtensor(IndexSpec s, bool set, bool inplace_)
    : spec(std::move(s)), set_instead_of_inc(set), inplace(inplace_), advanced(has_arrays(spec)) {}

std::string IncSubtensor::name() const {
  std::string mode = std::string(inplace ? "Inplace" : "") + (set_instead_of_inc ? "Set" : "Inc");
  return std::string(advanced ? "AdvancedIncSubtensor{" : "IncSubtensor{") + mode + ";" + index_spec_str(spec) + "}";
}

std::vector<TensorType> IncSubtensor::make_output_types(const std::vector<Var>& inputs) const {
  if (inputs.size() < 2) fail<TypeError>(name(), ": expected inputs (x, y, indices...), got ", inputs.size());
  const Var &x = inputs[0], &y = inputs[1];
  TensorType region = indexed_type(name(), spec, x->type, std::vector<Var>(inputs.begin() + 2, inputs.end()), advanced);
  if (y->dtype() != x->dtype())
    fail<TypeError>(name(), ": y must have x's dtype ", dtype_name(x->dtype()), ", got ", y->type.str());
  if (y->ndim() > region.ndim())
    fail<TypeError>(name(), ": y of type ", y->type.str(), " has more dimensions than the indexed region ",
                    region.str());
  return {x->type};
}

std::vector<ShapeVars> IncSubtensor::infer_shape(const Apply&, const std::vector<ShapeVars>& in) const {
  return {in[0]};
}

std::vector<Var> IncSubtensor::grad(const Apply& node, const std::vector<Var>& output_grads) const {
  std::vector<Var> g(node.inputs.size(), nullptr);
  const Var &x = node.inputs[0], &y = node.inputs[1];
  const Var& gz = output_grads[0];
  if (!gz || !is_float(x->dtype())) return g;
  std::vector<Var> idx = index_inputs(node, 2);
  g[0] = set_instead_of_inc ? apply_inc(spec, true, gz, constant(0.0, gz->dtype()), idx) : gz;
  g[1] = sum_to_type(apply_indexing(spec, gz, idx), y->type);
  return g;
}

std::vector<Var> IncSubtensor::rop(const Apply& node, const std::vector<Var>& eval_points) const {
  if (!eval_points[0] && !eval_points[1]) return {nullptr};
  const Var &x = node.inputs[0], &y = node.inputs[1];
  Var ex = eval_points[0] ? eval_points[0] : zeros_like(x);
  Var ey = eval_points[1] ? eval_points[1] : zeros_like(y);
  return {apply_inc(spec, set_instead_of_inc, ex, ey, index_inputs(node, 2))};
}

std::vector<std::vector<bool>> IncSubtensor::connection_pattern(const Apply& node) const {
  std::vector<std::vector<bool>> c(node.inputs.size(), std::vector<bool>{false});
  c[0][0] = true;
  c[1][0] = true;
  return c;
}

AliasMap IncSubtensor::destroy_map() const {
  if (inplace) return {{0}};
  return {};
}

// ---------------------------------------------------------------------------------------------
// Builders

Var subtensor(Var x, const std::vector<Index>& index) {
  if (!x) fail<TypeError>("subtensor: input is null");
  // Expand the ellipsis and count the axes the index consumes.
  int consumed = 0, ellipses = 0;
  bool any_array = false;
  for (const Index& ix : index) {
    switch (ix.kind) {
      case Index::Kind::Int:
      case Index::Kind::Slice:
        ++consumed;
        break;
      case Index::Kind::NewAxis:
        break;
      case Index::Kind::Ellipsis:
        ++ellipses;
        break;
      case Index::Kind::Array:
        any_array = true;
        if (!ix.array) fail<TypeError>("subtensor: an index array is null");
        consumed += is_bool(ix.array->dtype()) ? std::max(1, ix.array->ndim()) : 1;
        break;
    }
  }
  const char* op = any_array ? "AdvancedSubtensor" : "Subtensor";
  if (ellipses > 1) fail<IndexError>(op, ": an index can only have a single ellipsis ('...')");
  if (consumed > x->ndim())
    fail<IndexError>(op, ": too many indices for a tensor of type ", x->type.str(), ": ", x->ndim(),
                     " dimensions, but ", consumed, " were indexed");
  IndexSpec spec;
  std::vector<Var> in{x};
  int ax = 0;
  auto bound = [&](const IndexBound& b, Bound& kind, int64_t& value, const char* role) {
    if (b.var) {
      if (auto c = constant_int(b.var)) {
        kind = Bound::Const;
        value = *c;
        return;
      }
      detail::check_int_scalar(op, b.var, role);
      kind = Bound::Input;
      in.push_back(b.var);
    } else if (b.value) {
      kind = Bound::Const;
      value = *b.value;
    } else {
      kind = Bound::None;
    }
  };
  for (const Index& ix : index) {
    IndexEntry e;
    switch (ix.kind) {
      case Index::Kind::Int:
        e.kind = Kind::Int;
        bound(ix.i, e.a, e.av, "an integer index");
        if (e.a == Bound::None) fail<TypeError>(op, ": an integer index has no value");
        // A broadcastable axis has length 1: a constant index can be checked now.
        if (e.a == Bound::Const && x->type.broadcastable[ax] && (e.av < -1 || e.av > 0))
          fail<IndexError>(op, ": index ", e.av, " is out of bounds for axis ", ax, " with size 1");
        ++ax;
        break;
      case Index::Kind::Slice:
        e.kind = Kind::Slice;
        bound(ix.start, e.a, e.av, "a slice start");
        bound(ix.stop, e.b, e.bv, "a slice stop");
        bound(ix.step, e.c, e.cv, "a slice step");
        if (e.c == Bound::Const && e.cv == 0) fail<ValueError>(op, ": slice step cannot be zero");
        if (e.c == Bound::Const && e.cv == 1) e.c = Bound::None;
        ++ax;
        break;
      case Index::Kind::NewAxis:
        e.kind = Kind::NewAxis;
        break;
      case Index::Kind::Ellipsis:
        for (int k = 0; k < x->ndim() - consumed; ++k, ++ax) spec.push_back(IndexEntry{});
        continue;
      case Index::Kind::Array:
        if (is_bool(ix.array->dtype())) {
          if (ix.array->ndim() == 0) fail<TypeError>(op, ": a 0-d boolean index is not supported");
          e.kind = Kind::BoolArray;
          ax += ix.array->ndim();
        } else if (is_integer(ix.array->dtype())) {
          e.kind = Kind::IntArray;
          ++ax;
        } else {
          fail<TypeError>(op, ": index arrays must be integer or boolean, got ", ix.array->type.str());
        }
        in.push_back(ix.array);
        break;
    }
    spec.push_back(e);
  }
  // Trailing full slices carry no information.
  while (!spec.empty() && spec.back().kind == Kind::Slice && spec.back().a == Bound::None &&
         spec.back().b == Bound::None && spec.back().c == Bound::None)
    spec.pop_back();
  if (spec.empty()) return x;
  if (any_array) return apply_op1(std::make_shared<AdvancedSubtensor>(spec), in);
  return apply_op1(std::make_shared<Subtensor>(spec), in);
}

Var subtensor(Var x, int64_t i) { return subtensor(std::move(x), std::vector<Index>{Index(i)}); }

namespace {
Var inc_or_set(Var indexed, Var y, bool set) {
  const char* fn = set ? "set_subtensor" : "inc_subtensor";
  if (!indexed || !y) fail<TypeError>(fn, ": an input is null");
  const Apply* owner = indexed->owner;
  const IndexSpec* spec = nullptr;
  if (owner) {
    if (auto* s = dynamic_cast<const Subtensor*>(owner->op.get()))
      spec = &s->spec;
    else if (auto* a = dynamic_cast<const AdvancedSubtensor*>(owner->op.get()))
      spec = &a->spec;
  }
  if (!spec)
    fail<TypeError>(fn, ": the first argument must be the result of subtensor() (x[index]), got ", indexed->str());
  const Var& x = owner->inputs[0];
  if (y->dtype() != x->dtype()) {
    if (!y->is_constant() && !can_cast_safely(y->dtype(), x->dtype()))
      fail<TypeError>(set ? "IncSubtensor{Set}" : "IncSubtensor{Inc}", ": y of dtype ", dtype_name(y->dtype()),
                      " cannot be safely cast to x's dtype ", dtype_name(x->dtype()));
    y = cast(y, x->dtype());
  }
  return apply_inc(*spec, set, x, y, std::vector<Var>(owner->inputs.begin() + 1, owner->inputs.end()));
}
}  // namespace

Var set_subtensor(Var indexed, Var y) { return inc_or_set(std::move(indexed), std::move(y), true); }

Var inc_subtensor(Var indexed, Var y) { return inc_or_set(std::move(indexed), std::move(y), false); }

Var take(Var a, Var indices, std::optional<int> axis) {
  if (!a || !indices) fail<TypeError>("take: an input is null");
  if (!is_integer(indices->dtype())) fail<TypeError>("take: indices must be integers, got ", indices->type.str());
  if (!axis) return subtensor(flatten(a, 1), std::vector<Index>{Index(indices)});
  if (a->ndim() == 0) fail<TypeError>("take: cannot index a 0-d tensor along an axis");
  const int ax = normalize_axis(*axis, a->ndim(), "take");
  std::vector<Index> idx(ax, all());
  idx.push_back(Index(indices));
  return subtensor(a, idx);
}

}  // namespace hypatia
