// Random numbers: the MRG31k3p op classes and RandomFunction (attributes, constructors, pickling),
// the stream helpers, and the C++ MRGRandomStreams and RandomStreams that
// hypatia.sandbox.rng_mrg and hypatia.tensor.shared_randomstreams wrap with Theano's signatures.
#include "bindings.h"
#include "hypatia/ops/random.h"
#include "hypatia/ops/random_streams.h"

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

RandomDist dist_from_name(const std::string& name) {
  for (int d = 0; d <= static_cast<int>(RandomDist::Beta); ++d)
    if (random_dist_name(static_cast<RandomDist>(d)) == name) return static_cast<RandomDist>(d);
  throw ValueError("unknown distribution '" + name + "'");
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

  nb::class_<RandomFunction, Op>(m, "RandomFunction",
                                 "Theano's RandomFunction: (state, size, parameters...) -> (new state, draws), "
                                 "numpy RandomState's numbers.")
      .def(
          "__init__",
          [](RandomFunction* self, const std::string& dist, DType dtype, std::vector<bool> bc) {
            new (self) RandomFunction(dist_from_name(dist), dtype, std::move(bc));
          },
          "dist"_a, "dtype"_a, "broadcastable"_a)
      .def_prop_ro("dist", [](const RandomFunction& op) { return std::string(random_dist_name(op.dist)); })
      .def_ro("dtype", &RandomFunction::dtype)
      .def_prop_ro("broadcastable", [](const RandomFunction& op) { return op.broadcastable; })
      .def_prop_ro("ndim_added", &RandomFunction::ndim_added)
      .def("__reduce__", [](const RandomFunction& op) {
        return nb::make_tuple(rebuild_op(), nb::make_tuple(nb::type<RandomFunction>(),
                                                           nb::make_tuple(std::string(random_dist_name(op.dist)),
                                                                          op.dtype, op.broadcastable)));
      });
  m.def("random_state_from_seed", &random_state_from_seed, "seed"_a,
        "The state numpy's RandomState(seed) starts from (uint32 words).");
  m.attr("random_state_words") = kRandomStateWords;
  nb::class_<RandomStreams>(m, "RandomStreams", "Theano's RandomStreams (C++ core).")
      .def(nb::init<std::optional<uint32_t>>(), "seed"_a.none())
      .def("seed", &RandomStreams::seed, "seed"_a.none() = nb::none())
      .def_prop_ro("state_updates",
                   [](const RandomStreams& s) {
                     nb::list l;
                     for (const auto& [a, b] : s.state_updates()) l.append(nb::make_tuple(a, b));
                     return l;
                   })
      .def("new_state", &RandomStreams::new_state)
      .def("add_update", &RandomStreams::add_update, "state"_a, "new_state"_a)
      .def_prop_ro("default_seed", &RandomStreams::default_seed)
      .def_prop_ro("seed_generator", &RandomStreams::seed_generator)
      .def("set_seed_generator", &RandomStreams::set_seed_generator, "words"_a);
  m.def(
      "random_draw",
      [](const std::string& dist, Var state, std::optional<Var> size, std::vector<Var> params, DType dtype, int ndim) {
        return random_draw(dist_from_name(dist), std::move(state), size ? *size : Var(), std::move(params), dtype,
                           ndim);
      },
      "dist"_a, "state"_a, "size"_a.none(), "params"_a, "dtype"_a, "ndim"_a = -1,
      "(new state, draws) of a RandomFunction node (Theano's raw_random functions).");

  using S = MRGRandomStreams;
  nb::class_<S>(m, "MRGRandomStreams", "Theano 1.0's MRG_RandomStreams (C++ core).")
      .def(nb::init<const std::vector<int64_t>&>(), "seed"_a)
      .def_prop_ro("rstate", [](const S& s) { return state_list(s.rstate()); })
      .def("set_rstate", &S::set_rstate, "seed"_a)
      .def("inc_rstate", [](S& s) { s.get_substream_rstates(1, true); })
      .def("seed", &S::seed, "seed"_a.none() = nb::none())
      .def("get_substream_rstates", &S::get_substream_rstates, "n_streams"_a, "inc"_a = true)
      .def_prop_ro("default_seed", &S::default_seed)
      .def("add_state_update", &S::add_state_update, "state"_a, "new_state"_a, "n_streams"_a)
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
