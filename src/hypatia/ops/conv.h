// 2-d convolution (Theano's abstract_conv): the forward op and the two ops of its gradient, each
// an op of its own (seed 004's design: the gradient is not another convolution wrapped in
// dimshuffles and flips). Backends implement the three: the CPU by im2col / col2im and the GEMM
// provider, the reference backend by direct loops (the test oracle); a GPU backend would put
// cuDNN behind the same ops.
#pragma once
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "hypatia/graph/graph.h"

namespace hypatia {

/// What the three ops share. Images are (batch, channels, rows, cols), filters (out channels,
/// in channels / groups, rows, cols). With flip (Theano's filter_flip, the default) the op is a
/// convolution (the filters are flipped in both spatial axes), without it a correlation.
struct Conv2dParams {
  /// "valid" (no padding), "full" (pad (k - 1) * dilation), "half" (pad ((k - 1) * dilation + 1) / 2, Theano's), or
  /// "pad" (pad_h, pad_w zeros before the first row and column; pad_h_end, pad_w_end after the
  /// last, -1 meaning the same as before: Theano's border_mode ((top, bottom), (left, right))).
  std::string border = "valid";
  int64_t pad_h = 0, pad_w = 0;
  int64_t pad_h_end = -1, pad_w_end = -1;
  int64_t stride_h = 1, stride_w = 1;  ///< Theano's subsample
  int64_t dil_h = 1, dil_w = 1;        ///< Theano's filter_dilation
  int64_t groups = 1;                  ///< Theano's num_groups
  bool flip = true;                    ///< Theano's filter_flip

  auto tie() const {
    return std::make_tuple(border, pad_h, pad_w, end_h(), end_w(), stride_h, stride_w, dil_h, dil_w, groups, flip);
  }
  /// The "pad" border's padding after the last row / column.
  int64_t end_h() const { return pad_h_end < 0 ? pad_h : pad_h_end; }
  int64_t end_w() const { return pad_w_end < 0 ? pad_w : pad_w_end; }
  bool operator==(const Conv2dParams& o) const { return tie() == o.tie(); }
  /// The padding before the first row and column for filters of kh x kw.
  std::pair<int64_t, int64_t> pads(int64_t kh, int64_t kw) const;
  /// The padding after the last row and column (the same as before except for an asymmetric "pad").
  std::pair<int64_t, int64_t> end_pads(int64_t kh, int64_t kw) const;
  /// The output size along one axis: (in + pad + pad_end - dil (k - 1) - 1) / stride + 1.
  static int64_t out_size(int64_t in, int64_t k, int64_t pad, int64_t pad_end, int64_t stride, int64_t dil);
  /// "valid, stride (1, 1)" ... for op names and messages.
  std::string str() const;
  /// Checks the values (positive strides, dilations and groups, non-negative pads, a known
  /// border); ValueError naming `who` otherwise.
  void check(const char* who) const;
};

/// out = conv2d(img, kern): inputs (img (N, C, H, W), kern (O, C / groups, kh, kw)), output
/// (N, O, Ho, Wo). Float dtypes, both the same.
class Conv2d : public OpWithProps<Conv2d> {
 public:
  Conv2dParams p;
  explicit Conv2d(Conv2dParams params) : p(std::move(params)) {}
  auto props() const { return p.tie(); }
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  /// d img = Conv2dGradInputs(kern, g, H, W); d kern = Conv2dGradWeights(img, g, kh, kw).
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
};

/// The gradient of Conv2d with respect to its image (Theano's AbstractConv2d_gradInputs, the
/// transposed convolution): inputs (kern, top (N, O, Ho, Wo), H, W) with H, W the image's
/// spatial size (int64 scalars: with strides the top's size does not determine it); output
/// (N, C, H, W).
class Conv2dGradInputs : public OpWithProps<Conv2dGradInputs> {
 public:
  Conv2dParams p;
  explicit Conv2dGradInputs(Conv2dParams params) : p(std::move(params)) {}
  auto props() const { return p.tie(); }
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  /// d kern = Conv2dGradWeights(g, top, kh, kw); d top = Conv2d(g, kern).
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// The gradient of Conv2d with respect to its filters (AbstractConv2d_gradWeights): inputs (img,
/// top, kh, kw) (int64 scalars); output (O, C / groups, kh, kw).
class Conv2dGradWeights : public OpWithProps<Conv2dGradWeights> {
 public:
  Conv2dParams p;
  explicit Conv2dGradWeights(Conv2dParams params) : p(std::move(params)) {}
  auto props() const { return p.tie(); }
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  /// d img = Conv2dGradInputs(g, top, H, W); d top = Conv2d(img, g).
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// conv2d(img, kern) (Theano's conv2d with input_shape/filter_shape left to the run).
Var conv2d(Var img, Var kern, Conv2dParams p = {});
/// The image gradient (transposed convolution) for an image of spatial size h x w.
Var conv2d_grad_wrt_inputs(Var kern, Var top, Var h, Var w, Conv2dParams p = {});
/// The filter gradient for filters of kh x kw.
Var conv2d_grad_wrt_weights(Var img, Var top, Var kh, Var kw, Conv2dParams p = {});

/// Unshared convolution (Theano's unshared=True): a filter per output position. kern is
/// (O, Ho, Wo, C / groups, kh, kw); out[b, o, i, j] = sum over c, u, v of the image patch at (i, j)
/// times kern[o, i, j, c, u, v] (flipped in u, v with p.flip). Built as a graph: each channel's
/// patches by a convolution with one-hot filters (so every border mode, stride and dilation is
/// Conv2d's, and the gradients are its gradient ops), then one batched product over the output
/// positions. The two gradient functions are the same graph's adjoints (h, w: the image's size;
/// kh, kw: the filters').
Var conv2d_unshared(Var img, Var kern, Conv2dParams p = {});
Var conv2d_unshared_grad_wrt_inputs(Var kern, Var top, Var h, Var w, Conv2dParams p = {});
Var conv2d_unshared_grad_wrt_weights(Var img, Var top, Var kh, Var kw, Conv2dParams p = {});

/// The shapes one conv2d call works on, checked: named in every message with both shapes.
struct Conv2dShape {
  int64_t n, c, h, w;      ///< image
  int64_t o, cg, kh, kw;   ///< filters (cg = c / groups)
  int64_t ho, wo;          ///< output
  int64_t ph, pw;          ///< padding before the first row / column (the kernels' offsets)
  int64_t ph_end, pw_end;  ///< padding after the last (only the output size depends on it)
  int64_t g;               ///< groups
};
/// Checks img (N, C, H, W) against kern (O, C/g, kh, kw) and the params; ValueError naming `who`
/// and both shapes (channels that do not match, a group count that does not divide, an output
/// of no rows or columns).
Conv2dShape conv2d_shape(const char* who, const Conv2dParams& p, const Shape& img, const Shape& kern);
/// The same for Conv2dGradInputs: filters, the output gradient `top` and the image size h x w;
/// top must have the shape the forward op gives.
Conv2dShape conv2d_grad_inputs_shape(const char* who, const Conv2dParams& p, const Shape& kern, const Shape& top,
                                     int64_t h, int64_t w);
/// The same for Conv2dGradWeights: image, output gradient and the filter size kh x kw.
Conv2dShape conv2d_grad_weights_shape(const char* who, const Conv2dParams& p, const Shape& img, const Shape& top,
                                      int64_t kh, int64_t kw);

// ---------------------------------------------------------------------------------------------
// 3-d convolutions (Theano's conv3d): images (N, C, D, H, W), filters (O, C / groups, kd, kh, kw).

/// The rows and columns follow `hw` (its border applies to the depth too; asymmetric padding is
/// 2-d only); the depth has its own padding (border "pad"), stride and dilation.
struct Conv3dParams {
  Conv2dParams hw;
  int64_t pad_d = 0, stride_d = 1, dil_d = 1;
  auto tie() const { return std::make_tuple(hw.tie(), pad_d, stride_d, dil_d); }
  bool operator==(const Conv3dParams& o) const { return tie() == o.tie(); }
  /// The depth padding (each side) for filters of depth kd.
  int64_t depth_pad(int64_t kd) const;
  /// "valid, stride (1, 2, 2)" ... for op names and messages.
  std::string str() const;
  void check(const char* who) const;
};

/// One conv3d call's shapes: the rows and columns as a Conv2dShape (n, c, o, cg, g included) and
/// the depth.
struct Conv3dShape {
  Conv2dShape hw;
  int64_t d, kd, od, pd;
};
Conv3dShape conv3d_shape(const char* who, const Conv3dParams& p, const Shape& img, const Shape& kern);
Conv3dShape conv3d_grad_inputs_shape(const char* who, const Conv3dParams& p, const Shape& kern, const Shape& top,
                                     int64_t d, int64_t h, int64_t w);
Conv3dShape conv3d_grad_weights_shape(const char* who, const Conv3dParams& p, const Shape& img, const Shape& top,
                                      int64_t kd, int64_t kh, int64_t kw);

/// out = conv3d(img, kern): (N, C, D, H, W) by (O, C / groups, kd, kh, kw) -> (N, O, Do, Ho, Wo).
class Conv3d : public OpWithProps<Conv3d> {
 public:
  Conv3dParams p;
  explicit Conv3d(Conv3dParams params) : p(std::move(params)) {}
  auto props() const { return p.tie(); }
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<Var> rop(const Apply& node, const std::vector<Var>& eval_points) const override;
};

/// The image gradient of Conv3d: inputs (kern, top, D, H, W); output (N, C, D, H, W).
class Conv3dGradInputs : public OpWithProps<Conv3dGradInputs> {
 public:
  Conv3dParams p;
  explicit Conv3dGradInputs(Conv3dParams params) : p(std::move(params)) {}
  auto props() const { return p.tie(); }
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

/// The filter gradient of Conv3d: inputs (img, top, kd, kh, kw); output (O, C / groups, kd, kh, kw).
class Conv3dGradWeights : public OpWithProps<Conv3dGradWeights> {
 public:
  Conv3dParams p;
  explicit Conv3dGradWeights(Conv3dParams params) : p(std::move(params)) {}
  auto props() const { return p.tie(); }
  std::string name() const override;
  std::vector<TensorType> make_output_types(const std::vector<Var>& inputs) const override;
  std::vector<ShapeVars> infer_shape(const Apply& node, const std::vector<ShapeVars>& in) const override;
  std::vector<Var> grad(const Apply& node, const std::vector<Var>& output_grads) const override;
  std::vector<std::vector<bool>> connection_pattern(const Apply& node) const override;
};

Var conv3d(Var img, Var kern, Conv3dParams p = {});
Var conv3d_grad_wrt_inputs(Var kern, Var top, Var d, Var h, Var w, Conv3dParams p = {});
Var conv3d_grad_wrt_weights(Var img, Var top, Var kd, Var kh, Var kw, Conv3dParams p = {});

}  // namespace hypatia
