// Random numbers: the MRG31k3p op classes (attributes, constructors, pickling), the stream helpers
// and the C++ MRGRandomStreams that hypatia.sandbox.rng_mrg wraps with Theano's signatures.
#include "bindings.h"
#include "hypatia/ops/random.h"

namespace hypatia::python {
namespace {

nb::object rebuild_op() { return nb::module_::import_("hypatia._pickle").attr("_rebuild_op"); }

std::vector<int64_t> state_list(const MrgState& s) { return {s.begin(), s.end()}; }

MrgState state_from_list(const std::vector<int64_t>& v) {
  if (v.size() != 6) throw ValueError("an MRG31k3p state has 6 integers, got " + std::to_string(v.size()));
  MrgState s{};
  for (int i = 0; i < 6; ++i) {
    if (v[i] < 0 || v[i] >= (i < 3 ? kMrgM1 : kMrgM2))
      throw ValueError("MRG31k3p state value " + std::to_string(i) + " is out of range: " + std::to_string(v[i]));
    s[i] = static_cast<int32_t>(v[i]);
  }
  return s;
}

}  // namespace

void init_random(nb::module_& m) {
  nb::class_<MRGUniform, Op>(m, "mrg_uniform", "Theano's mrg_uniform: (rstate, size) -> (new rstate, sample).")
      .def(nb::init<DType, int, bool>(), "dtype"_a, "ndim"_a, "inplace"_a = false)
      .def_ro("dtype", &MRGUniform::dtype)
      .def_ro("ndim", &MRGUniform::ndim)
      .def_ro("inplace", &MRGUniform::inplace)
      .def("__reduce__", [](const MRGUniform& op) {
        return nb::make_tuple(rebuild_op(),
                              nb::make_tuple(nb::type<MRGUniform>(), nb::make_tuple(op.dtype, op.ndim, op.inplace)));
      });
  nb::class_<MultinomialFromUniform, Op>(m, "MultinomialFromUniform",
                                         "Theano's MultinomialFromUniform: (pvals, unis, n) -> counts.")
      .def(nb::init<DType>(), "odtype"_a)
      .def_ro("odtype", &MultinomialFromUniform::odtype)
      .def("__reduce__", [](const MultinomialFromUniform& op) {
        return nb::make_tuple(rebuild_op(),
                              nb::make_tuple(nb::type<MultinomialFromUniform>(), nb::make_tuple(op.odtype)));
      });
  nb::class_<ChoiceFromUniform, Op>(m, "ChoiceFromUniform",
                                    "Theano's ChoiceFromUniform: (pvals, unis, n) -> (rows, n) indices.")
      .def(nb::init<DType, bool>(), "odtype"_a, "replace"_a = false)
      .def_ro("odtype", &ChoiceFromUniform::odtype)
      .def_ro("replace", &ChoiceFromUniform::replace)
      .def("__reduce__", [](const ChoiceFromUniform& op) {
        return nb::make_tuple(rebuild_op(),
                              nb::make_tuple(nb::type<ChoiceFromUniform>(), nb::make_tuple(op.odtype, op.replace)));
      });

  m.def("mrg_uniform_apply", &mrg_uniform, "rstate"_a, "size"_a, "dtype"_a, "ndim"_a = -1,
        "(new rstate, sample) of an mrg_uniform node on the states and an integer size vector.");
  m.def(
      "mrg_substream_states",
      [](const std::vector<int64_t>& s, int64_t n) { return mrg_substream_states(state_from_list(s), n); }, "state"_a,
      "n_streams"_a, "(n_streams, 6) int32 states: the given one, then each advanced 2**72 steps.");
  m.def(
      "mrg_jump_2p134", [](const std::vector<int64_t>& s) { return state_list(mrg_jump_2p134(state_from_list(s))); },
      "state"_a, "The state advanced 2**134 steps (the next substream).");
  m.def("mrg_guess_n_streams", &mrg_guess_n_streams, "size"_a, "Theano's guess_n_streams for integer sizes.");

  using S = MRGRandomStreams;
  nb::class_<S>(m, "MRGRandomStreams", "Theano 1.0's MRG_RandomStreams (C++ core).")
      .def(nb::init<const std::vector<int64_t>&>(), "seed"_a)
      .def_prop_ro("rstate", [](const S& s) { return state_list(s.rstate()); })
      .def("set_rstate", &S::set_rstate, "seed"_a)
      .def("inc_rstate", [](S& s) { s.get_substream_rstates(1, true); })
      .def("seed", &S::seed, "seed"_a.none() = nb::none())
      .def("get_substream_rstates", &S::get_substream_rstates, "n_streams"_a, "inc"_a = true)
      .def_prop_ro("state_updates",
                   [](const S& s) {
                     nb::list l;
                     for (const auto& u : s.state_updates())
                       l.append(nb::make_tuple(u.state, u.new_state, u.n_streams));
                     return l;
                   })
      .def("uniform", &S::uniform, "size"_a, "low"_a, "high"_a, "dtype"_a, "n_streams"_a = 0)
      .def("normal", &S::normal, "size"_a, "avg"_a, "std"_a, "dtype"_a, "n_streams"_a = 0, "truncate"_a = false)
      .def("binomial", &S::binomial, "size"_a, "p"_a, "dtype"_a, "udtype"_a, "n_streams"_a = 0)
      .def("multinomial", &S::multinomial, "pvals"_a, "n"_a, "dtype"_a, "udtype"_a, "n_streams"_a = 0)
      .def("choice", &S::choice, "p"_a, "n"_a, "replace"_a, "dtype"_a, "udtype"_a, "n_streams"_a = 0);
}

}  // namespace hypatia::python
