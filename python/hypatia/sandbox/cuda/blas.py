"""Theano's GEMM-based correlation ops (seed 004): ``GpuCorrMM`` and the two ops of its gradient,
``GpuCorrMM_gradWeights`` and ``GpuCorrMM_gradInputs``.

Each builds Hypatia's convolution nodes with ``filter_flip=False`` (a correlation, as GpuCorrMM
computes): under ``device=cuda`` the CUDA backend runs them through cuDNN (im2col + cuBLAS where
cuDNN declines a shape), on the CPU through im2col and the GEMM provider; their gradients are those
nodes' gradients, which are these same three computations. ``T.grad`` of a network written with
them works as it did in Theano.

    out = GpuCorrMM(border_mode="valid", subsample=(1, 1))(img, kern)
    dW = GpuCorrMM_gradWeights(border_mode="valid")(img, dout, shape=kern_rows_cols)
    dimg = GpuCorrMM_gradInputs(border_mode="valid")(kern, dout, shape=img_rows_cols)

border_mode: 'valid', 'full', 'half', an int or a pair of ints (zero padding); the old sandbox's
``pad=(ph, pw)`` with border_mode='valid' means the same padding."""
import numbers

from hypatia._convert import as_tensor_variable
from hypatia.tensor.nnet import abstract_conv

__all__ = ["BaseGpuCorrMM", "GpuCorrMM", "GpuCorrMM_gradWeights", "GpuCorrMM_gradInputs"]


def _pair(value, what, name):
    if isinstance(value, numbers.Integral):
        return (int(value), int(value))
    value = tuple(value)
    if len(value) != 2 or not all(isinstance(v, numbers.Integral) for v in value):
        raise ValueError(f"{name}: {what} must be an int or a pair of ints, got {value!r}")
    return (int(value[0]), int(value[1]))


class BaseGpuCorrMM:
    """What the three ops share: border_mode, subsample, filter_dilation, num_groups."""

    __props__ = ("border_mode", "subsample", "filter_dilation", "num_groups")

    def __init__(self, border_mode="valid", subsample=(1, 1), filter_dilation=(1, 1), num_groups=1, pad=None):
        name = type(self).__name__
        if pad is not None and _pair(pad, "pad", name) != (0, 0):
            if border_mode != "valid":
                raise ValueError(f"{name}: give the padding as border_mode or as pad, not both")
            border_mode = pad
        if isinstance(border_mode, str):
            if border_mode not in ("valid", "full", "half"):
                raise ValueError(f"{name}: border_mode must be 'valid', 'full', 'half', an int or a pair of ints, "
                                 f"got {border_mode!r}")
        else:
            border_mode = _pair(border_mode, "border_mode", name)
            if min(border_mode) < 0:
                raise ValueError(f"{name}: border_mode padding must be non-negative, got {border_mode!r}")
        self.border_mode = border_mode
        self.subsample = _pair(subsample, "subsample", name)
        self.filter_dilation = _pair(filter_dilation, "filter_dilation", name)
        if not isinstance(num_groups, numbers.Integral) or num_groups < 1:
            raise ValueError(f"{name}: num_groups must be a positive int, got {num_groups!r}")
        self.num_groups = int(num_groups)

    def _kwargs(self):
        return dict(border_mode=self.border_mode, subsample=self.subsample, filter_flip=False,
                    filter_dilation=self.filter_dilation, num_groups=self.num_groups)

    def _props(self):
        return tuple(getattr(self, p) for p in self.__props__)

    def __eq__(self, other):
        return type(self) is type(other) and self._props() == other._props()

    def __hash__(self):
        return hash((type(self), self._props()))

    def __str__(self):
        return (f"{type(self).__name__}{{{self.border_mode}, {self.subsample}, {self.filter_dilation}, "
                f"{self.num_groups}}}")

    __repr__ = __str__

    def _sizes_from(self, shape, computed, what):
        """The two spatial sizes the op needs: `shape` when given, else `computed` (a function of
        nothing, for the cases where the others fix them)."""
        name = type(self).__name__
        if shape is not None:
            shape = tuple(shape)
            if len(shape) != 2:
                raise ValueError(f"{name}: shape must be the {what}'s (rows, cols), got {shape!r}")
            return shape
        if self.subsample != (1, 1) or self.border_mode == "half" or self.filter_dilation != (1, 1):
            raise ValueError(f"{name}: shape (the {what}'s rows and cols) must be given when subsample or "
                             "filter_dilation is not (1, 1) or border_mode is 'half'")
        return computed()

    def _pad(self):
        return self.border_mode if isinstance(self.border_mode, tuple) else (0, 0)


class GpuCorrMM(BaseGpuCorrMM):
    """The correlation of img (batch, channels, rows, cols) with kern (output channels,
    channels / num_groups, rows, cols): conv2d with filter_flip=False."""

    def __call__(self, img, kern):
        return abstract_conv.conv2d(as_tensor_variable(img), as_tensor_variable(kern), **self._kwargs())


class GpuCorrMM_gradWeights(BaseGpuCorrMM):
    """The gradient of GpuCorrMM with respect to its kernel, from the image and the output's
    gradient (topgrad); ``shape`` is the kernel's (rows, cols), needed when subsample or
    filter_dilation is not (1, 1) or border_mode is 'half'."""

    def __call__(self, img, topgrad, shape=None):
        img, topgrad = as_tensor_variable(img), as_tensor_variable(topgrad)

        def computed():
            if self.border_mode == "full":
                return tuple(topgrad.shape[2 + i] - img.shape[2 + i] + 1 for i in range(2))
            pad = self._pad()
            return tuple(img.shape[2 + i] + 2 * pad[i] - topgrad.shape[2 + i] + 1 for i in range(2))

        kh, kw = self._sizes_from(shape, computed, "kernel")
        return abstract_conv.conv2d_grad_wrt_weights(img, topgrad, (None, None, kh, kw), **self._kwargs())


class GpuCorrMM_gradInputs(BaseGpuCorrMM):
    """The gradient of GpuCorrMM with respect to its image, from the kernel and the output's
    gradient (topgrad); ``shape`` is the image's (rows, cols), needed when subsample or
    filter_dilation is not (1, 1) or border_mode is 'half'."""

    def __call__(self, kern, topgrad, shape=None):
        kern, topgrad = as_tensor_variable(kern), as_tensor_variable(topgrad)

        def computed():
            if self.border_mode == "full":
                return tuple(topgrad.shape[2 + i] - kern.shape[2 + i] + 1 for i in range(2))
            pad = self._pad()
            return tuple(topgrad.shape[2 + i] + kern.shape[2 + i] - 1 - 2 * pad[i] for i in range(2))

        h, w = self._sizes_from(shape, computed, "image")
        return abstract_conv.conv2d_grad_wrt_inputs(topgrad, kern, (None, None, h, w), **self._kwargs())
