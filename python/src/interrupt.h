// Ctrl-C during a call. Python's SIGINT handler only sets a flag that the interpreter checks
// between bytecodes, so a long call in C++ would run to its end before KeyboardInterrupt. The
// module wraps the C-level SIGINT handler: the wrapper sets the cancel flag that calls made on the
// main thread obey (core/cancel.h: checked between nodes and between chunks of parallel kernels)
// and then runs the handler it wraps.
#pragma once
#include <atomic>

namespace hypatia::python {

/// Call with the GIL at the start of a compiled function's call (after PyErr_CheckSignals). Returns the cancel flag the
/// call obeys: the SIGINT flag on the main thread (Python delivers KeyboardInterrupt there only), null on other
/// threads. Re-wraps the SIGINT handler if Python replaced it (signal.signal) since the last check (at most every 50
/// ms).
const std::atomic<bool>* begin_interruptible_call();

/// Call with the GIL after a call stopped by Cancelled: runs Python's pending signal handlers.
/// Returns true when one raised (the Python error is set: KeyboardInterrupt by default); false when
/// none did (a user handler that only logs), and the call should run again: it changed nothing.
bool finish_interrupted_call();

/// Records the main thread and wraps the SIGINT handler (module import, with the GIL).
void init_interrupt();

}  // namespace hypatia::python
