// Exceptions a user can cause, and the internal assertion macro.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace hypatia {

/// Base of every exception Hypatia throws on bad user input.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// Wrong dtype, ndim, broadcastable pattern or op argument type (Python: TypeError).
class TypeError : public Error {
 public:
  using Error::Error;
};
/// Bad value or shape (Python: ValueError).
class ValueError : public Error {
 public:
  using Error::Error;
};
/// Out-of-range index (Python: IndexError).
class IndexError : public Error {
 public:
  using Error::Error;
};
/// A valid request the machine cannot satisfy: an allocation that failed (Python: MemoryError).
/// The message names the bytes asked for (and, from a compiled function, the node).
class MemoryError : public Error {
 public:
  using Error::Error;
};
/// gradient requested through an op or input where it is not defined.
class NotDifferentiableError : public TypeError {
 public:
  using TypeError::TypeError;
};
/// grad() wrt a variable the cost does not depend on, with disconnected_inputs='raise'.
class DisconnectedInputError : public ValueError {
 public:
  using ValueError::ValueError;
};
/// function() given an input the outputs do not use, with on_unused_input='raise'.
class UnusedInputError : public ValueError {
 public:
  using ValueError::ValueError;
};
/// function() outputs depend on a variable that is neither an input, a shared variable nor a constant.
class MissingInputError : public ValueError {
 public:
  using ValueError::ValueError;
};
/// NanGuardMode: a node produced (or a function input holds) NaN, an infinity or a huge value.
class NanGuardError : public ValueError {
 public:
  using ValueError::ValueError;
};
/// A run-time check the user's graph asked for failed: Assert, SpecifyShape (Python:
/// AssertionError, as Theano raised).
class AssertionError : public ValueError {
 public:
  using ValueError::ValueError;
};
/// Something this build cannot do: e.g. no kernel for an op on the chosen backend.
class NotImplementedError : public Error {
 public:
  using Error::Error;
};
/// Internal invariant broken: a bug in Hypatia, never the user's fault.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

namespace detail {
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

/// Throws E with the streamed arguments as its message.
template <class E = Error, class... Args>
[[noreturn]] void fail(const Args&... args) {
  throw E(detail::concat(args...));
}

}  // namespace hypatia

/// Internal invariant check: throws InternalError with file, line and a message.
#define HYP_ASSERT(cond, ...)                                                                                        \
  do {                                                                                                               \
    if (!(cond))                                                                                                     \
      throw ::hypatia::InternalError(::hypatia::detail::concat(__FILE__, ":", __LINE__, ": internal error: ", #cond, \
                                                               " failed. " __VA_OPT__(, ) __VA_ARGS__));             \
  } while (0)
