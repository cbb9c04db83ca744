// Rewrite rules written as S-expression patterns over Elemwise scalar ops:
//
//   register_local_rewrite("stabilize", pattern_rewrite("local_log1p", "(log (add 1 x))", "(log1p x)"));
//
// Atoms: an op name as Elemwise prints it (scalar_op_name: "add", "true_div", "log1p"; Cast, which
// needs an attribute, is not available), a number (matches a constant whose elements all equal it,
// looking through DimShuffles; "nan" and "inf" are numbers too), or a variable (a lower-case
// identifier that is not an op name; the same name twice must bind the same Var).
// Matching: only non-in-place Elemwise nodes; add and mul match in either argument order (with full
// backtracking, so nested alternatives are all tried); intermediate nodes may have other readers
// (they stay for them). The replacement is built with the elementwise builders (its constants
// take the matched output's dtype) and made to the matched output's exact type (rewrite::as_type);
// when that is impossible (the result would need broadcasting) the rule does not fire.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hypatia/ops/elemwise.h"
#include "hypatia/rewrite/rewriter.h"

namespace hypatia::rewrite {

/// One parsed pattern term: an op application, a numeric constant or a variable.
struct PatternExpr {
  enum class Kind { Op, Constant, Variable };
  Kind kind = Kind::Variable;
  ScalarOpKind op = ScalarOpKind::Identity;  // Kind::Op
  double value = 0;                          // Kind::Constant
  std::string name;                          // Kind::Variable
  std::vector<PatternExpr> args;             // Kind::Op
  /// Offset of the term in the pattern text (for error messages).
  size_t pos = 0;
  /// The canonical text: "(log (add 1 x))".
  std::string str() const;
};

/// Parses `text`; a malformed pattern throws ValueError naming `rule`, the position of the
/// problem and the text ("pattern_rewrite 'local_x': unknown op 'lgo' at position 1 of ...").
/// `what` names the text in messages ("pattern" or "replacement").
PatternExpr parse_pattern(std::string_view text, std::string_view rule = "", std::string_view what = "pattern");

/// What a match bound: the root node and each variable's Var.
struct PatternMatch {
  const Apply* node = nullptr;
  std::vector<std::pair<std::string, Var>> vars;
  /// The Var bound to `name` (null when unbound).
  Var get(std::string_view name) const;
  /// The matched output's type.
  const TensorType& out_type() const { return node->output_ptr(0)->type; }
};

/// Extra condition on a match ("x must be float"). Failing it makes the matcher try the other
/// argument orders of add/mul before giving up.
using PatternConstraint = std::function<bool(const PatternMatch&)>;

/// Matches `pattern` (an op application) against node `n`; calls `accept` on each complete
/// binding in turn until it returns true. Returns whether one was accepted.
bool match_pattern(const PatternExpr& pattern, const Apply& n, const std::function<bool(const PatternMatch&)>& accept);
/// The first binding of `pattern` on v's owner, or nothing.
std::optional<PatternMatch> match_pattern(const PatternExpr& pattern, const Var& v);

/// Builds `replacement` from a match's bindings (constants of dtype `dt`). Throws on a
/// variable the match did not bind, or a type error of the builders.
Var build_pattern(const PatternExpr& replacement, const PatternMatch& m, DType dt);

/// A local rewrite (tracked on Elemwise) replacing what matches `pattern` by `replacement`.
/// Checks both texts now: a malformed one, a replacement variable the pattern does not bind, or a
/// pattern that is not an op application throws ValueError naming the rule.
LocalRewrite pattern_rewrite(std::string name, std::string_view pattern, std::string_view replacement,
                             PatternConstraint constraint = {});

/// Common constraints.
/// The matched output has a float dtype.
PatternConstraint float_output();
/// Each named variable has a float dtype.
PatternConstraint float_vars(std::vector<std::string> names);
/// Each named variable is float or has the matched output's dtype (so that negating or
/// squaring it in its own dtype gives what the output's dtype would: no integer wrap-around
/// differs).
PatternConstraint exact_in_output_dtype(std::vector<std::string> names);
/// Each named variable has exactly the matched output's dtype.
PatternConstraint output_dtype_vars(std::vector<std::string> names);
/// All of the constraints hold.
PatternConstraint all_of(std::vector<PatternConstraint> cs);

}  // namespace hypatia::rewrite
