#include "hypatia/compile/debug_check.h"

#include <cmath>
#include <memory>
#include <sstream>
#include <unordered_map>

#include "hypatia/core/cancel.h"
#include "hypatia/core/error.h"

namespace hypatia {
namespace {

/// Whether v is computed (transitively) by a node that overwrites one of its inputs or has side
/// effects (a Print would print twice).
bool involves_inplace(const Var& v, std::unordered_map<const Variable*, bool>& memo) {
  if (!v->owner) return false;
  if (auto it = memo.find(v.get()); it != memo.end()) return it->second;
  bool r = !v->owner->op->destroy_map().empty() || v->owner->op->has_side_effects();
  for (const Var& in : v->owner->inputs) r = r || involves_inplace(in, memo);
  memo[v.get()] = r;
  return r;
}

/// Empty when `now` (the rewritten value) matches `before` within rounding; else the first mismatch.
std::string mismatch(const NDArray& before, const NDArray& now) {
  std::ostringstream os;
  if (!(before.shape() == now.shape()) || before.dtype() != now.dtype()) {
    os << "the old value is " << before.describe() << " but the new one is " << now.describe();
    return os.str();
  }
  const bool f32 = now.dtype() == DType::Float32;
  const bool exact = !is_float(now.dtype());
  const double rtol = exact ? 0 : (f32 ? 1e-3 : 1e-6), atol = exact ? 0 : (f32 ? 1e-4 : 1e-8);
  for (int64_t i = 0; i < now.size(); ++i) {
    const double x = before.get_flat(i), y = now.get_flat(i);
    if (x == y || (std::isnan(x) && std::isnan(y))) continue;
    if (!std::isfinite(x) && std::isfinite(y)) continue;  // a stability rewrite at work
    // An indeterminate form the rewrite resolved: Theano's cancellation x - x -> 0 turns the NaN
    // of inf - inf into 0, and neg(x) + (x + neg(x)) into -x (-inf at x = inf).
    if (std::isnan(x)) continue;
    if (std::abs(x - y) <= atol + rtol * std::abs(x)) continue;
    os << "at flat index " << i << " the old value is " << x << " and the new one " << y << " (shape "
       << now.shape().str() << ")";
    return os.str();
  }
  return "";
}

}  // namespace

std::function<void(std::span<const NDArray>)> make_rewrite_check(const std::vector<In>& inputs,
                                                                 const std::vector<Replacement>& log,
                                                                 const std::string& label,
                                                                 const std::string& oracle_backend) {
  std::unordered_map<const Variable*, bool> memo;
  std::unordered_map<const Variable*, int> index;
  std::vector<Out> outs;
  struct Pair {
    int old_index, new_index;
    std::string reason, old_str, new_str;
  };
  auto pairs = std::make_shared<std::vector<Pair>>();
  auto out_index = [&](const Var& v) {
    auto [it, fresh] = index.emplace(v.get(), static_cast<int>(outs.size()));
    if (fresh) outs.emplace_back(v);
    return it->second;
  };
  for (const Replacement& r : log) {
    if (involves_inplace(r.old_var, memo) || involves_inplace(r.new_var, memo)) continue;
    if (!r.old_var->owner && !r.new_var->owner) continue;
    auto describe = [](const Var& v) {
      std::ostringstream os;
      os << v->str();
      if (v->owner) os << " = " << v->owner->op->name() << "(...)";
      return os.str();
    };
    pairs->push_back({out_index(r.old_var), out_index(r.new_var), r.reason, describe(r.old_var), describe(r.new_var)});
  }
  if (pairs->empty()) return nullptr;
  std::vector<In> ins;
  for (const In& in : inputs) ins.emplace_back(in.variable);
  FunctionOptions opts;
  opts.mode = "NONE";
  opts.rewrite = false;
  opts.backend = oracle_backend;
  opts.on_unused_input = "ignore";
  opts.allow_gc = true;
  opts.profile = false;
  opts.name = label + " (DebugMode's unoptimized graph)";
  auto aux = std::make_shared<Function>(function(std::move(ins), std::move(outs), opts));
  return [aux, pairs, label](std::span<const NDArray> args) {
    std::vector<NDArray> a(args.begin(), args.end());
    std::vector<NDArray> values;
    try {
      values = (*aux)(a);
    } catch (const Cancelled&) {
      throw;
    } catch (const Error&) {
      // A replaced value that cannot be computed on these arguments: one the call never computes
      // (a lazy branch not taken, say: the check computes every value), or one that fails the
      // call itself, which then raises its own error. Nothing to compare.
      return;
    }
    for (const Pair& p : *pairs)
      if (std::string why = mismatch(values[p.old_index], values[p.new_index]); !why.empty())
        fail<InternalError>(label, ": DebugMode: BadOptimization: rewrite '", p.reason, "' replaced ", p.old_str,
                            " by ", p.new_str, " but the values differ: ", why);
  };
}

}  // namespace hypatia
