"""hypatia.tensor.nnet.abstract_conv: Theano 1.0's convolution API.

``conv2d`` builds one Conv2d node; its gradients are the ops Conv2dGradInputs (the transposed
convolution, ``conv2d_grad_wrt_inputs``) and Conv2dGradWeights (``conv2d_grad_wrt_weights``),
each differentiable again. On the CPU they run as im2col / col2im around the matrix-product
library (OpenBLAS or oneDNN, whichever measured faster), images split over the thread pool.

``border_mode`` may also give the padding of each side, ``((top, bottom), (left, right))``
(Theano 1.0's asymmetric padding; causal_conv1d uses it). ``conv3d`` and its two gradient
functions are the same for 5-d inputs (batch, channels, depth, rows, cols); on the CPU a 2-d
im2col per output depth and filter depth tap feeds the GEMMs.

``unshared=True`` (a filter per output position; filters of shape (output channels, output rows,
output cols, input channels / num_groups, rows, cols)) is built as a graph: each channel's patches
by a convolution with one-hot filters (so every border mode, stride and dilation is conv2d's), then
one batched matrix product over the output positions; its gradients are that graph's.
"""
import numbers

from hypatia import _core
from hypatia.configparser import config
from hypatia.tensor.basic import as_tensor_variable

__all__ = [
    "conv2d",
    "conv2d_grad_wrt_inputs",
    "conv2d_grad_wrt_weights",
    "conv2d_transpose",
    "conv3d",
    "conv3d_grad_wrt_inputs",
    "conv3d_grad_wrt_weights",
    "separable_conv2d",
    "causal_conv1d",
    "get_conv_output_shape",
    "get_conv_shape_1axis",
    "bilinear_kernel_1D",
    "bilinear_kernel_2D",
    "bilinear_upsampling",
]


def _pair(value, name):
    if isinstance(value, numbers.Integral):
        return (int(value), int(value))
    value = tuple(value)
    if len(value) != 2 or not all(isinstance(v, numbers.Integral) for v in value):
        raise ValueError(f"{name} must be an int or a pair of ints, got {value!r}")
    return (int(value[0]), int(value[1]))


def _params(border_mode, subsample, filter_flip, filter_dilation, num_groups):
    if isinstance(border_mode, str):
        if border_mode not in ("valid", "full", "half"):
            raise ValueError(f"conv2d: border_mode must be 'valid', 'full', 'half', an int, a pair of ints or "
                             f"((top, bottom), (left, right)), got {border_mode!r}")
        border, pad, end = border_mode, (0, 0), (0, 0)
    elif isinstance(border_mode, numbers.Integral):
        border, pad = "pad", (int(border_mode), int(border_mode))
        end = pad
    else:
        bm = tuple(border_mode)
        if len(bm) != 2:
            raise ValueError(f"conv2d: border_mode must be an int, a pair or a pair of pairs, got {border_mode!r}")
        # Each entry an int (both sides) or a (before, after) pair.
        sides = [_pair(b, "border_mode") if not isinstance(b, numbers.Integral) else (int(b), int(b)) for b in bm]
        border, pad, end = "pad", (sides[0][0], sides[1][0]), (sides[0][1], sides[1][1])
    if min(pad + end) < 0:
        raise ValueError(f"conv2d: border_mode padding must be non-negative, got {border_mode!r}")
    sh, sw = _pair(subsample, "subsample")
    dh, dw = _pair(filter_dilation, "filter_dilation")
    if not isinstance(num_groups, numbers.Integral):
        raise ValueError(f"conv2d: num_groups must be an int, got {num_groups!r}")
    return (border, pad[0], pad[1], end[0], end[1], sh, sw, dh, dw, int(num_groups), bool(filter_flip))


def _check_shape(shape, name, unshared=False):
    if shape is None:
        return
    if unshared and name == "filter_shape":
        if len(tuple(shape)) != 6:
            raise ValueError(f"conv2d: with unshared=True, filter_shape must have 6 entries (output channels, "
                             f"output rows, output cols, input channels / num_groups, rows, cols), got {shape!r}")
    elif len(tuple(shape)) != 4:
        raise ValueError(f"conv2d: {name} must have 4 entries (batch, channels, rows, cols), got {shape!r}")


def _size(v, what):
    if v is None:
        raise ValueError(f"conv2d: the {what} must be given (an int or an integer scalar variable)")
    return as_tensor_variable(v) if not isinstance(v, numbers.Integral) else as_tensor_variable(int(v))


def conv2d(input, filters, input_shape=None, filter_shape=None, border_mode="valid", subsample=(1, 1),
           filter_flip=True, image_shape=None, filter_dilation=(1, 1), num_groups=1, unshared=False, **kwargs):
    """2-d convolution of a 4-d ``input`` (batch, channels, rows, cols) with 4-d ``filters``
    (output channels, input channels / num_groups, rows, cols). ``border_mode``: 'valid', 'full',
    'half', an int or (rows, cols) of zero padding; ``subsample``: strides; ``filter_flip``: True
    for a convolution, False for a correlation; ``filter_dilation``: gaps between filter taps.
    ``input_shape`` / ``filter_shape`` (``image_shape`` is the old name) are accepted as in Theano:
    shapes are checked when the function runs."""
    if image_shape is not None and input_shape is None:
        input_shape = image_shape
    _check_shape(input_shape, "input_shape")
    _check_shape(filter_shape, "filter_shape", unshared)
    p = _params(border_mode, subsample, filter_flip, filter_dilation, num_groups)
    return _core.conv2d(as_tensor_variable(input), as_tensor_variable(filters), p, bool(unshared))


def conv2d_grad_wrt_inputs(output_grad, filters, input_shape, filter_shape=None, border_mode="valid",
                           subsample=(1, 1), filter_flip=True, filter_dilation=(1, 1), num_groups=1, unshared=False):
    """The gradient of conv2d with respect to its input (the transposed convolution) for an input
    of ``input_shape`` (its rows and cols are needed: with strides the output does not fix them)."""
    _check_shape(input_shape, "input_shape")
    _check_shape(filter_shape, "filter_shape", unshared)
    p = _params(border_mode, subsample, filter_flip, filter_dilation, num_groups)
    shape = tuple(input_shape)
    return _core.conv2d_grad_wrt_inputs(as_tensor_variable(filters), as_tensor_variable(output_grad),
                                        _size(shape[2], "input rows"), _size(shape[3], "input cols"), p,
                                        bool(unshared))


def conv2d_transpose(input, filters, output_shape, filter_shape=None, border_mode="valid", input_dilation=(1, 1),
                     filter_flip=True, filter_dilation=(1, 1), num_groups=1):
    """The transposed convolution of input by filters, of ``output_shape`` (Theano's
    conv2d_transpose): the gradient of a conv2d, of an input of that shape, with respect to its
    input; input_dilation is that conv2d's subsample (strides)."""
    return conv2d_grad_wrt_inputs(input, filters, output_shape, filter_shape, border_mode, input_dilation,
                                  filter_flip, filter_dilation, num_groups)


def conv2d_grad_wrt_weights(input, output_grad, filter_shape, input_shape=None, border_mode="valid",
                            subsample=(1, 1), filter_flip=True, filter_dilation=(1, 1), num_groups=1,
                            unshared=False):
    """The gradient of conv2d with respect to its filters, of ``filter_shape`` (6 entries with
    ``unshared=True``, whose last two are the filter rows and cols)."""
    _check_shape(input_shape, "input_shape")
    if filter_shape is None:
        raise ValueError("conv2d_grad_wrt_weights: filter_shape must be given")
    _check_shape(filter_shape, "filter_shape", unshared)
    p = _params(border_mode, subsample, filter_flip, filter_dilation, num_groups)
    shape = tuple(filter_shape)
    return _core.conv2d_grad_wrt_weights(as_tensor_variable(input), as_tensor_variable(output_grad),
                                         _size(shape[-2], "filter rows"), _size(shape[-1], "filter cols"), p,
                                         bool(unshared))


def _triple(value, name):
    if isinstance(value, numbers.Integral):
        return (int(value),) * 3
    value = tuple(value)
    if len(value) != 3 or not all(isinstance(v, numbers.Integral) for v in value):
        raise ValueError(f"conv3d: {name} must be an int or three ints, got {value!r}")
    return tuple(int(v) for v in value)


def _params3(border_mode, subsample, filter_flip, filter_dilation, num_groups):
    if isinstance(border_mode, str):
        if border_mode not in ("valid", "full", "half"):
            raise ValueError(f"conv3d: border_mode must be 'valid', 'full', 'half', an int or three ints, "
                             f"got {border_mode!r}")
        border, pad = border_mode, (0, 0, 0)
    else:
        border, pad = "pad", _triple(border_mode, "border_mode")
    if min(pad) < 0:
        raise ValueError(f"conv3d: border_mode padding must be non-negative, got {border_mode!r}")
    sd, sh, sw = _triple(subsample, "subsample")
    dd, dh, dw = _triple(filter_dilation, "filter_dilation")
    if not isinstance(num_groups, numbers.Integral):
        raise ValueError(f"conv3d: num_groups must be an int, got {num_groups!r}")
    return (border, pad[0], pad[1], pad[2], sd, sh, sw, dd, dh, dw, int(num_groups), bool(filter_flip))


def _check_shape5(shape, name):
    if shape is not None and len(tuple(shape)) != 5:
        raise ValueError(f"conv3d: {name} must have 5 entries (batch, channels, depth, rows, cols), got {shape!r}")


def conv3d(input, filters, input_shape=None, filter_shape=None, border_mode="valid", subsample=(1, 1, 1),
           filter_flip=True, filter_dilation=(1, 1, 1), num_groups=1):
    """3-d convolution of a 5-d ``input`` (batch, channels, depth, rows, cols) with 5-d ``filters``
    (output channels, input channels / num_groups, depth, rows, cols); the parameters as conv2d's
    with three entries (border_mode 'valid', 'full', 'half', an int or three ints)."""
    _check_shape5(input_shape, "input_shape")
    _check_shape5(filter_shape, "filter_shape")
    p = _params3(border_mode, subsample, filter_flip, filter_dilation, num_groups)
    return _core.conv3d(as_tensor_variable(input), as_tensor_variable(filters), p)


def conv3d_grad_wrt_inputs(output_grad, filters, input_shape, filter_shape=None, border_mode="valid",
                           subsample=(1, 1, 1), filter_flip=True, filter_dilation=(1, 1, 1), num_groups=1):
    """The gradient of conv3d with respect to its input, of ``input_shape``."""
    _check_shape5(input_shape, "input_shape")
    _check_shape5(filter_shape, "filter_shape")
    p = _params3(border_mode, subsample, filter_flip, filter_dilation, num_groups)
    shape = tuple(input_shape)
    return _core.conv3d_grad_wrt_inputs(as_tensor_variable(filters), as_tensor_variable(output_grad),
                                        _size(shape[2], "input depth"), _size(shape[3], "input rows"),
                                        _size(shape[4], "input cols"), p)


def conv3d_grad_wrt_weights(input, output_grad, filter_shape, input_shape=None, border_mode="valid",
                            subsample=(1, 1, 1), filter_flip=True, filter_dilation=(1, 1, 1), num_groups=1):
    """The gradient of conv3d with respect to its filters, of ``filter_shape``."""
    _check_shape5(input_shape, "input_shape")
    _check_shape5(filter_shape, "filter_shape")
    p = _params3(border_mode, subsample, filter_flip, filter_dilation, num_groups)
    shape = tuple(filter_shape)
    return _core.conv3d_grad_wrt_weights(as_tensor_variable(input), as_tensor_variable(output_grad),
                                         _size(shape[2], "filter depth"), _size(shape[3], "filter rows"),
                                         _size(shape[4], "filter cols"), p)


def separable_conv2d(input, depthwise_filters, pointwise_filters, num_channels, input_shape=None,
                     depthwise_filter_shape=None, pointwise_filter_shape=None, border_mode="valid",
                     subsample=(1, 1), filter_flip=True, filter_dilation=(1, 1)):
    """A depthwise convolution (``num_channels`` groups; depthwise_filters of shape
    (num_channels * depth_multiplier, 1, rows, cols)) followed by a pointwise 1x1 convolution
    (pointwise_filters of shape (out channels, num_channels * depth_multiplier, 1, 1))."""
    depth = conv2d(input, depthwise_filters, input_shape, depthwise_filter_shape, border_mode, subsample,
                   filter_flip, filter_dilation=filter_dilation, num_groups=num_channels)
    return conv2d(depth, pointwise_filters, None, pointwise_filter_shape, "valid", (1, 1), filter_flip)


def causal_conv1d(input, filters, filter_shape, input_shape=None, subsample=1, filter_flip=True,
                  filter_dilation=1, num_groups=1, unshared=False):
    """1-d convolution of a 3-d ``input`` (batch, channels, length) whose output at position t
    reads only inputs at or before t (the input padded on the left by dilation * (width - 1)).
    Filters are (out channels, in channels / num_groups, width), or with ``unshared=True`` (out
    channels, output length, in channels / num_groups, width)."""
    nf = 4 if unshared else 3
    if filter_shape is None or len(tuple(filter_shape)) != nf or not isinstance(filter_shape[-1], numbers.Integral):
        what = "(out channels, output length, in channels, width)" if unshared else "(out channels, in channels, width)"
        raise ValueError(f"causal_conv1d: filter_shape must be {what} with an int width, got {filter_shape!r}")
    if not isinstance(subsample, numbers.Integral) or not isinstance(filter_dilation, numbers.Integral):
        raise ValueError("causal_conv1d: subsample and filter_dilation must be ints")
    x = as_tensor_variable(input)
    w = as_tensor_variable(filters)
    if x.ndim != 3 or w.ndim != nf:
        raise TypeError(f"causal_conv1d: expected a 3-d input and {nf}-d filters, got {x.type} and {w.type}")
    pad = int(filter_dilation) * (int(filter_shape[-1]) - 1)
    # Padding on the left only: output t sees inputs up to t (Theano's implementation).
    w2 = w.dimshuffle(0, "x", 1, 2, "x", 3) if unshared else w.dimshuffle(0, 1, "x", 2)
    y = conv2d(x.dimshuffle(0, 1, "x", 2), w2, border_mode=((0, 0), (pad, 0)),
               subsample=(1, int(subsample)), filter_flip=filter_flip, filter_dilation=(1, int(filter_dilation)),
               num_groups=num_groups, unshared=unshared)
    return y[:, :, 0, :]


def bilinear_kernel_1D(ratio, normalize=True):
    """Theano's 1-d bilinear kernel of an upsampling by `ratio`: 1, 2, .., ratio, .., 2, 1 (2 *
    ratio - 1 taps, floatX), divided by ratio when normalize."""
    from hypatia.tensor import basic as B
    half = B.arange(1, ratio + 1, dtype=config.floatX)
    kern = B.concatenate([half, half[-2::-1]])
    return kern / ratio if normalize else kern


def bilinear_kernel_2D(ratio, normalize=True):
    """Theano's 2-d bilinear kernel: the outer product of two bilinear_kernel_1D."""
    k = bilinear_kernel_1D(ratio, normalize)
    return k.dimshuffle(0, "x") * k.dimshuffle("x", 0)


def _upsample_axis(x, ratio, axis):
    """x upsampled ratio times along axis as Theano's bilinear_upsampling computes it (the edge
    row repeated on each side, then a transposed convolution with bilinear_kernel_1D): output j
    interpolates linearly at source position (j - (ratio - 1) // 2) / ratio, clamped to the first
    and last rows. Integer arithmetic finds the two rows and the weight; two takes and a blend."""
    from hypatia.tensor import basic as B
    n = x.shape[axis]
    j = B.arange(n * ratio) - (ratio - 1) // 2
    q = j // ratio  # floor division: -1 before the first row
    w = B.switch(B.lt(q, 0), 0, B.cast(j - q * ratio, x.dtype) / B.cast(ratio, x.dtype))
    i0 = B.maximum(q, 0)
    i1 = B.minimum(i0 + 1, n - 1)
    pattern = ["x"] * x.ndim
    pattern[axis] = 0
    w = B.cast(w, x.dtype).dimshuffle(*pattern)
    return B.take(x, i0, axis=axis) * (1 - w) + B.take(x, i1, axis=axis) * w


def bilinear_upsampling(input, ratio=None, frac_ratio=None, batch_size=None, num_input_channels=None,
                        use_1D_kernel=True):
    """Theano's bilinear_upsampling of a 4-d input (batch, channels, rows, cols) by an integer
    ratio: rows and columns each ratio times as many, the same numbers as Theano's construction
    (the edges repeated, a transposed convolution with the bilinear kernel), computed as two
    separable interpolations (take and blend), so its gradient is theirs. batch_size,
    num_input_channels and use_1D_kernel change nothing here (Theano's hints and its choice of
    kernel). frac_ratio (fractional ratios) is not built."""
    if frac_ratio is not None:
        raise NotImplementedError("bilinear_upsampling: frac_ratio (fractional ratios) is not built; give an integer "
                                  "ratio")
    if ratio is None:
        raise ValueError("bilinear_upsampling: give the integer ratio")
    if isinstance(ratio, bool) or not isinstance(ratio, numbers.Integral) or ratio < 1:
        raise ValueError(f"bilinear_upsampling: ratio must be a positive int, got {ratio!r}")
    x = as_tensor_variable(input)
    if x.ndim != 4:
        raise TypeError(f"bilinear_upsampling: input must be 4-d (batch, channels, rows, cols), got {x.type}")
    if not x.dtype.startswith("float"):
        from hypatia.tensor import basic as B
        x = B.cast(x, config.floatX)
    if ratio == 1:
        return x
    return _upsample_axis(_upsample_axis(x, ratio, 2), ratio, 3)


def get_conv_shape_1axis(image_shape, kernel_shape, border_mode, subsample, dilation=1):
    """The output size along one axis (None when an input size is None)."""
    if image_shape is None or kernel_shape is None:
        return None
    span = dilation * (kernel_shape - 1) + 1
    if border_mode == "valid":
        pads = 0
    elif border_mode == "full":
        pads = 2 * (span - 1)
    elif border_mode == "half":
        pads = 2 * dilation * (kernel_shape // 2)
    elif isinstance(border_mode, tuple):
        pads = int(border_mode[0]) + int(border_mode[1])  # (before, after)
    else:
        pads = 2 * int(border_mode)
    return (image_shape + pads - span) // subsample + 1


def get_conv_output_shape(image_shape, kernel_shape, border_mode, subsample, filter_dilation=None):
    """(batch, out channels, rows, cols) of conv2d for the given shapes (Theano's helper)."""
    n, _, *spatial = image_shape
    o, _, *kspatial = kernel_shape
    dims = len(spatial)
    if filter_dilation is None:
        filter_dilation = (1,) * dims
    if isinstance(border_mode, (str, numbers.Integral)):
        border_mode = (border_mode,) * dims
    return (n, o) + tuple(get_conv_shape_1axis(spatial[i], kspatial[i], border_mode[i], subsample[i],
                                               filter_dilation[i]) for i in range(dims))


# The op classes under Theano's names (isinstance checks on node.op, pickling).
AbstractConv2d = _core.Conv2d
AbstractConv2d_gradInputs = _core.Conv2dGradInputs
AbstractConv2d_gradWeights = _core.Conv2dGradWeights
AbstractConv3d = _core.Conv3d
AbstractConv3d_gradInputs = _core.Conv3dGradInputs
AbstractConv3d_gradWeights = _core.Conv3dGradWeights
