#include "hypatia/runtime/nan_guard.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "hypatia/core/error.h"

namespace hypatia {
namespace {

struct Stats {
  int64_t nan = 0, inf = 0, big = 0, first_bad = -1;
  double min = std::numeric_limits<double>::infinity(), max = -std::numeric_limits<double>::infinity(), sum = 0;
  int64_t finite = 0;
};

Stats stats_of(const NDArray& a, const NanGuardOptions& o) {
  Stats s;
  for (int64_t i = 0; i < a.size(); ++i) {
    const double v = a.get_flat(i);
    const bool bad_nan = std::isnan(v), bad_inf = std::isinf(v), bad_big = !bad_inf && std::abs(v) > o.big_threshold;
    s.nan += bad_nan;
    s.inf += bad_inf;
    s.big += bad_big;
    if (s.first_bad < 0 && ((o.nan && bad_nan) || (o.inf && bad_inf) || (o.big && bad_big))) s.first_bad = i;
    if (!bad_nan && !bad_inf) {
      s.min = std::min(s.min, v);
      s.max = std::max(s.max, v);
      s.sum += v;
      ++s.finite;
    }
  }
  return s;
}

bool guarded(const NDArray& a) { return a.valid() && is_float(a.dtype()) && a.size() > 0; }

/// The values to check: a device array is copied to the host (NanGuardMode is a debugging mode:
/// on a device backend each checked value crosses once, so that the node that made a NaN is the
/// one named, not the transfer that brought it back).
NDArray on_host(const NDArray& a) { return a.on_host() ? a : a.to_device(Device::host()); }

std::string what_is_bad(const NDArray& a, const Stats& s) {
  const double v = a.get_flat(s.first_bad);
  std::ostringstream os;
  os << (std::isnan(v)   ? "NaN"
         : std::isinf(v) ? "an infinity"
                         : "a big value")
     << " (" << v << ") at flat index " << s.first_bad << " of " << a.describe() << "; " << s.nan << " NaN, " << s.inf
     << " infinities, " << s.big << " above the big threshold in all";
  return os.str();
}

std::string stats_text(const NDArray& a, const NanGuardOptions& o) {
  if (!guarded(a)) return a.valid() ? a.describe() : "none";
  const Stats s = stats_of(on_host(a), o);
  std::ostringstream os;
  os << a.describe() << ": ";
  if (s.finite > 0)
    os << "min " << s.min << ", max " << s.max << ", mean " << s.sum / static_cast<double>(s.finite) << " (finite)";
  else
    os << "no finite value";
  os << ", " << s.nan << " NaN, " << s.inf << " infinities";
  return os.str();
}

}  // namespace

void nan_guard_check(const Apply& node, const KernelArgs& args, const NanGuardOptions& o) {
  // An input nobody computed (a function input, shared variable or constant) that is already bad.
  for (size_t i = 0; i < args.in.size(); ++i) {
    const NDArray& a = *args.in[i];
    // Constants are the program's own (a stability rewrite may select a NaN constant on purpose):
    // what they produce is checked at the node's outputs.
    if (node.inputs[i]->owner || node.inputs[i]->is_constant() || !guarded(a)) continue;
    const NDArray h = on_host(a);
    const Stats s = stats_of(h, o);
    if (s.first_bad >= 0)
      fail<NanGuardError>("NanGuardMode: input ", node.inputs[i]->str(), " of the function holds ", what_is_bad(h, s),
                          "; it reaches ", node.op->name(), " as its input ", i);
  }
  for (size_t k = 0; k < args.out.size(); ++k) {
    const NDArray& a = *args.out[k];
    if (!guarded(a)) continue;
    const NDArray h = on_host(a);
    const Stats s = stats_of(h, o);
    if (s.first_bad < 0) continue;
    std::ostringstream os;
    os << "NanGuardMode: " << node.op->name() << " produced " << what_is_bad(h, s) << " in its output " << k
       << ". Its inputs:";
    for (size_t i = 0; i < args.in.size(); ++i) os << "\n  input " << i << ": " << stats_text(*args.in[i], o);
    fail<NanGuardError>(os.str());
  }
}

}  // namespace hypatia
