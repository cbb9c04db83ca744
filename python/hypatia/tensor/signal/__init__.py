"""hypatia.tensor.signal: Theano's signal package (pooling: signal.pool)."""
from hypatia.tensor.signal import pool  # noqa: F401
