// Every op builder of the core, one line each. The hypatia package gives them Theano's names and
// signatures (Python scalars and arrays become constants there).
#include <string>

#include "bindings.h"
#include "conv_params.h"
#include "pool_params.h"

namespace hypatia::python {
namespace {

struct Unary {
  const char* name;
  Var (*fn)(Var);
};
struct Binary {
  const char* name;
  Var (*fn)(Var, Var);
};

// The ops that are not scalar ops (those are bound from scalar_ops.def in init_ops).
const Unary kUnary[] = {
    {"hard_sigmoid", &hypatia::hard_sigmoid},
    {"shape", &hypatia::shape},
    {"squeeze", &hypatia::squeeze},
};

const Binary kBinary[] = {
    {"dot", &hypatia::dot},
    {"outer", &hypatia::outer},
    {"batched_dot", &hypatia::batched_dot},
    {"fill", &hypatia::fill},
    {"categorical_crossentropy", &hypatia::categorical_crossentropy},
    {"binary_crossentropy", &hypatia::binary_crossentropy},
    {"set_subtensor", &hypatia::set_subtensor},
    {"inc_subtensor", &hypatia::inc_subtensor},
};

/// A row of scalar_ops.def with a builder: its name, _core name, hypatia.tensor names and docstring.
struct ScalarWrapper {
  const char* name;
  const char* core;
  int arity;
  const char* py;
  const char* doc;
};

#define HYP_WRAPPER_Gen(Name, Arity, Core, Py, Doc) {Name, Core, Arity, Py, Doc},
#define HYP_WRAPPER_Decl(Name, Arity, Core, Py, Doc) {Name, Core, Arity, Py, Doc},
#define HYP_WRAPPER_Hand(Name, Arity, Core, Py, Doc)
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, Cost, Simd, Build, Cpp, Core, Py, Doc, ...) \
  HYP_WRAPPER_##Build(Name, Arity, Core, Py, Doc)
const ScalarWrapper kScalarWrappers[] = {
#include "hypatia/ops/scalar_ops.def"
};
#undef HYP_WRAPPER_Hand
#undef HYP_WRAPPER_Decl
#undef HYP_WRAPPER_Gen

}  // namespace

void init_ops(nb::module_& m) {
  for (const Unary& u : kUnary) m.def(u.name, u.fn, "x"_a);
  for (const Binary& b : kBinary) m.def(b.name, b.fn, "a"_a, "b"_a);

    // The builder of every scalar op with one (Build = Gen or Decl in scalar_ops.def).
#define HYP_BIND_1(Cpp, Core) m.def(Core, static_cast<Var (*)(Var)>(&hypatia::Cpp), "x"_a);
#define HYP_BIND_2(Cpp, Core) m.def(Core, static_cast<Var (*)(Var, Var)>(&hypatia::Cpp), "a"_a, "b"_a);
#define HYP_BIND_Gen(Arity, Cpp, Core) HYP_BIND_##Arity(Cpp, Core)
#define HYP_BIND_Decl(Arity, Cpp, Core) HYP_BIND_##Arity(Cpp, Core)
#define HYP_BIND_Hand(Arity, Cpp, Core)
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, Cost, Simd, Build, Cpp, Core, ...) HYP_BIND_##Build(Arity, Cpp, Core)
#include "hypatia/ops/scalar_ops.def"
#undef HYP_BIND_Hand
#undef HYP_BIND_Decl
#undef HYP_BIND_Gen
#undef HYP_BIND_2
#undef HYP_BIND_1
  m.def(
      "scalar_op_wrappers",
      [] {
        std::vector<std::tuple<std::string, std::string, int, std::string, std::string>> r;
        for (const ScalarWrapper& w : kScalarWrappers) r.emplace_back(w.name, w.core, w.arity, w.py, w.doc);
        return r;
      },
      "(scalar op name, _core name, arity, hypatia.tensor names, docstring) of every scalar op builder, from "
      "scalar_ops.def: "
      "hypatia.tensor.basic makes its wrappers from them.");

  // Elementwise.
  m.def(
      "elemwise", [](const std::string& op, std::vector<Var> inputs) { return elemwise(scalar_kind(op), inputs); },
      "scalar_op"_a, "inputs"_a, "Applies a scalar op by name ('add', 'exp', 'switch', ...) elementwise.");
  m.def(
      "scalar_op_names",
      [] {
        std::vector<std::string> r;
        for (int k = 0; k <= static_cast<int>(ScalarOpKind::Switch); ++k)
          r.emplace_back(scalar_op_name(static_cast<ScalarOpKind>(k)));
        return r;
      },
      "Every scalar op an Elemwise node can apply.");
  m.def("cast", &cast, "x"_a, "dtype"_a);
  m.def("clip", &clip, "x"_a, "lo"_a, "hi"_a);
  m.def("switch", &switch_, "cond"_a, "a"_a, "b"_a);
  m.def(
      "ifelse",
      [](Var cond, std::vector<Var> then_branches, std::vector<Var> else_branches) {
        return ifelse(std::move(cond), std::move(then_branches), std::move(else_branches));
      },
      "cond"_a, "then_branches"_a, "else_branches"_a,
      "The then branches' values when cond is true (nonzero), else the else branches' (IfElse, lazy).");
  m.def("scalar_like", &scalar_like, "value"_a, "like"_a,
        "A 0-d constant holding value with a dtype that fits `like` (numpy's rule for Python scalars).");
  m.def("relu", &relu, "x"_a, "alpha"_a = 0.0);
  m.def("softmax", &softmax, "x"_a, "axis"_a = -1);
  m.def("log_softmax", &log_softmax, "x"_a, "axis"_a = -1);
  m.def("crossentropy_softmax_1hot_with_bias", &crossentropy_softmax_1hot_with_bias, "x"_a, "b"_a, "y_idx"_a,
        "(nll, softmax(x + b)) of integer labels y_idx, one pass per row (CrossentropySoftmax1HotWithBias).");
  m.def("crossentropy_softmax_1hot_with_bias_dx", &crossentropy_softmax_1hot_with_bias_dx, "dy"_a, "sm"_a, "y_idx"_a,
        "dy[:, None] * (sm - one_hot(y_idx)) (CrossentropySoftmax1HotWithBiasDx).");
  m.def(
      "conv2d",
      [](Var img, Var kern, const ConvTuple& p, bool unshared) {
        return unshared ? conv2d_unshared(img, kern, conv_params(p, "conv2d"))
                        : conv2d(img, kern, conv_params(p, "conv2d"));
      },
      "img"_a, "kern"_a, "params"_a, "unshared"_a = false);
  m.def(
      "pool", [](Var x, const PoolTuple& p) { return pool(x, pool_params(p, "pool")); }, "x"_a, "params"_a);
  m.def(
      "max_pool_grad",
      [](Var x, Var out, Var gz, const PoolTuple& p) {
        return max_pool_grad(x, out, gz, pool_params(p, "MaxPoolGrad"));
      },
      "x"_a, "maxout"_a, "gz"_a, "params"_a);
  m.def(
      "average_pool_grad",
      [](Var x, Var gz, const PoolTuple& p) { return average_pool_grad(x, gz, pool_params(p, "AveragePoolGrad")); },
      "x"_a, "gz"_a, "params"_a);
  m.def(
      "max_pool_grad_grad",
      [](Var x, Var out, Var ggx, const PoolTuple& p) {
        return max_pool_grad_grad(x, out, ggx, pool_params(p, "DownsampleFactorMaxGradGrad"));
      },
      "x"_a, "maxout"_a, "ggx"_a, "params"_a);
  m.def(
      "conv2d_grad_wrt_inputs",
      [](Var kern, Var top, Var h, Var w, const ConvTuple& p, bool unshared) {
        const Conv2dParams q = conv_params(p, "conv2d_grad_wrt_inputs");
        return unshared ? conv2d_unshared_grad_wrt_inputs(kern, top, h, w, q)
                        : conv2d_grad_wrt_inputs(kern, top, h, w, q);
      },
      "kern"_a, "top"_a, "h"_a, "w"_a, "params"_a, "unshared"_a = false);
  m.def(
      "conv2d_grad_wrt_weights",
      [](Var img, Var top, Var kh, Var kw, const ConvTuple& p, bool unshared) {
        const Conv2dParams q = conv_params(p, "conv2d_grad_wrt_weights");
        return unshared ? conv2d_unshared_grad_wrt_weights(img, top, kh, kw, q)
                        : conv2d_grad_wrt_weights(img, top, kh, kw, q);
      },
      "img"_a, "top"_a, "kh"_a, "kw"_a, "params"_a, "unshared"_a = false);
  m.def(
      "conv3d", [](Var img, Var kern, const Conv3dTuple& p) { return conv3d(img, kern, conv3d_params(p, "conv3d")); },
      "img"_a, "kern"_a, "params"_a);
  m.def(
      "conv3d_grad_wrt_inputs",
      [](Var kern, Var top, Var d, Var h, Var w, const Conv3dTuple& p) {
        return conv3d_grad_wrt_inputs(kern, top, d, h, w, conv3d_params(p, "conv3d_grad_wrt_inputs"));
      },
      "kern"_a, "top"_a, "d"_a, "h"_a, "w"_a, "params"_a);
  m.def(
      "conv3d_grad_wrt_weights",
      [](Var img, Var top, Var kd, Var kh, Var kw, const Conv3dTuple& p) {
        return conv3d_grad_wrt_weights(img, top, kd, kh, kw, conv3d_params(p, "conv3d_grad_wrt_weights"));
      },
      "img"_a, "top"_a, "kd"_a, "kh"_a, "kw"_a, "params"_a);

  // Reductions.
  m.def("sum", &sum, "x"_a, "axes"_a = nb::none(), "keepdims"_a = false, "dtype"_a = nb::none());
  m.def("prod", &prod, "x"_a, "axes"_a = nb::none(), "keepdims"_a = false, "dtype"_a = nb::none());
  m.def("mean", &mean, "x"_a, "axes"_a = nb::none(), "keepdims"_a = false);
  m.def("var", &var, "x"_a, "axes"_a = nb::none(), "keepdims"_a = false, "ddof"_a = 0);
  m.def("std", &hypatia::std, "x"_a, "axes"_a = nb::none(), "keepdims"_a = false, "ddof"_a = 0);
  m.def("max", &hypatia::max, "x"_a, "axes"_a = nb::none(), "keepdims"_a = false);
  m.def("min", &hypatia::min, "x"_a, "axes"_a = nb::none(), "keepdims"_a = false);
  m.def("all", nb::overload_cast<Var, Axes, bool>(&hypatia::all), "x"_a, "axes"_a = nb::none(), "keepdims"_a = false);
  m.def("any", &hypatia::any, "x"_a, "axes"_a = nb::none(), "keepdims"_a = false);
  m.def("argmax", &argmax, "x"_a, "axis"_a = nb::none(), "keepdims"_a = false);
  m.def("argmin", &argmin, "x"_a, "axis"_a = nb::none(), "keepdims"_a = false);
  m.def("cumsum", &cumsum, "x"_a, "axis"_a = nb::none());
  m.def("cumprod", &cumprod, "x"_a, "axis"_a = nb::none());

  // Shape.
  m.def("dimshuffle", &dimshuffle, "x"_a, "pattern"_a, "pattern: input axes, -1 for a new broadcastable axis.");
  m.def("transpose", &transpose, "x"_a, "perm"_a = std::vector<int>{});
  m.def("shape_i", &shape_i, "x"_a, "i"_a);
  m.def("shape_vars", &shape_vars, "x"_a);
  m.def("make_vector", &make_vector, "scalars"_a);
  m.def("reshape", nb::overload_cast<Var, const std::vector<int64_t>&>(&reshape), "x"_a, "shape"_a);
  m.def("reshape_symbolic", nb::overload_cast<Var, Var, int>(&reshape), "x"_a, "shape"_a, "ndim"_a);
  m.def("flatten", &flatten, "x"_a, "ndim"_a = 1);
  m.def("concatenate", &concatenate, "xs"_a, "axis"_a = 0);
  m.def("stack", &stack, "xs"_a, "axis"_a = 0);
  m.def("split", nb::overload_cast<Var, Var, int, int>(&split), "x"_a, "sizes"_a, "n_splits"_a, "axis"_a = 0);
  m.def("alloc", &alloc, "value"_a, "shape"_a);
  m.def("zeros", &zeros, "shape"_a, "dtype"_a);
  m.def("ones", &ones, "shape"_a, "dtype"_a);
  m.def("zeros_like", &zeros_like, "x"_a, "dtype"_a = nb::none());
  m.def("ones_like", &ones_like, "x"_a, "dtype"_a = nb::none());
  m.def("arange", nb::overload_cast<Var, Var, Var, DType>(&arange), "start"_a, "stop"_a, "step"_a, "dtype"_a);
  m.def("eye", nb::overload_cast<Var, Var, Var, DType>(&eye), "n"_a, "m"_a, "k"_a, "dtype"_a);
  m.def("tile", &tile, "x"_a, "reps"_a);
  m.def("repeat", nb::overload_cast<Var, Var, std::optional<int>>(&repeat), "x"_a, "repeats"_a, "axis"_a = nb::none());
  m.def("patternbroadcast", &patternbroadcast, "x"_a, "broadcastable"_a);
  m.def("addbroadcast", &addbroadcast, "x"_a, "axes"_a);
  m.def("unbroadcast", &unbroadcast, "x"_a, "axes"_a);
  m.def("expand_dims", &expand_dims, "x"_a, "axis"_a);
  m.def("swapaxes", &swapaxes, "x"_a, "a"_a, "b"_a);
  m.def("roll", nb::overload_cast<Var, Var, std::optional<int>>(&roll), "x"_a, "shift"_a, "axis"_a = nb::none());
  m.def("flip", &flip, "x"_a, "axis"_a);
  m.def("int_constant", &int_constant, "value"_a);
  m.def(
      "specify_shape",
      [](Var x, const std::vector<std::optional<Var>>& shape) {
        std::vector<Var> s;
        for (const auto& v : shape) s.push_back(v ? *v : nullptr);
        return specify_shape(std::move(x), s);
      },
      "x"_a, "shape"_a, "x with its shape checked at run time (one 0-d integer per axis; None: not checked).");
  m.def("assert_op", &assert_op, "x"_a, "conds"_a, "msg"_a = "Theano Assert failed!",
        "x, checked at run time: each 0-d condition must be nonzero (else AssertionError).");

  // Indexing.
  m.def(
      "subtensor", [](Var x, const nb::tuple& key) { return subtensor(std::move(x), to_index_list(key)); }, "x"_a,
      "key"_a, "x[key] with numpy semantics; key holds ints, slices, None, Ellipsis and Variables.");
  m.def("disconnected_grad", &disconnected_grad, "x"_a);
  m.def("take", &take, "a"_a, "indices"_a, "axis"_a = nb::none());

  // Linear algebra.
  m.def("gemm", &gemm, "z"_a, "alpha"_a, "x"_a, "y"_a, "beta"_a);
  m.def("gemv", &gemv, "z"_a, "alpha"_a, "A"_a, "x"_a, "beta"_a);
  m.def("ger", &ger, "A"_a, "alpha"_a, "x"_a, "y"_a);
  m.def("tensordot", nb::overload_cast<Var, Var, int>(&tensordot), "a"_a, "b"_a, "axes"_a = 2);
  m.def("tensordot_axes", nb::overload_cast<Var, Var, const std::vector<int>&, const std::vector<int>&>(&tensordot),
        "a"_a, "b"_a, "a_axes"_a, "b_axes"_a);
}

}  // namespace hypatia::python
