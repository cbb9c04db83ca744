// NDArray, dtype promotion, config.
#include "hypatia/core/allocator.h"
#include "hypatia/core/cancel.h"
#include "test_util.h"

namespace hypatia {
namespace {
using testing::random_array;

TEST(DType, PromotionFollowsNumpy) {
  EXPECT_EQ(promote_types(DType::Int8, DType::UInt8), DType::Int16);
  EXPECT_EQ(promote_types(DType::Int32, DType::Float32), DType::Float64);
  EXPECT_EQ(promote_types(DType::Int16, DType::Float32), DType::Float32);
  EXPECT_EQ(promote_types(DType::UInt64, DType::Int64), DType::Float64);
  EXPECT_EQ(promote_types(DType::Bool, DType::Int8), DType::Int8);
  EXPECT_EQ(promote_types(DType::UInt32, DType::Int32), DType::Int64);
  EXPECT_EQ(promote_types(DType::Float32, DType::Float64), DType::Float64);
  EXPECT_TRUE(can_cast_safely(DType::Float32, DType::Float64));
  EXPECT_FALSE(can_cast_safely(DType::Float64, DType::Float32));
  EXPECT_EQ(float_upcast(DType::Int64), DType::Float64);
  EXPECT_EQ(float_upcast(DType::UInt8), DType::Float32);
  EXPECT_EQ(dtype_from_name("uint16"), DType::UInt16);
  EXPECT_THROW(dtype_from_name("float128"), TypeError);
}

TEST(NDArray, ViewsShareTheBuffer) {
  NDArray a = NDArray::from_vector<float>({0, 1, 2, 3, 4, 5}, {2, 3});
  EXPECT_TRUE(a.is_c_contiguous());
  NDArray t = a.transpose();
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_FALSE(t.is_c_contiguous());
  EXPECT_TRUE(t.is_f_contiguous());
  EXPECT_EQ(t.at<float>({2, 1}), 5.0f);
  t.at<float>({0, 0}) = 42;
  EXPECT_EQ(a.at<float>({0, 0}), 42.0f);
  NDArray r = a.slice(1, 2, -1, -1);  // columns 2, 1, 0
  EXPECT_EQ(r.shape(), (Shape{2, 3}));
  EXPECT_EQ(r.at<float>({1, 0}), 5.0f);
  EXPECT_EQ(r.strides()[1], -4);
  NDArray c = r.copy();
  EXPECT_TRUE(c.is_c_contiguous());
  EXPECT_EQ(c.get_flat(3), 5.0);
  EXPECT_FALSE(c.shares_buffer(a));
}

TEST(NDArray, ReshapeBroadcastAstype) {
  NDArray a = NDArray::from_vector<int32_t>({1, 2, 3}, {3});
  NDArray b = a.broadcast_to({2, 3});
  EXPECT_EQ(b.strides()[0], 0);
  EXPECT_EQ(b.get_flat(4), 2.0);
  EXPECT_THROW(a.broadcast_to({2, 4}), ValueError);
  NDArray f = b.astype(DType::Float64);
  EXPECT_EQ(f.dtype(), DType::Float64);
  EXPECT_EQ(f.get_flat(5), 3.0);
  EXPECT_EQ(a.reshape({3, 1}).shape(), (Shape{3, 1}));
  EXPECT_THROW(a.reshape({2, 2}), ValueError);
  NDArray t = NDArray::from_vector<double>({0, 1, 2, 3, 4, 5}, {2, 3}).transpose();
  NDArray tr = t.reshape({6});  // non-contiguous: copies
  EXPECT_EQ(tr.get_flat(1), 3.0);
}

TEST(NDArray, ZeroSizeAndScalar) {
  NDArray z = NDArray::zeros({0, 3}, DType::Float32);
  EXPECT_EQ(z.size(), 0);
  EXPECT_TRUE(z.copy().valid());
  NDArray s = NDArray::scalar(2.5, DType::Float64);
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.get_flat(0), 2.5);
  EXPECT_EQ(s.str(), "array(2.5, dtype=float64)");
  EXPECT_THROW(NDArray::empty({-1}, DType::Float32), ValueError);
}

TEST(Config, FlagsAndRc) {
  Config c;
  c.apply_flags("floatX=float32, allow_gc=False,profile=True");
  EXPECT_EQ(c.floatX, DType::Float32);
  EXPECT_FALSE(c.allow_gc);
  EXPECT_TRUE(c.profile);
  c.apply_flags("floatX=float16");  // Theano's third floatX (a storage dtype: test_float16.cpp)
  EXPECT_EQ(c.floatX, DType::Float16);
  EXPECT_THROW(c.apply_flags("floatX=int32"), ValueError);
  EXPECT_THROW(c.apply_flags("nonsense=1"), ValueError);
  EXPECT_THROW(c.apply_flags("floatX"), ValueError);
  c.apply_rc("# comment\n[global]\nfloatX = float64\nmode=FAST_COMPILE\n");
  EXPECT_EQ(c.floatX, DType::Float64);
  EXPECT_EQ(c.mode, "FAST_COMPILE");
  EXPECT_EQ(c.get("allow_gc"), "False");
}

TEST(Config, TheanosCudnnAlgorithmChoicesAreHonouredAndItsFixedOnesRefusedByName) {
  Config c;
  EXPECT_EQ(c.get("dnn.conv.algo_fwd"), "guess_once");
  c.apply_flags("dnn.conv.algo_fwd=time_once,dnn.conv.algo_bwd_filter=time_on_shape_change");
  EXPECT_EQ(c.dnn_conv_algo_fwd, "time_once");
  EXPECT_EQ(c.dnn_conv_algo_bwd_data, "guess_once");
  EXPECT_EQ(c.get("dnn.conv.algo_bwd_filter"), "time_on_shape_change");
  EXPECT_ERROR(ConfigError, c.apply_flags("dnn.conv.algo_fwd=small"),
               "dnn.conv.algo_fwd must be one of guess_once, guess_on_shape_change, time_once, time_on_shape_change");
  // Theano's rc form: a [dnn.conv] section (its other options are ignored with a warning).
  std::vector<std::string> warnings;
  set_config_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  c.apply_rc("[global]\nfloatX = float32\n[dnn.conv]\nalgo_bwd_data = time_once\nworkmem = 100\n");
  set_config_warning_handler(nullptr);
  EXPECT_EQ(c.dnn_conv_algo_bwd_data, "time_once");
  EXPECT_EQ(c.floatX, DType::Float32);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("dnn.conv.workmem"), std::string::npos) << warnings[0];
  EXPECT_FALSE(is_ignored_theano_option("dnn.conv.algo_fwd"));
  EXPECT_TRUE(is_ignored_theano_option("dnn.conv.workmem"));
}

TEST(Config, TheanosDnnEnabledChoosesBetweenCudnnAndIm2col) {
  Config c;
  EXPECT_EQ(c.get("dnn.enabled"), "auto");
  c.apply_flags("dnn.enabled=False");
  EXPECT_EQ(c.dnn_enabled, "False");
  EXPECT_ERROR(ConfigError, c.apply_flags("dnn.enabled=maybe"),
               "dnn.enabled must be one of auto, True, False, no_check");
  EXPECT_FALSE(is_ignored_theano_option("dnn.enabled"));
  EXPECT_TRUE(is_ignored_theano_option("dnn.library_path"));
  // Theano's rc form: [dnn] enabled = True (its other options are ignored with a warning).
  std::vector<std::string> warnings;
  set_config_warning_handler([&](const std::string& m) { warnings.push_back(m); });
  c.apply_rc("[dnn]\nenabled = True\ninclude_path = /usr/include\n");
  set_config_warning_handler(nullptr);
  EXPECT_EQ(c.dnn_enabled, "True");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("dnn.include_path"), std::string::npos) << warnings[0];
}

}  // namespace
}  // namespace hypatia

namespace hypatia {
namespace {
TEST(Allocator, SizeClassesHoldTheRequestAndAreReused) {
  for (size_t bytes :
       {size_t{1}, size_t{64}, size_t{65}, size_t{300}, size_t{4097}, size_t{1} << 20, (size_t{3} << 20) + 5}) {
    size_t cap = 0;
    void* p = host_alloc(bytes, &cap);
    ASSERT_NE(p, nullptr);
    EXPECT_GE(cap, bytes);
    EXPECT_LE(cap, bytes < 256 ? 256 : bytes + bytes / 4 + 64);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    static_cast<char*>(p)[bytes - 1] = 1;
    host_free(p, cap);
  }
  host_cache_clear();
}
}  // namespace
}  // namespace hypatia

namespace hypatia {
namespace {
TEST(Constructors, FloatXAndPrefixes) {
  Config saved = config();
  config().floatX = DType::Float32;
  EXPECT_EQ(matrix("m")->type, matrix_type(DType::Float32));
  EXPECT_EQ(matrix("m", DType::Int64)->type, matrix_type(DType::Int64));
  config().floatX = DType::Float64;
  EXPECT_EQ(vector()->type, vector_type(DType::Float64));
  EXPECT_EQ(fmatrix("x")->type, matrix_type(DType::Float32));
  EXPECT_EQ(dtensor4()->type, tensor4_type(DType::Float64));
  EXPECT_EQ(irow()->type, row_type(DType::Int32));
  EXPECT_EQ(lcol()->type, col_type(DType::Int64));
  EXPECT_EQ(bscalar()->type, scalar_type(DType::Int8));
  EXPECT_EQ(wtensor3()->type, tensor3_type(DType::Int16));
  EXPECT_EQ(fmatrix("x")->name, "x");
  EXPECT_EQ(row()->type.str(), "TensorType(float64, row)");
  config() = saved;
}
}  // namespace
}  // namespace hypatia

TEST(Cancel, ScopesNestAndRestoreTheFlag) {
  std::atomic<bool> outer{false}, inner{true};
  EXPECT_FALSE(hypatia::cancel_requested());
  {
    hypatia::CancelScope a(&outer);
    EXPECT_FALSE(hypatia::cancel_requested());
    {
      hypatia::CancelScope b(&inner);
      EXPECT_TRUE(hypatia::cancel_requested());
      EXPECT_THROW(hypatia::check_cancelled(), hypatia::Cancelled);
    }
    EXPECT_FALSE(hypatia::cancel_requested());
    outer = true;
    EXPECT_TRUE(hypatia::cancel_requested());
  }
  EXPECT_FALSE(hypatia::cancel_requested());
  EXPECT_NO_THROW(hypatia::check_cancelled());
}
