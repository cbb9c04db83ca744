// The CPU Elemwise kernel run directly and through functions: in place and buffer reuse, the
// layout of its outputs (numpy's order "K"), casts in flat and strided runs, and the threaded
// paths against the reference (the op's values and rules: test_elemwise.cpp).
#include <cstring>

#include "test_util.h"

namespace hypatia {
namespace {

using testing::random_array;
using testing::random_strided;

NDArray rnd(const Shape& s, DType dt, uint64_t seed, double lo, double hi) { return random_array(s, dt, lo, hi, seed); }

Var fvar(int nd, DType dt = DType::Float64, const std::string& name = "x") {
  return variable(tensor_type(dt, nd), name);
}

NDArray run1(const Var& out, const std::vector<std::pair<Var, NDArray>>& in, std::string_view b = kCpuBackend) {
  return eval(out, in, b);
}

TEST(Elemwise, KernelsDirectlyInPlaceAndBufferReuse) {
  Var x = fvar(2, DType::Float32, "x"), y = fvar(2, DType::Float32, "y");
  Var out = apply_op1(std::make_shared<Elemwise>(ScalarOpKind::Add, DType::Float64, 0), {x, y});
  EXPECT_EQ(out->owner->op->destroy_map(), (AliasMap{{0}}));
  for (std::string_view be : {kReferenceBackend, kCpuBackend}) {
    NDArray a = testing::make_array({1, 2, 3, 4}, {2, 2}, DType::Float32);
    NDArray b = testing::make_array({10, 20, 30, 40}, {2, 2}, DType::Float32);
    NDArray o;
    std::vector<NDArray*> ins{&a, &b}, outs{&o};
    auto k = make_kernel(be, *out->owner);
    k->run(KernelArgs{ins, outs});
    EXPECT_EQ(o.raw(), a.raw());
    EXPECT_ALLCLOSE(a, testing::make_array({11, 22, 33, 44}, {2, 2}, DType::Float32));
    NDArray bad = rnd({1, 2}, DType::Float32, 3, 0, 1);
    std::vector<NDArray*> ins2{&bad, &b};
    EXPECT_THROW(k->run(KernelArgs{ins2, outs}), ValueError);
  }
  // The output buffer is reused across calls.
  Var s = add(x, y);
  auto k = make_kernel(kCpuBackend, *s->owner);
  NDArray a = rnd({1, 1}, DType::Float32, 4, 0, 1), b = rnd({1, 1}, DType::Float32, 5, 0, 1), o;
  std::vector<NDArray*> ins{&a, &b}, outs{&o};
  k->run(KernelArgs{ins, outs});
  std::byte* first = o.raw();
  k->run(KernelArgs{ins, outs});
  EXPECT_EQ(o.raw(), first);
  EXPECT_FLOAT_EQ(o.data<float>()[0], a.data<float>()[0] + b.data<float>()[0]);
}

// The output is laid out as the inputs agree to (numpy's order "K"): a Fortran-ordered or
// transposed input gives an output in its order, walked in memory order; inputs that disagree,
// or none with an order, give C order. The values never depend on it, nor on a reused cell.
TEST(Elemwise, OutputFollowsTheInputsLayout) {
  const long saved = config().openmp_elemwise_minsize;
  Var x = fvar(2, DType::Float32, "x"), y = fvar(2, DType::Float32, "y");
  Var r = variable(row_type(DType::Float32), "r");
  Var x3 = fvar(3, DType::Float32, "x3");
  const NDArray c = rnd({37, 29}, DType::Float32, 1, -2, 2), c2 = rnd({37, 29}, DType::Float32, 2, -2, 2);
  const NDArray f = rnd({29, 37}, DType::Float32, 3, -2, 2).transpose();  // Fortran-ordered (37, 29)
  const NDArray f2 = rnd({29, 37}, DType::Float32, 4, -2, 2).transpose();
  const NDArray row = rnd({1, 29}, DType::Float32, 5, -2, 2);
  const int perm[] = {2, 0, 1};
  const NDArray p3 = rnd({5, 7, 3}, DType::Float32, 6, -2, 2).transpose(perm);  // (3, 5, 7), axis 0 innermost
  const NDArray s = random_strided({37, 29}, DType::Float32, -2, 2, 7).transpose().transpose();
  for (long minsize : {saved, 64L}) {
    config().openmp_elemwise_minsize = minsize;
    struct Case {
      Var out;
      std::vector<std::pair<Var, NDArray>> in;
      Strides strides;  // the output's expected strides
    };
    const Strides cs2 = {29 * 4, 4}, fs2 = {4, 37 * 4}, cd2 = {29 * 8, 8}, fd2 = {8, 37 * 8};
    std::vector<Case> cases = {
        {exp(x), {{x, f}}, fs2},
        {x * y, {{x, f}, {y, f2}}, fs2},
        {x + r, {{x, f}, {r, row}}, fs2},  // the broadcast row has no say
        {x * y, {{x, f}, {y, c}}, cs2},    // disagreeing inputs: C order
        {exp(x), {{x, c}}, cs2},
        {x * y, {{x, c}, {y, c2}}, cs2},
        {abs(x3), {{x3, p3}}, {4, 7 * 3 * 4, 3 * 4}},  // the 3-d input's order (axis 0 innermost, then 2)
        {cast(x, DType::Float64), {{x, f}}, fd2},
        {cast(x, DType::Float64), {{x, c}}, cd2},
        {exp(x), {{x, s}}, cs2},  // a strided C-ordered input
    };
    for (auto& cs : cases) {
      // The Elemwise kernel alone (the node, unfused), twice into the same cell: the second run may
      // reuse the first's buffer.
      const Apply& node = *cs.out->owner;
      auto k = make_kernel(kCpuBackend, node);
      std::vector<NDArray> args;
      for (auto& [v, a] : cs.in) args.push_back(a);
      std::vector<NDArray*> ins;
      for (auto& a : args) ins.push_back(&a);
      NDArray o;
      std::vector<NDArray*> outs{&o};
      const NDArray want = run1(cs.out, cs.in, kReferenceBackend);
      for (int rep = 0; rep < 2; ++rep) {
        k->run(KernelArgs{ins, outs});
        EXPECT_ALLCLOSE(o, want, 1e-5, 1e-6);
        EXPECT_EQ(o.strides(), cs.strides) << node.op->name() << " strides " << o.strides().str();
      }
    }
  }
  // A cell holding a Fortran-ordered result is replaced, not reused, when the next inputs are
  // C-ordered (and the other way round), and the values follow.
  const Var xy = x * y;  // the kernel refers to its node's op
  auto k = make_kernel(kCpuBackend, *xy->owner);
  NDArray o;
  std::vector<NDArray*> outs{&o};
  for (const auto& [a, b] : std::vector<std::pair<NDArray, NDArray>>{{f, f2}, {c, c2}, {f, f2}}) {
    NDArray a1 = a, b1 = b;
    std::vector<NDArray*> ins{&a1, &b1};
    k->run(KernelArgs{ins, outs});
    EXPECT_EQ(o.is_f_contiguous(), a.is_f_contiguous());
    EXPECT_ALLCLOSE(o, run1(xy, {{x, a}, {y, b}}, kReferenceBackend), 1e-6, 1e-6);
  }
  config().openmp_elemwise_minsize = saved;
}

// A cast from bool, in the flat vectorized loop and the strided one, to every type. (Only 0 and 1
// bytes: another byte read as a C++ bool is undefined behaviour, which UBSan reports.)
TEST(Elemwise, CastFromBoolInFlatAndStridedRuns) {
  Var b = variable(tensor_type(DType::Bool, 1), "b");
  NDArray v = NDArray::zeros({100}, DType::Bool);
  for (int i = 0; i < 100; ++i)
    reinterpret_cast<uint8_t*>(v.raw())[i] = static_cast<uint8_t>((i * 37) % 5 == 0 ? 0 : 1);
  for (DType to : {DType::Float32, DType::Float64, DType::Int32, DType::UInt8, DType::Float16}) {
    for (const NDArray& a : {v, v.slice(0, 0, 100, 3)}) {
      const NDArray r = run1(cast(b, to), {{b, a}});
      for (int64_t i = 0; i < a.size(); ++i) {
        const uint8_t byte = *reinterpret_cast<const uint8_t*>(a.raw() + i * a.strides()[0]);
        EXPECT_EQ(r.get_flat(i), byte != 0 ? 1.0 : 0.0) << dtype_name(to) << " byte " << +byte;
      }
    }
  }
}

TEST(Elemwise, ThreadedPathsMatchReference) {
  const long saved = config().openmp_elemwise_minsize;
  config().openmp_elemwise_minsize = 64;
  Var x = fvar(2, DType::Float32, "x"), r = variable(row_type(DType::Float32), "r");
  Var v = fvar(1, DType::Float64, "v");
  struct Case {
    Var out;
    std::vector<std::pair<Var, NDArray>> in;
  };
  std::vector<Case> cases = {
      {exp(x) + r, {{x, rnd({37, 29}, DType::Float32, 1, -2, 2)}, {r, rnd({1, 29}, DType::Float32, 2, -2, 2)}}},
      {exp(x), {{x, rnd({2, 1001}, DType::Float32, 3, -2, 2)}}},
      {x * r, {{x, random_strided({5, 300}, DType::Float32, -2, 2, 4)}, {r, rnd({1, 300}, DType::Float32, 5, -2, 2)}}},
      {tanh(v), {{v, rnd({5003}, DType::Float64, 6, -4, 4)}}},
      {cast(x, DType::Int32), {{x, rnd({30, 30}, DType::Float32, 7, -9, 9)}}},
  };
  for (auto& c : cases) {
    EXPECT_ALLCLOSE(run1(c.out, c.in, kCpuBackend), run1(c.out, c.in, kReferenceBackend), 1e-5, 1e-6);
  }
  config().openmp_elemwise_minsize = saved;
}

}  // namespace
}  // namespace hypatia
