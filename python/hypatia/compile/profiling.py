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


def _to_chrome_trace(self, path):
    """Writes the recorded node runs as a Chrome trace (JSON; opens in Perfetto or chrome://tracing):
    one complete slice per node per call, on the calling thread's track, named by the op, with the
    Apply and the call's number as arguments. Returns the number of slices written."""
    import json

    nodes = self.nodes
    events = []
    for call, step, thread, start, dur in self.trace_events:
        n = nodes[step]
        events.append({"name": n["op_name"], "cat": n["op_class"], "ph": "X", "ts": start, "dur": dur, "pid": 1,
                       "tid": thread, "args": {"apply": n["apply"], "call": call, "step": step}})
    meta = [{"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "hypatia " + (self.function_name or
                                                                                       "<unnamed>")}}]
    with open(path, "w") as fh:
        json.dump({"traceEvents": meta + events, "displayTimeUnit": "ns",
                   "otherData": {"dropped_events": self.trace_dropped}}, fh)
    return len(events)


ProfileStats.to_chrome_trace = _to_chrome_trace

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
