"""Where Hypatia's C++ engine sends what a user should see, when it runs inside Python.

The engine calls ``emit`` for warnings (``warnings.warn`` with ``HypatiaWarning``, attributed to
the first frame outside the hypatia package), for output the user asked for (``sys.stdout``) and
for diagnostics such as profile summaries and ``print_rewrites`` (``sys.stderr``); and
``print_value`` for each value a ``Print`` op prints (Theano's format: ``<message> <attr> =
<value>``, with numpy's formatting, any ``numpy.ndarray`` attribute, called when callable). So
``contextlib.redirect_stdout``, pytest's capture, logging and notebooks see all of it.
"""
import os
import sys
import warnings

__all__ = ["HypatiaWarning", "emit", "print_value"]

_WARNING, _OUTPUT, _DIAGNOSTIC = 0, 1, 2
_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


class HypatiaWarning(UserWarning):
    """A warning from Hypatia's engine (a disconnected input, a missing test value, ...)."""


def _stacklevel():
    """The warnings.warn stacklevel that names the first frame outside the hypatia package."""
    frame, level = sys._getframe(2), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def emit(channel, text):
    if channel == _WARNING:
        warnings.warn(text, HypatiaWarning, stacklevel=_stacklevel())
    elif channel == _OUTPUT:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        sys.stderr.write(text)
        sys.stderr.flush()


def print_value(message, attrs, value):
    """Theano's Print.perform: one line per attribute."""
    for attr in attrs:
        temp = getattr(value, attr)
        print(message, attr, "=", temp() if callable(temp) else temp)
    sys.stdout.flush()
