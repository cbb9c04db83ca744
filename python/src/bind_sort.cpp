// Sorting: the SortOp / ArgSortOp classes (attributes, constructor, pickling) and their builders.
#include "bindings.h"
#include "hypatia/ops/sort.h"

namespace hypatia::python {
namespace {

/// Adds __reduce__: unpickling calls hypatia._pickle._rebuild_op(the class, (axis,)).
template <class T>
void bind_axis_op(nb::module_& m, const char* name, const char* doc) {
  nb::class_<T, Op> cls(m, name, doc);
  cls.def(nb::init<int>(), "axis"_a).def_prop_ro("axis", [](const T& op) { return op.axis; });
  cls.def("__reduce__", [](const T& op) {
    nb::object rebuild = nb::module_::import_("hypatia._pickle").attr("_rebuild_op");
    return nb::make_tuple(rebuild, nb::make_tuple(nb::type<T>(), nb::make_tuple(op.axis)));
  });
}

}  // namespace

void init_sort(nb::module_& m) {
  bind_axis_op<SortOp>(m, "SortOp", "numpy.sort along an axis (stable, NaN last).");
  bind_axis_op<ArgSortOp>(m, "ArgSortOp", "numpy.argsort along an axis (stable, NaN last; int64).");
  m.def("sort", &hypatia::sort, "x"_a, "axis"_a.none() = -1, "x sorted along axis (None: flattened).");
  m.def("argsort", &hypatia::argsort, "x"_a, "axis"_a.none() = -1,
        "The indices that sort x along axis (None: of the flattened x).");
  m.def("take_along_axis", &hypatia::take_along_axis, "x"_a, "indices"_a, "axis"_a);
}

}  // namespace hypatia::python
