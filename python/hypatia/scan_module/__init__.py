"""hypatia.scan_module: the graph utilities Theano keeps in its scan module (scan_utils.clone and
equal_computations). scan itself is not built yet."""
from hypatia.scan_module import scan_utils  # noqa: F401
