#include "hypatia/ops/pool.h"

#include <sstream>

#include "hypatia/core/error.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/shape.h"

namespace hypatia {

int64_t PoolParams::out_size(int d, int64_t v) const {
  const int64_t w = ws[d], s = stride[d];
  v += 2 * pad[d];
  if (ignore_border) {
    const int64_t out = (v - w) / s + 1;
    return v < w ? 0 : out;
  }
  if (v <= 0) return 0;
  if (s >= w) return (v - 1) / s + 1;
  return std::max<int64_t>(0, (v - 1 - w + s) / s) + 1;
}

std::string PoolParams::str() const {
  std::ostringstream os;
  auto tup = [&](const std::array<int64_t, 3>& a) {
    os << "(";
    for (int d = 0; d < nd; ++d) os << (d ? ", " : "") << a[d];
    os << ")";
  };
  os << "ws=";
  tup(ws);
  os << ", stride=";
  tup(stride);
  if (pad[0] || pad[1] || pad[2]) {
    os << ", pad=";
    tup(pad);
  }
  os << ", " << (ignore_border ? "ignore_border" : "keep_border") << ", " << mode;
  return os.str();
}

void PoolParams::check(const char* who) const {
  if (nd != 2 && nd != 3) fail<ValueError>(who, ": pools over 2 or 3 axes, got ", nd);
  if (mode != "max" && mode != "sum" && mode != "average_inc_pad" && mode != "average_exc_pad")
    fail<ValueError>(who, ": mode must be 'max', 'sum', 'average_inc_pad' or 'average_exc_pad', got '", mode, "'");
  for (int d = 0; d < nd; ++d) {
    if (ws[d] < 1) fail<ValueError>(who, ": the window must be positive, got ", str());
    if (stride[d] < 1) fail<ValueError>(who, ": the stride must be positive, got ", str());
    if (pad[d] < 0 || pad[d] >= ws[d])
      fail<ValueError>(who, ": padding must be non-negative and smaller than the window, got ", str());
    if (pad[d] != 0 && !ignore_border)
      fail<NotImplementedError>(who, ": padding works only with ignore_border=True (as in Theano), got ", str());
  }
}

namespace {

void check_input(const std::string& who, const PoolParams& p, const Var& x) {
  if (x->ndim() < p.nd)
    fail<TypeError>(who, ": expected a tensor of at least ", p.nd, " dimensions, got ", x->type.str());
  if (x->dtype() == DType::Bool) fail<TypeError>(who, ": expected a numeric tensor, got ", x->type.str());
  if (p.mode.rfind("average", 0) == 0 && !is_float(x->dtype()))
    fail<TypeError>(who, ": ", p.mode, " pooling needs a float tensor, got ", x->type.str());
}

void check_like(const std::string& who, const Var& a, const char* an, const Var& b, const char* bn) {
  if (a->ndim() != b->ndim() || a->dtype() != b->dtype())
    fail<TypeError>(who, ": expected ", an, " and ", bn, " of one dtype and ndim, got ", a->type.str(), " and ",
                    b->type.str());
}

/// The pooled output's type: x's, its pooled axes not broadcastable.
TensorType pooled_type(const PoolParams& p, const Var& x) {
  std::vector<bool> b = x->type.broadcastable;
  for (int d = 0; d < p.nd; ++d) b[b.size() - p.nd + d] = false;
  return TensorType(x->dtype(), b);
}

ShapeVars pooled_shape(const PoolParams& p, const ShapeVars& in) {
  ShapeVars s = in;
  const size_t first = in.size() - p.nd;
  for (int d = 0; d < p.nd; ++d) {
    const Var v = add(in[first + d], int_constant(2 * p.pad[d]));
    const Var w = int_constant(p.ws[d]), st = int_constant(p.stride[d]);
    const Var one = int_constant(1), zero = int_constant(0);
    Var out;
    if (p.ignore_border)
      out = maximum(add(int_div(sub(v, w), st), one), zero);
    else if (p.stride[d] >= p.ws[d])
      out = add(int_div(sub(v, one), st), one);
    else
      out = add(maximum(zero, int_div(sub(add(sub(v, one), st), w), st)), one);
    // An empty axis pools to an empty axis.
    s[first + d] = switch_(eq(in[first + d], zero), zero, out);
  }
  return s;
}

}  // namespace

std::string Pool::name() const { return "Pool{" + p.str() + "}"; }

std::vector<TensorType> Pool::make_output_types(const std::vector<Var>& in) const {
  if (in.size() != 1) fail<TypeError>(name(), ": expected 1 input, got ", in.size());
  check_input(name(), p, in[0]);
  return {pooled_type(p, in[0])};
}

std::vector<ShapeVars> Pool::infer_shape(const Apply&, const std::vector<ShapeVars>& in) const {
  return {pooled_shape(p, in[0])};
}

std::vector<Var> Pool::grad(const Apply& node, const std::vector<Var>& g) const {
  if (!g[0]) return {nullptr};
  const Var& x = node.inputs[0];
  if (!is_float(x->dtype())) return {nullptr};
  if (p.mode == "max") return {max_pool_grad(x, const_cast<Apply&>(node).output(0), g[0], p)};
  return {average_pool_grad(x, g[0], p)};
}

std::string MaxPoolGrad::name() const { return "MaxPoolGrad{" + p.str() + "}"; }

std::vector<TensorType> MaxPoolGrad::make_output_types(const std::vector<Var>& in) const {
  if (in.size() != 3) fail<TypeError>(name(), ": expected 3 inputs (x, maxout, gz), got ", in.size());
  check_input(name(), p, in[0]);
  check_like(name(), in[0], "x", in[1], "maxout");
  check_like(name(), in[0], "x", in[2], "gz");
  return {in[0]->type};
}

std::vector<ShapeVars> MaxPoolGrad::infer_shape(const Apply&, const std::vector<ShapeVars>& in) const {
  return {in[0]};
}

std::vector<Var> MaxPoolGrad::grad(const Apply& node, const std::vector<Var>& g) const {
  const Var &x = node.inputs[0], &out = node.inputs[1];
  if (!g[0]) return {nullptr, nullptr, nullptr};
  return {zeros_like(x), zeros_like(out), max_pool_grad_grad(x, out, g[0], p)};
}

std::string AveragePoolGrad::name() const { return "AveragePoolGrad{" + p.str() + "}"; }

std::vector<TensorType> AveragePoolGrad::make_output_types(const std::vector<Var>& in) const {
  if (in.size() != 2) fail<TypeError>(name(), ": expected 2 inputs (x, gz), got ", in.size());
  check_input(name(), p, in[0]);
  check_like(name(), in[0], "x", in[1], "gz");
  return {in[0]->type};
}

std::vector<ShapeVars> AveragePoolGrad::infer_shape(const Apply&, const std::vector<ShapeVars>& in) const {
  return {in[0]};
}

std::vector<std::vector<bool>> AveragePoolGrad::connection_pattern(const Apply&) const { return {{false}, {true}}; }

std::vector<Var> AveragePoolGrad::grad(const Apply& node, const std::vector<Var>& g) const {
  if (!g[0]) return {nullptr, nullptr};
  return {nullptr, pool(g[0], p)};
}

std::string DownsampleFactorMaxGradGrad::name() const { return "DownsampleFactorMaxGradGrad{" + p.str() + "}"; }

std::vector<TensorType> DownsampleFactorMaxGradGrad::make_output_types(const std::vector<Var>& in) const {
  if (in.size() != 3) fail<TypeError>(name(), ": expected 3 inputs (x, maxout, ggx), got ", in.size());
  check_input(name(), p, in[0]);
  check_like(name(), in[0], "x", in[1], "maxout");
  check_like(name(), in[0], "x", in[2], "ggx");
  return {in[1]->type};
}

std::vector<ShapeVars> DownsampleFactorMaxGradGrad::infer_shape(const Apply&, const std::vector<ShapeVars>& in) const {
  return {in[1]};
}

std::vector<Var> DownsampleFactorMaxGradGrad::grad(const Apply& node, const std::vector<Var>& g) const {
  const Var &x = node.inputs[0], &out = node.inputs[1];
  if (!g[0]) return {nullptr, nullptr, nullptr};
  return {zeros_like(x), zeros_like(out), max_pool_grad(x, out, g[0], p)};
}

Var pool(Var x, PoolParams p) {
  p.check("pool");
  return apply_op1(std::make_shared<Pool>(std::move(p)), {std::move(x)});
}
Var max_pool_grad(Var x, Var out, Var gz, PoolParams p) {
  p.check("MaxPoolGrad");
  return apply_op1(std::make_shared<MaxPoolGrad>(std::move(p)), {std::move(x), std::move(out), std::move(gz)});
}
Var average_pool_grad(Var x, Var gz, PoolParams p) {
  p.check("AveragePoolGrad");
  return apply_op1(std::make_shared<AveragePoolGrad>(std::move(p)), {std::move(x), std::move(gz)});
}
Var max_pool_grad_grad(Var x, Var out, Var ggx, PoolParams p) {
  p.check("DownsampleFactorMaxGradGrad");
  return apply_op1(std::make_shared<DownsampleFactorMaxGradGrad>(std::move(p)),
                   {std::move(x), std::move(out), std::move(ggx)});
}

}  // namespace hypatia
