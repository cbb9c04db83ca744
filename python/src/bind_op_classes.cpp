// The C++ op classes as Python classes: their attributes, a constructor from those attributes,
// and __reduce__ (pickle stores an op as its class and constructor arguments). isinstance(node.op,
// T.Elemwise) works because nanobind returns the most derived bound class of an Op.
#include <string>

#include "bindings.h"
#include "conv_params.h"
#include "hypatia/grad/grad_ops.h"
#include "pool_params.h"

namespace hypatia::python {
namespace {

template <class T>
using OpClass = nb::class_<T, Op>;

using EntryTuple = std::tuple<int, int, int64_t, int, int64_t, int, int64_t>;

/// An index spec as plain tuples (kind, a, av, b, bv, c, cv), for pickling.
std::vector<EntryTuple> spec_to_tuples(const IndexSpec& spec) {
  std::vector<EntryTuple> r;
  for (const IndexEntry& e : spec)
    r.emplace_back(static_cast<int>(e.kind), static_cast<int>(e.a), e.av, static_cast<int>(e.b), e.bv,
                   static_cast<int>(e.c), e.cv);
  return r;
}

IndexSpec spec_from_tuples(const std::vector<EntryTuple>& t) {
  IndexSpec spec;
  for (const auto& [kind, a, av, b, bv, c, cv] : t) {
    if (kind < 0 || kind > static_cast<int>(IndexEntry::Kind::BoolArray) || a < 0 || a > 2 || b < 0 || b > 2 || c < 0 ||
        c > 2)
      throw ValueError("index spec: bad entry");
    IndexEntry e;
    e.kind = static_cast<IndexEntry::Kind>(kind);
    e.a = static_cast<IndexEntry::Bound>(a);
    e.b = static_cast<IndexEntry::Bound>(b);
    e.c = static_cast<IndexEntry::Bound>(c);
    e.av = av;
    e.bv = bv;
    e.cv = cv;
    spec.push_back(e);
  }
  return spec;
}

/// Theano's idx_list: an int or slice(start, stop, step) per entry, with "input" for a symbolic
/// bound, None for a new axis, "int_array" / "bool_array" for advanced entries.
nb::list idx_list(const IndexSpec& spec) {
  auto bound = [](IndexEntry::Bound b, int64_t v) -> nb::object {
    if (b == IndexEntry::Bound::None) return nb::none();
    if (b == IndexEntry::Bound::Input) return nb::str("input");
    return nb::int_(v);
  };
  nb::list l;
  for (const IndexEntry& e : spec) {
    switch (e.kind) {
      case IndexEntry::Kind::Int:
        l.append(bound(e.a, e.av));
        break;
      case IndexEntry::Kind::Slice:
        l.append(nb::steal(PySlice_New(bound(e.a, e.av).ptr(), bound(e.b, e.bv).ptr(), bound(e.c, e.cv).ptr())));
        break;
      case IndexEntry::Kind::NewAxis:
        l.append(nb::none());
        break;
      case IndexEntry::Kind::IntArray:
        l.append(nb::str("int_array"));
        break;
      case IndexEntry::Kind::BoolArray:
        l.append(nb::str("bool_array"));
        break;
    }
  }
  return l;
}

ReduceKind reduce_kind(const std::string& name) {
  for (int k = 0; k <= static_cast<int>(ReduceKind::ProdWithoutZeros); ++k)
    if (reduce_kind_name(static_cast<ReduceKind>(k)) == name) return static_cast<ReduceKind>(k);
  fail<ValueError>("CAReduce: unknown reduction '", name, "'");
}

/// Adds __reduce__: unpickling calls hypatia._pickle._rebuild_op(the class, args(op)), which turns a
/// failure (a corrupted or incompatible pickle) into pickle.UnpicklingError.
template <class T, class F>
void reducible(OpClass<T>& cls, F args) {
  cls.def("__reduce__", [args](const T& op) {
    nb::object rebuild = nb::module_::import_("hypatia._pickle").attr("_rebuild_op");
    return nb::make_tuple(rebuild, nb::make_tuple(nb::type<T>(), args(op)));
  });
}

/// An op class with no attributes: constructible with no argument.
template <class T>
void plain_op(nb::module_& m, const char* name, const char* doc = "") {
  OpClass<T> c(m, name, doc);
  c.def(nb::init<>());
  reducible(c, [](const T&) { return nb::tuple(); });
}

/// One of the 3-d convolution ops, built from its parameter tuple (conv_params.h).
template <class T>
void conv3d_op(nb::module_& m, const char* name, const char* doc) {
  OpClass<T> c(m, name, doc);
  c.def(
       "__init__", [name](T* self, const Conv3dTuple& t) { new (self) T(conv3d_params(t, name)); }, "params"_a)
      .def_prop_ro("params", [](const T& o) { return conv3d_tuple(o.p); })
      .def_prop_ro("border_mode",
                   [](const T& o) -> nb::object {
                     if (o.p.hw.border == "pad") return nb::make_tuple(o.p.pad_d, o.p.hw.pad_h, o.p.hw.pad_w);
                     return nb::str(o.p.hw.border.c_str());
                   })
      .def_prop_ro("subsample",
                   [](const T& o) { return nb::make_tuple(o.p.stride_d, o.p.hw.stride_h, o.p.hw.stride_w); })
      .def_prop_ro("filter_dilation", [](const T& o) { return nb::make_tuple(o.p.dil_d, o.p.hw.dil_h, o.p.hw.dil_w); })
      .def_prop_ro("num_groups", [](const T& o) { return o.p.hw.groups; })
      .def_prop_ro("filter_flip", [](const T& o) { return o.p.hw.flip; });
  reducible(c, [](const T& o) { return nb::make_tuple(conv3d_tuple(o.p)); });
}

/// One of the convolution ops, built from its parameter tuple (conv_params.h).
template <class T>
void conv_op(nb::module_& m, const char* name, const char* doc) {
  OpClass<T> c(m, name, doc);
  c.def(
       "__init__", [name](T* self, const ConvTuple& t) { new (self) T(conv_params(t, name)); }, "params"_a)
      .def_prop_ro("params", [](const T& o) { return conv_tuple(o.p); })
      .def_prop_ro("border_mode",
                   [](const T& o) -> nb::object {
                     if (o.p.border == "pad" && (o.p.end_h() != o.p.pad_h || o.p.end_w() != o.p.pad_w))
                       return nb::make_tuple(nb::make_tuple(o.p.pad_h, o.p.end_h()),
                                             nb::make_tuple(o.p.pad_w, o.p.end_w()));
                     if (o.p.border == "pad") return nb::make_tuple(o.p.pad_h, o.p.pad_w);
                     return nb::str(o.p.border.c_str());
                   })
      .def_prop_ro("subsample", [](const T& o) { return nb::make_tuple(o.p.stride_h, o.p.stride_w); })
      .def_prop_ro("filter_dilation", [](const T& o) { return nb::make_tuple(o.p.dil_h, o.p.dil_w); })
      .def_prop_ro("num_groups", [](const T& o) { return o.p.groups; })
      .def_prop_ro("filter_flip", [](const T& o) { return o.p.flip; });
  reducible(c, [](const T& o) { return nb::make_tuple(conv_tuple(o.p)); });
}

/// One of the pooling ops, built from its parameter tuple (pool_params.h).
template <class T>
void pool_op(nb::module_& m, const char* name, const char* doc) {
  OpClass<T> c(m, name, doc);
  c.def(
       "__init__", [name](T* self, const PoolTuple& t) { new (self) T(pool_params(t, name)); }, "params"_a)
      .def_prop_ro("params", [](const T& o) { return pool_tuple(o.p); })
      .def_prop_ro("ndim", [](const T& o) { return o.p.nd; })
      .def_prop_ro("ignore_border", [](const T& o) { return o.p.ignore_border; })
      .def_prop_ro("mode", [](const T& o) { return o.p.mode; });
  reducible(c, [](const T& o) { return nb::make_tuple(pool_tuple(o.p)); });
}

}  // namespace

ScalarOpKind scalar_kind(const std::string& name) {
  for (int k = 0; k <= static_cast<int>(ScalarOpKind::Switch); ++k)
    if (scalar_op_name(static_cast<ScalarOpKind>(k)) == name) return static_cast<ScalarOpKind>(k);
  fail<ValueError>("elemwise: unknown scalar op '", name, "'");
}

void init_op_classes(nb::module_& m) {
  OpClass<Elemwise> elemwise(m, "Elemwise", "A scalar op lifted to tensors with broadcasting (Theano's Elemwise).");
  elemwise
      .def(
          "__init__",
          [](Elemwise* self, const std::string& scalar_op, DType cast_to, int inplace) {
            new (self) Elemwise(scalar_kind(scalar_op), cast_to, inplace);
          },
          "scalar_op"_a, "cast_to"_a = DType::Float64, "inplace"_a = -1)
      .def_prop_ro("scalar_op", [](const Elemwise& e) { return std::string(scalar_op_name(e.scalar)); })
      .def_prop_ro("cast_to", [](const Elemwise& e) { return e.cast_to; })
      .def_prop_ro("inplace_pattern", [](const Elemwise& e) {
        nb::dict d;
        if (e.inplace >= 0) d[nb::int_(0)] = nb::int_(e.inplace);
        return d;
      });
  reducible(elemwise, [](const Elemwise& e) {
    return nb::make_tuple(std::string(scalar_op_name(e.scalar)), e.cast_to, e.inplace);
  });

  // Steps as (name, args) pairs; a Cast step's name carries its target: "cast{float16}".
  using StepList = std::vector<std::pair<std::string, std::vector<int>>>;
  auto to_steps = [](const StepList& steps) {
    std::vector<CompositeStep> st;
    for (const auto& [name, args] : steps) {
      if (name.starts_with("cast{") && name.ends_with("}")) {
        st.push_back({ScalarOpKind::Cast, args, dtype_from_name(std::string_view(name).substr(5, name.size() - 6))});
      } else {
        st.push_back({scalar_kind(name), args});
      }
    }
    return st;
  };
  auto from_steps = [](const CompositeProgram& c) {
    StepList r;
    for (const auto& st : c.steps) r.emplace_back(st.name(), st.args);
    return r;
  };
  using InDTypes = std::optional<std::vector<DType>>;
  OpClass<Composite> composite(m, "Composite",
                               "Fused elementwise scalar ops (Theano's Elemwise{Composite{...}}), built by fusion.");
  composite
      .def(
          "__init__",
          [to_steps](Composite* self, int nin, DType dtype, const StepList& steps, const InDTypes& in_dtypes) {
            new (self) Composite(nin, dtype, to_steps(steps), -1, in_dtypes.value_or(std::vector<DType>{}));
          },
          "nin"_a, "dtype"_a, "steps"_a, "in_dtypes"_a = nb::none())
      .def_prop_ro("scalar_op", [](const Composite&) { return std::string("composite"); })
      .def_prop_ro("nin", [](const Composite& c) { return c.nin; })
      .def_prop_ro("in_dtypes", [](const Composite& c) { return c.in_dtypes; })
      .def_prop_ro("steps", [from_steps](const Composite& c) { return from_steps(c); });
  reducible(composite,
            [from_steps](const Composite& c) { return nb::make_tuple(c.nin, c.dtype, from_steps(c), c.in_dtypes); });

  OpClass<MultiComposite> multi(m, "MultiComposite",
                                "Several results of one fused elementwise program (multi-output fusion).");
  multi
      .def(
          "__init__",
          [to_steps](MultiComposite* self, int nin, DType dtype, const StepList& steps, std::vector<int> outputs,
                     const InDTypes& in_dtypes) {
            new (self) MultiComposite(nin, dtype, to_steps(steps), std::move(outputs),
                                      in_dtypes.value_or(std::vector<DType>{}));
          },
          "nin"_a, "dtype"_a, "steps"_a, "outputs"_a, "in_dtypes"_a = nb::none())
      .def_prop_ro("scalar_op", [](const MultiComposite&) { return std::string("composite"); })
      .def_prop_ro("nin", [](const MultiComposite& c) { return c.nin; })
      .def_prop_ro("steps", [from_steps](const MultiComposite& c) { return from_steps(c); })
      .def_prop_ro("outputs", [](const MultiComposite& c) { return c.outputs; });
  reducible(multi, [from_steps](const MultiComposite& c) {
    return nb::make_tuple(c.nin, c.dtype, from_steps(c), c.outputs, c.in_dtypes);
  });

  OpClass<CompositeReduce> creduce(m, "CompositeReduce",
                                   "A reduction fused with the elementwise program it reduces (sum(x*y)).");
  creduce
      .def(
          "__init__",
          [to_steps](CompositeReduce* self, int nin, DType dtype, const StepList& steps, const std::string& kind,
                     std::vector<int> axes, DType out_dtype, const InDTypes& in_dtypes) {
            new (self) CompositeReduce(nin, dtype, to_steps(steps), reduce_kind(kind), std::move(axes), out_dtype,
                                       in_dtypes.value_or(std::vector<DType>{}));
          },
          "nin"_a, "dtype"_a, "steps"_a, "scalar_op"_a, "axis"_a, "out_dtype"_a, "in_dtypes"_a = nb::none())
      .def_prop_ro("scalar_op", [](const CompositeReduce& r) { return std::string(reduce_kind_name(r.kind)); })
      .def_prop_ro("axis", [](const CompositeReduce& r) { return r.axes; })
      .def_prop_ro("dtype", [](const CompositeReduce& r) { return r.out_dtype; })
      .def_prop_ro("steps", [from_steps](const CompositeReduce& c) { return from_steps(c); });
  reducible(creduce, [from_steps](const CompositeReduce& r) {
    return nb::make_tuple(r.nin, r.dtype, from_steps(r), std::string(reduce_kind_name(r.kind)), r.axes, r.out_dtype,
                          r.in_dtypes);
  });

  OpClass<Reduce> careduce(m, "CAReduce", "A reduction over some axes (sum, prod, max, min, all, any).");
  careduce
      .def(
          "__init__",
          [](Reduce* self, const std::string& kind, std::vector<int> axes, DType dtype) {
            new (self) Reduce(reduce_kind(kind), std::move(axes), dtype);
          },
          "scalar_op"_a, "axis"_a, "dtype"_a)
      .def_prop_ro("scalar_op", [](const Reduce& r) { return std::string(reduce_kind_name(r.kind)); })
      .def_prop_ro("axis", [](const Reduce& r) { return r.axes; })
      .def_prop_ro("dtype", [](const Reduce& r) { return r.dtype; });
  reducible(careduce,
            [](const Reduce& r) { return nb::make_tuple(std::string(reduce_kind_name(r.kind)), r.axes, r.dtype); });

  OpClass<ArgReduce> argreduce(m, "ArgReduce", "Index of the max or min along one axis.");
  argreduce.def(nb::init<bool, std::optional<int>>(), "is_max"_a, "axis"_a.none())
      .def_prop_ro("is_max", [](const ArgReduce& r) { return r.is_max; })
      .def_prop_ro("axis", [](const ArgReduce& r) { return r.axis; });
  reducible(argreduce, [](const ArgReduce& r) { return nb::make_tuple(r.is_max, r.axis); });

  OpClass<CumOp> cumop(m, "CumOp", "Cumulative sum or product along an axis.");
  cumop.def(nb::init<bool, int, bool>(), "is_mul"_a, "axis"_a, "reverse"_a = false)
      .def_prop_ro("axis", [](const CumOp& c) { return c.axis; })
      .def_prop_ro("mode", [](const CumOp& c) { return c.is_mul ? "mul" : "add"; });
  reducible(cumop, [](const CumOp& c) { return nb::make_tuple(c.is_mul, c.axis, c.reverse); });

  OpClass<DimShuffle> dimshuffle(m, "DimShuffle", "Axes reordered, dropped (broadcastable ones) or added ('x').");
  dimshuffle.def(nb::init<std::vector<bool>, std::vector<int>>(), "input_broadcastable"_a, "pattern"_a)
      .def_prop_ro("new_order",
                   [](const DimShuffle& d) {
                     nb::list l;
                     for (int p : d.pattern) l.append(p < 0 ? nb::object(nb::str("x")) : nb::object(nb::int_(p)));
                     return nb::tuple(l);
                   })
      .def_prop_ro("input_broadcastable", [](const DimShuffle& d) {
        nb::list l;
        for (bool b : d.input_broadcastable) l.append(nb::bool_(b));
        return nb::tuple(l);
      });
  reducible(dimshuffle, [](const DimShuffle& d) { return nb::make_tuple(d.input_broadcastable, d.pattern); });

  OpClass<PrintOp> print(m, "PrintOp", "Theano's Print: passes its input through and prints it when computed.");
  print
      .def(nb::init<std::string, std::vector<std::string>>(), "message"_a = "",
           "attrs"_a = std::vector<std::string>{"__str__"})
      .def_prop_ro("message", [](const PrintOp& p) { return p.message; })
      .def_prop_ro("attrs", [](const PrintOp& p) { return p.attrs; });
  reducible(print, [](const PrintOp& p) { return nb::make_tuple(p.message, p.attrs); });

  plain_op<ShapeOp>(m, "Shape", "The shape of its input (an int64 vector).");
  OpClass<ShapeI> shape_i(m, "Shape_i", "The length of one axis of its input.");
  shape_i.def(nb::init<int>(), "i"_a).def_prop_ro("i", [](const ShapeI& s) { return s.i; });
  reducible(shape_i, [](const ShapeI& s) { return nb::make_tuple(s.i); });
  plain_op<MakeVector>(m, "MakeVector", "0-d integers joined into an int64 vector.");
  plain_op<Alloc>(m, "Alloc", "A value broadcast to a shape given by 0-d integer inputs.");
  // The transfers (Theano's names), picklable as the graphs that hold them are.
  plain_op<HostFromDevice>(m, "HostFromGpu", "Its input copied back to the host.");
  OpClass<DeviceFromHost> to_device(m, "GpuFromHost", "Its input copied to a device ('cuda:0', ...).");
  to_device
      .def(
          "__init__",
          [](DeviceFromHost* self, const std::string& device) {
            // (Unpickled too: a transfer to another GPU than the process's is refused here.)
            const Device d = Device::parse(device);
            claim_device(d);
            new (self) DeviceFromHost(d);
          },
          "device"_a)
      .def_prop_ro("device", [](const DeviceFromHost& o) { return o.device.str(); });
  reducible(to_device, [](const DeviceFromHost& o) { return nb::make_tuple(o.device.str()); });

  OpClass<Reshape> reshape(m, "Reshape");
  reshape.def(nb::init<int>(), "ndim"_a).def_prop_ro("ndim", [](const Reshape& r) { return r.ndim; });
  reducible(reshape, [](const Reshape& r) { return nb::make_tuple(r.ndim); });
  OpClass<Join> join(m, "Join");
  join.def(nb::init<int>(), "axis"_a).def_prop_ro("axis", [](const Join& j) { return j.axis; });
  reducible(join, [](const Join& j) { return nb::make_tuple(j.axis); });
  OpClass<Split> split(m, "Split");
  split.def(nb::init<int, int>(), "len_splits"_a, "axis"_a)
      .def_prop_ro("len_splits", [](const Split& s) { return s.n_splits; })
      .def_prop_ro("axis", [](const Split& s) { return s.axis; });
  reducible(split, [](const Split& s) { return nb::make_tuple(s.n_splits, s.axis); });
  OpClass<ARange> arange(m, "ARange");
  arange.def(nb::init<DType>(), "dtype"_a).def_prop_ro("dtype", [](const ARange& a) { return a.dtype; });
  reducible(arange, [](const ARange& a) { return nb::make_tuple(a.dtype); });
  OpClass<Eye> eye(m, "Eye");
  eye.def(nb::init<DType>(), "dtype"_a).def_prop_ro("dtype", [](const Eye& e) { return e.dtype; });
  reducible(eye, [](const Eye& e) { return nb::make_tuple(e.dtype); });
  OpClass<Tile> tile(m, "Tile");
  tile.def(nb::init<std::vector<int64_t>>(), "reps"_a).def_prop_ro("reps", [](const Tile& t) { return t.reps; });
  reducible(tile, [](const Tile& t) { return nb::make_tuple(t.reps); });
  OpClass<Repeat> repeat(m, "RepeatOp");
  repeat.def(nb::init<int>(), "axis"_a).def_prop_ro("axis", [](const Repeat& r) { return r.axis; });
  reducible(repeat, [](const Repeat& r) { return nb::make_tuple(r.axis); });
  OpClass<Assert> assert_cls(m, "Assert",
                             "x, checked at run time: inputs (x, *conditions), each 0-d (Theano's Assert).");
  assert_cls.def(nb::init<std::string>(), "msg"_a = "Theano Assert failed!").def_prop_ro("msg", [](const Assert& a) {
    return a.msg;
  });
  reducible(assert_cls, [](const Assert& a) { return nb::make_tuple(a.msg); });
  OpClass<SpecifyShape> specify(m, "SpecifyShape", "x with its shape checked: inputs (x, one length per given axis).");
  specify.def(nb::init<std::vector<bool>>(), "given"_a).def_prop_ro("given", [](const SpecifyShape& s) {
    return s.given;
  });
  reducible(specify, [](const SpecifyShape& s) { return nb::make_tuple(s.given); });
  OpClass<Rebroadcast> rebroadcast(m, "Rebroadcast");
  rebroadcast.def(nb::init<std::vector<int>>(), "flags"_a);
  reducible(rebroadcast, [](const Rebroadcast& r) { return nb::make_tuple(r.flags); });

  OpClass<Subtensor> subtensor(m, "Subtensor", "Basic indexing: a view of its input.");
  subtensor
      .def(
          "__init__",
          [](Subtensor* self, const std::vector<EntryTuple>& t) { new (self) Subtensor(spec_from_tuples(t)); },
          "spec"_a)
      .def_prop_ro("idx_list", [](const Subtensor& o) { return idx_list(o.spec); });
  reducible(subtensor, [](const Subtensor& o) { return nb::make_tuple(spec_to_tuples(o.spec)); });
  OpClass<AdvancedSubtensor> advsub(m, "AdvancedSubtensor", "numpy advanced indexing (integer and boolean arrays).");
  advsub
      .def(
          "__init__",
          [](AdvancedSubtensor* self, const std::vector<EntryTuple>& t) {
            new (self) AdvancedSubtensor(spec_from_tuples(t));
          },
          "spec"_a)
      .def_prop_ro("idx_list", [](const AdvancedSubtensor& o) { return idx_list(o.spec); });
  reducible(advsub, [](const AdvancedSubtensor& o) { return nb::make_tuple(spec_to_tuples(o.spec)); });
  OpClass<IncSubtensor> incsub(m, "IncSubtensor", "x with x[index] set to or incremented by y.");
  incsub
      .def(
          "__init__",
          [](IncSubtensor* self, const std::vector<EntryTuple>& t, bool set, bool inplace) {
            new (self) IncSubtensor(spec_from_tuples(t), set, inplace);
          },
          "spec"_a, "set_instead_of_inc"_a, "inplace"_a = false)
      .def_prop_ro("idx_list", [](const IncSubtensor& o) { return idx_list(o.spec); })
      .def_prop_ro("set_instead_of_inc", [](const IncSubtensor& o) { return o.set_instead_of_inc; })
      .def_prop_ro("inplace", [](const IncSubtensor& o) { return o.inplace; })
      .def_prop_ro("advanced", [](const IncSubtensor& o) { return o.advanced; });
  reducible(incsub, [](const IncSubtensor& o) {
    return nb::make_tuple(spec_to_tuples(o.spec), o.set_instead_of_inc, o.inplace);
  });

  OpClass<Softmax> softmax(m, "Softmax", "softmax or log_softmax along an axis (Theano's Softmax(): a matrix's rows).");
  softmax.def(nb::init<int, bool>(), "axis"_a = 1, "log"_a = false)
      .def_prop_ro("axis", [](const Softmax& s) { return s.axis; })
      .def_prop_ro("log", [](const Softmax& s) { return s.log; });
  reducible(softmax, [](const Softmax& s) { return nb::make_tuple(s.axis, s.log); });
  plain_op<CrossentropyCategorical1Hot>(m, "CrossentropyCategorical1Hot");
  plain_op<CrossentropyCategorical1HotGrad>(m, "CrossentropyCategorical1HotGrad");
  plain_op<CheckLabels>(m, "CheckLabels", "Integer labels, checked to be classes of a matrix (a view).");
  plain_op<CrossentropySoftmax1HotWithBias>(
      m, "CrossentropySoftmax1HotWithBias",
      "(nll, softmax(x + b)) of integer labels: inputs (x, b, y_idx), one pass per row.");
  plain_op<CrossentropySoftmax1HotWithBiasDx>(m, "CrossentropySoftmax1HotWithBiasDx",
                                              "dy[:, None] * (sm - one_hot(y_idx)): inputs (dy, sm, y_idx).");
  conv_op<Conv2d>(m, "Conv2d", "2-d convolution (Theano's AbstractConv2d).");
  conv3d_op<Conv3d>(m, "Conv3d", "3-d convolution (Theano's AbstractConv3d).");
  conv3d_op<Conv3dGradInputs>(m, "Conv3dGradInputs", "The image gradient of Conv3d (AbstractConv3d_gradInputs).");
  conv3d_op<Conv3dGradWeights>(m, "Conv3dGradWeights", "The filter gradient of Conv3d (AbstractConv3d_gradWeights).");
  conv_op<Conv2dGradInputs>(m, "Conv2dGradInputs",
                            "The image gradient of Conv2d (AbstractConv2d_gradInputs, the transposed convolution).");
  conv_op<Conv2dGradWeights>(m, "Conv2dGradWeights", "The filter gradient of Conv2d (AbstractConv2d_gradWeights).");
  pool_op<Pool>(m, "Pool", "Pooling over the last 2 or 3 axes (Theano's signal.pool.Pool).");
  pool_op<MaxPoolGrad>(m, "MaxPoolGrad", "The gradient of max pooling.");
  pool_op<AveragePoolGrad>(m, "AveragePoolGrad", "The gradient of sum and average pooling.");
  pool_op<DownsampleFactorMaxGradGrad>(m, "DownsampleFactorMaxGradGrad", "The gradient of MaxPoolGrad.");
  plain_op<Dot>(m, "Dot", "numpy.dot for vectors and matrices.");
  plain_op<BatchedDot>(m, "BatchedDot");
  OpClass<Gemm> gemm(m, "Gemm", "beta * z + alpha * dot(x, y).");
  gemm.def(nb::init<bool>(), "inplace"_a = false);
  reducible(gemm, [](const Gemm& g) { return nb::make_tuple(g.inplace); });
  OpClass<Gemv> gemv(m, "Gemv", "beta * z + alpha * dot(A, x).");
  gemv.def(nb::init<bool>(), "inplace"_a = false);
  reducible(gemv, [](const Gemv& g) { return nb::make_tuple(g.inplace); });
  OpClass<Ger> ger(m, "Ger", "A + alpha * outer(x, y).");
  ger.def(nb::init<bool>(), "inplace"_a = false);
  reducible(ger, [](const Ger& g) { return nb::make_tuple(g.inplace); });
  plain_op<DisconnectedGradOp>(m, "DisconnectedGrad", "Identity whose gradient is zero.");
  OpClass<GradClipOp> gradclip(m, "GradClip", "Identity whose gradient is clipped.");
  gradclip.def(nb::init<double, double>(), "lo"_a, "hi"_a);
  reducible(gradclip, [](const GradClipOp& g) { return nb::make_tuple(g.lo, g.hi); });
  OpClass<GradScaleOp> gradscale(m, "GradScale", "Identity whose gradient is multiplied by a number.");
  gradscale.def(nb::init<double>(), "multiplier"_a).def_prop_ro("multiplier", [](const GradScaleOp& g) {
    return g.multiplier;
  });
  reducible(gradscale, [](const GradScaleOp& g) { return nb::make_tuple(g.multiplier); });
  OpClass<MapIndexOp> mapindex(m, "MapIndex", "An inner graph evaluated for i = 0..n-1, stacked (jacobian).");
  mapindex.def(nb::init<Var, std::vector<Var>, Var>(), "index"_a, "captured"_a, "body"_a);
  reducible(mapindex, [](const MapIndexOp& o) { return nb::make_tuple(o.index, o.captured, o.body); });
  OpClass<IfElse> ifelse_op(m, "IfElse", "Theano's lazy conditional: only the taken branch is computed.");
  ifelse_op.def(nb::init<int>(), "n_outs"_a = 1).def_prop_ro("n_outs", [](const IfElse& o) { return o.n_outs; });
  reducible(ifelse_op, [](const IfElse& o) { return nb::make_tuple(o.n_outs); });
}

}  // namespace hypatia::python
