#include "errors.h"

#include <new>
#include <stdexcept>

#include "hypatia/hypatia.h"

namespace hypatia::python {
namespace {

struct ErrorClasses {
  PyObject* hypatia_error = nullptr;
  PyObject* internal_error = nullptr;
  PyObject* null_type_grad = nullptr;
  PyObject* disconnected_input = nullptr;
  PyObject* unused_input = nullptr;
  PyObject* missing_input = nullptr;
  PyObject* gradient_error = nullptr;
  PyObject* nan_guard = nullptr;
};
ErrorClasses g_err;

PyObject* new_class(nb::module_& m, const char* name, PyObject* base, const char* doc) {
  std::string full = std::string("hypatia.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(full.c_str(), doc, base, nullptr);
  if (!cls) throw nb::python_error();
  m.attr(name) = nb::handle(cls);
  return cls;
}

}  // namespace

void set_python_error(const std::exception_ptr& p) noexcept {
  try {
    std::rethrow_exception(p);
  } catch (nb::python_error& e) {
    e.restore();
  } catch (const nb::builtin_exception& e) {
    PyObject* type = PyExc_RuntimeError;
    switch (e.type()) {
      case nb::exception_type::type_error:
        type = PyExc_TypeError;
        break;
      case nb::exception_type::value_error:
        type = PyExc_ValueError;
        break;
      case nb::exception_type::index_error:
        type = PyExc_IndexError;
        break;
      case nb::exception_type::key_error:
        type = PyExc_KeyError;
        break;
      case nb::exception_type::attribute_error:
        type = PyExc_AttributeError;
        break;
      default:
        break;
    }
    PyErr_SetString(type, e.what());
  } catch (const Cancelled& e) {
    PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
  } catch (const NanGuardError& e) {
    PyErr_SetString(g_err.nan_guard, e.what());
  } catch (const GradientError& e) {
    PyErr_SetString(g_err.gradient_error, e.what());
  } catch (const DisconnectedInputError& e) {
    PyErr_SetString(g_err.disconnected_input, e.what());
  } catch (const UnusedInputError& e) {
    PyErr_SetString(g_err.unused_input, e.what());
  } catch (const MissingInputError& e) {
    PyErr_SetString(g_err.missing_input, e.what());
  } catch (const AssertionError& e) {
    PyErr_SetString(PyExc_AssertionError, e.what());
  } catch (const NotDifferentiableError& e) {
    PyErr_SetString(g_err.null_type_grad, e.what());
  } catch (const TypeError& e) {
    PyErr_SetString(PyExc_TypeError, e.what());
  } catch (const ValueError& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const IndexError& e) {
    PyErr_SetString(PyExc_IndexError, e.what());
  } catch (const MemoryError& e) {
    PyErr_SetString(PyExc_MemoryError, e.what());
  } catch (const NotImplementedError& e) {
    PyErr_SetString(PyExc_NotImplementedError, e.what());
  } catch (const Error& e) {
    PyErr_SetString(g_err.hypatia_error, e.what());
  } catch (const InternalError& e) {
    PyErr_SetString(g_err.internal_error, e.what());
  } catch (const std::bad_alloc&) {
    PyErr_SetString(PyExc_MemoryError, "hypatia: out of memory");
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "hypatia: unknown C++ exception");
  }
}

void init_errors(nb::module_& m) {
  g_err.hypatia_error = new_class(m, "HypatiaError", PyExc_RuntimeError, "An error in Hypatia's C++ engine.");
  g_err.internal_error =
      new_class(m, "InternalError", PyExc_RuntimeError, "A broken internal invariant: a bug in Hypatia.");
  g_err.null_type_grad = new_class(m, "NullTypeGradError", PyExc_TypeError,
                                   "A gradient was requested through an op or input where it is not defined.");
  g_err.disconnected_input = new_class(m, "DisconnectedInputError", PyExc_ValueError,
                                       "grad() was asked for the gradient w.r.t. a variable the cost does not use.");
  g_err.unused_input = new_class(m, "UnusedInputError", PyExc_ValueError,
                                 "function() was given an input that the outputs and updates do not use.");
  g_err.missing_input = new_class(m, "MissingInputError", PyExc_ValueError,
                                  "function() outputs need a variable that is not among the inputs.");
  g_err.gradient_error = new_class(m, "GradientError", PyExc_ValueError,
                                   "verify_grad: the analytic gradient disagrees with finite differences.");
  {
    // Theano's NanGuardMode raised AssertionError; a ValueError too, as the C++ class is.
    nb::object bases = nb::make_tuple(nb::handle(PyExc_AssertionError), nb::handle(PyExc_ValueError));
    PyObject* cls = PyErr_NewExceptionWithDoc("hypatia.NanGuardError",
                                              "NanGuardMode: a node produced NaN, an infinity or a big value.",
                                              bases.ptr(), nullptr);
    if (!cls) throw nb::python_error();
    m.attr("NanGuardError") = nb::handle(cls);
    g_err.nan_guard = cls;
  }
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const Error&) {
      set_python_error(p);
    } catch (const InternalError&) {
      set_python_error(p);
    } catch (const nb::cast_error&) {
      // A Python value of the wrong type reached C++ (e.g. a corrupted pickle's arguments):
      // say so instead of RuntimeError("std::bad_cast").
      PyErr_SetString(PyExc_TypeError,
                      "hypatia: a value of the wrong Python type was passed to the C++ engine (could not convert it "
                      "to the expected C++ type)");
    }
  });
}

}  // namespace hypatia::python
