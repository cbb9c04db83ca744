"""hypatia.compile.debugmode: DebugMode (Theano's compile.debugmode), defined with the other modes."""
from hypatia.compile.mode import DebugMode  # noqa: F401

__all__ = ["DebugMode"]
