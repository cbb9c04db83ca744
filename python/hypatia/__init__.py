"""Hypatia: Theano's API on a C++20 symbolic tensor compiler.

    import hypatia
    import hypatia.tensor as T
    x = T.fvector('x')
    f = hypatia.function([x], T.exp(x) + 1)
    f(numpy.ones(3, dtype='float32'))
"""
import atexit as _atexit
import os as _os

from hypatia import _core
from hypatia._core import (  # noqa: F401
    Apply,
    DisconnectedInputError,
    FunctionGraph,
    GradientError,
    HypatiaError,
    InternalError,
    MissingInputError,
    NanGuardError,
    NullTypeGradError,
    UnusedInputError,
    Variable,
)
from hypatia.configparser import change_flags, config  # noqa: F401
from hypatia.op import Op  # noqa: F401
from hypatia import gof  # noqa: F401
from hypatia import compile  # noqa: F401,A004
from hypatia import tensor  # noqa: F401
from hypatia.compile import Function, In, Mode, Out, SharedVariable, as_op, function, shared  # noqa: F401
from hypatia.compile.builders import OpFromGraph  # noqa: F401  (theano.OpFromGraph)
from hypatia import gradient, ifelse, printing, scan_module  # noqa: F401
from hypatia.gof.graph import Constant  # noqa: F401
from hypatia.gof.graph import clone_replace as clone  # noqa: F401
from hypatia.gradient import Lop, Rop, grad  # noqa: F401
from hypatia.tensor.basic import dot, get_scalar_constant_value  # noqa: F401  (theano.dot ...)
from hypatia.printing import debugprint, pp, pprint  # noqa: F401
from hypatia.scan_module import foldl, foldr, map, reduce, scan, scan_checkpoints  # noqa: F401,A004
from hypatia import _pickle  # noqa: F401,E402  (pickle support for graphs and functions)
from hypatia._messages import HypatiaWarning  # noqa: F401
from hypatia.scan_module.scan import OrderedUpdates  # noqa: F401,E402  (theano.OrderedUpdates)
from hypatia import updates  # noqa: F401,E402
# Modules Theano's import made attributes of theano.tensor (T.shared_randomstreams.RandomStreams).
from hypatia.tensor import raw_random, shared_randomstreams  # noqa: F401,E402
from hypatia import scalar  # noqa: F401,E402  (theano.scalar.upcast)

__version__ = "0.1.0"

# Nodes record where in user code they were built ("file:line"), for error messages.
_core.install_trace_hook(_os.path.dirname(_os.path.abspath(__file__)) + _os.sep)


def _at_exit():
    # Messages from C++ after this (exit-time destructors) go to the process's own streams: Python
    # is shutting down. (Profile summaries are printed by hypatia.compile.profiling's own atexit
    # handler, which runs after this one, through sys.stderr.)
    _core._reset_message_sinks()


_atexit.register(_at_exit)
