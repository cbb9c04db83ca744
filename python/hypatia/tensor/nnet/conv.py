"""hypatia.tensor.nnet.conv: the older conv2d API (Theano's theano.tensor.nnet.conv) that older
tutorials and libraries call: always a convolution (flipped filters), 'valid' or 'full'."""
from hypatia.tensor.nnet import abstract_conv

__all__ = ["conv2d"]


def conv2d(input, filters, image_shape=None, filter_shape=None, border_mode="valid", subsample=(1, 1), **kargs):
    """2-d convolution of input (batch, channels, rows, cols) with filters (out channels, channels,
    rows, cols); border_mode 'valid' or 'full'. Extra Theano arguments (unroll_batch, ...) are
    tuning hints there and ignored here."""
    if border_mode not in ("valid", "full"):
        raise ValueError(f"conv.conv2d: border_mode must be 'valid' or 'full', got {border_mode!r}")
    return abstract_conv.conv2d(input, filters, input_shape=image_shape, filter_shape=filter_shape,
                                border_mode=border_mode, subsample=subsample, filter_flip=True)
