// Linear algebra: the Linalg op class (kind and attributes, constructor, pickling) and the
// builders of nlinalg and slinalg (python/hypatia/tensor/nlinalg.py, slinalg.py wrap them).
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "hypatia/ops/linalg.h"

namespace hypatia::python {
namespace {

const char* kKindNames[] = {"inverse", "det", "eig", "eigh", "svd", "qr", "lstsq", "pinv", "cholesky", "solve", "expm"};
const char* kStructureNames[] = {"general", "symmetric", "positive_definite", "triangular"};
const char* kQrNames[] = {"reduced", "complete", "r", "raw"};

template <class E, size_t N>
E enum_of(const char* (&names)[N], const std::string& s, const char* what) {
  for (size_t i = 0; i < N; ++i)
    if (s == names[i]) return static_cast<E>(i);
  std::string all;
  for (size_t i = 0; i < N; ++i) all += (i ? ", " : "") + std::string(names[i]);
  throw ValueError(std::string("Linalg: unknown ") + what + " '" + s + "' (one of " + all + ")");
}

SolveStructure structure_of(const std::string& s) {
  return enum_of<SolveStructure>(kStructureNames, s, "solve structure");
}

}  // namespace

void init_linalg(nb::module_& m) {
  nb::class_<Linalg, Op> cls(m, "Linalg", "A LAPACK-backed linear algebra op (its kind says which).");
  cls.def(
      "__init__",
      [](Linalg* self, const std::string& kind, bool lower, const std::string& structure, bool trans,
         bool unit_diagonal, bool full_matrices, bool compute_uv, const std::string& qr_mode, double rcond) {
        LinalgAttrs a{.lower = lower,
                      .structure = structure_of(structure),
                      .trans = trans,
                      .unit_diagonal = unit_diagonal,
                      .full_matrices = full_matrices,
                      .compute_uv = compute_uv,
                      .qr_mode = enum_of<QrMode>(kQrNames, qr_mode, "qr mode"),
                      .rcond = rcond};
        new (self) Linalg(enum_of<LinalgKind>(kKindNames, kind, "kind"), a);
      },
      "kind"_a, "lower"_a = true, "structure"_a = "general", "trans"_a = false, "unit_diagonal"_a = false,
      "full_matrices"_a = true, "compute_uv"_a = true, "qr_mode"_a = "reduced", "rcond"_a = -1.0);
  cls.def_prop_ro("kind", [](const Linalg& op) { return std::string(kKindNames[static_cast<int>(op.kind)]); })
      .def_prop_ro("lower", [](const Linalg& op) { return op.attrs.lower; })
      .def_prop_ro("structure",
                   [](const Linalg& op) { return std::string(kStructureNames[static_cast<int>(op.attrs.structure)]); })
      .def_prop_ro("trans", [](const Linalg& op) { return op.attrs.trans; })
      .def_prop_ro("unit_diagonal", [](const Linalg& op) { return op.attrs.unit_diagonal; })
      .def_prop_ro("full_matrices", [](const Linalg& op) { return op.attrs.full_matrices; })
      .def_prop_ro("compute_uv", [](const Linalg& op) { return op.attrs.compute_uv; })
      .def_prop_ro("qr_mode",
                   [](const Linalg& op) { return std::string(kQrNames[static_cast<int>(op.attrs.qr_mode)]); })
      .def_prop_ro("rcond", [](const Linalg& op) { return op.attrs.rcond; });
  cls.def("__reduce__", [](const Linalg& op) {
    nb::object rebuild = nb::module_::import_("hypatia._pickle").attr("_rebuild_op");
    const LinalgAttrs& a = op.attrs;
    nb::tuple args = nb::make_tuple(kKindNames[static_cast<int>(op.kind)], a.lower,
                                    kStructureNames[static_cast<int>(a.structure)], a.trans, a.unit_diagonal,
                                    a.full_matrices, a.compute_uv, kQrNames[static_cast<int>(a.qr_mode)], a.rcond);
    return nb::make_tuple(rebuild, nb::make_tuple(nb::type<Linalg>(), args));
  });

  m.def("matrix_inverse", &matrix_inverse, "a"_a);
  m.def("det", &det, "a"_a);
  m.def("eig", &eig, "a"_a);
  m.def("eigh", &eigh, "a"_a, "lower"_a = true);
  m.def("svd", &svd, "a"_a, "full_matrices"_a = true, "compute_uv"_a = true);
  m.def("qr", &qr, "a"_a, "mode"_a = "reduced");
  m.def("lstsq", &lstsq, "a"_a, "b"_a, "rcond"_a);
  m.def("pinv", &pinv, "a"_a, "rcond"_a = -1.0);
  m.def("trace", &trace, "a"_a);
  m.def("extract_diag", &extract_diag, "a"_a, "offset"_a = 0, "axis1"_a = 0, "axis2"_a = 1);
  m.def("alloc_diag", &alloc_diag, "v"_a, "offset"_a = 0);
  m.def("diag", &diag, "a"_a, "k"_a = 0);
  m.def("tril", &tril, "a"_a, "k"_a = 0);
  m.def("triu", &triu, "a"_a, "k"_a = 0);
  m.def("matrix_power", &matrix_power, "a"_a, "n"_a);
  m.def("norm", &norm, "x"_a, "ord"_a = "");
  m.def("tensorinv", &tensorinv, "a"_a, "ind"_a = 2);
  m.def("tensorsolve", &tensorsolve, "a"_a, "b"_a);
  m.def("cholesky", &cholesky, "a"_a, "lower"_a = true, "on_error"_a = "raise");
  m.def(
      "solve",
      [](Var a, Var b, const std::string& structure, bool lower) {
        return solve(a, b, structure_of(structure), lower);
      },
      "a"_a, "b"_a, "structure"_a = "general", "lower"_a = false);
  m.def("solve_triangular", &solve_triangular, "a"_a, "b"_a, "lower"_a = false, "trans"_a = false,
        "unit_diagonal"_a = false);
  m.def("eigvalsh", &eigvalsh, "a"_a, "b"_a.none() = nb::none(), "lower"_a = true);
  m.def("expm", &expm, "a"_a);
  m.def("kron", &kron, "a"_a, "b"_a);
}

}  // namespace hypatia::python
