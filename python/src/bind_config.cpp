// hypatia.config: Theano's settings, read from ~/.hypatiarc and HYPATIA_FLAGS, settable in code.
#include "bindings.h"

namespace hypatia::python {

void init_config(nb::module_& m) {
  m.def(
      "config_get", [](const std::string& key) { return config().get(key); }, "key"_a,
      "A setting as text; ValueError for an unknown key.");
  m.def(
      "config_set", [](const std::string& key, const std::string& value) { config().set(key, value); }, "key"_a,
      "value"_a, "Sets a setting from text (ValueError for an unknown key or a bad value).");
  m.def(
      "config_apply_flags", [](const std::string& flags) { config().apply_flags(flags); }, "flags"_a,
      "Applies 'key=value,key=value' (the HYPATIA_FLAGS format).");
}

}  // namespace hypatia::python
