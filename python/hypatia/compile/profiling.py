"""hypatia.compile.profiling: per-node timings of compiled functions (Theano's compile.profiling).

function(profile=True) (or config.profile) times every node; ``f.profile.summary()`` prints
Theano-style tables (per op class, per op, per Apply node), and the profiles of the functions
compiled that way are printed at exit.
"""
import atexit
import sys

from hypatia import _core
from hypatia.configparser import config

ProfileStats = _core.Profile


def _profile_summary(self, file=sys.stderr, n_ops_to_print=20, n_apply_to_print=20):
    """Prints Theano-style profile tables (per op class, per op, per apply node)."""
    print(self.summary_text(), file=file)


ProfileStats.summary = _profile_summary

# The functions compiled with a profile, printed at exit.
_profiled = []


@atexit.register
def _print_profiles():
    if not _profiled:
        return
    for f in _profiled:
        if f.profile is not None:
            f.profile.summary(file=sys.stderr)
    _profiled.clear()
    # Printed here: the C++ registry would print them again at static destruction.
    config.profile = False


__all__ = ["ProfileStats"]
