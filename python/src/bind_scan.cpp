// Scan: the Scan and ScanGrad op classes (layout attributes, the body, pickling) and scan_node,
// which hypatia.scan_module.scan builds on.
#include "bindings.h"
#include "hypatia/ops/scan.h"

namespace hypatia::python {
namespace {

ScanInfo make_info(std::vector<std::vector<int>> seq_taps, std::vector<std::vector<int>> state_taps,
                   std::vector<bool> traced, int n_nitsot, int n_nonseq, bool until, int truncate, std::string name) {
  ScanInfo info;
  info.seq_taps = std::move(seq_taps);
  info.state_taps = std::move(state_taps);
  info.state_traced = std::move(traced);
  info.n_nitsot = n_nitsot;
  info.n_nonseq = n_nonseq;
  info.until = until;
  info.truncate_gradient = truncate;
  info.name = std::move(name);
  return info;
}

}  // namespace

void init_scan(nb::module_& m) {
  nb::class_<Scan, Op>(m, "Scan", "Theano's Scan: a loop whose body is an inner function run once per step.")
      .def(
          "__init__",
          [](Scan* self, std::vector<std::vector<int>> seq_taps, std::vector<std::vector<int>> state_taps,
             std::vector<bool> traced, int n_nitsot, int n_nonseq, bool until, int truncate, std::string name,
             std::vector<Var> inner_inputs, std::vector<Var> inner_outputs) {
            new (self) Scan(make_info(std::move(seq_taps), std::move(state_taps), std::move(traced), n_nitsot, n_nonseq,
                                      until, truncate, std::move(name)),
                            std::move(inner_inputs), std::move(inner_outputs));
          },
          "seq_taps"_a, "state_taps"_a, "state_traced"_a, "n_nitsot"_a, "n_nonseq"_a, "until"_a, "truncate_gradient"_a,
          "name"_a, "inner_inputs"_a, "inner_outputs"_a)
      .def_prop_ro("seq_taps", [](const Scan& s) { return s.info.seq_taps; })
      .def_prop_ro("state_taps", [](const Scan& s) { return s.info.state_taps; })
      .def_prop_ro("state_traced", [](const Scan& s) { return s.info.state_traced; })
      .def_prop_ro("n_nitsot", [](const Scan& s) { return s.info.n_nitsot; })
      .def_prop_ro("n_nonseq", [](const Scan& s) { return s.info.n_nonseq; })
      .def_prop_ro("until", [](const Scan& s) { return s.info.until; })
      .def_prop_ro("truncate_gradient", [](const Scan& s) { return s.info.truncate_gradient; })
      .def_prop_ro("scan_name", [](const Scan& s) { return s.info.name; })
      .def_prop_ro(
          "inputs", [](const Scan& s) { return s.inner_inputs; }, "The body's inputs (Theano's op.inputs).")
      .def_prop_ro(
          "outputs", [](const Scan& s) { return s.inner_outputs; }, "The body's outputs.")
      .def("__reduce__", [](const Scan& s) {
        nb::object rebuild = nb::module_::import_("hypatia._pickle").attr("_rebuild_op");
        const ScanInfo& i = s.info;
        return nb::make_tuple(
            rebuild,
            nb::make_tuple(nb::type<Scan>(),
                           nb::make_tuple(i.seq_taps, i.state_taps, i.state_traced, i.n_nitsot, i.n_nonseq, i.until,
                                          i.truncate_gradient, i.name, s.inner_inputs, s.inner_outputs)));
      });
  nb::class_<ScanGrad, Op>(m, "ScanGrad", "The backward pass (BPTT) of a Scan.")
      .def_prop_ro("inputs", [](const ScanGrad& s) { return s.vjp_inputs; })
      .def_prop_ro("outputs", [](const ScanGrad& s) { return s.vjp_outputs; });
  m.def(
      "scan_node",
      [](std::vector<std::vector<int>> seq_taps, std::vector<std::vector<int>> state_taps, std::vector<bool> traced,
         int n_nitsot, bool until, int truncate, std::string name, std::vector<Var> inner_inputs,
         std::vector<Var> inner_outputs, Var n_steps, std::vector<Var> sequences, std::vector<Var> windows,
         std::vector<Var> non_sequences) {
        return scan_node(make_info(std::move(seq_taps), std::move(state_taps), std::move(traced), n_nitsot, 0, until,
                                   truncate, std::move(name)),
                         std::move(inner_inputs), std::move(inner_outputs), std::move(n_steps), std::move(sequences),
                         std::move(windows), std::move(non_sequences));
      },
      "seq_taps"_a, "state_taps"_a, "state_traced"_a, "n_nitsot"_a, "until"_a, "truncate_gradient"_a, "name"_a,
      "inner_inputs"_a, "inner_outputs"_a, "n_steps"_a, "sequences"_a, "initial_windows"_a, "non_sequences"_a,
      "The outputs of a Scan node (free body variables become non-sequences).");
}

}  // namespace hypatia::python
