// Messages and Print values through Python: warnings.warn, sys.stdout and sys.stderr (the module
// hypatia._messages), so that redirect_stdout, pytest's capture, logging and notebooks see them.
#include <Python.h>

#include "bindings.h"
#include "hypatia/core/messages.h"

namespace hypatia::python {
namespace {

/// Whether Python can run code now (not before start-up or during shutdown).
bool python_usable() { return Py_IsInitialized() && !_Py_IsFinalizing(); }

void python_sink(MessageChannel ch, const std::string& text) {
  if (!python_usable()) return emit_default_message(ch, text);
  nb::gil_scoped_acquire gil;
  try {
    nb::module_::import_("hypatia._messages").attr("emit")(static_cast<int>(ch), text);
  } catch (nb::python_error&) {
    // A warning the user made an error (-W error, pytest's filterwarnings) raises where it was
    // given; other channels fall back to the process's own streams.
    if (ch == MessageChannel::Warning) throw;
    emit_default_message(ch, text);
  }
}

bool python_print(const PrintOp& op, const NDArray& value) {
  if (!python_usable()) return false;
  nb::gil_scoped_acquire gil;
  nb::object arr = nb::steal(to_numpy(value, /*writeable=*/false));
  if (!arr.is_valid()) throw nb::python_error();
  nb::module_::import_("hypatia._messages").attr("print_value")(op.message, op.attrs, arr);
  return true;
}

}  // namespace

void init_messages(nb::module_& m) {
  set_message_sink(&python_sink);
  set_print_value_hook(&python_print);
  m.def(
      "print_profile_summaries", [] { print_profile_summaries(); },
      "Sends the profile summaries (profile=True) to sys.stderr now; hypatia calls it at exit.");
  m.def(
      "_reset_message_sinks",
      [] {
        set_message_sink(nullptr);
        set_print_value_hook(nullptr);
      },
      "Messages go to the process's stdout/stderr again (at interpreter exit).");
}

}  // namespace hypatia::python
