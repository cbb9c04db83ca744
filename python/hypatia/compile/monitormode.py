"""hypatia.compile.monitormode: MonitorMode (Theano's compile.monitormode), defined with the other modes."""
from hypatia.compile.mode import MonitorMode  # noqa: F401

__all__ = ["MonitorMode"]
