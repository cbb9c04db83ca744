"""hypatia.config: Theano's settings on the C++ engine's Config.

Values come from defaults < ~/.hypatiarc < THEANO_FLAGS < HYPATIA_FLAGS (``key=value,key=value``)
< code (``hypatia.config.floatX = 'float32'``). THEANO_FLAGS is read so that a Theano user's
``THEANO_FLAGS=floatX=float32,device=cuda python train.py`` means the same here; HYPATIA_FLAGS wins
where both name an option, and Theano options Hypatia does not have are ignored with a warning.
Every read and write goes to the C++ Config, so C++ and Python always agree.
"""
import contextlib
import os
import shlex
import warnings

from hypatia import _core

# Read ~/.hypatiarc and HYPATIA_FLAGS at import: a malformed one fails here, naming the variable or
# file, the line and the expected form (not later, as a missing option).
for _message in _core.config_load():
    warnings.warn(_message, stacklevel=2)

_BOOL_KEYS = frozenset({"allow_gc", "profile", "print_rewrites", "debug_checks", "cuda_sync", "cuda_graphs"})
_INT_KEYS = frozenset({"openmp_elemwise_minsize", "num_threads"})
_KEYS = (
    "floatX",
    "device",
    "mode",
    "optimizer",
    "allow_gc",
    "profile",
    "exception_verbosity",
    "compute_test_value",
    "openmp_elemwise_minsize",
    "num_threads",
    "print_rewrites",
    "debug_checks",
    "optimizer_including",
    "optimizer_excluding",
    "blas",
    "conv",
    "cuda_sync",
    "cuda_graphs",
    "cuda_streams",
    "dnn.enabled",
    "dnn.conv.algo_fwd",
    "dnn.conv.algo_bwd_data",
    "dnn.conv.algo_bwd_filter",
)
# Dotted options read as Theano's sections: config.dnn.conv.algo_fwd.
_SECTIONS = frozenset(k.rsplit(".", i)[0] for k in _KEYS if "." in k for i in range(1, k.count(".") + 1))


def _apply_theano_flags():
    """THEANO_FLAGS, below HYPATIA_FLAGS: each option HYPATIA_FLAGS does not set, checked as
    HYPATIA_FLAGS' are (a bad value fails the import, naming the variable); Theano options Hypatia
    does not have are ignored with a warning."""
    text = os.environ.get("THEANO_FLAGS", "")
    if not text.strip():
        return
    ours = {item.split("=", 1)[0].strip() for item in os.environ.get("HYPATIA_FLAGS", "").split(",") if "=" in item}
    ignored = []
    # Theano's parsing: comma-separated, shell-style quotes kept together, an item without a value
    # ignored with a warning.
    splitter = shlex.shlex(text, posix=True)
    splitter.whitespace = ","
    splitter.whitespace_split = True
    for item in splitter:
        item = item.strip()
        if not item:
            continue
        key, eq, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not eq or not key:
            warnings.warn(f"THEANO_FLAGS: '{item}' has no value; ignoring it", stacklevel=3)
            continue
        if key in ours:
            continue
        if _core.config_is_ignored_theano_option(key) or key not in _KEYS:
            ignored.append(key)
            continue
        try:
            _core.config_set(key, value)
        except ValueError as e:
            raise ValueError(f"THEANO_FLAGS='{text}': {e}") from None
    if ignored:
        warnings.warn(f"THEANO_FLAGS: {', '.join(repr(k) for k in ignored)} "
                      f"{'has' if len(ignored) == 1 else 'have'} no effect in Hypatia and "
                      f"{'is' if len(ignored) == 1 else 'are'} ignored", stacklevel=3)


class _Section:
    """A section of dotted options (``config.dnn.conv``): attribute access reads and writes them.
    Theano's sections Hypatia does not have (``config.warn``, ``config.gcc`` ...) take writes with
    a warning, as their options do, and have nothing to read."""

    def __init__(self, prefix):
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(config, f"{self._prefix}.{name}")

    def __setattr__(self, name, value):
        setattr(config, f"{self._prefix}.{name}", value)

    def __dir__(self):
        n = len(self._prefix) + 1
        return sorted({k[n:].split(".")[0] for k in _KEYS if k.startswith(self._prefix + ".")})


def _to_text(key, value):
    if isinstance(value, bool):
        return "True" if value else "False"
    if key == "floatX" and not isinstance(value, str):
        import numpy as np

        return np.dtype(value).name
    return str(value)


class Config:
    """Attribute access to the engine's settings (``config.floatX``, ``config.allow_gc`` ...)."""

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if name in _SECTIONS or (name not in _KEYS and "." not in name
                                 and _core.config_is_ignored_theano_option(name + ".x")):
            return _Section(name)
        if _core.config_is_ignored_theano_option(name):
            raise AttributeError(f"hypatia.config has no option {name!r} (a Theano option Hypatia does not have)")
        if name not in _KEYS:
            raise AttributeError(f"hypatia.config has no option {name!r}")
        text = _core.config_get(name)
        if name in _BOOL_KEYS:
            return text == "True"
        if name in _INT_KEYS:
            return int(text)
        return text

    def __setattr__(self, name, value):
        if _core.config_is_ignored_theano_option(name):
            warnings.warn(f"hypatia.config: Theano's option {name!r} has no effect in Hypatia and is ignored",
                          stacklevel=2)
            return
        _core.config_set(name, _to_text(name, value))

    def __dir__(self):
        return [k for k in _KEYS if "." not in k] + sorted({k.split(".")[0] for k in _KEYS if "." in k})

    def __str__(self):
        return "\n".join(f"{k} = {getattr(self, k)}" for k in _KEYS)

    def change_flags(self, **kwargs):
        """Context manager (and decorator) that sets options and restores them afterwards."""
        return change_flags(**kwargs)


class change_flags(contextlib.ContextDecorator):
    """``with change_flags(floatX='float32'): ...`` sets options for the block (Theano's helper)."""

    def __init__(self, **kwargs):
        self._new = kwargs
        self._old = {}

    def __enter__(self):
        # (A Theano option Hypatia does not have has no value to restore: setting it warns.)
        self._old = {k: getattr(config, k) for k in self._new if not _core.config_is_ignored_theano_option(k)}
        for k, v in self._new.items():
            setattr(config, k, v)
        return self

    def __exit__(self, *exc):
        for k, v in self._old.items():
            setattr(config, k, v)
        return False


config = Config()
_apply_theano_flags()

__all__ = ["config", "change_flags", "Config"]
