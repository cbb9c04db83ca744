// C++ exceptions -> Python exceptions with Theano's class names, keeping the C++ message.
#pragma once
#include <nanobind/nanobind.h>

#include <exception>

namespace hypatia::python {
namespace nb = nanobind;

/// Creates the exception classes (UnusedInputError, DisconnectedInputError, MissingInputError,
/// NullTypeGradError, GradientError, HypatiaError, InternalError) in `m` and registers the translator:
/// hypatia::TypeError -> TypeError, ValueError -> ValueError, IndexError -> IndexError, and each
/// named subclass -> its class (a subclass of the matching built-in).
void init_errors(nb::module_& m);

/// Sets the Python error for exception `e` (any type; a nanobind python_error is restored). For
/// code that runs outside nanobind's dispatch (the Function call slot).
void set_python_error(const std::exception_ptr& e) noexcept;

}  // namespace hypatia::python
