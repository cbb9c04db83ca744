// hypatia.gpuarray.GpuArray (device_array.h).
#include "device_array.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include "bindings.h"
#include "errors.h"
#include "hypatia/testing/emulated_gpu.h"
#include "interop.h"

namespace hypatia::python {
using namespace nb::literals;

namespace {

constexpr int kDLCuda = 2;  // DLPack's kDLCUDA

int dlpack_device_type(const NDArray& a) {
  if (a.device().kind == DeviceKind::Cuda) return kDLCuda;
  fail<TypeError>("GpuArray: no DLPack device type for ", a.device().str());
}

/// Waits for the device's queued work, so that a library reading the buffer on its own stream
/// sees the values (an export is rare next to a call: a full wait is simple and always right).
void synchronize(const NDArray& a) {
  const DeviceMemory& m = device_memory(a.device());
  if (m.synchronize) m.synchronize();
}

/// numpy's array-interface type string: byte order, kind, item size ("<f4", "|b1").
std::string typestr(DType dt) {
  const size_t n = itemsize(dt);
  const char kind = dt == DType::Bool ? 'b' : is_float(dt) ? 'f' : is_signed_int(dt) ? 'i' : 'u';
  return std::string(n == 1 ? "|" : "<") + kind + std::to_string(n);
}

nb::dlpack::dtype dl_dtype(DType dt) {
  nb::dlpack::dtype d;
  d.code = static_cast<uint8_t>(dt == DType::Bool   ? nb::dlpack::dtype_code::Bool
                                : is_float(dt)      ? nb::dlpack::dtype_code::Float
                                : is_signed_int(dt) ? nb::dlpack::dtype_code::Int
                                                    : nb::dlpack::dtype_code::UInt);
  d.bits = static_cast<uint8_t>(8 * itemsize(dt));
  d.lanes = 1;
  return d;
}

nb::tuple int_tuple(const Dims& v) {
  nb::list l;
  for (int64_t x : v) l.append(x);
  return nb::tuple(l);
}

/// A C-contiguous host copy of a device array (a strided view through the bytes it spans).
NDArray host_copy(const NDArray& a) {
  nb::gil_scoped_release nogil;
  return a.to_device(Device::host());
}

}  // namespace

PyObject* wrap_device_array(const NDArray& a) {
  try {
    return nb::cast(GpuArray{a}, nb::rv_policy::move).release().ptr();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
}

const NDArray* device_array_of(PyObject* obj) {
  GpuArray* g = nullptr;
  if (!nb::try_cast<GpuArray*>(nb::handle(obj), g) || !g) return nullptr;
  return &g->array;
}

void init_device_array(nb::module_& m) {
  m.def(
      "_install_emulated_gpu",
      [](bool as_default) {
        testing::install_emulated_gpu(as_default);
        register_pyop_kernels();  // (the stand-in's backend took the CPU's kernel for Python ops)
      },
      "as_default"_a = false,
      "For Hypatia's tests without a GPU (testing/emulated_gpu.h): host memory stands in for the CUDA "
      "devices', and the backend 'emulated_gpu' runs the CPU's kernels on it (as_default: also under "
      "device=cuda).");
  m.def("_remove_emulated_gpu", &testing::remove_emulated_gpu, "Gives the CUDA devices their own memory back.");
  m.def(
      "_claim_device", [](const std::string& device) { claim_device(Device::parse(device)); }, "device"_a,
      "Makes `device` this process's GPU (core/device.h: claim_device): NotImplementedError if another is in use.");
  m.def(
      "_emulated_gpu_copies",
      [] {
        const auto c = testing::emulated_gpu_copies();
        return nb::make_tuple(c.to_device, c.to_host, c.on_device);
      },
      "(to the device, to the host, on the device): copies through the emulated GPU's memory so far.");
  nb::class_<GpuArray>(m, "GpuArray",
                       "An array in a GPU's memory (Theano's CudaNdarray / pygpu's GpuArray): what a function "
                       "output kept on the device (Out(gpu_from_host(y), borrow=True)) and "
                       "get_value(return_internal_type=True) give. numpy.asarray(a) copies it to the host; "
                       "torch.from_dlpack(a), cupy.asarray(a) and jax.dlpack.from_dlpack(a) use it in place; a "
                       "function input that only transfers read takes it without a copy from the host. "
                       "GpuArray(value, device='cuda') copies a host value to the device.")
      .def(
          "__init__",
          [](GpuArray* self, nb::handle value, const std::string& device) {
            const Device d = Device::parse(device);
            if (d.is_host())
              fail<ValueError>("GpuArray: device '", device, "' is the host; expected a GPU ('cuda', 'cudaN')");
            const NDArray src = to_ndarray(value.ptr());  // a host view, or a device array as it is
            NDArray a;
            {
              nb::gil_scoped_release nogil;
              a = src.to_device(d);
            }
            new (self) GpuArray{std::move(a)};
          },
          "value"_a, "device"_a = "cuda")
      .def_prop_ro("shape", [](const GpuArray& g) { return int_tuple(g.array.shape()); })
      .def_prop_ro(
          "strides", [](const GpuArray& g) { return int_tuple(g.array.strides()); }, "Byte strides.")
      .def_prop_ro("dtype", [](const GpuArray& g) { return nb::steal(numpy_dtype(g.array.dtype())); })
      .def_prop_ro("ndim", [](const GpuArray& g) { return g.array.ndim(); })
      .def_prop_ro("size", [](const GpuArray& g) { return g.array.size(); })
      .def_prop_ro("itemsize", [](const GpuArray& g) { return itemsize(g.array.dtype()); })
      .def_prop_ro("nbytes", [](const GpuArray& g) { return g.array.nbytes(); })
      .def_prop_ro("device", [](const GpuArray& g) { return g.array.device().str(); })
      .def_prop_ro("flags_c_contiguous", [](const GpuArray& g) { return g.array.is_c_contiguous(); })
      .def("__len__",
           [](const GpuArray& g) {
             if (g.array.ndim() == 0) throw nb::type_error("len() of a 0-d GpuArray");
             return g.array.shape(0);
           })
      .def(
          "__array__",
          [](const GpuArray& g, nb::handle dtype, nb::handle copy) {
            if (copy.ptr() == Py_False)
              fail<ValueError>("GpuArray: the values are on ", g.array.device().str(),
                               "; numpy.asarray(..., copy=False) cannot view them (a copy to the host is needed)");
            nb::object r = nb::steal(to_numpy(host_copy(g.array)));
            if (!r.is_valid()) throw nb::python_error();
            if (!dtype.is_none()) r = r.attr("astype")(dtype);
            return r;
          },
          "dtype"_a = nb::none(), "copy"_a = nb::none(), "A host copy (numpy.asarray(a)).")
      .def(
          "copy",
          [](const GpuArray& g) {
            // On the device; a strided view goes through the host (its device has no strided copy here).
            return GpuArray{g.array.is_c_contiguous() ? g.array.copy()
                                                      : host_copy(g.array).to_device(g.array.device())};
          },
          "A C-contiguous copy on the same device.")
      .def(
          "__reduce__",
          [](nb::handle self) {
            // Pickled as its values and device (Theano's CudaNdarray pickled through numpy too).
            const NDArray& a = nb::cast<const GpuArray&>(self).array;
            nb::object values = nb::steal(to_numpy(host_copy(a)));
            if (!values.is_valid()) throw nb::python_error();
            return nb::make_tuple(self.type(), nb::make_tuple(values, a.device().str()));
          },
          "Pickling: the values copied to the host, rebuilt on the same device when loaded.")
      .def("__repr__",
           [](const GpuArray& g) {
             // No values: printing does not transfer (numpy.asarray(a) does).
             std::string s = "GpuArray(shape=(";
             for (int d = 0; d < g.array.ndim(); ++d)
               s += std::to_string(g.array.shape(d)) + (g.array.ndim() == 1 ? "," : d + 1 < g.array.ndim() ? ", " : "");
             s += "), dtype=" + std::string(dtype_name(g.array.dtype())) + ", device='" + g.array.device().str() + "')";
             return s;
           })
      .def_prop_ro(
          "__cuda_array_interface__",
          [](const GpuArray& g) {
            if (g.array.device().kind != DeviceKind::Cuda)
              throw nb::attribute_error("__cuda_array_interface__: not a CUDA array");
            synchronize(g.array);
            nb::dict d;
            d["shape"] = int_tuple(g.array.shape());
            d["typestr"] = typestr(g.array.dtype());
            d["data"] = nb::make_tuple(reinterpret_cast<uintptr_t>(g.array.raw()), !g.array.writeable());
            d["version"] = 3;
            d["strides"] =
                g.array.is_c_contiguous() ? nb::object(nb::none()) : nb::object(int_tuple(g.array.strides()));
            d["stream"] = nb::none();  // synchronized above: no stream to wait for
            return d;
          },
          "CUDA Array Interface v3 (CuPy, Numba, PyTorch): the device pointer, after the queued work is done.")
      .def_prop_ro(
          "gpudata",
          [](const GpuArray& g) {
            synchronize(g.array);
            return reinterpret_cast<uintptr_t>(g.array.raw());
          },
          "The device address of the first element, as an int (Theano's CudaNdarray.gpudata: what a PyCUDA or "
          "CuPy kernel launch takes), after the queued work is done.")
      .def_static(
          "zeros",
          [](nb::handle shape, nb::handle dtype, const std::string& device) {
            Shape s;
            auto dim = [](nb::handle d) {
              nb::object i = nb::steal(PyNumber_Index(d.ptr()));  // ints, numpy integers
              if (!i.is_valid()) throw nb::python_error();
              return nb::cast<int64_t>(i);
            };
            if (PyIndex_Check(shape.ptr()))
              s.push_back(dim(shape));
            else
              for (nb::handle d : shape) s.push_back(dim(d));
            for (int64_t d : s)
              if (d < 0)
                fail<ValueError>("GpuArray.zeros: negative dimension in shape ",
                                 nb::cast<std::string>(nb::repr(shape)));
            const std::optional<DType> dt = dtype_from_python(dtype.ptr());
            if (!dt)
              fail<TypeError>("GpuArray.zeros: dtype ", nb::cast<std::string>(nb::repr(dtype)),
                              " is not one Hypatia has");
            const Device d = Device::parse(device);
            if (d.is_host())
              fail<ValueError>("GpuArray.zeros: device '", device, "' is the host; expected a GPU ('cuda', 'cudaN')");
            NDArray a;
            {
              nb::gil_scoped_release nogil;
              a = NDArray::zeros(s, *dt).to_device(d);
            }
            return GpuArray{std::move(a)};
          },
          "shape"_a, "dtype"_a = "float32", "device"_a = "cuda",
          "A GpuArray of zeros (Theano's CudaNdarray.zeros(shape); float32 unless dtype says otherwise).")
      .def("__dlpack_device__",
           [](const GpuArray& g) { return nb::make_tuple(dlpack_device_type(g.array), g.array.device().index); })
      .def(
          "__dlpack__",
          [](nb::pointer_and_handle<GpuArray> self, nb::kwargs kwargs) {
            const NDArray& a = self.p->array;
            const int type = dlpack_device_type(a);
            const size_t isz = itemsize(a.dtype());
            std::vector<size_t> shape(a.shape().begin(), a.shape().end());
            std::vector<int64_t> strides;
            for (int64_t s : a.strides()) {
              if (s % static_cast<int64_t>(isz) != 0)
                fail<ValueError>("GpuArray.__dlpack__: strides ", a.describe(), " are not whole elements");
              strides.push_back(s / static_cast<int64_t>(isz));
            }
            synchronize(a);
            // The export owns the buffer; when the consumer lets go, its queued work (on its own
            // streams) is waited for before the buffer can return to Hypatia's allocator.
            nb::capsule owner(new NDArray(a), [](void* p) noexcept {
              auto* held = static_cast<NDArray*>(p);
              try {
                synchronize_device(held->device());
              } catch (...) {  // (a device error is reported by the next call that queues work)
              }
              delete held;
            });
            nb::ndarray<nb::array_api> view(a.raw(), shape.size(), shape.data(), owner, strides.data(),
                                            dl_dtype(a.dtype()), type, a.device().index);
            nb::object exported = nb::cast(view, nb::rv_policy::reference);
            return exported.attr("__dlpack__")(**kwargs);
          },
          "DLPack export (torch.from_dlpack, cupy.from_dlpack, jax.dlpack.from_dlpack): the buffer in place, "
          "after the queued work is done.");
}

}  // namespace hypatia::python
