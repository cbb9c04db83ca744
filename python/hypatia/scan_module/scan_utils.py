"""hypatia.scan_module.scan_utils: clone (theano.clone) and equal_computations, from hypatia.gof.graph."""
from hypatia.gof.graph import clone_replace as clone  # noqa: F401
from hypatia.gof.graph import equal_computations  # noqa: F401

__all__ = ["clone", "equal_computations"]
