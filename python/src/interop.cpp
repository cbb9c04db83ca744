// numpy <-> NDArray. The only file that uses numpy's C API.
#define PY_ARRAY_UNIQUE_SYMBOL hypatia_numpy_api
#include "interop.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <numpy/arrayobject.h>

#include <cmath>
#include <memory>
#include <new>
#include <string>

#include "device_array.h"
#include "errors.h"
#include "hypatia/core/allocator.h"

namespace hypatia::python {
namespace {

/// Drops a reference to a Python object when the last NDArray viewing its memory goes away.
/// It may run without the GIL (a thread that released it): then it takes the GIL itself. Most
/// releases happen in the call's own epilogue, with the GIL held (PyGILState_Check is the cheap
/// test; Ensure and Release cost more than the rest of the release).
struct PyRefDeleter {
  PyObject* obj;
  void operator()(void*) const noexcept {
    if (!Py_IsInitialized()) return;
    if (PyGILState_Check()) {
      Py_DECREF(obj);
      return;
    }
    PyGILState_STATE s = PyGILState_Ensure();
    Py_DECREF(obj);
    PyGILState_Release(s);
  }
};

/// numpy array base object that owns a reference to an NDArray's buffer.
struct BufferOwner {
  PyObject ob_base;
  std::shared_ptr<void> storage;
};
PyTypeObject* g_owner_type = nullptr;

void owner_dealloc(PyObject* self) {
  PyTypeObject* tp = Py_TYPE(self);
  reinterpret_cast<BufferOwner*>(self)->storage.~shared_ptr();
  PyObject_Free(self);
  Py_DECREF(tp);
}

PyArray_Descr* g_descr[kNumDTypes] = {};

int npy_type_of(DType dt) {
  switch (dt) {
    case DType::Bool:
      return NPY_BOOL;
    case DType::Int8:
      return NPY_INT8;
    case DType::Int16:
      return NPY_INT16;
    case DType::Int32:
      return NPY_INT32;
    case DType::Int64:
      return NPY_INT64;
    case DType::UInt8:
      return NPY_UINT8;
    case DType::UInt16:
      return NPY_UINT16;
    case DType::UInt32:
      return NPY_UINT32;
    case DType::UInt64:
      return NPY_UINT64;
    case DType::Float32:
      return NPY_FLOAT32;
    case DType::Float64:
      return NPY_FLOAT64;
    case DType::Float16:
      return NPY_FLOAT16;
  }
  return NPY_FLOAT64;
}

/// Hypatia's dtype for a numpy descr (by kind and size, so int64 and longlong agree), or nullopt.
std::optional<DType> dtype_of_descr(PyArray_Descr* d) {
  const npy_intp size = PyDataType_ELSIZE(d);
  switch (d->kind) {
    case 'b':
      return DType::Bool;
    case 'i':
      if (size == 1) return DType::Int8;
      if (size == 2) return DType::Int16;
      if (size == 4) return DType::Int32;
      if (size == 8) return DType::Int64;
      break;
    case 'u':
      if (size == 1) return DType::UInt8;
      if (size == 2) return DType::UInt16;
      if (size == 4) return DType::UInt32;
      if (size == 8) return DType::UInt64;
      break;
    case 'f':
      if (size == 2) return DType::Float16;
      if (size == 4) return DType::Float32;
      if (size == 8) return DType::Float64;
      break;
    default:
      break;
  }
  return std::nullopt;
}

std::string descr_name(PyArray_Descr* d) {
  nb::object s = nb::steal(PyObject_Str(reinterpret_cast<PyObject*>(d)));
  if (!s.is_valid()) {
    PyErr_Clear();
    return "?";
  }
  return nb::cast<std::string>(s);
}

[[noreturn]] void unsupported_dtype(PyArray_Descr* d) {
  fail<TypeError>("hypatia supports bool, int8..int64, uint8..uint64, float16, float32 and float64 arrays; got dtype ",
                  descr_name(d));
}

/// Views `arr` (a numpy array with a supported, native, aligned dtype) in place. Takes a new
/// reference to it for the NDArray's lifetime.
NDArray wrap_array(PyArrayObject* arr, DType dt) {
  const int nd = PyArray_NDIM(arr);
  if (nd > kMaxNdim) fail<ValueError>("hypatia arrays have at most ", kMaxNdim, " dimensions; got ", nd);
  Shape shape;
  Strides strides;
  shape.resize(nd);
  strides.resize(nd);
  const npy_intp* dims = PyArray_DIMS(arr);
  const npy_intp* st = PyArray_STRIDES(arr);
  for (int i = 0; i < nd; ++i) {
    shape[i] = dims[i];
    strides[i] = st[i];
  }
  void* data = PyArray_DATA(arr);
  Py_INCREF(arr);
  // The shared_ptr points at element 0, so the NDArray's offset is 0. Its control block comes from
  // the per-thread buffer cache (no malloc per call).
  std::shared_ptr<void> owner(data, PyRefDeleter{reinterpret_cast<PyObject*>(arr)}, HostCacheAllocator<char>{});
  NDArray a = NDArray::wrap(std::move(owner), data, shape, strides, dt);
  // Read-only memory (a read-only array, an mmap opened read-only, a bytes object) is never
  // written: in-place work on it goes to a copy.
  if (!PyArray_ISWRITEABLE(arr)) a.set_writeable(false);
  return a;
}

/// The dtype of `arr` when it can be viewed in place, else nullopt.
std::optional<DType> viewable_dtype(PyArrayObject* arr) {
  if (!PyArray_ISALIGNED(arr) || !PyArray_ISNOTSWAPPED(arr)) return std::nullopt;
  return dtype_of_descr(PyArray_DESCR(arr));
}

bool same_values(const NDArray& a, const NDArray& b) {
  if (!(a.shape() == b.shape())) return false;
  for (int64_t i = 0, n = a.size(); i < n; ++i) {
    double x = a.get_flat(i), y = b.get_flat(i);
    if (x != y && !(std::isnan(x) && std::isnan(y))) return false;
  }
  return true;
}

}  // namespace

void init_interop(nb::module_& m) {
  if (_import_array() < 0) throw nb::python_error();
  for (int i = 0; i < kNumDTypes; ++i) g_descr[i] = PyArray_DescrFromType(npy_type_of(static_cast<DType>(i)));
  static PyType_Slot slots[] = {{Py_tp_dealloc, reinterpret_cast<void*>(owner_dealloc)},
                                {Py_tp_doc, const_cast<char*>("Owner of a Hypatia buffer viewed by numpy arrays.")},
                                {0, nullptr}};
  static PyType_Spec spec = {"hypatia._core.BufferOwner", sizeof(BufferOwner), 0, Py_TPFLAGS_DEFAULT, slots};
  g_owner_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&spec));
  if (!g_owner_type) throw nb::python_error();
  m.attr("BufferOwner") = nb::handle(reinterpret_cast<PyObject*>(g_owner_type));
}

bool is_numpy_array(PyObject* obj) { return PyArray_Check(obj); }

namespace {

/// Another library's CUDA array (torch, CuPy, JAX: DLPack's kDLCUDA) as a device array over its
/// buffer, which the import keeps alive: no copy.
NDArray from_cuda_dlpack(PyObject* obj, int device) {
  nb::ndarray<nb::array_api, nb::device::cuda> t;
  if (!nb::try_cast(nb::handle(obj), t, false))
    fail<TypeError>("a CUDA array (DLPack) could not be imported: ", nb::cast<std::string>(nb::repr(nb::handle(obj))));
  const nb::dlpack::dtype d = t.dtype();
  std::optional<DType> dt;
  if (d.lanes == 1) {
    const auto code = static_cast<nb::dlpack::dtype_code>(d.code);
    for (int i = 0; i < kNumDTypes && !dt; ++i) {
      const DType c = static_cast<DType>(i);
      const bool kind = code == nb::dlpack::dtype_code::Bool    ? c == DType::Bool
                        : code == nb::dlpack::dtype_code::Float ? is_float(c)
                        : code == nb::dlpack::dtype_code::Int   ? is_signed_int(c)
                        : code == nb::dlpack::dtype_code::UInt  ? is_unsigned_int(c)
                                                                : false;
      if (kind && 8 * itemsize(c) == d.bits) dt = c;
    }
  }
  if (!dt)
    fail<TypeError>("a CUDA array (DLPack) of a dtype Hypatia lacks (code ", int(d.code), ", ", int(d.bits), " bits, ",
                    int(d.lanes), " lanes)");
  Shape shape;
  Strides strides;
  for (size_t i = 0; i < t.ndim(); ++i) {
    shape.push_back(static_cast<int64_t>(t.shape(i)));
    strides.push_back(t.stride(i) * static_cast<int64_t>(itemsize(*dt)));
  }
  // The producer's queued work (on its own streams, which Hypatia's is not ordered after) is done
  // before Hypatia reads the buffer: nanobind asked for the capsule without naming a stream.
  const Device where = Device::cuda(device);  // (device_memory refuses another GPU than the process's)
  synchronize_device(where);
  // The import, as a Python object, owns the buffer's reference: released with the GIL, after
  // Hypatia's work queued on it is done (the producer may reuse the memory at once).
  PyObject* keep = nb::cast(t, nb::rv_policy::reference).release().ptr();
  std::shared_ptr<void> owner(t.data(), [keep, where](void*) noexcept {
    // (Every queue: the last reference may go in one function's call while another's work on
    // the buffer is still queued.)
    try {
      synchronize_device(where);
    } catch (...) {  // (a wait refused on a thread that records: the calling thread's stream is
      try {          // all it can wait for then; a device error is reported by the next call)
        const DeviceMemory& m = device_memory(where);
        if (m.synchronize) m.synchronize();
      } catch (...) {
      }
    }
    PyRefDeleter{keep}(nullptr);
  });
  return NDArray::wrap(std::move(owner), static_cast<std::byte*>(t.data()), shape, strides, *dt, where);
}

}  // namespace

NDArray to_ndarray(PyObject* obj) {
  if (const NDArray* g = device_array_of(obj)) return *g;  // stays on its device
  if (!PyArray_Check(obj) && PyObject_HasAttrString(obj, "__dlpack_device__")) {
    // Another library's GPU array: used in place on the device.
    nb::object dev = nb::handle(obj).attr("__dlpack_device__")();
    if (nb::cast<int>(dev[0]) == 2) return from_cuda_dlpack(obj, nb::cast<int>(dev[1]));
  }
  PyArray_Descr* want = nullptr;  // numpy's choice for non-arrays
  nb::object imported;
  if (!PyArray_Check(obj) && PyObject_HasAttrString(obj, "__dlpack__")) {
    // Another library's array (DLPack): numpy.from_dlpack views it without a copy.
    // Leaked on purpose: a static nb::object would be released after the interpreter is gone.
    static nb::handle from_dlpack = nb::object(nb::module_::import_("numpy").attr("from_dlpack")).release();
    imported = from_dlpack(nb::handle(obj));
    obj = imported.ptr();
  }
  if (PyArray_Check(obj)) {
    auto* arr = reinterpret_cast<PyArrayObject*>(obj);
    if (auto dt = viewable_dtype(arr)) return wrap_array(arr, *dt);
    auto dt = dtype_of_descr(PyArray_DESCR(arr));
    if (!dt) unsupported_dtype(PyArray_DESCR(arr));
    want = g_descr[static_cast<int>(*dt)];  // byte-swapped or misaligned: a native, aligned copy
    Py_INCREF(want);                        // (PyArray_FromAny steals it)
  }
  PyObject* conv = PyArray_FromAny(obj, want, 0, 0, NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED, nullptr);
  if (!conv) throw nb::python_error();
  nb::object hold = nb::steal(conv);
  auto* arr = reinterpret_cast<PyArrayObject*>(conv);
  auto dt = viewable_dtype(arr);
  if (!dt) unsupported_dtype(PyArray_DESCR(arr));
  return wrap_array(arr, *dt);
}

NDArray filter_value(PyObject* obj, const TensorType& type, Downcast downcast, const char* who,
                     bool offer_downcast_flag) {
  const bool is_array = PyArray_Check(obj);
  NDArray a = to_ndarray(obj);
  const DType want = type.dtype;
  if (a.dtype() == want) return a;
  if (!a.on_host())
    fail<TypeError>(who, ": expected dtype ", dtype_name(want), " (", type.str(), ") but got a GpuArray of dtype ",
                    dtype_name(a.dtype()), " on ", a.device().str(), "; it is not converted on the device");
  if (downcast == Downcast::Yes || can_cast_safely(a.dtype(), want)) return a.astype(want);
  if (!is_array) {
    NDArray conv = a.astype(want);
    if (same_values(conv, a)) return conv;
    if (downcast == Downcast::None && PyFloat_Check(obj) && want == config().floatX) return conv;
    fail<TypeError>(who, ": the value ", nb::cast<std::string>(nb::repr(nb::handle(obj))), " cannot be converted to ",
                    dtype_name(want), " (", type.str(), ") without losing precision. ",
                    offer_downcast_flag ? "Pass allow_input_downcast=True to function() or c" : "C",
                    "onvert the data to ", dtype_name(want), " first (numpy.asarray(value, dtype='", dtype_name(want),
                    "')).");
  }
  fail<TypeError>(who, ": expected an array of dtype ", dtype_name(want), " (", type.str(), ") but got ",
                  dtype_name(a.dtype()), "; casting would lose precision. ",
                  offer_downcast_flag ? "Pass allow_input_downcast=True to function(), or c" : "C",
                  "onvert the data with .astype('", dtype_name(want), "').");
}

PyObject* to_python(const NDArray& a, bool writeable) {
  if (a.valid() && !a.on_host()) return wrap_device_array(a);
  return to_numpy(a, writeable);
}

PyObject* numpy_dtype(DType dt) {
  PyArray_Descr* d = g_descr[static_cast<int>(dt)];
  Py_INCREF(d);
  return reinterpret_cast<PyObject*>(d);
}

PyObject* to_numpy(const NDArray& a, bool writeable) {
  if (!a.valid()) {
    PyErr_SetString(PyExc_ValueError, "hypatia: cannot convert an empty (invalid) NDArray to numpy");
    return nullptr;
  }
  if (!a.on_host()) {
    // numpy reads host memory: a device array (a borrowed GPU output, a shared variable's
    // internal value) comes to Python as a host copy.
    NDArray h;
    try {
      h = a.to_device(Device::host());
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
      return nullptr;
    }
    return to_numpy(h, writeable);
  }
  npy_intp dims[kMaxNdim], strides[kMaxNdim];
  const int nd = a.ndim();
  for (int i = 0; i < nd; ++i) {
    dims[i] = a.shape(i);
    strides[i] = a.strides()[i];
  }
  PyArray_Descr* d = g_descr[static_cast<int>(a.dtype())];
  Py_INCREF(d);
  // numpy computes a C-contiguous array's strides and flags itself (cheaper than checking given ones).
  PyObject* arr = PyArray_NewFromDescr(&PyArray_Type, d, nd, dims, a.is_c_contiguous() ? nullptr : strides, a.raw(),
                                       writeable && a.writeable() ? NPY_ARRAY_WRITEABLE : 0, nullptr);
  if (!arr) return nullptr;
  PyObject* base;
  if (auto* del = std::get_deleter<PyRefDeleter>(a.storage())) {
    // The buffer is a numpy array's: make it the base, so numpy sees one chain of views.
    base = del->obj;
    Py_INCREF(base);
  } else {
    auto* o = PyObject_New(BufferOwner, g_owner_type);
    if (!o) {
      Py_DECREF(arr);
      return nullptr;
    }
    new (&o->storage) std::shared_ptr<void>(a.storage());
    base = reinterpret_cast<PyObject*>(o);
  }
  if (PyArray_SetBaseObject(reinterpret_cast<PyArrayObject*>(arr), base) < 0) {
    Py_DECREF(arr);
    return nullptr;
  }
  return arr;
}

std::optional<DType> dtype_from_python(PyObject* obj) {
  if (PyUnicode_Check(obj)) {
    Py_ssize_t n = 0;
    const char* s = PyUnicode_AsUTF8AndSize(obj, &n);
    if (!s) {
      PyErr_Clear();
      return std::nullopt;
    }
    if (std::string_view(s, n) == "floatX") return config().floatX;
  }
  if (obj == Py_None) return std::nullopt;
  PyArray_Descr* d = nullptr;
  if (!PyArray_DescrConverter(obj, &d)) {
    PyErr_Clear();
    return std::nullopt;
  }
  auto dt = dtype_of_descr(d);
  Py_DECREF(d);
  return dt;
}

}  // namespace hypatia::python

namespace nanobind::detail {
bool type_caster<hypatia::NDArray>::from_python(handle src, uint32_t flags, cleanup_list*) noexcept {
  if (!(flags & static_cast<uint32_t>(cast_flags::convert)) && !hypatia::python::is_numpy_array(src.ptr()))
    return false;
  try {
    value = hypatia::python::to_ndarray(src.ptr());
    return true;
  } catch (const python_error&) {
    return false;
  } catch (const std::exception&) {
    return false;
  }
}
}  // namespace nanobind::detail
