// Recording and replay of device work (runtime/program_replay.cpp) against a fake device: a
// backend on the host whose kernels, while a recording is made, do their host part at once
// (shapes, errors, output buffers) and queue their arithmetic as closures over the buffers they
// chose, which a replay runs again: what a CUDA graph does with kernel launches. So the runtime's
// side (keys, the buffers a recording keeps, values given back, outputs and shared variables that
// are held elsewhere) is tested here without a GPU; the CUDA recorder itself in test_cuda.cpp.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "graph_fuzz.h"
#include "hypatia/backends/backend.h"
#include "hypatia/ops/nnet.h"
#include "hypatia/testing/opinfo.h"
#include "test_util.h"

namespace hypatia {
namespace {

using testing::make_array;

/// The recording being made on this thread: closures, and the buffers allocated meanwhile.
struct FakeCapture {
  std::vector<std::function<void()>> work;
  std::vector<std::shared_ptr<void>> buffers;
};
thread_local FakeCapture* t_capture = nullptr;

/// An array over a's elements that owns nothing (the closures reach buffers through these, as a
/// CUDA graph holds raw pointers).
NDArray unowned(const NDArray& a) {
  return NDArray::wrap(std::shared_ptr<void>(static_cast<void*>(a.raw()), [](void*) {}), a.raw(), a.shape(),
                       a.strides(), a.dtype());
}

class FakeRecording final : public Recording {
 public:
  FakeRecording(FakeCapture c, std::atomic<int>* replays, std::atomic<int>* dropped)
      : c_(std::move(c)), replays_(replays), dropped_(dropped) {}
  ~FakeRecording() override { ++*dropped_; }
  void replay() override {
    for (auto& w : c_.work) w();
    ++*replays_;
  }

 private:
  FakeCapture c_;
  std::atomic<int>* replays_;
  std::atomic<int>* dropped_;
};

class FakeRecorder final : public Recorder {
 public:
  std::atomic<int> begins{0}, recordings{0}, replays{0}, dropped{0};
  std::atomic<bool> refuse{false}, fail{false};
  /// The next softmax step on the fake device reports memory pressure first (as an allocation
  /// inside a call would).
  std::atomic<bool> pressure_in_softmax{false};

  void reset() {
    begins = recordings = replays = dropped = 0;
    refuse = fail = pressure_in_softmax = false;
  }
  bool begin() override {
    if (refuse || !mu_.try_lock()) return false;
    ++begins;
    t_capture = new FakeCapture;
    return true;
  }
  std::unique_ptr<Recording> end(bool keep) override {
    std::unique_ptr<FakeCapture> c(t_capture);
    t_capture = nullptr;
    mu_.unlock();
    if (fail || !keep) return nullptr;
    ++recordings;
    return std::make_unique<FakeRecording>(std::move(*c), &replays, &dropped);
  }

 private:
  std::mutex mu_;
};

/// The fake device's memory: a cache of freed buffers by size, handed out again last freed first,
/// as the CUDA backend's caching allocator does (a value alternating between two buffers then
/// alternates regularly).
NDArray fake_empty(const Shape& shape, DType dt) {
  static std::mutex mu;
  static auto* cache = new std::map<size_t, std::vector<void*>>();
  const size_t n = std::max<size_t>(1, static_cast<size_t>(shape.prod()) * itemsize(dt));
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto& v = (*cache)[n];
    if (!v.empty()) {
      p = v.back();
      v.pop_back();
    }
  }
  if (!p) p = ::operator new(n);
  std::shared_ptr<void> owner(p, [n](void* q) {
    std::lock_guard<std::mutex> lock(mu);
    (*cache)[n].push_back(q);
  });
  return NDArray::wrap(std::move(owner), p, shape, c_strides(shape, itemsize(dt)), dt);
}

/// The CPU kernel of the node on the fake device's memory: run at once, or (while recording) its
/// host part now (shapes, errors, output buffers, the host inputs' values) and its arithmetic
/// when replayed.
class FakeKernel final : public Kernel {
 public:
  FakeKernel(const Apply& node, std::vector<int> host_inputs)
      : cpu_(get_backend("cpu").make_kernel(node)),
        dm_(node.op->destroy_map()),
        view_(!node.op->view_map().empty()),
        host_(std::move(host_inputs)),
        softmax_(dynamic_cast<const Softmax*>(node.op.get()) != nullptr) {}

  void run(const KernelArgs& a) override {
    if (softmax_ && pressure_in_softmax()) relieve_memory_pressure(DeviceKind::Host);
    if (view_) return cpu_->run(a);  // a view: host work only, as on a device
    bool in_place = false;
    for (const auto& d : dm_) in_place = in_place || !d.empty();
    if (in_place) {
      if (!t_capture) return cpu_->run(a);
      for (size_t k = 0; k < a.out.size(); ++k) *a.out[k] = *a.in[dm_.at(k).at(0)];
    } else {
      // The values (recording: the shapes and any error; the inputs are not computed yet, so the
      // values are garbage and dropped), then the outputs in the fake device's buffers.
      std::vector<NDArray> res(a.out.size());
      std::vector<NDArray*> rp;
      for (NDArray& s : res) rp.push_back(&s);
      cpu_->run(KernelArgs{a.in, rp});
      for (size_t k = 0; k < a.out.size(); ++k) {
        NDArray& o = *a.out[k];
        if (!(o.valid() && o.unique() && o.shape() == res[k].shape() && o.dtype() == res[k].dtype() &&
              o.is_c_contiguous())) {
          o = fake_empty(res[k].shape(), res[k].dtype());
          if (t_capture) t_capture->buffers.push_back(o.storage());
        }
        if (!t_capture) o.assign(res[k]);
      }
      if (!t_capture) return;
    }
    std::vector<NDArray> in, out;
    for (size_t i = 0; i < a.in.size(); ++i) {
      const NDArray& x = *a.in[i];
      // Host inputs are read now (a graph holds the values its host code passed).
      const bool host = std::find(host_.begin(), host_.end(), static_cast<int>(i)) != host_.end();
      in.push_back(!x.valid() ? NDArray() : host ? x.copy() : unowned(x));
    }
    for (NDArray* o : a.out) out.push_back(unowned(*o));
    t_capture->work.push_back([k = cpu_.get(), in, out] {
      std::vector<NDArray> o = out;
      std::vector<NDArray*> ip, op;
      std::vector<NDArray> ic = in;
      for (NDArray& x : ic) ip.push_back(&x);
      for (NDArray& x : o) op.push_back(&x);
      k->run(KernelArgs{ip, op});
      for (size_t i = 0; i < o.size(); ++i)
        if (o[i].raw() != out[i].raw()) out[i].assign(o[i]);
    });
  }

 private:
  std::unique_ptr<Kernel> cpu_;
  AliasMap dm_;
  bool view_;
  std::vector<int> host_;
  bool softmax_;
  static bool pressure_in_softmax();
};

FakeRecorder*& fake_recorder() {
  static FakeRecorder* r = nullptr;
  return r;
}

bool FakeKernel::pressure_in_softmax() { return fake_recorder()->pressure_in_softmax.exchange(false); }

FakeRecorder& fake() {
  static FakeRecorder* r = fake_recorder() = [] {
    auto rec = std::make_shared<FakeRecorder>();
    FakeRecorder* raw = rec.get();
    register_backend(std::make_unique<Backend>(
        Backend::Description{.name = "test_replay",
                             .fallback = "cpu",
                             .storage_dtypes = {rewrite::StorageDType{DType::Float16, DType::Float32}},
                             .recorder = std::move(rec)}));
    auto add = [](std::type_index op, std::vector<int> host, bool recordable = true) {
      register_kernel(
          "test_replay", op,
          [host](const Apply& node) -> std::unique_ptr<Kernel> { return std::make_unique<FakeKernel>(node, host); },
          KernelTraits{.host_inputs = host, .recordable = recordable});
    };
    add(typeid(Elemwise), {});
    add(typeid(Reduce), {});
    add(typeid(Dot), {});
    add(typeid(Gemm), {1, 4});
    add(typeid(DimShuffle), {});
    add(typeid(Softmax), {}, /*recordable=*/false);  // a step on the fake device that is never recorded
    std::vector<int> shape_inputs;
    for (int i = 1; i <= kMaxNdim; ++i) shape_inputs.push_back(i);
    add(typeid(Alloc), shape_inputs);
    return raw;
  }();
  r->reset();
  return *r;
}

Function compile(std::vector<In> in, std::vector<Out> out, FunctionOptions o = {}) {
  o.backend = "test_replay";
  return function(std::move(in), std::move(out), o);
}

int count_ops(const Function& f, const std::string& needle) {
  int c = 0;
  for (const auto& n : f.toposort()) c += n->op->name().find(needle) != std::string::npos;
  return c;
}

NDArray f64(const std::vector<double>& v) { return make_array(v, {static_cast<int64_t>(v.size())}, DType::Float64); }

/// exp(x * y) + x of two float64 vectors, on the fake device.
Function exp_function(FunctionOptions o = {}) {
  Var x = vector("x", DType::Float64), y = vector("y", DType::Float64);
  return compile({x, y}, {exp(x * y) + x}, std::move(o));
}

/// exp(x * y) + x on the host.
NDArray expected(const NDArray& x, const NDArray& y) {
  NDArray r = NDArray::empty(x.shape(), DType::Float64);
  for (int64_t i = 0; i < x.size(); ++i) r.data<double>()[i] = std::exp(x.get_flat(i) * y.get_flat(i)) + x.get_flat(i);
  return r;
}

TEST(Replay, ARepeatedCallIsRecordedOnceThenReplayedOnTheArgumentsCurrentValues) {
  FakeRecorder& r = fake();
  Function f = exp_function();
  NDArray a = f64({0.5, -1, 2, 0}), b = f64({1, 2, -0.5, 3});
  for (int i = 0; i < 6; ++i) {
    a.data<double>()[0] = 0.25 * i;  // the same buffer with other values: a replay reads them
    EXPECT_ALLCLOSE(f({a, b})[0], expected(a, b));
  }
  // The first call runs the kernels; the second records (and replays); the others replay.
  EXPECT_EQ(r.begins, 1);
  EXPECT_EQ(r.recordings, 1);
  EXPECT_EQ(r.replays, 5);
}

TEST(Replay, NewBuffersAreNewKeysAndTwoAlternatingOnesGetARecordingEach) {
  FakeRecorder& r = fake();
  Function f = exp_function();
  NDArray b = f64({1, 2, -0.5});
  std::vector<NDArray> args;
  for (int i = 0; i < 4; ++i) {  // a fresh argument each call: nothing repeats
    args.push_back(f64({0.1 * i, 1, 2}));
    EXPECT_ALLCLOSE(f({args.back(), b})[0], expected(args.back(), b));
  }
  EXPECT_EQ(r.recordings, 0);
  NDArray a1 = f64({1, 2, 3}), a2 = f64({-1, 0, 1});
  for (int i = 0; i < 8; ++i) {
    const NDArray& a = i % 4 < 2 ? a1 : a2;  // a1 a1 a2 a2 a1 a1 a2 a2
    EXPECT_ALLCLOSE(f({a, b})[0], expected(a, b));
  }
  EXPECT_EQ(r.recordings, 2);
  EXPECT_EQ(r.replays, 6);
  // Another shape is another key.
  NDArray c = f64({1, 2}), d = f64({3, 4});
  for (int i = 0; i < 3; ++i) EXPECT_ALLCLOSE(f({c, d})[0], expected(c, d));
  EXPECT_EQ(r.recordings, 3);
}

TEST(Replay, OutputsTheCallerKeepsAreNeverOverwrittenByALaterReplay) {
  FakeRecorder& r = fake();
  Function f = exp_function();
  NDArray a = f64({0.5, -1, 2}), b = f64({1, 2, -0.5});
  std::vector<NDArray> kept, want;
  for (int i = 0; i < 10; ++i) {
    a.data<double>()[1] = i;
    kept.push_back(f({a, b})[0]);
    want.push_back(expected(a, b));
  }
  for (int i = 0; i < 10; ++i) EXPECT_ALLCLOSE(kept[i], want[i]) << "call " << i;
  for (int i = 1; i < 10; ++i) EXPECT_FALSE(kept[i].shares_buffer(kept[i - 1]));
  // Each held output kept its recording busy: a new one each call, up to four, then the steps.
  EXPECT_EQ(r.recordings, 4);
  // Dropped outputs free their recordings again.
  kept.clear();
  const int before = r.replays;
  for (int i = 0; i < 3; ++i) EXPECT_ALLCLOSE(f({a, b})[0], expected(a, b));
  EXPECT_EQ(r.replays, before + 3);
}

TEST(Replay, SharedVariablesUpdatedByElementwiseSteps) {
  FakeRecorder& r = fake();
  Var w = shared(f64({1, 2, 3, 4}), "w");
  Var v = shared(f64({0, 0, 0, 0}), "v");
  Var x = vector("x", DType::Float64);
  FunctionOptions o;
  o.updates = {{w, w - 0.5 * (x * w)}, {v, v + exp(x)}};
  Function f = compile({x}, {x * w}, o);
  NDArray xs = f64({0.1, -0.2, 0.3, 0.5});
  std::vector<double> hw = {1, 2, 3, 4}, hv = {0, 0, 0, 0};
  for (int i = 0; i < 6; ++i) {
    xs.data<double>()[3] = 0.1 * i;
    std::vector<double> out(4);
    for (int k = 0; k < 4; ++k) {
      const double xv = xs.get_flat(k);
      out[k] = xv * hw[k];
      hw[k] -= 0.5 * xv * hw[k];
      hv[k] += std::exp(xv);
    }
    EXPECT_ALLCLOSE(f({xs})[0], f64(out));
    EXPECT_ALLCLOSE(get_value(w), f64(hw)) << "call " << i;
    EXPECT_ALLCLOSE(get_value(v), f64(hv)) << "call " << i;
  }
  EXPECT_GE(r.recordings, 1);
  EXPECT_GE(r.replays, 4);
}

NDArray matrix_of(int64_t r, int64_t c, uint64_t seed) {
  return testing::random_array({r, c}, DType::Float64, -1, 1, seed);
}

TEST(Replay, ProductsIntoSharedVariablesInPlaceAreReplayedOverTheirOwnBuffers) {
  // A training step's shape: two weight matrices updated by in-place products (the steps that
  // overwrite shared variables run last, as a segment of their own), alpha and beta read on the
  // host (keyed by value).
  FakeRecorder& r = fake();
  Var w1 = shared(matrix_of(4, 3, 1), "w1"), w2 = shared(matrix_of(3, 2, 2), "w2");
  Var r1 = shared(get_value(w1), "r1"), r2 = shared(get_value(w2), "r2");
  Var x = variable(matrix_type(DType::Float64), "x");
  auto step = [&](Var a, Var b, const std::string& backend) {
    Var h = dot(x, a), y = dot(h, b);
    FunctionOptions o;
    o.updates = {{a, a - 0.1 * dot(transpose(x), h)}, {b, b - 0.1 * dot(transpose(h), y)}};
    if (backend.empty()) return function({x}, {sum(y)}, o);
    return compile({x}, {sum(y)}, o);
  };
  Function f = step(w1, w2, "test_replay"), ref = step(r1, r2, "");
  EXPECT_EQ(count_ops(f, "Gemm{inplace}"), 2) << f.debugprint();
  const std::byte* b1 = get_value(w1, true).raw();
  const std::byte* b2 = get_value(w2, true).raw();
  NDArray xv = matrix_of(2, 4, 3);
  for (int i = 0; i < 6; ++i) {
    xv.data<double>()[i] = 0.1 * i;
    EXPECT_ALLCLOSE(f({xv})[0], ref({xv})[0]);
    EXPECT_ALLCLOSE(get_value(w1), get_value(r1)) << "call " << i;
    EXPECT_ALLCLOSE(get_value(w2), get_value(r2)) << "call " << i;
  }
  EXPECT_EQ(get_value(w1, true).raw(), b1);
  EXPECT_EQ(get_value(w2, true).raw(), b2);
  EXPECT_GE(r.recordings, 1);
  EXPECT_GE(r.replays, 4);
}

TEST(Replay, SharedVariablesUpdatedOutOfPlaceStayRight) {
  // Without in-place rewrites each call's new value is a buffer of its own: the keys of the
  // segment that reads the variable change from call to call (the buffers cycle through the
  // allocator's cache), recordings are made when a key comes back, and every value is right.
  FakeRecorder& r = fake();
  Var w = shared(f64({1, 2, 3}), "w");
  Var x = vector("x", DType::Float64);
  FunctionOptions o;
  o.mode = "FAST_COMPILE";
  o.updates = {{w, exp(-(x * w))}};
  Function f = compile({x}, {x + w}, o);
  NDArray xs = f64({0.5, 1, -1});
  std::vector<double> hw = {1, 2, 3};
  std::vector<NDArray> outs;
  for (int i = 0; i < 16; ++i) {
    std::vector<double> out(3);
    for (int k = 0; k < 3; ++k) {
      out[k] = xs.get_flat(k) + hw[k];
      hw[k] = std::exp(-(xs.get_flat(k) * hw[k]));
    }
    outs.push_back(f({xs})[0]);
    EXPECT_ALLCLOSE(outs.back(), f64(out)) << "call " << i;
    EXPECT_ALLCLOSE(get_value(w), f64(hw)) << "call " << i;
    if (i % 4 == 3) outs.clear();
  }
  EXPECT_GE(r.recordings, 1);
  EXPECT_LE(r.recordings, 4);
}

TEST(Replay, ALiveOutViewOfAnInputFreedInsideTheSegmentIsRebuiltOverThatInput) {
  // s comes from a step that is not recorded (softmax); the segment reads it last (gc frees its
  // cell there) and gives back a view of it, t, which a later CPU step (argmax) reads: the
  // recording must not keep s's buffer (the next call's s would then be another array, with
  // another key, and the loop would seldom replay).
  FakeRecorder& r = fake();
  Var x = matrix("x", DType::Float64);
  Var s = softmax(x);
  Var t = transpose(s);
  Function f = compile({x}, {sum(exp(t)), argmax(t, 0)});
  Function ref = function({x}, {sum(exp(t)), argmax(t, 0)});
  NDArray xv = testing::random_array({3, 4}, DType::Float64, -1, 1, 7);
  for (int i = 0; i < 8; ++i) {
    xv.data<double>()[i] += 0.5;
    const auto got = f({xv}), want = ref({xv});
    EXPECT_ALLCLOSE(got[0], want[0]) << "call " << i;
    EXPECT_ALLCLOSE(got[1], want[1]) << "call " << i;
  }
  EXPECT_EQ(r.replays, 7) << f.debugprint();  // calls 2-8 (the second records)
}

TEST(Replay, HostReadInputsAreKeyedByValue) {
  FakeRecorder& r = fake();
  Var s = scalar("s", DType::Float64);
  Var n = scalar("n", DType::Int64);
  Function f = compile({s, n}, {exp(alloc(exp(s), {n})) * 2.0});
  NDArray sv = make_array({0.25}, {}, DType::Float64);
  for (int64_t len : {3, 3, 3, 5, 5, 5, 3, 3}) {
    NDArray nv = make_array({static_cast<double>(len)}, {}, DType::Int64);
    const NDArray out = f({sv, nv})[0];
    ASSERT_EQ(out.shape(), Shape({len}));
    for (int64_t i = 0; i < len; ++i) EXPECT_DOUBLE_EQ(out.get_flat(i), 2 * std::exp(std::exp(0.25)));
  }
  EXPECT_EQ(r.recordings, 2);
  EXPECT_GE(r.replays, 5);
}

TEST(Replay, StepsThatAreNotRecordedAndNeedNoRecordedStepRunFirstSoTheOthersFormOneRun) {
  // softmax (never recorded on the fake device) of an argument, added to a recorded product's
  // result by a recorded elementwise step: in the plain order softmax lands between the two and
  // leaves no run of two recorded steps; the schedule runs it first.
  FakeRecorder& r = fake();
  Var x = matrix("x", DType::Float64), w = matrix("w", DType::Float64), y = matrix("y", DType::Float64);
  Function f = compile({x, w, y}, {exp(dot(x, w)) * 2.0 + softmax(y)});
  const auto nodes = f.toposort();
  ASSERT_FALSE(nodes.empty());
  EXPECT_EQ(nodes[0]->op->name().find("Softmax"), 0u) << f.debugprint();
  const auto runs = f.recorded_runs();
  ASSERT_EQ(runs.size(), 1u) << f.debugprint();
  EXPECT_EQ(runs[0], std::make_pair(size_t{1}, nodes.size()));
  FunctionOptions cpu;
  cpu.backend = "cpu";
  Function want = function({x, w, y}, {exp(dot(x, w)) * 2.0 + softmax(y)}, cpu);
  const NDArray xv = make_array({0.5, -1, 2, 0.25, 1, -0.5}, {3, 2}, DType::Float64);
  const NDArray wv = make_array({1, 0.5, -0.25, 2}, {2, 2}, DType::Float64);
  NDArray yv = make_array({0, 1, -1, 2, 0.5, 0.5}, {3, 2}, DType::Float64);
  for (int i = 0; i < 8; ++i) {
    yv.data<double>()[0] = 0.5 * i;
    EXPECT_ALLCLOSE(f({xv, wv, yv})[0], want({xv, wv, yv})[0]);
  }
  // The first two calls run the steps (softmax's output, which the run reads, is in a new buffer
  // on the second), the third records the run and replays it, and the others replay it.
  EXPECT_EQ(r.recordings, 1);
  EXPECT_EQ(r.replays, 6);
}

TEST(Replay, ARecordingThatFailsOrIsRefusedLeavesTheStepsToRun) {
  FakeRecorder& r = fake();
  Function f = exp_function();
  NDArray a = f64({0.5, -1, 2}), b = f64({1, 2, -0.5});
  r.fail = true;
  for (int i = 0; i < 5; ++i) EXPECT_ALLCLOSE(f({a, b})[0], expected(a, b));
  EXPECT_EQ(r.begins, 1);  // tried once, then this frame's segment runs its steps
  EXPECT_EQ(r.replays, 0);
  Function g = exp_function();
  r.reset();
  r.refuse = true;
  for (int i = 0; i < 5; ++i) EXPECT_ALLCLOSE(g({a, b})[0], expected(a, b));
  EXPECT_EQ(r.recordings, 0);
  r.refuse = false;
  for (int i = 0; i < 3; ++i) EXPECT_ALLCLOSE(g({a, b})[0], expected(a, b));
  EXPECT_EQ(r.recordings, 1);
}

TEST(Replay, AFailedRecordingRunsTheStepsOnInputsItsStepsFreed) {
  // softmax (not recorded) makes an intermediate that only the recorded run reads: its last reader
  // frees it (gc) while the run is recorded; when the recording then fails, the steps run again on
  // it.
  FakeRecorder& r = fake();
  Var x = matrix("x", DType::Float64), w = matrix("w", DType::Float64);
  Function f = compile({x, w}, {exp(dot(softmax(x), w)) * 2.0});
  FunctionOptions cpu;
  cpu.backend = "cpu";
  Function want = function({x, w}, {exp(dot(softmax(x), w)) * 2.0}, cpu);
  ASSERT_EQ(f.recorded_runs().size(), 1u) << f.debugprint();
  const NDArray xv = make_array({0.5, -1, 2, 0.25, 1, -0.5}, {3, 2}, DType::Float64);
  const NDArray wv = make_array({1, 0.5, -0.25, 2}, {2, 2}, DType::Float64);
  r.fail = true;
  for (int i = 0; i < 4; ++i) EXPECT_ALLCLOSE(f({xv, wv})[0], want({xv, wv})[0]) << "call " << i;
  EXPECT_EQ(r.begins, 1);
  EXPECT_EQ(r.recordings, 0);
}

TEST(Replay, AnInputMadeEachCallAndFreedInsideTheRunIsNotTakenByTheRecording) {
  // softmax (not recorded) makes a new buffer each call that only the run's first product reads;
  // freed there while recording, it would go back to the allocator and a later product of the
  // same size would take it, kept by the recording: every later call's input is elsewhere, its
  // key new, and the run would never replay.
  FakeRecorder& r = fake();
  Var x = matrix("x", DType::Float64), y = matrix("y", DType::Float64);
  Function f = compile({x, y}, {dot(dot(dot(softmax(x), y), y), y)});
  FunctionOptions cpu;
  cpu.backend = "cpu";
  Function want = function({x, y}, {dot(dot(dot(softmax(x), y), y), y)}, cpu);
  const NDArray xv = make_array({0.5, -1, 2, 0.25}, {2, 2}, DType::Float64);
  const NDArray yv = make_array({1, 0.5, -0.25, 2}, {2, 2}, DType::Float64);
  for (int i = 0; i < 12; ++i) EXPECT_ALLCLOSE(f({xv, yv})[0], want({xv, yv})[0]) << "call " << i;
  EXPECT_EQ(r.recordings, 1);
  EXPECT_GE(r.replays, 9);
}

TEST(Replay, WithoutGarbageCollectionTheRecordingOwnsEveryBufferItWrites) {
  // gc off: intermediate cells keep last call's buffers. Recorded over them, a replay would write
  // buffers it does not own (given back when a replay empties its cells): an output the caller
  // kept from an earlier call, made from such a buffer, would change under it.
  FakeRecorder& r = fake();
  FunctionOptions o;
  o.allow_gc = false;
  Var x = matrix("x", DType::Float64), y = matrix("y", DType::Float64);
  Function f = compile({x, y}, {softmax(dot(dot(x, y), y))}, o);
  FunctionOptions cpu;
  cpu.backend = "cpu";
  Function want = function({x, y}, {softmax(dot(dot(x, y), y))}, cpu);
  const NDArray yv = make_array({1, 0.5, -0.25, 2}, {2, 2}, DType::Float64);
  std::vector<NDArray> kept, expect;
  NDArray xv = make_array({0.5, -1, 2, 0.25}, {2, 2}, DType::Float64);
  for (int i = 0; i < 8; ++i) {
    xv.data<double>()[0] = 0.5 * i;  // the same buffer, other values: a replay reads them
    kept.push_back(f({xv, yv})[0]);
    expect.push_back(want({xv, yv})[0]);
  }
  for (int i = 0; i < 8; ++i) EXPECT_ALLCLOSE(kept[i], expect[i], 1e-12, 1e-12) << "call " << i;
  EXPECT_GE(r.replays, 1);
}

TEST(Replay, ErrorsAreTheStepsOwnAndLaterCallsStillReplay) {
  FakeRecorder& r = fake();
  Function f = exp_function();
  NDArray a = f64({0.5, -1, 2}), b = f64({1, 2, -0.5}), bad = f64({1, 2});
  r.refuse = true;
  Function plain = exp_function();
  for (int i = 0; i < 3; ++i) plain({a, b});
  const std::string want = testing::error_of<ValueError>([&] { plain({a, bad}); });
  r.refuse = false;
  for (int i = 0; i < 3; ++i) f({a, b});
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(testing::error_of<ValueError>([&] { f({a, bad}); }), want);
  const int before = r.replays;
  for (int i = 0; i < 3; ++i) EXPECT_ALLCLOSE(f({a, b})[0], expected(a, b));
  EXPECT_EQ(r.replays, before + 3);
}

TEST(Replay, RandomGraphsGiveTheCpusResultsCallAfterCall) {
  // The graph fuzzer's graphs on the fake recording device against the CPU backend: each graph
  // built twice from its seed (two sets of shared variables), called five times on the same
  // argument buffers (the second call records, the later ones replay), outputs and shared
  // variables compared after every call, with gc and without. HYPATIA_FUZZ_GRAPHS=N runs more.
  FakeRecorder& r = fake();
  const char* env = std::getenv("HYPATIA_FUZZ_GRAPHS");
  const uint64_t n = env && *env ? std::strtoull(env, nullptr, 10) : (testing::kSanitizerBuild ? 10 : 40);
  int compared = 0, failures = 0;
  for (uint64_t seed = 1; seed <= n && failures < 5; ++seed) {
    for (bool gc : {true, false}) {
      testing::FuzzSource sa(seed), sb(seed);
      const testing::FuzzGraph ga = testing::build_fuzz_graph(sa), gb = testing::build_fuzz_graph(sb);
      auto compile = [&](const testing::FuzzGraph& g, const std::string& backend) {
        FunctionOptions o;
        o.backend = backend;
        o.on_unused_input = "ignore";
        o.updates = g.updates;
        o.allow_gc = gc;
        return function(std::vector<In>(g.inputs.begin(), g.inputs.end()),
                        std::vector<Out>(g.outputs.begin(), g.outputs.end()), o);
      };
      std::optional<Function> fa, fb;
      try {
        fb.emplace(compile(gb, "cpu"));
      } catch (const Error&) {
        continue;  // (a graph the CPU refuses: the fuzzer's own test covers it)
      }
      fa.emplace(compile(ga, "test_replay"));
      const double rtol = ga.rtol > 0 ? ga.rtol : 1e-6, atol = ga.atol > 0 ? ga.atol : 1e-8;
      std::string failure;
      for (int call = 0; call < 5 && failure.empty(); ++call) {
        std::vector<NDArray> oa, ob;
        std::string ea, eb;
        try {
          oa = (*fa)(ga.values);
        } catch (const Error& e) {
          ea = e.what();
        }
        try {
          ob = (*fb)(gb.values);
        } catch (const Error& e) {
          eb = e.what();
        }
        if (ea.empty() != eb.empty()) {
          failure = "call " + std::to_string(call) + ": recorded '" + ea.substr(0, 300) + "', CPU '" +
                    eb.substr(0, 300) + "'";
          break;
        }
        for (size_t k = 0; k < oa.size() && k < ob.size() && failure.empty(); ++k) {
          const std::string d = testing::compare_arrays(oa[k], ob[k], rtol, atol);
          if (!d.empty()) failure = "call " + std::to_string(call) + " output " + std::to_string(k) + ": " + d;
        }
        for (size_t k = 0; k < ga.shared.size() && failure.empty(); ++k) {
          const std::string d =
              testing::compare_arrays(get_value(ga.shared[k].first), get_value(gb.shared[k].first), rtol, atol);
          if (!d.empty()) failure = "call " + std::to_string(call) + " shared " + std::to_string(k) + ": " + d;
        }
      }
      ++compared;
      if (!failure.empty()) {
        ++failures;
        ADD_FAILURE() << "graph seed " << seed << (gc ? "" : " (gc off)") << ": " << failure << "\n"
                      << ga.describe() << "\n"
                      << fa->debugprint();
      }
    }
  }
  EXPECT_GT(compared, static_cast<int>(n));
  EXPECT_GT(r.replays, 0);
  std::printf("random graphs on the fake recording device: %d compared, %d recordings, %d replays\n", compared,
              r.recordings.load(), r.replays.load());
}

TEST(Replay, MemoryPressureDropsTheRecordingsOfIdleFunctionsAndTheyAreMadeAgain) {
  FakeRecorder& r = fake();
  Function f = exp_function();
  NDArray a = f64({0.5, -1, 2}), b = f64({1, 2, -0.5});
  for (int i = 0; i < 3; ++i) EXPECT_ALLCLOSE(f({a, b})[0], expected(a, b));
  EXPECT_EQ(r.recordings, 1);
  relieve_memory_pressure(DeviceKind::Cuda);  // another device's: nothing of this backend's
  EXPECT_EQ(r.dropped, 0);
  relieve_memory_pressure(DeviceKind::Host);  // (the fake device is the host's kind)
  EXPECT_EQ(r.dropped, 1);
  // The next call runs the steps, the one after records again, then replays.
  const int replays = r.replays;
  for (int i = 0; i < 4; ++i) {
    a.data<double>()[0] = i;
    EXPECT_ALLCLOSE(f({a, b})[0], expected(a, b));
  }
  EXPECT_EQ(r.recordings, 2);
  EXPECT_EQ(r.replays, replays + 3);
  // A function that was destroyed is not asked.
  {
    Function g = exp_function();
    g({a, b});
    g({a, b});
  }
  EXPECT_EQ(r.dropped, 2);
  relieve_memory_pressure(DeviceKind::Host);
  EXPECT_EQ(r.dropped, 3);  // f's second recording
}

TEST(Replay, ACallUnderMemoryPressureDropsItsOwnRecordingsAtItsNextRun) {
  // Pressure while the call runs (from a step after the recorded run, as an allocation there
  // would): the call's frame is busy, so the handler leaves it; the next call drops them.
  FakeRecorder& r = fake();
  Var x = matrix("x", DType::Float64), y = matrix("y", DType::Float64);
  Function f = compile({x, y}, {softmax(exp(x * y) + x)});
  Function ref = function({x, y}, {softmax(exp(x * y) + x)});
  NDArray a = testing::random_array({3, 4}, DType::Float64, -1, 1, 3),
          b = testing::random_array({3, 4}, DType::Float64, -1, 1, 4);
  for (int i = 0; i < 3; ++i) EXPECT_ALLCLOSE(f({a, b})[0], ref({a, b})[0]);
  ASSERT_EQ(r.recordings, 1) << f.debugprint();
  r.pressure_in_softmax = true;
  EXPECT_ALLCLOSE(f({a, b})[0], ref({a, b})[0]);
  EXPECT_FALSE(r.pressure_in_softmax);
  EXPECT_EQ(r.dropped, 0);  // busy when the pressure came
  const int replays = r.replays;
  EXPECT_ALLCLOSE(f({a, b})[0], ref({a, b})[0]);
  EXPECT_EQ(r.dropped, 1);
  EXPECT_EQ(r.replays, replays);  // the steps ran
  for (int i = 0; i < 3; ++i) EXPECT_ALLCLOSE(f({a, b})[0], ref({a, b})[0]);
  EXPECT_EQ(r.recordings, 2);
}

TEST(Replay, WithoutGarbageCollectionAndFromManyThreads) {
  FakeRecorder& r = fake();
  FunctionOptions o;
  o.allow_gc = false;
  Function f = exp_function(o);
  NDArray a = f64({0.5, -1, 2}), b = f64({1, 2, -0.5});
  for (int i = 0; i < 5; ++i) {
    a.data<double>()[2] = i;
    EXPECT_ALLCLOSE(f({a, b})[0], expected(a, b));
  }
  EXPECT_EQ(r.replays, 4);
  Function g = exp_function();
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      NDArray at = f64({0.1 * t, 1, 2, 3}), bt = f64({1, -1, 0.5, 0.25});
      for (int i = 0; i < 25; ++i) {
        at.data<double>()[0] = 0.01 * i;
        if (!testing::compare_arrays(g({at, bt})[0], expected(at, bt)).empty()) ++wrong;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace hypatia
