// hypatia._core: the nanobind module. Each binding forwards to one call of the C++ API.
#include "bindings.h"
#include "device_array.h"
#include "interrupt.h"

NB_MODULE(_core, m) {
  using namespace hypatia::python;
  m.doc() = "Hypatia's C++ engine (thin bindings; the Theano-style API is the hypatia package)";
  init_errors(m);
  init_interop(m);
  init_device_array(m);
  init_config(m);
  init_graph(m);
  init_op_classes(m);
  init_sort(m);
  init_linalg(m);
  init_random(m);
  init_scan(m);
  init_pyop(m);
  init_ops(m);
  init_grad(m);
  init_function(m);
  init_interrupt();
  init_messages(m);
}
