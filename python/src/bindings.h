// Shared declarations of the binding files: one init function per area, called by module.cpp.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "errors.h"
#include "hypatia/hypatia.h"
#include "interop.h"

namespace hypatia::python {
namespace nb = nanobind;
using namespace nb::literals;

void init_graph(nb::module_& m);       // TensorType, Variable, Apply, Op, constant, shared, debugprint
void init_op_classes(nb::module_& m);  // Elemwise, CAReduce, Subtensor ...: attributes, constructors, pickling
void init_ops(nb::module_& m);         // every op builder of the core
void init_grad(nb::module_& m);        // grad, Lop, Rop, jacobian, hessian, verify_grad ...
void init_function(nb::module_& m);    // Function (the per-call path), Profile
void init_config(nb::module_& m);      // config get/set
void init_pyop(nb::module_& m);        // Ops defined in Python (hypatia.Op subclasses): PyOp and its kernel
/// Registers the Python ops' kernel on every backend registered so far (again after a backend is
/// added: the emulated GPU's).
void register_pyop_kernels();
void init_sort(nb::module_& m);      // SortOp, ArgSortOp, sort, argsort
void init_linalg(nb::module_& m);    // Linalg, nlinalg and slinalg builders
void init_random(nb::module_& m);    // MRG31k3p ops and MRGRandomStreams
void init_scan(nb::module_& m);      // Scan, ScanGrad, scan_node
void init_messages(nb::module_& m);  // warnings, Print values and profile summaries through Python

/// "file.py:12" of the innermost Python frame outside the hypatia package ("" outside Python).
std::string python_trace();

/// The Python object for a node's op: the hypatia.Op instance of an op defined in Python, else the
/// bound C++ op.
nb::object op_object(const std::shared_ptr<const Op>& op);
/// hypatia.Apply(op, inputs, outputs): a node of `op` (a C++ op, or a Python hypatia.Op, which is
/// wrapped in a PyOp) whose outputs have the types (and names) of `outputs`.
std::shared_ptr<Apply> make_apply(nb::handle op, std::vector<Var> inputs, nb::handle outputs);

/// The scalar op named `name` ("add", "exp"); ValueError for an unknown name.
ScalarOpKind scalar_kind(const std::string& name);

/// A Python index tuple (ints, slices, None, Ellipsis, Variables) as the C++ index list.
std::vector<Index> to_index_list(const nb::tuple& key);

}  // namespace hypatia::python
