#include "hypatia/graph/printing.h"

#include <functional>
#include <sstream>
#include <unordered_map>

namespace hypatia {
namespace {
std::string id_label(size_t n) {
  std::string s;
  do {
    s.push_back(static_cast<char>('A' + n % 26));
    n /= 26;
  } while (n-- > 0);
  return std::string(s.rbegin(), s.rend());
}
}  // namespace

std::string debugprint(const std::vector<Var>& outputs, const DebugPrintOptions& opts,
                       const std::vector<std::shared_ptr<Apply>>* order) {
  std::ostringstream os;
  std::unordered_map<const void*, std::string> ids;  // Apply* for outputs, Variable* for leaves
  std::unordered_map<const Apply*, size_t> position;
  if (order)
    for (size_t i = 0; i < order->size(); ++i) position[(*order)[i].get()] = i;
  std::unordered_map<const Apply*, bool> expanded;
  std::function<void(const Var&, const std::string&, const std::string&, int)> rec =
      [&](const Var& v, const std::string& prefix, const std::string& child_prefix, int depth) {
        const void* key = v->owner ? static_cast<const void*>(v->owner) : static_cast<const void*>(v.get());
        bool fresh = !ids.count(key);
        if (fresh) ids[key] = id_label(ids.size());
        os << prefix;
        if (v->owner) {
          os << v->owner->op->name();
          if (v->owner->nout() > 1) os << "." << v->index;
        } else {
          os << v->str();
        }
        os << " [id " << ids[key] << "]";
        if (opts.print_type) os << " <" << v->type.str() << ">";
        if (v->owner) {
          os << " '" << v->name << "'";
          if (auto it = position.find(v->owner); it != position.end()) os << "   " << it->second;
          if (opts.provenance) {
            const Apply& n = *v->owner;
            os << "  [" << (n.made_by.empty() ? "as written" : "by " + n.made_by) << "; "
               << (n.trace.empty() ? "built in C++" : "built at " + n.trace) << "]";
          }
        }
        os << "\n";
        if (!v->owner || !fresh || (opts.depth >= 0 && depth >= opts.depth)) return;
        for (const auto& in : v->owner->inputs) rec(in, child_prefix + " |", child_prefix + " |", depth + 1);
      };
  for (const auto& o : outputs) rec(o, "", "", 0);
  return os.str();
}

std::string debugprint(const Var& output, const DebugPrintOptions& opts) {
  return debugprint(std::vector<Var>{output}, opts);
}

std::string debugprint(const FunctionGraph& fg, const DebugPrintOptions& opts) {
  auto order = fg.toposort();
  return debugprint(fg.outputs(), opts, &order);
}

}  // namespace hypatia
