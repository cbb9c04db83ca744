"""hypatia.compile.nanguardmode: NanGuardMode (Theano's compile.nanguardmode), defined with the other modes."""
from hypatia.compile.mode import NanGuardMode  # noqa: F401

__all__ = ["NanGuardMode"]
