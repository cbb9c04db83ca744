"""hypatia.scan_module: Theano's scan module: scan, map, reduce, foldl, foldr, until (the stop
condition of a while loop), scan_checkpoints, and the graph utilities scan_utils (clone,
equal_computations)."""
from hypatia.scan_module import scan_utils  # noqa: F401
from hypatia.scan_module.scan import foldl, foldr, map, reduce, scan, until  # noqa: F401,A004
from hypatia.scan_module.scan_checkpoints import scan_checkpoints  # noqa: F401

__all__ = ["scan", "map", "reduce", "foldl", "foldr", "until", "scan_checkpoints", "scan_utils"]
