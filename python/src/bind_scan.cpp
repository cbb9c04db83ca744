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
  using Form = ScanGrad::OutputGradient::Form;
  nb::class_<ScanGrad, Op>(m, "ScanGrad", "The backward pass (BPTT) of a Scan.")
      .def(
          "__init__",
          [](ScanGrad* self, std::vector<std::vector<int>> seq_taps, std::vector<std::vector<int>> state_taps,
             std::vector<bool> traced, int n_nitsot, int n_nonseq, bool until, int truncate, std::string name,
             const std::vector<std::pair<DType, std::vector<bool>>>& forward_types, std::vector<Var> vjp_inputs,
             std::vector<Var> vjp_outputs, std::vector<int> cot_of, std::vector<int> grad_of, std::vector<int> acc_of,
             std::vector<int> step_of, const std::vector<std::pair<int, int64_t>>& g_form) {
            std::vector<TensorType> fwd;
            for (const auto& [dt, bc] : forward_types) fwd.push_back(TensorType{dt, bc});
            std::vector<ScanGrad::OutputGradient> forms;
            for (const auto& [f, row] : g_form) {
              if (f < 0 || f > static_cast<int>(Form::None)) throw TypeError("ScanGrad: a gradient form out of range");
              forms.push_back({static_cast<Form>(f), row});
            }
            new (self) ScanGrad(make_info(std::move(seq_taps), std::move(state_taps), std::move(traced), n_nitsot,
                                          n_nonseq, until, truncate, std::move(name)),
                                std::move(fwd), std::move(vjp_inputs), std::move(vjp_outputs), std::move(cot_of),
                                std::move(grad_of), std::move(acc_of), std::move(step_of), std::move(forms));
          },
          "What __reduce__ gives: a ScanGrad rebuilt from its parts (pickle).")
      .def_prop_ro("inputs", [](const ScanGrad& s) { return s.vjp_inputs; })
      .def_prop_ro("outputs", [](const ScanGrad& s) { return s.vjp_outputs; })
      .def("__reduce__", [](const ScanGrad& s) {
        // Every part, so that a function or graph with a gradient through scan pickles.
        nb::object rebuild = nb::module_::import_("hypatia._pickle").attr("_rebuild_op");
        const ScanInfo& i = s.info;
        std::vector<std::pair<DType, std::vector<bool>>> fwd;
        for (const TensorType& t : s.forward_input_types) fwd.emplace_back(t.dtype, t.broadcastable);
        std::vector<std::pair<int, int64_t>> forms;
        for (const auto& g : s.g_form) forms.emplace_back(static_cast<int>(g.form), g.row);
        nb::list args;
        for (nb::object o :
             {nb::cast(i.seq_taps), nb::cast(i.state_taps), nb::cast(i.state_traced), nb::cast(i.n_nitsot),
              nb::cast(i.n_nonseq), nb::cast(i.until), nb::cast(i.truncate_gradient), nb::cast(i.name), nb::cast(fwd),
              nb::cast(s.vjp_inputs), nb::cast(s.vjp_outputs), nb::cast(s.cot_of), nb::cast(s.grad_of),
              nb::cast(s.acc_of), nb::cast(s.step_of), nb::cast(forms)})
          args.append(o);
        return nb::make_tuple(rebuild, nb::make_tuple(nb::type<ScanGrad>(), nb::tuple(args)));
      });
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
