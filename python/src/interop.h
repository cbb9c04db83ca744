// numpy <-> NDArray without copies, Python values -> typed arrays (Theano's TensorType.filter),
// and the nanobind type casters that let bindings take and return NDArray and DType directly.
#pragma once
#include <nanobind/nanobind.h>

#include <optional>

#include "hypatia/hypatia.h"

namespace hypatia::python {
namespace nb = nanobind;

/// Imports numpy's C API and creates the buffer-owner type; called once by the module init.
void init_interop(nb::module_& m);

/// Whether `obj` is a numpy.ndarray (or a subclass).
bool is_numpy_array(PyObject* obj);

/// An NDArray over any Python value: a numpy array whose dtype Hypatia supports (native byte
/// order, aligned) is viewed in place, strides and offset included; anything else (Python scalars,
/// lists, numpy scalars, objects with __array__) goes through numpy.asarray first. Throws
/// hypatia::TypeError for dtypes Hypatia lacks (complex, long double, object, strings).
NDArray to_ndarray(PyObject* obj);

/// How a function input or a shared variable accepts a value of another dtype (Theano's
/// allow_input_downcast / allow_downcast): None is Theano's default.
enum class Downcast : int8_t { None = -1, No = 0, Yes = 1 };

/// Theano's TensorType.filter: `obj` as a value of `type`'s dtype. numpy arrays keep their dtype
/// when it matches, are upcast safely, and are downcast only with Downcast::Yes. Other values
/// (Python scalars, lists) are converted when the conversion is exact, when Downcast::Yes, or (with
/// Downcast::None) when a Python float goes to floatX. The ndim and broadcastable checks are left to
/// the caller (function calls and set_value check them in C++). `who` starts error messages;
/// offer_downcast_flag: they may suggest allow_input_downcast (function inputs only).
NDArray filter_value(PyObject* obj, const TensorType& type, Downcast downcast, const char* who,
                     bool offer_downcast_flag = false);

/// A numpy array viewing `a` (new reference): it keeps `a`'s buffer alive, so it stays valid after
/// `a` is gone. Returns nullptr with a Python error set on failure.
PyObject* to_numpy(const NDArray& a, bool writeable = true);
/// What Python gets for `a`: a numpy array viewing it (to_numpy) for a host array, a GpuArray
/// (device_array.h) for an array on a device, which stays there.
PyObject* to_python(const NDArray& a, bool writeable = true);
/// numpy's dtype object for `dt` (new reference).
PyObject* numpy_dtype(DType dt);

/// A dtype given as a name ("float32", "floatX"), a numpy dtype or scalar type, or a Python type.
std::optional<DType> dtype_from_python(PyObject* obj);

}  // namespace hypatia::python

namespace nanobind::detail {

/// NDArray <-> numpy.ndarray (zero-copy both ways; other Python values are converted by numpy), or
/// hypatia.gpuarray.GpuArray for arrays on a device.
template <>
struct type_caster<hypatia::NDArray> {
  NB_TYPE_CASTER(hypatia::NDArray, io_name("numpy.typing.ArrayLike", "numpy.typing.NDArray"))
  bool from_python(handle src, uint32_t flags, cleanup_list*) noexcept;
  static handle from_cpp(const hypatia::NDArray& a, rv_policy, cleanup_list*) noexcept {
    return hypatia::python::to_python(a);
  }
};

/// DType <-> its numpy name ("float32"); accepts names, numpy dtypes and scalar types.
template <>
struct type_caster<hypatia::DType> {
  NB_TYPE_CASTER(hypatia::DType, io_name("str | numpy.typing.DTypeLike", "str"))
  bool from_python(handle src, uint32_t, cleanup_list*) noexcept {
    auto dt = hypatia::python::dtype_from_python(src.ptr());
    if (!dt) return false;
    value = *dt;
    return true;
  }
  static handle from_cpp(hypatia::DType dt, rv_policy, cleanup_list*) noexcept {
    auto name = hypatia::dtype_name(dt);
    return PyUnicode_FromStringAndSize(name.data(), static_cast<Py_ssize_t>(name.size()));
  }
};

}  // namespace nanobind::detail
