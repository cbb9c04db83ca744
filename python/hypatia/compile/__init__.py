"""hypatia.compile: Theano's compile package.

function (compile.function), In and Out (compile.io), shared and SharedVariable
(compile.sharedvalue), Mode, get_mode and the predefined modes (compile.mode, compile.debugmode),
Function and FunctionMaker (compile.function_module), ProfileStats (compile.profiling). As in
Theano, ``hypatia.compile.function`` is the function (the module is
``sys.modules['hypatia.compile.function']``).
"""
from collections import OrderedDict  # noqa: F401  (exported before this was a package)

from hypatia.compile import debugmode, function_module, io, mode, monitormode, nanguardmode  # noqa: F401
from hypatia.compile import ops, profiling, sharedvalue  # noqa: F401
from hypatia.compile.ops import as_op  # noqa: F401
from hypatia.compile.builders import OpFromGraph  # noqa: F401  (theano.compile.OpFromGraph)
from hypatia.compile.function_module import Function, FunctionMaker  # noqa: F401
from hypatia.compile.io import In, Out, SymbolicInput, SymbolicOutput  # noqa: F401
from hypatia.compile.mode import (  # noqa: F401
    FAST_COMPILE, FAST_RUN, DebugMode, Mode, MonitorMode, NanGuardMode, get_default_mode, get_mode, predefined_modes,
    register_mode,
)
from hypatia.compile.profiling import ProfileStats, _profiled  # noqa: F401
from hypatia.compile.sharedvalue import SharedVariable, shared  # noqa: F401
from hypatia.compile.function import function  # noqa: E402,F401  (after the submodules: the name is the function)

__all__ = ["function", "Function", "FunctionMaker", "In", "Out", "SymbolicInput", "SymbolicOutput", "Mode", "DebugMode",
           "NanGuardMode", "MonitorMode",
           "FAST_RUN", "FAST_COMPILE", "predefined_modes", "register_mode", "get_mode", "get_default_mode",
           "ProfileStats", "SharedVariable", "shared", "OrderedDict"]
