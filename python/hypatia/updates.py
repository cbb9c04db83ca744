"""hypatia.updates (theano.updates): OrderedUpdates, the ordered dict of updates that scan returns
and that function(updates=...) takes."""
from hypatia.scan_module.scan import OrderedUpdates  # noqa: F401

__all__ = ["OrderedUpdates"]
