"""hypatia.compile.mode: compilation modes (Theano's compile.mode): Mode, the predefined modes
(FAST_RUN, FAST_COMPILE, DebugMode, NONE, REFERENCE), get_mode and register_mode."""
from hypatia.configparser import config


class Mode:
    """A compilation mode: the rewrite pipeline and the kernels.

    optimizer: 'fast_run' (every rewrite), 'fast_compile' (the cheap ones), None (the graph as
    written) or 'default' (config.mode and config.optimizer). linker='reference' runs the naive
    reference kernels (the test oracle) on the graph as written unless an optimizer is named.
    including() / excluding() add or remove rewrites by name or tag.
    """

    # Theano's linkers that run compiled kernels: they all mean the default backend (the one for
    # config.device).
    _DEFAULT_LINKERS = ("cvm", "cvm_nogc", "vm", "vm_nogc", "c", "c|py", "c|py_nogc")

    def __init__(self, linker=None, optimizer="default", including=(), excluding=(), name=None):
        self.linker = linker or "cvm"
        self.optimizer = optimizer
        self._including = tuple(including)
        self._excluding = tuple(excluding)
        self._name = name  # an engine mode with its own behavior (DebugMode)
        self._nan_guard = None  # (nan, inf, big, threshold): NanGuardMode
        self._pre_func = self._post_func = None  # MonitorMode

    def _derived(self, including, excluding):
        m = Mode(self.linker, self.optimizer, including, excluding, self._name)
        m._nan_guard, m._pre_func, m._post_func = self._nan_guard, self._pre_func, self._post_func
        return m

    @property
    def backend(self):
        """The C++ backend's name ('' for the default one); any registered backend may be named
        as the linker ('cpu', 'reference', ...)."""
        if self.linker in ("reference", "py"):
            return "reference"
        if self.linker in self._DEFAULT_LINKERS:
            return ""
        return self.linker

    @property
    def pipeline(self):
        """The C++ pipeline name, or None for the configuration's default."""
        if self._name is not None:
            return self._name
        opt = self.optimizer
        if opt == "default":
            return None
        if opt is None or opt == "None":
            return "NONE"
        if opt in ("fast_compile", "merge", "o1"):
            return "FAST_COMPILE"
        return "FAST_RUN"

    def including(self, *tags):
        return self._derived(self._including + tags, self._excluding)

    def excluding(self, *tags):
        return self._derived(self._including, self._excluding + tags)

    def requiring(self, *tags):
        return self.including(*tags)

    def __repr__(self):
        return f"Mode(linker={self.linker!r}, optimizer={self.optimizer!r})"


class DebugMode(Mode):
    """FAST_RUN, with every kernel checked against its node's reference kernel on each call (outputs
    must agree, inputs outside the destroy_map must come out unchanged). Also hypatia.compile.debugmode.DebugMode."""

    def __init__(self, **kwargs):
        super().__init__("cvm", "fast_run", name="DebugMode")


class NanGuardMode(Mode):
    """Theano's NanGuardMode: after each node runs, its floating outputs are checked; the first NaN
    (nan_is_error), infinity (inf_is_error) or value of magnitude above 1e10 (big_is_error) raises
    hypatia.NanGuardError (an AssertionError, as Theano's) naming the node, the line of user code
    that built it and the statistics of its inputs. A function input that already holds such a
    value is named instead of the node that reads it. Also hypatia.compile.nanguardmode."""

    def __init__(self, nan_is_error=None, inf_is_error=None, big_is_error=None, optimizer="default", linker=None,
                 big_threshold=1e10):
        super().__init__(linker, optimizer)
        self._nan_guard = (bool(True if nan_is_error is None else nan_is_error),
                           bool(True if inf_is_error is None else inf_is_error),
                           bool(True if big_is_error is None else big_is_error), float(big_threshold))

    def __repr__(self):
        nan, inf, big, _ = self._nan_guard
        return f"NanGuardMode(nan_is_error={nan}, inf_is_error={inf}, big_is_error={big})"


class MonitorMode(Mode):
    """Theano's MonitorMode: pre_func(i, node, fn) and post_func(i, node, fn) run before and after
    each node (i its position in the schedule, fn.inputs / fn.outputs lists of one-element lists
    holding the values, read-only). Also hypatia.compile.monitormode."""

    def __init__(self, pre_func=None, post_func=None, optimizer="default", linker=None):
        super().__init__(linker, optimizer)
        for f, what in ((pre_func, "pre_func"), (post_func, "post_func")):
            if f is not None and not callable(f):
                raise TypeError(f"MonitorMode: {what} must be callable, got {type(f).__name__}")
        self._pre_func, self._post_func = pre_func, post_func

    @property
    def pre_func(self):
        return self._pre_func

    @property
    def post_func(self):
        return self._post_func


FAST_RUN = Mode("cvm", "fast_run")
FAST_COMPILE = Mode("cvm", "fast_compile")

predefined_modes = {
    "FAST_RUN": FAST_RUN,
    "FAST_COMPILE": FAST_COMPILE,
    "DebugMode": DebugMode(),
    "DEBUG_MODE": DebugMode(),
    "ProfileMode": Mode("cvm", "fast_run"),
    "NONE": Mode("cvm", None),
    "REFERENCE": Mode("reference", "default"),
}
_PREDEFINED_MODES = predefined_modes


def register_mode(name, mode):
    """Makes `mode` available as function(mode=name) (Theano's register_mode)."""
    if name in predefined_modes:
        raise ValueError(f"Mode name already taken: {name}")
    if not isinstance(mode, Mode):
        raise TypeError(f"register_mode: expected a Mode, got {type(mode).__name__}")
    predefined_modes[name] = mode


def get_mode(mode):
    """The Mode for a mode argument (None: config.mode)."""
    if mode is None:
        mode = config.mode
    if isinstance(mode, Mode):
        return mode
    if isinstance(mode, str):
        try:
            return predefined_modes[mode]
        except KeyError:
            raise ValueError(f"unknown mode {mode!r}; expected one of {sorted(predefined_modes)}") from None
    raise TypeError(f"mode must be a string or a Mode, got {type(mode).__name__}")


def get_default_mode():
    return get_mode(None)


__all__ = ["Mode", "DebugMode", "NanGuardMode", "MonitorMode", "FAST_RUN", "FAST_COMPILE", "predefined_modes", "register_mode", "get_mode",
           "get_default_mode"]
