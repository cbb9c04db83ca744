// hypatia.config: Theano's settings, read from ~/.hypatiarc and HYPATIA_FLAGS, settable in code.
#include "bindings.h"
#include "hypatia/backends/cpu/gemm_provider.h"

namespace hypatia::python {

void init_config(nb::module_& m) {
  m.def(
      "config_load",
      [] {
        // Reads ~/.hypatiarc and HYPATIA_FLAGS now (import time), so that a malformed one fails
        // the import with its message; the warnings come back for warnings.warn.
        std::vector<std::string> warnings;
        set_config_warning_handler([&warnings](const std::string& w) { warnings.push_back(w); });
        try {
          config();
        } catch (...) {
          set_config_warning_handler(nullptr);
          throw;
        }
        set_config_warning_handler(nullptr);
        return warnings;
      },
      "Reads ~/.hypatiarc and HYPATIA_FLAGS (ValueError naming the source, line and expected form when one "
      "is malformed); returns the warnings (ignored Theano options and sections).");
  m.def(
      "config_get", [](const std::string& key) { return config().get(key); }, "key"_a,
      "A setting as text; ValueError for an unknown key.");
  m.def(
      "config_set", [](const std::string& key, const std::string& value) { config().set(key, value); }, "key"_a,
      "value"_a, "Sets a setting from text (ValueError for an unknown key or a bad value).");
  m.def(
      "config_apply_flags", [](const std::string& flags) { config().apply_flags(flags, "flags"); }, "flags"_a,
      "Applies 'key=value,key=value' (the HYPATIA_FLAGS format).");
  m.def(
      "config_is_ignored_theano_option", [](const std::string& key) { return is_ignored_theano_option(key); }, "key"_a,
      "Whether key is a Theano option that Hypatia does not have (ignored with a warning).");
  m.def(
      "gemm_choices",
      [] {
        std::vector<nb::dict> out;
        for (const GemmChoice& c : hypatia::gemm_choices()) {
          nb::dict d;
          d["size_class"] = c.size_class;
          d["max_macs"] = c.max_macs;
          d["shape"] = nb::make_tuple(c.m, c.n, c.k);
          d["openblas_gflops"] = c.openblas_gflops;
          d["onednn_gflops"] = c.onednn_gflops;
          d["chosen"] = c.chosen;
          out.push_back(std::move(d));
        }
        return out;
      },
      "What blas=auto measured per size class of float32 GEMM call (timing the classes not yet used).");
}

}  // namespace hypatia::python
