#include "hypatia/ops/conv.h"

#include <sstream>

#include "hypatia/core/error.h"
#include "hypatia/ops/blas.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/shape.h"

namespace hypatia {

// ---------------------------------------------------------------------------------------------
// Parameters and shapes

std::pair<int64_t, int64_t> Conv2dParams::pads(int64_t kh, int64_t kw) const {
  if (border == "full") return {dil_h * (kh - 1), dil_w * (kw - 1)};
  // Theano's: half the dilated kernel's span, (dilation * (k - 1) + 1) // 2 (for an odd k,
  // dilation * (k / 2); for an even k with dilation above 1, less).
  if (border == "half") return {(dil_h * (kh - 1) + 1) / 2, (dil_w * (kw - 1) + 1) / 2};
  if (border == "pad") return {pad_h, pad_w};
  return {0, 0};
}

std::pair<int64_t, int64_t> Conv2dParams::end_pads(int64_t kh, int64_t kw) const {
  if (border == "pad") return {end_h(), end_w()};
  return pads(kh, kw);
}

int64_t Conv2dParams::out_size(int64_t in, int64_t k, int64_t pad, int64_t pad_end, int64_t stride, int64_t dil) {
  const int64_t span = dil * (k - 1) + 1;
  const int64_t room = in + pad + pad_end - span;
  return room < 0 ? 0 : room / stride + 1;
}

std::string Conv2dParams::str() const {
  std::ostringstream os;
  if (border == "pad" && (end_h() != pad_h || end_w() != pad_w))
    os << "pad ((" << pad_h << ", " << end_h() << "), (" << pad_w << ", " << end_w() << "))";
  else if (border == "pad")
    os << "pad (" << pad_h << ", " << pad_w << ")";
  else
    os << border;
  if (stride_h != 1 || stride_w != 1) os << ", stride (" << stride_h << ", " << stride_w << ")";
  if (dil_h != 1 || dil_w != 1) os << ", dilation (" << dil_h << ", " << dil_w << ")";
  if (groups != 1) os << ", groups " << groups;
  if (!flip) os << ", no flip";
  return os.str();
}

void Conv2dParams::check(const char* who) const {
  if (border != "valid" && border != "full" && border != "half" && border != "pad")
    fail<ValueError>(who, ": border_mode must be 'valid', 'full', 'half', an int or a pair of ints, got '", border,
                     "'");
  if (pad_h < 0 || pad_w < 0 || pad_h_end < -1 || pad_w_end < -1)
    fail<ValueError>(who, ": padding must be non-negative, got ((", pad_h, ", ", pad_h_end, "), (", pad_w, ", ",
                     pad_w_end, "))");
  if (stride_h < 1 || stride_w < 1)
    fail<ValueError>(who, ": subsample must be positive, got (", stride_h, ", ", stride_w, ")");
  if (dil_h < 1 || dil_w < 1)
    fail<ValueError>(who, ": filter_dilation must be positive, got (", dil_h, ", ", dil_w, ")");
  if (groups < 1) fail<ValueError>(who, ": num_groups must be positive, got ", groups);
}

Conv2dShape conv2d_shape(const char* who, const Conv2dParams& p, const Shape& img, const Shape& kern) {
  if (img.size() != 4 || kern.size() != 4)
    fail<ValueError>(who, ": expected a 4-d image and 4-d filters, got image ", img.str(), " and filters ", kern.str());
  Conv2dShape s{};
  s.n = img[0], s.c = img[1], s.h = img[2], s.w = img[3];
  s.o = kern[0], s.cg = kern[1], s.kh = kern[2], s.kw = kern[3];
  s.g = p.groups;
  if (s.c != s.cg * s.g)
    fail<ValueError>(who, ": the image has ", s.c, " channels but the filters expect ", s.cg, " x ", s.g,
                     " group(s) = ", s.cg * s.g, " (image ", img.str(), ", filters ", kern.str(), ")");
  if (s.o % s.g != 0)
    fail<ValueError>(who, ": ", s.o, " output channels do not split into ", s.g, " groups (image ", img.str(),
                     ", filters ", kern.str(), ")");
  if (s.kh < 1 || s.kw < 1)
    fail<ValueError>(who, ": filters of no rows or columns (image ", img.str(), ", filters ", kern.str(), ")");
  std::tie(s.ph, s.pw) = p.pads(s.kh, s.kw);
  std::tie(s.ph_end, s.pw_end) = p.end_pads(s.kh, s.kw);
  s.ho = Conv2dParams::out_size(s.h, s.kh, s.ph, s.ph_end, p.stride_h, p.dil_h);
  s.wo = Conv2dParams::out_size(s.w, s.kw, s.pw, s.pw_end, p.stride_w, p.dil_w);
  if (s.ho < 1 || s.wo < 1)
    fail<ValueError>(who, ": the filters (", s.kh, " x ", s.kw, ", dilation (", p.dil_h, ", ", p.dil_w,
                     ")) do not fit in the padded image (image ", img.str(), ", filters ", kern.str(), ", ", p.str(),
                     "): the output would have ", s.ho, " x ", s.wo, " pixels");
  return s;
}

namespace {
void check_top(const char* who, const Conv2dShape& s, const Shape& top, const std::string& other) {
  if (top.size() != 4 || top[0] != s.n || top[1] != s.o || top[2] != s.ho || top[3] != s.wo)
    fail<ValueError>(who, ": the output gradient has shape ", top.str(), " but the forward convolution of ", other,
                     " gives (", s.n, ", ", s.o, ", ", s.ho, ", ", s.wo, ")");
}
}  // namespace

Conv2dShape conv2d_grad_inputs_shape(const char* who, const Conv2dParams& p, const Shape& kern, const Shape& top,
                                     int64_t h, int64_t w) {
  if (kern.size() != 4 || top.size() != 4)
    fail<ValueError>(who, ": expected 4-d filters and a 4-d output gradient, got ", kern.str(), " and ", top.str());
  if (h < 1 || w < 1) fail<ValueError>(who, ": the image size must be positive, got ", h, " x ", w);
  const Shape img{top[0], kern[1] * p.groups, h, w};
  const Conv2dShape s = conv2d_shape(who, p, img, kern);
  check_top(who, s, top, "an image " + img.str() + " by filters " + kern.str());
  return s;
}

Conv2dShape conv2d_grad_weights_shape(const char* who, const Conv2dParams& p, const Shape& img, const Shape& top,
                                      int64_t kh, int64_t kw) {
  if (img.size() != 4 || top.size() != 4)
    fail<ValueError>(who, ": expected a 4-d image and a 4-d output gradient, got ", img.str(), " and ", top.str());
  if (kh < 1 || kw < 1) fail<ValueError>(who, ": the filter size must be positive, got ", kh, " x ", kw);
  if (img[1] % p.groups != 0)
    fail<ValueError>(who, ": ", img[1], " image channels do not split into ", p.groups, " groups (image ", img.str(),
                     ")");
  const Shape kern{top[1], img[1] / p.groups, kh, kw};
  const Conv2dShape s = conv2d_shape(who, p, img, kern);
  check_top(who, s, top, "the image " + img.str() + " by filters " + kern.str());
  return s;
}

namespace {

void check_float_pair(const std::string& who, const Var& a, const char* an, const Var& b, const char* bn) {
  if (a->ndim() != 4 || b->ndim() != 4 || !is_float(a->dtype()) || a->dtype() != b->dtype())
    fail<TypeError>(who, ": expected ", an, " and ", bn, " as 4-d tensors of one float dtype, got ", a->type.str(),
                    " and ", b->type.str());
}

void check_size_scalar(const std::string& who, const Var& v, const char* what) {
  if (v->ndim() != 0 || !is_integer(v->dtype()))
    fail<TypeError>(who, ": expected ", what, " as an integer scalar, got ", v->type.str());
}

/// The output size along one axis, symbolically (int64): (in + pads - dil (k - 1) - 1) // s + 1
/// with the padding (both sides together) from the border mode.
Var out_size_sym(const Conv2dParams& p, const Var& in, const Var& k, bool rows) {
  const int64_t dil = rows ? p.dil_h : p.dil_w, stride = rows ? p.stride_h : p.stride_w;
  Var pads;
  if (p.border == "full")
    pads = mul(int_constant(2 * dil), sub(k, int_constant(1)));
  else if (p.border == "half")
    pads = mul(int_constant(2),
               int_div(add(mul(int_constant(dil), sub(k, int_constant(1))), int_constant(1)), int_constant(2)));
  else if (p.border == "pad")
    pads = int_constant(rows ? p.pad_h + p.end_h() : p.pad_w + p.end_w());
  else
    pads = int_constant(0);
  Var span = add(mul(int_constant(dil), sub(k, int_constant(1))), int_constant(1));
  Var room = sub(add(in, pads), span);
  return add(int_div(room, int_constant(stride)), int_constant(1));
}

Var as_int64(const Var& v) { return v->dtype() == DType::Int64 ? v : cast(v, DType::Int64); }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Conv2d

std::string Conv2d::name() const { return "Conv2d{" + p.str() + "}"; }

std::vector<TensorType> Conv2d::make_output_types(const std::vector<Var>& in) const {
  if (in.size() != 2) fail<TypeError>(name(), ": expected 2 inputs (image, filters), got ", in.size());
  check_float_pair(name(), in[0], "the image", in[1], "the filters");
  return {TensorType(in[0]->dtype(), {in[0]->type.broadcastable[0], in[1]->type.broadcastable[0], false, false})};
}

std::vector<ShapeVars> Conv2d::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  const ShapeVars &i = in[0], &k = in[1];
  return {{i[0], k[0], out_size_sym(p, i[2], k[2], true), out_size_sym(p, i[3], k[3], false)}};
}

std::vector<Var> Conv2d::grad(const Apply& node, const std::vector<Var>& g) const {
  if (!g[0]) return {nullptr, nullptr};
  const Var &img = node.inputs[0], &kern = node.inputs[1];
  return {conv2d_grad_wrt_inputs(kern, g[0], shape_i(img, 2), shape_i(img, 3), p),
          conv2d_grad_wrt_weights(img, g[0], shape_i(kern, 2), shape_i(kern, 3), p)};
}

std::vector<Var> Conv2d::rop(const Apply& node, const std::vector<Var>& e) const {
  const Var &img = node.inputs[0], &kern = node.inputs[1];
  Var r;
  if (e[0]) r = conv2d(e[0], kern, p);
  if (e[1]) {
    Var t = conv2d(img, e[1], p);
    r = r ? add(r, t) : t;
  }
  return {r};
}

// ---------------------------------------------------------------------------------------------
// Conv2dGradInputs: (kern, top, h, w) -> image gradient

std::string Conv2dGradInputs::name() const { return "Conv2dGradInputs{" + p.str() + "}"; }

std::vector<TensorType> Conv2dGradInputs::make_output_types(const std::vector<Var>& in) const {
  if (in.size() != 4)
    fail<TypeError>(name(), ": expected 4 inputs (filters, output gradient, rows, cols), got ", in.size());
  check_float_pair(name(), in[0], "the filters", in[1], "the output gradient");
  check_size_scalar(name(), in[2], "the image rows");
  check_size_scalar(name(), in[3], "the image columns");
  return {TensorType(in[1]->dtype(), {in[1]->type.broadcastable[0], false, false, false})};
}

std::vector<ShapeVars> Conv2dGradInputs::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  const ShapeVars &k = in[0], &t = in[1];
  return {{t[0], mul(k[1], int_constant(p.groups)), as_int64(node.inputs[2]), as_int64(node.inputs[3])}};
}

std::vector<std::vector<bool>> Conv2dGradInputs::connection_pattern(const Apply&) const {
  return {{true}, {true}, {false}, {false}};
}

std::vector<Var> Conv2dGradInputs::grad(const Apply& node, const std::vector<Var>& g) const {
  if (!g[0]) return {nullptr, nullptr, nullptr, nullptr};
  const Var &kern = node.inputs[0], &top = node.inputs[1];
  return {conv2d_grad_wrt_weights(g[0], top, shape_i(kern, 2), shape_i(kern, 3), p), conv2d(g[0], kern, p), nullptr,
          nullptr};
}

// ---------------------------------------------------------------------------------------------
// Conv2dGradWeights: (img, top, kh, kw) -> filter gradient

std::string Conv2dGradWeights::name() const { return "Conv2dGradWeights{" + p.str() + "}"; }

std::vector<TensorType> Conv2dGradWeights::make_output_types(const std::vector<Var>& in) const {
  if (in.size() != 4)
    fail<TypeError>(name(), ": expected 4 inputs (image, output gradient, filter rows, filter cols), got ", in.size());
  check_float_pair(name(), in[0], "the image", in[1], "the output gradient");
  check_size_scalar(name(), in[2], "the filter rows");
  check_size_scalar(name(), in[3], "the filter columns");
  return {TensorType(in[0]->dtype(), {in[1]->type.broadcastable[1], false, false, false})};
}

std::vector<ShapeVars> Conv2dGradWeights::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  const ShapeVars &i = in[0], &t = in[1];
  return {{t[1], int_div(i[1], int_constant(p.groups)), as_int64(node.inputs[2]), as_int64(node.inputs[3])}};
}

std::vector<std::vector<bool>> Conv2dGradWeights::connection_pattern(const Apply&) const {
  return {{true}, {true}, {false}, {false}};
}

std::vector<Var> Conv2dGradWeights::grad(const Apply& node, const std::vector<Var>& g) const {
  if (!g[0]) return {nullptr, nullptr, nullptr, nullptr};
  const Var &img = node.inputs[0], &top = node.inputs[1];
  return {conv2d_grad_wrt_inputs(g[0], top, shape_i(img, 2), shape_i(img, 3), p), conv2d(img, g[0], p), nullptr,
          nullptr};
}

// ---------------------------------------------------------------------------------------------
// Builders

Var conv2d(Var img, Var kern, Conv2dParams p) {
  p.check("conv2d");
  return apply_op1(std::make_shared<Conv2d>(std::move(p)), {std::move(img), std::move(kern)});
}

Var conv2d_grad_wrt_inputs(Var kern, Var top, Var h, Var w, Conv2dParams p) {
  p.check("conv2d_grad_wrt_inputs");
  return apply_op1(std::make_shared<Conv2dGradInputs>(std::move(p)),
                   {std::move(kern), std::move(top), std::move(h), std::move(w)});
}

Var conv2d_grad_wrt_weights(Var img, Var top, Var kh, Var kw, Conv2dParams p) {
  p.check("conv2d_grad_wrt_weights");
  return apply_op1(std::make_shared<Conv2dGradWeights>(std::move(p)),
                   {std::move(img), std::move(top), std::move(kh), std::move(kw)});
}

// ---------------------------------------------------------------------------------------------
// Unshared convolution, as a graph

namespace {

/// The (N, C, H, W) image's patches as (P g, N, Kg): P = Ho Wo output positions, g groups, Kg =
/// C / g * kh * kw values per patch in the filters' (c, u, v) order. Each channel is convolved
/// (as a correlation) with the kh kw one-hot filters, as a batch of N C one-channel images.
/// Reshapes here and below take their sizes from the operands' own shapes (or -1), never from
/// Conv2d's output-size expression, so that shape inference through them stays small.
struct Patches {
  Var cols;     ///< (P g, N, Kg)
  Var n, c, k;  ///< int64 scalars: batch, channels, kh kw
};

Var scalar_of(const Var& v, const char* who, const char* what) {
  check_size_scalar(who, v, what);
  return as_int64(v);
}

/// The one-hot filters (kh kw, 1, kh, kw): filter t is 1 at (t / kw, t % kw).
Var one_hot_filters(const Var& kh, const Var& kw, DType dt) {
  Var k = mul(kh, kw);
  return reshape(eye(k, k, int_constant(0), dt), make_vector({k, int_constant(1), kh, kw}), 4);
}

Conv2dParams patch_params(Conv2dParams p) {
  p.flip = false;
  p.groups = 1;
  return p;
}

Patches patches(const Var& img, const Var& kh, const Var& kw, const Conv2dParams& p) {
  Patches r;
  r.n = shape_i(img, 0), r.c = shape_i(img, 1);
  r.k = mul(kh, kw);
  Var one = reshape(img, make_vector({mul(r.n, r.c), int_constant(1), shape_i(img, 2), shape_i(img, 3)}), 4);
  Var pt = conv2d(one, one_hot_filters(kh, kw, img->dtype()), patch_params(p));  // (N C, k, Ho, Wo)
  Var g = int_constant(p.groups), kg = mul(int_div(r.c, g), r.k), rest = int_constant(-1);
  Var x = reshape(pt, make_vector({r.n, g, kg, rest}), 4);                         // (N, g, Kg, P)
  r.cols = reshape(dimshuffle(x, {3, 1, 0, 2}), make_vector({rest, r.n, kg}), 3);  // (P g, N, Kg)
  return r;
}

/// The filters (O, Ho, Wo, C/g, kh, kw) as (P g, Kg, Og), flipped in (kh, kw) for a convolution.
Var filters_as_batches(Var kern, const Conv2dParams& p) {
  if (p.flip) kern = flip(flip(kern, 4), 5);
  Var o = shape_i(kern, 0), ho = shape_i(kern, 1), wo = shape_i(kern, 2);
  Var kg = mul(mul(shape_i(kern, 3), shape_i(kern, 4)), shape_i(kern, 5));
  Var g = int_constant(p.groups), og = int_div(o, g), np = mul(ho, wo);
  Var x = reshape(kern, make_vector({g, og, np, kg}), 4);                             // (g, Og, P, Kg)
  return reshape(dimshuffle(x, {2, 0, 3, 1}), make_vector({mul(np, g), kg, og}), 3);  // (P g, Kg, Og)
}

/// (P g, A, B) per position and group back to (A, g B, Ho, Wo)-ordered 4-d: out[a, gi B + b, i, j].
Var batches_to_image(const Var& x, const Var& a, const Var& b, const Var& ho, const Var& wo, int64_t groups) {
  Var g = int_constant(groups);
  Var y = reshape(x, make_vector({ho, wo, g, a, b}), 5);  // (Ho, Wo, g, A, B)
  return reshape(dimshuffle(y, {3, 2, 4, 0, 1}), make_vector({a, mul(g, b), ho, wo}), 4);
}

/// top (N, O, Ho, Wo) as (P g, N, Og).
Var top_as_batches(const Var& top, int64_t groups) {
  Var n = shape_i(top, 0), o = shape_i(top, 1), ho = shape_i(top, 2), wo = shape_i(top, 3);
  Var g = int_constant(groups), og = int_div(o, g);
  Var x = reshape(top, make_vector({n, g, og, ho, wo}), 5);  // (N, g, Og, Ho, Wo)
  return reshape(dimshuffle(x, {3, 4, 1, 0, 2}), make_vector({mul(mul(ho, wo), g), n, og}), 3);
}

void check_unshared(const char* who, const Var& kern, const Var& other, const char* other_name) {
  if (kern->ndim() != 6 || other->ndim() != 4 || !is_float(kern->dtype()) || kern->dtype() != other->dtype())
    fail<TypeError>(who,
                    ": expected 6-d filters (out channels, out rows, out cols, in channels / groups, rows, "
                    "cols) and a 4-d ",
                    other_name, " of one float dtype, got ", kern->type.str(), " and ", other->type.str());
}

}  // namespace

Var conv2d_unshared(Var img, Var kern, Conv2dParams p) {
  p.check("conv2d (unshared)");
  check_unshared("conv2d (unshared)", kern, img, "image");
  Patches pt = patches(img, shape_i(kern, 4), shape_i(kern, 5), p);
  Var out = batched_dot(pt.cols, filters_as_batches(kern, p));  // (P g, N, Og)
  return batches_to_image(out, pt.n, int_div(shape_i(kern, 0), int_constant(p.groups)), shape_i(kern, 1),
                          shape_i(kern, 2), p.groups);
}

Var conv2d_unshared_grad_wrt_weights(Var img, Var top, Var kh, Var kw, Conv2dParams p) {
  const char* who = "conv2d_grad_wrt_weights (unshared)";
  p.check(who);
  check_float_pair(who, img, "the image", top, "the output gradient");
  Patches pt = patches(img, scalar_of(kh, who, "the filter rows"), scalar_of(kw, who, "the filter columns"), p);
  Var gw = batched_dot(dimshuffle(pt.cols, {0, 2, 1}), top_as_batches(top, p.groups));  // (P g, Kg, Og)
  // (Ho, Wo, g, Kg, Og) -> (g, Og, Ho, Wo, Kg) -> (O, Ho, Wo, C/g, kh, kw)
  Var g = int_constant(p.groups), kg = shape_i(gw, 1), og = shape_i(gw, 2);
  Var ho = shape_i(top, 2), wo = shape_i(top, 3);
  Var y = dimshuffle(reshape(gw, make_vector({ho, wo, g, kg, og}), 5), {2, 4, 0, 1, 3});
  Var r = reshape(y, make_vector({mul(g, og), ho, wo, int_div(pt.c, g), as_int64(kh), as_int64(kw)}), 6);
  return p.flip ? flip(flip(r, 4), 5) : r;
}

Var conv2d_unshared_grad_wrt_inputs(Var kern, Var top, Var h, Var w, Conv2dParams p) {
  const char* who = "conv2d_grad_wrt_inputs (unshared)";
  p.check(who);
  check_unshared(who, kern, top, "output gradient");
  Var hh = scalar_of(h, who, "the image rows"), ww = scalar_of(w, who, "the image columns");
  Var kh = shape_i(kern, 4), kw = shape_i(kern, 5), ho = shape_i(top, 2), wo = shape_i(top, 3);
  Var gcols = batched_dot(top_as_batches(top, p.groups), dimshuffle(filters_as_batches(kern, p), {0, 2, 1}));
  // (P g, N, Kg) -> (N, g Kg, Ho, Wo) = (N C, k, Ho, Wo) -> the one-hot convolution's adjoint
  Var n = shape_i(top, 0), k = mul(kh, kw), kg = shape_i(gcols, 2);
  Var c = mul(int_div(kg, k), int_constant(p.groups));
  Var cols = reshape(batches_to_image(gcols, n, kg, ho, wo, p.groups), make_vector({mul(n, c), k, ho, wo}), 4);
  Var gi = conv2d_grad_wrt_inputs(one_hot_filters(kh, kw, kern->dtype()), cols, hh, ww, patch_params(p));
  return reshape(gi, make_vector({n, c, hh, ww}), 4);
}

// ---------------------------------------------------------------------------------------------
// 3-d: parameters and shapes

int64_t Conv3dParams::depth_pad(int64_t kd) const {
  if (hw.border == "full") return dil_d * (kd - 1);
  if (hw.border == "half") return (dil_d * (kd - 1) + 1) / 2;
  if (hw.border == "pad") return pad_d;
  return 0;
}

std::string Conv3dParams::str() const {
  const Conv2dParams& q = hw;
  std::ostringstream os;
  if (q.border == "pad")
    os << "pad (" << pad_d << ", " << q.pad_h << ", " << q.pad_w << ")";
  else
    os << q.border;
  if (stride_d != 1 || q.stride_h != 1 || q.stride_w != 1)
    os << ", stride (" << stride_d << ", " << q.stride_h << ", " << q.stride_w << ")";
  if (dil_d != 1 || q.dil_h != 1 || q.dil_w != 1)
    os << ", dilation (" << dil_d << ", " << q.dil_h << ", " << q.dil_w << ")";
  if (q.groups != 1) os << ", groups " << q.groups;
  if (!q.flip) os << ", no flip";
  return os.str();
}

void Conv3dParams::check(const char* who) const {
  hw.check(who);
  if (hw.pad_h_end >= 0 && hw.pad_h_end != hw.pad_h) fail<ValueError>(who, ": asymmetric padding is 2-d only");
  if (hw.pad_w_end >= 0 && hw.pad_w_end != hw.pad_w) fail<ValueError>(who, ": asymmetric padding is 2-d only");
  if (pad_d < 0) fail<ValueError>(who, ": padding must be non-negative, got ", pad_d, " for the depth");
  if (stride_d < 1) fail<ValueError>(who, ": subsample must be positive, got ", stride_d, " for the depth");
  if (dil_d < 1) fail<ValueError>(who, ": filter_dilation must be positive, got ", dil_d, " for the depth");
}

Conv3dShape conv3d_shape(const char* who, const Conv3dParams& p, const Shape& img, const Shape& kern) {
  if (img.size() != 5 || kern.size() != 5)
    fail<ValueError>(who, ": expected a 5-d image and 5-d filters, got image ", img.str(), " and filters ", kern.str());
  if (img[1] != kern[1] * p.hw.groups || kern[0] % p.hw.groups != 0)
    fail<ValueError>(who, ": the image has ", img[1], " channels and ", kern[0], " filters of ", kern[1],
                     " channels in ", p.hw.groups, " group(s) (image ", img.str(), ", filters ", kern.str(), ")");
  Conv3dShape s{};
  s.d = img[2];
  s.kd = kern[2];
  if (s.kd < 1) fail<ValueError>(who, ": filters of no depth (image ", img.str(), ", filters ", kern.str(), ")");
  s.pd = p.depth_pad(s.kd);
  s.od = Conv2dParams::out_size(s.d, s.kd, s.pd, s.pd, p.stride_d, p.dil_d);
  try {
    s.hw = conv2d_shape(who, p.hw, Shape{img[0], img[1], img[3], img[4]}, Shape{kern[0], kern[1], kern[3], kern[4]});
  } catch (const ValueError&) {
    fail<ValueError>(who, ": the filters ", kern.str(), " do not fit in the padded image ", img.str(), " (", p.str(),
                     ")");
  }
  if (s.od < 1)
    fail<ValueError>(who, ": the filters ", kern.str(), " do not fit in the padded image ", img.str(), " (", p.str(),
                     "): the output would have depth ", s.od);
  return s;
}

namespace {
void check_top3(const char* who, const Conv3dShape& s, const Shape& top, const std::string& other) {
  const Conv2dShape& q = s.hw;
  if (top.size() != 5 || top[0] != q.n || top[1] != q.o || top[2] != s.od || top[3] != q.ho || top[4] != q.wo)
    fail<ValueError>(who, ": the output gradient has shape ", top.str(), " but the forward convolution of ", other,
                     " gives (", q.n, ", ", q.o, ", ", s.od, ", ", q.ho, ", ", q.wo, ")");
}
}  // namespace

Conv3dShape conv3d_grad_inputs_shape(const char* who, const Conv3dParams& p, const Shape& kern, const Shape& top,
                                     int64_t d, int64_t h, int64_t w) {
  if (kern.size() != 5 || top.size() != 5)
    fail<ValueError>(who, ": expected 5-d filters and a 5-d output gradient, got ", kern.str(), " and ", top.str());
  if (d < 1 || h < 1 || w < 1) fail<ValueError>(who, ": the image size must be positive, got ", d, " x ", h, " x ", w);
  const Shape img{top[0], kern[1] * p.hw.groups, d, h, w};
  const Conv3dShape s = conv3d_shape(who, p, img, kern);
  check_top3(who, s, top, "an image " + img.str() + " by filters " + kern.str());
  return s;
}

Conv3dShape conv3d_grad_weights_shape(const char* who, const Conv3dParams& p, const Shape& img, const Shape& top,
                                      int64_t kd, int64_t kh, int64_t kw) {
  if (img.size() != 5 || top.size() != 5)
    fail<ValueError>(who, ": expected a 5-d image and a 5-d output gradient, got ", img.str(), " and ", top.str());
  if (kd < 1 || kh < 1 || kw < 1)
    fail<ValueError>(who, ": the filter size must be positive, got ", kd, " x ", kh, " x ", kw);
  if (img[1] % p.hw.groups != 0)
    fail<ValueError>(who, ": ", img[1], " image channels do not split into ", p.hw.groups, " groups (image ", img.str(),
                     ")");
  const Shape kern{top[1], img[1] / p.hw.groups, kd, kh, kw};
  const Conv3dShape s = conv3d_shape(who, p, img, kern);
  check_top3(who, s, top, "the image " + img.str() + " by filters " + kern.str());
  return s;
}

namespace {

void check_float5(const std::string& who, const Var& a, const char* an, const Var& b, const char* bn) {
  if (a->ndim() != 5 || b->ndim() != 5 || !is_float(a->dtype()) || a->dtype() != b->dtype())
    fail<TypeError>(who, ": expected ", an, " and ", bn, " as 5-d tensors of one float dtype, got ", a->type.str(),
                    " and ", b->type.str());
}

Var depth_out_sym(const Conv3dParams& p, const Var& in, const Var& k) {
  const int64_t dil = p.dil_d;
  Var pads;
  if (p.hw.border == "full")
    pads = mul(int_constant(2 * dil), sub(k, int_constant(1)));
  else if (p.hw.border == "half")
    pads = mul(int_constant(2),
               int_div(add(mul(int_constant(dil), sub(k, int_constant(1))), int_constant(1)), int_constant(2)));
  else
    pads = int_constant(p.hw.border == "pad" ? 2 * p.pad_d : 0);
  Var span = add(mul(int_constant(dil), sub(k, int_constant(1))), int_constant(1));
  return add(int_div(sub(add(in, pads), span), int_constant(p.stride_d)), int_constant(1));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Conv3d and its gradients

std::string Conv3d::name() const { return "Conv3d{" + p.str() + "}"; }

std::vector<TensorType> Conv3d::make_output_types(const std::vector<Var>& in) const {
  if (in.size() != 2) fail<TypeError>(name(), ": expected 2 inputs (image, filters), got ", in.size());
  check_float5(name(), in[0], "the image", in[1], "the filters");
  return {
      TensorType(in[0]->dtype(), {in[0]->type.broadcastable[0], in[1]->type.broadcastable[0], false, false, false})};
}

std::vector<ShapeVars> Conv3d::infer_shape(const Apply&, const std::vector<ShapeVars>& in) const {
  const ShapeVars &i = in[0], &k = in[1];
  return {{i[0], k[0], depth_out_sym(p, i[2], k[2]), out_size_sym(p.hw, i[3], k[3], true),
           out_size_sym(p.hw, i[4], k[4], false)}};
}

std::vector<Var> Conv3d::grad(const Apply& node, const std::vector<Var>& g) const {
  if (!g[0]) return {nullptr, nullptr};
  const Var &img = node.inputs[0], &kern = node.inputs[1];
  return {conv3d_grad_wrt_inputs(kern, g[0], shape_i(img, 2), shape_i(img, 3), shape_i(img, 4), p),
          conv3d_grad_wrt_weights(img, g[0], shape_i(kern, 2), shape_i(kern, 3), shape_i(kern, 4), p)};
}

std::vector<Var> Conv3d::rop(const Apply& node, const std::vector<Var>& e) const {
  const Var &img = node.inputs[0], &kern = node.inputs[1];
  Var r;
  if (e[0]) r = conv3d(e[0], kern, p);
  if (e[1]) {
    Var t = conv3d(img, e[1], p);
    r = r ? add(r, t) : t;
  }
  return {r};
}

std::string Conv3dGradInputs::name() const { return "Conv3dGradInputs{" + p.str() + "}"; }

std::vector<TensorType> Conv3dGradInputs::make_output_types(const std::vector<Var>& in) const {
  if (in.size() != 5)
    fail<TypeError>(name(), ": expected 5 inputs (filters, output gradient, depth, rows, cols), got ", in.size());
  check_float5(name(), in[0], "the filters", in[1], "the output gradient");
  check_size_scalar(name(), in[2], "the image depth");
  check_size_scalar(name(), in[3], "the image rows");
  check_size_scalar(name(), in[4], "the image columns");
  return {TensorType(in[1]->dtype(), {in[1]->type.broadcastable[0], false, false, false, false})};
}

std::vector<ShapeVars> Conv3dGradInputs::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  const ShapeVars &k = in[0], &t = in[1];
  return {{t[0], mul(k[1], int_constant(p.hw.groups)), as_int64(node.inputs[2]), as_int64(node.inputs[3]),
           as_int64(node.inputs[4])}};
}

std::vector<std::vector<bool>> Conv3dGradInputs::connection_pattern(const Apply&) const {
  return {{true}, {true}, {false}, {false}, {false}};
}

std::vector<Var> Conv3dGradInputs::grad(const Apply& node, const std::vector<Var>& g) const {
  if (!g[0]) return {nullptr, nullptr, nullptr, nullptr, nullptr};
  const Var &kern = node.inputs[0], &top = node.inputs[1];
  return {conv3d_grad_wrt_weights(g[0], top, shape_i(kern, 2), shape_i(kern, 3), shape_i(kern, 4), p),
          conv3d(g[0], kern, p), nullptr, nullptr, nullptr};
}

std::string Conv3dGradWeights::name() const { return "Conv3dGradWeights{" + p.str() + "}"; }

std::vector<TensorType> Conv3dGradWeights::make_output_types(const std::vector<Var>& in) const {
  if (in.size() != 5)
    fail<TypeError>(name(), ": expected 5 inputs (image, output gradient, filter depth, rows, cols), got ", in.size());
  check_float5(name(), in[0], "the image", in[1], "the output gradient");
  check_size_scalar(name(), in[2], "the filter depth");
  check_size_scalar(name(), in[3], "the filter rows");
  check_size_scalar(name(), in[4], "the filter columns");
  return {TensorType(in[0]->dtype(), {in[1]->type.broadcastable[1], false, false, false, false})};
}

std::vector<ShapeVars> Conv3dGradWeights::infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const {
  const ShapeVars &i = in[0], &t = in[1];
  return {{t[1], int_div(i[1], int_constant(p.hw.groups)), as_int64(node.inputs[2]), as_int64(node.inputs[3]),
           as_int64(node.inputs[4])}};
}

std::vector<std::vector<bool>> Conv3dGradWeights::connection_pattern(const Apply&) const {
  return {{true}, {true}, {false}, {false}, {false}};
}

std::vector<Var> Conv3dGradWeights::grad(const Apply& node, const std::vector<Var>& g) const {
  if (!g[0]) return {nullptr, nullptr, nullptr, nullptr, nullptr};
  const Var &img = node.inputs[0], &top = node.inputs[1];
  return {conv3d_grad_wrt_inputs(g[0], top, shape_i(img, 2), shape_i(img, 3), shape_i(img, 4), p), conv3d(img, g[0], p),
          nullptr, nullptr, nullptr};
}

Var conv3d(Var img, Var kern, Conv3dParams p) {
  p.check("conv3d");
  return apply_op1(std::make_shared<Conv3d>(std::move(p)), {std::move(img), std::move(kern)});
}

Var conv3d_grad_wrt_inputs(Var kern, Var top, Var d, Var h, Var w, Conv3dParams p) {
  p.check("conv3d_grad_wrt_inputs");
  return apply_op1(std::make_shared<Conv3dGradInputs>(std::move(p)),
                   {std::move(kern), std::move(top), std::move(d), std::move(h), std::move(w)});
}

Var conv3d_grad_wrt_weights(Var img, Var top, Var kd, Var kh, Var kw, Conv3dParams p) {
  p.check("conv3d_grad_wrt_weights");
  return apply_op1(std::make_shared<Conv3dGradWeights>(std::move(p)),
                   {std::move(img), std::move(top), std::move(kd), std::move(kh), std::move(kw)});
}

}  // namespace hypatia
