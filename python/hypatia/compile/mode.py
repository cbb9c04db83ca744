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
        return Mode(self.linker, self.optimizer, self._including + tags, self._excluding, self._name)

    def excluding(self, *tags):
        return Mode(self.linker, self.optimizer, self._including, self._excluding + tags, self._name)

    def requiring(self, *tags):
        return self.including(*tags)

    def __repr__(self):
        return f"Mode(linker={self.linker!r}, optimizer={self.optimizer!r})"


class DebugMode(Mode):
    """FAST_RUN, with every kernel checked against its node's reference kernel on each call (outputs
    must agree, inputs outside the destroy_map must come out unchanged). Also hypatia.compile.debugmode.DebugMode."""

    def __init__(self, **kwargs):
        super().__init__("cvm", "fast_run", name="DebugMode")


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


__all__ = ["Mode", "DebugMode", "FAST_RUN", "FAST_COMPILE", "predefined_modes", "register_mode", "get_mode",
           "get_default_mode"]
