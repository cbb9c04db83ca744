// The pattern form of local rewrites: parser, matcher (commutative add/mul with backtracking),
// builder of the replacement. See pattern.h.
#include "hypatia/rewrite/pattern.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>
#include <typeinfo>

#include "hypatia/core/error.h"
#include "hypatia/rewrite/rewrite_util.h"

namespace hypatia::rewrite {
namespace {

/// Op name -> kind, for every kind but Cast (whose output dtype is an attribute).
const std::map<std::string, ScalarOpKind, std::less<>>& op_table() {
  static const std::map<std::string, ScalarOpKind, std::less<>> table = [] {
    std::map<std::string, ScalarOpKind, std::less<>> t;
    for (int k = 0; k <= static_cast<int>(ScalarOpKind::Switch); ++k) {
      const auto kind = static_cast<ScalarOpKind>(k);
      if (kind != ScalarOpKind::Cast) t.emplace(std::string(scalar_op_name(kind)), kind);
    }
    return t;
  }();
  return table;
}

bool is_delim(char c) { return c == '(' || c == ')' || std::isspace(static_cast<unsigned char>(c)); }

bool is_identifier(std::string_view s) {
  if (s.empty() || s[0] < 'a' || s[0] > 'z') return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view rule, std::string_view what) : text_(text), rule_(rule), what_(what) {}

  PatternExpr parse() {
    skip_ws();
    if (i_ == text_.size()) error(i_, "empty pattern");
    PatternExpr e = expr();
    skip_ws();
    if (i_ < text_.size()) error(i_, "unexpected text after the end of the expression");
    return e;
  }

 private:
  std::string_view text_, rule_, what_;
  size_t i_ = 0;

  template <class... Args>
  [[noreturn]] void error(size_t pos, const Args&... msg) const {
    fail<ValueError>("pattern_rewrite '", rule_, "': ", msg..., " at position ", pos, " of the ", what_, " \"", text_,
                     "\"");
  }

  void skip_ws() {
    while (i_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[i_]))) ++i_;
  }

  std::string_view atom() {
    const size_t start = i_;
    while (i_ < text_.size() && !is_delim(text_[i_])) ++i_;
    return text_.substr(start, i_ - start);
  }

  PatternExpr expr() {
    skip_ws();
    if (i_ == text_.size()) error(i_, "unexpected end of the text (an argument is missing)");
    const size_t pos = i_;
    if (text_[i_] == ')') error(i_, "unexpected ')'");
    if (text_[i_] == '(') return application();
    std::string_view tok = atom();
    PatternExpr e;
    e.pos = pos;
    const char c0 = tok[0];
    if ((c0 >= '0' && c0 <= '9') || c0 == '-' || c0 == '+' || c0 == '.' || tok == "nan" || tok == "inf") {
      const std::string s(tok);
      char* end = nullptr;
      e.value = std::strtod(s.c_str(), &end);
      if (end != s.c_str() + s.size()) error(pos, "bad number '", tok, "'");
      e.kind = PatternExpr::Kind::Constant;
      return e;
    }
    if (!is_identifier(tok))
      error(pos, "unexpected '", tok, "' (expected '(', a number or a variable: a lower-case identifier)");
    if (op_table().count(tok))
      error(pos, "op name '", tok, "' used as a variable (apply it: (", tok, " ...), or rename the variable)");
    e.kind = PatternExpr::Kind::Variable;
    e.name = std::string(tok);
    return e;
  }

  PatternExpr application() {
    const size_t open = i_++;
    skip_ws();
    if (i_ == text_.size()) error(open, "unclosed '('");
    if (text_[i_] == ')') error(open, "empty application '()'");
    if (text_[i_] == '(') error(i_, "expected an op name after '('");
    const size_t op_pos = i_;
    std::string_view name = atom();
    auto it = op_table().find(name);
    if (it == op_table().end()) {
      if (name == "cast") error(op_pos, "cast is not available in patterns (its dtype is an attribute)");
      error(op_pos, "unknown op '", name, "' (expected an Elemwise scalar op name such as add, mul, log1p, sigmoid)");
    }
    PatternExpr e;
    e.kind = PatternExpr::Kind::Op;
    e.op = it->second;
    e.pos = open;
    for (;;) {
      skip_ws();
      if (i_ == text_.size()) error(open, "unclosed '('");
      if (text_[i_] == ')') {
        ++i_;
        break;
      }
      e.args.push_back(expr());
    }
    const int arity = scalar_op_arity(e.op);
    if (static_cast<int>(e.args.size()) != arity)
      error(open, "'", name, "' takes ", arity, (arity == 1 ? " argument" : " arguments"), ", got ", e.args.size());
    return e;
  }
};

bool constant_equals(double graph_value, double pattern_value, DType dt) {
  if (std::isnan(pattern_value)) return std::isnan(graph_value);
  // A float32 constant holds the pattern's number rounded to float32.
  const double want = dt == DType::Float32 ? static_cast<double>(static_cast<float>(pattern_value)) : pattern_value;
  return graph_value == want;
}

bool commutative(ScalarOpKind k) { return k == ScalarOpKind::Add || k == ScalarOpKind::Mul; }

/// Backtracking matcher: each step calls its continuation on success and undoes its bindings
/// when the continuation fails, so every alternative (argument orders of add and mul, at any
/// depth) is tried before a match fails.
class Matcher {
 public:
  using Cont = std::function<bool()>;
  std::vector<std::pair<std::string, Var>> vars;

  bool match(const PatternExpr& p, const Var& v, const Cont& k) {
    if (!v) return false;
    switch (p.kind) {
      case PatternExpr::Kind::Variable: {
        for (const auto& [name, bound] : vars)
          if (name == p.name) return bound.get() == v.get() && k();
        vars.emplace_back(p.name, v);
        if (k()) return true;
        vars.pop_back();
        return false;
      }
      case PatternExpr::Kind::Constant: {
        auto c = scalar_constant(v);
        return c && constant_equals(*c, p.value, v->dtype()) && k();
      }
      case PatternExpr::Kind::Op: {
        const Elemwise* e = elemwise_op(v->owner);
        return e && e->scalar == p.op && match_node(p, *v->owner, k);
      }
    }
    return false;
  }

  /// p (an op application of n's scalar op) against n's inputs.
  bool match_node(const PatternExpr& p, const Apply& n, const Cont& k) {
    if (n.inputs.size() != p.args.size()) return false;
    if (match_args(p, n, false, 0, k)) return true;
    return commutative(p.op) && p.args.size() == 2 && match_args(p, n, true, 0, k);
  }

 private:
  bool match_args(const PatternExpr& p, const Apply& n, bool swap, size_t j, const Cont& k) {
    if (j == p.args.size()) return k();
    const size_t input = swap ? p.args.size() - 1 - j : j;
    return match(p.args[j], n.inputs[input], [&] { return match_args(p, n, swap, j + 1, k); });
  }
};

void collect_vars(const PatternExpr& e, std::vector<const PatternExpr*>& out) {
  if (e.kind == PatternExpr::Kind::Variable) out.push_back(&e);
  for (const auto& a : e.args) collect_vars(a, out);
}

}  // namespace

std::string PatternExpr::str() const {
  std::ostringstream os;
  switch (kind) {
    case Kind::Variable:
      os << name;
      break;
    case Kind::Constant:
      os << std::setprecision(17) << value;
      break;
    case Kind::Op:
      os << "(" << scalar_op_name(op);
      for (const auto& a : args) os << " " << a.str();
      os << ")";
      break;
  }
  return os.str();
}

PatternExpr parse_pattern(std::string_view text, std::string_view rule, std::string_view what) {
  return Parser(text, rule, what).parse();
}

Var PatternMatch::get(std::string_view name) const {
  for (const auto& [n, v] : vars)
    if (n == name) return v;
  return nullptr;
}

bool match_pattern(const PatternExpr& pattern, const Apply& n, const std::function<bool(const PatternMatch&)>& accept) {
  if (pattern.kind != PatternExpr::Kind::Op || n.nout() != 1) return false;
  const Elemwise* e = elemwise_op(&n);
  if (!e || e->scalar != pattern.op) return false;
  Matcher m;
  return m.match_node(pattern, n, [&] {
    PatternMatch pm;
    pm.node = &n;
    pm.vars = m.vars;
    return accept(pm);
  });
}

std::optional<PatternMatch> match_pattern(const PatternExpr& pattern, const Var& v) {
  if (!v || !v->owner) return std::nullopt;
  std::optional<PatternMatch> r;
  match_pattern(pattern, *v->owner, [&](const PatternMatch& m) {
    r = m;
    return true;
  });
  return r;
}

Var build_pattern(const PatternExpr& r, const PatternMatch& m, DType dt) {
  switch (r.kind) {
    case PatternExpr::Kind::Variable: {
      Var v = m.get(r.name);
      if (!v) fail<ValueError>("build_pattern: variable '", r.name, "' is not bound by the match");
      return v;
    }
    case PatternExpr::Kind::Constant:
      return constant(r.value, dt);
    case PatternExpr::Kind::Op: {
      std::vector<Var> args;
      for (const auto& a : r.args) args.push_back(build_pattern(a, m, dt));
      return elemwise(r.op, std::move(args));
    }
  }
  fail<InternalError>("build_pattern: bad pattern kind");
}

LocalRewrite pattern_rewrite(std::string name, std::string_view pattern, std::string_view replacement,
                             PatternConstraint constraint) {
  auto lhs = std::make_shared<const PatternExpr>(parse_pattern(pattern, name, "pattern"));
  auto rhs = std::make_shared<const PatternExpr>(parse_pattern(replacement, name, "replacement"));
  if (lhs->kind != PatternExpr::Kind::Op)
    fail<ValueError>("pattern_rewrite '", name, "': the pattern must be an op application such as (log x), got '",
                     lhs->str(), "' at position ", lhs->pos, " of the pattern \"", pattern, "\"");
  std::vector<const PatternExpr*> lhs_vars, rhs_vars;
  collect_vars(*lhs, lhs_vars);
  collect_vars(*rhs, rhs_vars);
  for (const PatternExpr* v : rhs_vars) {
    bool bound = false;
    for (const PatternExpr* u : lhs_vars) bound = bound || u->name == v->name;
    if (!bound)
      fail<ValueError>("pattern_rewrite '", name, "': variable '", v->name, "' at position ", v->pos,
                       " of the replacement \"", replacement, "\" does not appear in the pattern \"", pattern, "\"");
  }
  if (rhs_vars.empty())
    fail<ValueError>("pattern_rewrite '", name, "': the replacement \"", replacement,
                     "\" uses no variable of the pattern, so it could not take the matched output's shape");
  if (lhs->str() == rhs->str())
    fail<ValueError>("pattern_rewrite '", name, "': the replacement equals the pattern \"", pattern, "\"");
  LocalRewriteFn fn = [lhs, rhs, constraint](FunctionGraph&, Apply& n) -> std::optional<std::vector<Var>> {
    Var result;
    match_pattern(*lhs, n, [&](const PatternMatch& m) {
      if (constraint && !constraint(m)) return false;
      try {
        result = as_type(build_pattern(*rhs, m, m.out_type().dtype), m.out_type());
      } catch (const Error&) {
        result = nullptr;  // a builder's type error (say neg of bool): this binding does not apply
      }
      return result != nullptr;
    });
    return one(result);
  };
  return LocalRewrite{std::move(name), {typeid(Elemwise)}, std::move(fn)};
}

PatternConstraint float_output() {
  return [](const PatternMatch& m) { return is_float(m.out_type().dtype); };
}

PatternConstraint float_vars(std::vector<std::string> names) {
  return [names = std::move(names)](const PatternMatch& m) {
    for (const auto& n : names) {
      Var v = m.get(n);
      if (!v || !is_float(v->dtype())) return false;
    }
    return true;
  };
}

PatternConstraint exact_in_output_dtype(std::vector<std::string> names) {
  return [names = std::move(names)](const PatternMatch& m) {
    for (const auto& n : names) {
      Var v = m.get(n);
      if (!v || !(is_float(v->dtype()) || v->dtype() == m.out_type().dtype)) return false;
    }
    return true;
  };
}

PatternConstraint output_dtype_vars(std::vector<std::string> names) {
  return [names = std::move(names)](const PatternMatch& m) {
    for (const auto& n : names) {
      Var v = m.get(n);
      if (!v || v->dtype() != m.out_type().dtype) return false;
    }
    return true;
  };
}

PatternConstraint all_of(std::vector<PatternConstraint> cs) {
  return [cs = std::move(cs)](const PatternMatch& m) {
    for (const auto& c : cs)
      if (c && !c(m)) return false;
    return true;
  };
}

}  // namespace hypatia::rewrite
