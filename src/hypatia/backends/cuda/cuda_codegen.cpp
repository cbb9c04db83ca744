#include "hypatia/backends/cuda/cuda_codegen.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <mutex>
#include <sstream>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>

#include "hypatia/backends/cuda/cuda_api.h"
#include "hypatia/core/error.h"
#include "hypatia/ops/composite.h"
#include "hypatia/ops/elemwise.h"
#include "hypatia/ops/random.h"
#include "hypatia/ops/reduce.h"

namespace hypatia::cuda {

// The texts of nvrtc_std.cuh, core/half.h, ops/scalar_functors.h and backends/mrg_generate.h,
// embedded at build time (CMakeLists.txt writes them into a generated source).
extern const char* const kNvrtcStdText;
extern const char* const kHalfText;
extern const char* const kScalarFunctorsText;
extern const char* const kMrgText;

namespace {

struct Row {
  const char* name;
  int arity;
  ScalarDTypeRule rule;
  const char* fn;
};
const Row kRows[] = {
#define HYP_SCALAR_OP(Kind, Name, Arity, Rule, Cost, Simd, Build, Cpp, Core, Py, Doc, Fn, Grad) \
  {Name, Arity, ScalarDTypeRule::Rule, #Fn},
#include "hypatia/ops/scalar_ops.def"
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}

std::string drop_preprocessor_lines(const std::string& s) {
  std::stringstream in(s);
  std::string out, line;
  while (std::getline(in, line))
    if (line.rfind("#include", 0) != 0 && line.rfind("#pragma", 0) != 0) {
      out += line;
      out += '\n';
    }
  return out;
}

/// The text strictly inside `open` ... `close` (the first `close` after `open`).
std::string inside(const std::string& s, const std::string& open, const std::string& close) {
  const size_t b = s.find(open);
  const size_t e = b == std::string::npos ? b : s.find(close, b);
  if (e == std::string::npos) fail<InternalError>("CUDA code generator: marker '", open, "' not found in the table");
  return s.substr(b + open.size(), e - b - open.size());
}

std::string build_prefix() {
  const std::string half = inside(drop_preprocessor_lines(kHalfText), "namespace hypatia {", "}  // namespace hypatia");
  const std::string math = inside(kScalarFunctorsText, "namespace scalar_math {", "}  // namespace scalar_math");
  std::string s = kNvrtcStdText;
  s += "\nnamespace hypatia {\n";
  s += replace_all(half, "std::", "hstd::");
  s += "\nnamespace scalar_math {\n";
  s += replace_all(math, "std::", "hstd::");
  s += "\n}  // namespace scalar_math\nnamespace fn {\n";
  for (const Row& r : kRows) {
    if (r.rule == ScalarDTypeRule::Cast) continue;
    const std::string body = replace_all(r.fn, "std::", "hstd::");
    std::string params = r.arity == 1                        ? "T x"
                         : r.arity == 2                      ? "T a, T b"
                         : r.rule == ScalarDTypeRule::Select ? "bool a, T b, T c"
                                                             : "T a, T b, T c";
    s += "template <class T> inline auto op_";
    s += r.name;
    s += "(" + params + ") { return " + body + "; }\n";
  }
  s += "}  // namespace fn\n}  // namespace hypatia\nusing namespace hypatia::fn;\n";
  s += "using hypatia::scalar_math::convert;\n";
  return s;
}

/// A 128-bit hash of `parts`: xxHash64's round in four lanes over 32-byte stripes, merged twice
/// (a module's source starts with the 25 KB scalar-op table: FNV-1a byte by byte took about 1 ms
/// of each function's compile for its 30 requests). Stable across processes (the disk cache's
/// names).
std::array<uint64_t, 2> hash128(std::initializer_list<std::string_view> parts) {
  constexpr uint64_t P1 = 11400714785074694791ull, P2 = 14029467366897019727ull, P3 = 1609587929392839161ull,
                     P4 = 9650029242287828579ull;
  auto round = [](uint64_t acc, uint64_t w) { return std::rotl(acc + w * P2, 31) * P1; };
  auto avalanche = [](uint64_t h) {
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    return h ^ (h >> 32);
  };
  uint64_t v[4] = {P1 + P2, P2, 0, 0 - P1}, n = 0;
  auto word = [](const char* p) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
  };
  for (std::string_view s : parts) {
    size_t i = 0;
    for (; i + 32 <= s.size(); i += 32)
      for (int l = 0; l < 4; ++l) v[l] = round(v[l], word(s.data() + i + 8 * l));
    for (int l = 0; i + 8 <= s.size(); i += 8, ++l) v[l] = round(v[l], word(s.data() + i));
    uint64_t tail = 0;
    std::memcpy(&tail, s.data() + i, s.size() - i);
    v[3] = round(v[3], tail ^ (static_cast<uint64_t>(s.size()) << 3));
    n += s.size();
  }
  const uint64_t a = std::rotl(v[0], 1) + std::rotl(v[1], 7) + std::rotl(v[2], 12) + std::rotl(v[3], 18);
  const uint64_t b = (v[0] * P4) ^ std::rotl(v[1] * P3, 21) ^ std::rotl(v[2] * P1, 43) ^ (v[3] + P2);
  return {avalanche(a + n * P4), avalanche(b ^ (n * P1))};
}

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

}  // namespace

std::string numbered(const char* prefix, long long i) {
  std::string r = prefix;
  r += std::to_string(i);
  return r;
}

const std::string& table_prefix() {
  static const std::string p = build_prefix();
  return p;
}

std::string mrg_prefix() {
  std::string s = kNvrtcStdText;
  s += "\nnamespace hypatia {\n";
  s += numbered("constexpr int32_t kMrgM1 = ", kMrgM1) + ";\n";
  s += numbered("constexpr int32_t kMrgM2 = ", kMrgM2) + ";\n";
  s += "namespace mrg {\n";
  // From the line after the begin marker (the rest of its comment) to the end marker.
  std::string shared =
      inside(kMrgText, "[shared with the CUDA backend: begin]", "// ---- [shared with the CUDA backend: end]");
  shared.erase(0, shared.find('\n') + 1);
  s += replace_all(shared, "std::", "hstd::");
  s += "\n}  // namespace mrg\n}  // namespace hypatia\n";
  return s;
}

const char* cuda_type(DType dt) {
  switch (dt) {
    case DType::Bool:
      return "bool";
    case DType::Int8:
      return "signed char";
    case DType::Int16:
      return "short";
    case DType::Int32:
      return "int";
    case DType::Int64:
      return "long long";
    case DType::UInt8:
      return "unsigned char";
    case DType::UInt16:
      return "unsigned short";
    case DType::UInt32:
      return "unsigned int";
    case DType::UInt64:
      return "unsigned long long";
    case DType::Float32:
      return "float";
    case DType::Float64:
      return "double";
    case DType::Float16:
      return "hypatia::half";
  }
  return "void";
}

bool generatable(ScalarOpKind k, DType compute) {
  const ScalarOpInfo& info = scalar_op_info(k);
  if (k == ScalarOpKind::Cast) return compute == DType::Float32;  // to and from float16, in fused programs
  if (compute != DType::Float32 && compute != DType::Float64) return false;
  switch (info.rule) {
    case ScalarDTypeRule::Compare:
    case ScalarDTypeRule::Predicate:
    case ScalarDTypeRule::Bitwise:
      return false;  // a bool result, or integers only
    default:
      return true;
  }
}

ElemSpec elemwise_spec(ScalarOpKind k, const std::vector<DType>& in, DType out) {
  ElemSpec s;
  s.in = in;
  s.out = {out};
  if (k == ScalarOpKind::Cast) {
    s.out_expr = {"x0"};
    return s;
  }
  const DType t = elemwise_compute_dtype(k, in, out);
  const bool select = scalar_op_info(k).rule == ScalarDTypeRule::Select;
  std::string call = std::string("op_") + std::string(scalar_op_name(k)) + "(";
  for (size_t j = 0; j < in.size(); ++j) {
    const char* ct = select && j == 0 ? "bool" : cuda_type(t);
    s.body +=
        std::string("    const ") + ct + numbered(" a", j) + " = convert<" + ct + ">(x" + std::to_string(j) + ");\n";
    call += numbered(j ? ", a" : "a", j);
  }
  s.out_expr = {call + ")"};
  return s;
}

ElemSpec composite_spec(const CompositeProgram& prog, const std::vector<int>& outputs) {
  ElemSpec s;
  s.in = prog.in_dtypes;
  for (int v = 0; v < prog.nin; ++v) s.body += numbered("    const auto v", v) + numbered(" = x", v) + ";\n";
  for (size_t j = 0; j < prog.steps.size(); ++j) {
    const CompositeStep& st = prog.steps[j];
    const int v = prog.nin + static_cast<int>(j);
    std::string line = numbered("    const auto v", v) + " = ";
    if (st.kind == ScalarOpKind::Cast) {
      line += std::string("convert<") + cuda_type(st.cast_to) + numbered(">(v", st.args.at(0)) + ")";
    } else {
      line += std::string("op_") + std::string(scalar_op_name(st.kind)) + "(";
      for (size_t a = 0; a < st.args.size(); ++a) line += numbered(a ? ", v" : "v", st.args[a]);
      line += ")";
    }
    s.body += line + ";\n";
  }
  for (int o : outputs) {
    s.out_expr.push_back(numbered("v", o));
    s.out.push_back(prog.value_dtype(o));
  }
  return s;
}

std::string grid_stride_head(const std::string& name, const std::string& args, const std::string& count,
                             const char* var) {
  const std::string v = var;
  return "extern \"C\" __global__ void " + name + "(const " + args + " a) {\n" +
         "  const long long step = (long long)gridDim.x * blockDim.x;\n" + "  for (long long " + v +
         " = (long long)blockIdx.x * blockDim.x + threadIdx.x; " + v + " < " + count + "; " + v + " += step) {\n";
}

int elem_vector_width(const ElemSpec& spec) {
  size_t widest = 1;
  for (DType d : spec.in) widest = std::max(widest, itemsize(d));
  for (DType d : spec.out) widest = std::max(widest, itemsize(d));
  int v = static_cast<int>(std::min<size_t>(8, 16 / widest));
  // The loop holds V copies of the body: a long body (a fused chain's steps, many operands) would
  // cost registers, occupancy and NVRTC's time for a kernel that computes more than it moves.
  const auto work =
      static_cast<int>(std::count(spec.body.begin(), spec.body.end(), '\n') + spec.in.size() + spec.out.size());
  while (v > 1 && v * work > kElemVectorWork) v /= 2;
  return v;
}

std::string elementwise_source(const ElemSpec& spec, const std::string& name, ElemKernels which, int vector) {
  const size_t ni = spec.in.size(), no = spec.out.size();
  const std::string D = std::to_string(kMaxDims);
  const int V = vector > 0 ? vector : elem_vector_width(spec);
  const std::string VS = std::to_string(V);
  std::string s = "struct HypArgs {\n  long long n, nd, shape[" + D + "];\n";
  s += numbered("  unsigned long long out[", no) + numbered("];\n  long long ost[", no * kMaxDims) + "];\n";
  s += numbered("  unsigned long long in[", ni) + numbered("];\n  long long ist[", ni * kMaxDims) + "];\n};\n";
  auto body = [&](bool contiguous) {
    std::string b;
    if (!contiguous) {
      b += "    long long rem = i";
      for (size_t k = 0; k < no; ++k) b += numbered(", oo", k) + " = 0";
      for (size_t j = 0; j < ni; ++j) b += numbered(", io", j) + " = 0";
      b += ";\n    for (int d = (int)a.nd - 1; d >= 0; --d) {\n      const long long c = rem % a.shape[d];\n"
           "      rem /= a.shape[d];\n";
      for (size_t k = 0; k < no; ++k)
        b += numbered("      oo", k) + numbered(" += c * a.ost[", k * kMaxDims) + " + d];\n";
      for (size_t j = 0; j < ni; ++j)
        b += numbered("      io", j) + numbered(" += c * a.ist[", j * kMaxDims) + " + d];\n";
      b += "    }\n";
    }
    for (size_t j = 0; j < ni; ++j) {
      const std::string J = std::to_string(j), T = cuda_type(spec.in[j]);
      if (contiguous)
        b += "    const " + T + " x" + J + " = ((const " + T + "*)a.in[" + J + "])[i * a.ist[" +
             std::to_string(j * kMaxDims) + "]];\n";
      else
        b += "    const " + T + " x" + J + " = *(const " + T + "*)((const char*)a.in[" + J + "] + io" + J + ");\n";
    }
    b += spec.body;
    for (size_t k = 0; k < no; ++k) {
      const std::string K = std::to_string(k), T = cuda_type(spec.out[k]);
      if (contiguous)
        b += "    ((" + T + "*)a.out[" + K + "])[i] = convert<" + T + ">(" + spec.out_expr[k] + ");\n";
      else
        b += "    *(" + T + "*)((char*)a.out[" + K + "] + oo" + K + ") = convert<" + T + ">(" + spec.out_expr[k] +
             ");\n";
    }
    return b;
  };
  // The contiguous kernel's vector loop: V elements per thread, each operand read or written
  // whole as one V-element vector (up to 16 bytes of the widest dtype: one load or store instruction),
  // a broadcast scalar read once; the launch asks for it (a.nd == V) when every such operand is
  // aligned to its vector. The scalar loop does the rest (the tail, or everything).
  auto vector_loop = [&] {
    std::string b = "  long long hyp_begin = 0;\n  if (a.nd == " + VS + ") {\n    const long long hyp_nv = a.n / " +
                    VS + ";\n    for (long long hyp_q = hyp_first; hyp_q < hyp_nv; hyp_q += step) {\n";
    for (size_t j = 0; j < ni; ++j) {
      const std::string J = std::to_string(j), T = cuda_type(spec.in[j]), VT = "HypVec<" + T + ", " + VS + ">";
      b += "      " + VT + " x" + J + "v;\n      if (a.ist[" + std::to_string(j * kMaxDims) + "]) x" + J +
           "v = ((const " + VT + "*)a.in[" + J + "])[hyp_q];\n      else for (int hyp_e = 0; hyp_e < " + VS +
           "; ++hyp_e) x" + J + "v.v[hyp_e] = ((const " + T + "*)a.in[" + J + "])[0];\n";
    }
    for (size_t k = 0; k < no; ++k)
      b += "      HypVec<" + std::string(cuda_type(spec.out[k])) + ", " + VS + "> o" + std::to_string(k) + "v;\n";
    b += "#pragma unroll\n      for (int hyp_e = 0; hyp_e < " + VS + "; ++hyp_e) {\n";
    for (size_t j = 0; j < ni; ++j) {
      const std::string J = std::to_string(j);
      b += "        const " + std::string(cuda_type(spec.in[j])) + " x" + J + " = x" + J + "v.v[hyp_e];\n";
    }
    b += spec.body;
    for (size_t k = 0; k < no; ++k) {
      const std::string K = std::to_string(k);
      b += "        o" + K + "v.v[hyp_e] = convert<" + cuda_type(spec.out[k]) + ">(" + spec.out_expr[k] + ");\n";
    }
    b += "      }\n";
    for (size_t k = 0; k < no; ++k) {
      const std::string K = std::to_string(k);
      b += "      ((HypVec<" + std::string(cuda_type(spec.out[k])) + ", " + VS + ">*)a.out[" + K + "])[hyp_q] = o" + K +
           "v;\n";
    }
    return b + "    }\n    hyp_begin = hyp_nv * " + VS + ";\n  }\n";
  };
  for (bool contiguous : {true, false}) {
    if (which == (contiguous ? ElemKernels::Strided : ElemKernels::Contiguous)) continue;
    if (contiguous && V > 1) {
      s += "template <class T, int V> struct alignas(sizeof(T) * V) HypVec { T v[V]; };\n";
      s += "extern \"C\" __global__ void " + name + "_c(const HypArgs a) {\n";
      s += "  const long long step = (long long)gridDim.x * blockDim.x;\n";
      s += "  const long long hyp_first = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n";
      s += vector_loop();
      s += "  for (long long i = hyp_begin + hyp_first; i < a.n; i += step) {\n";
    } else {
      s += grid_stride_head(name + (contiguous ? "_c" : "_s"), "HypArgs", "a.n", "i");
    }
    s += body(contiguous);
    s += "  }\n}\n";
  }
  return s;
}

std::string reduce_source(ReduceKind kind, const ElemSpec& spec, DType out, const std::string& name) {
  const DType v = spec.out.at(0);
  const bool is_float = v == DType::Float32 || v == DType::Float64;
  const bool is_unsigned = v == DType::UInt8 || v == DType::UInt16 || v == DType::UInt32 || v == DType::UInt64;
  std::string acc, ident, combine;
  switch (kind) {
    case ReduceKind::Sum:
    case ReduceKind::Prod:
      acc = is_float ? "double" : is_unsigned ? "unsigned long long" : "long long";
      ident = kind == ReduceKind::Sum ? "0" : "1";
      combine = kind == ReduceKind::Sum ? "op_add(p, q)" : "op_mul(p, q)";
      break;
    case ReduceKind::Max:
    case ReduceKind::Min: {
      acc = cuda_type(v);
      const std::string lim = "hstd::numeric_limits<" + acc + ">::";
      if (is_float)
        ident = (kind == ReduceKind::Max ? "-" : "") + lim + "infinity()";
      else
        ident = lim + (kind == ReduceKind::Max ? "lowest()" : "max()");
      combine = kind == ReduceKind::Max ? "op_maximum(p, q)" : "op_minimum(p, q)";
      break;
    }
    case ReduceKind::All:
    case ReduceKind::Any:
      acc = "bool";
      ident = kind == ReduceKind::All ? "true" : "false";
      combine = kind == ReduceKind::All ? "(p && q)" : "(p || q)";
      break;
    default:
      fail<InternalError>("CUDA reduce: no kernel for ", reduce_kind_name(kind));
  }
  const size_t ni = spec.in.size();
  const std::string D = std::to_string(kMaxDims), NI = std::to_string(ni);
  std::string s = "struct RedArgs_" + name + " {\n  long long n_out, n_red, nd_out, nd_red, out_shape[" + D +
                  "], red_shape[" + D + "];\n  unsigned long long in[" + NI + "];\n  long long out_st[" +
                  std::to_string(ni * kMaxDims) + "], red_st[" + std::to_string(ni * kMaxDims) +
                  "];\n  unsigned long long out;\n};\n";
  s += "__device__ inline " + acc + " combine_" + name + "(" + acc + " p, " + acc + " q) { return " + combine + "; }\n";
  s += "extern \"C\" __global__ void " + name + "(const RedArgs_" + name + " a) {\n";
  s += "  __shared__ " + acc + " sh[256];\n";
  s += "  for (long long o = blockIdx.x; o < a.n_out; o += gridDim.x) {\n";
  s += "    long long rem = o";
  for (size_t j = 0; j < ni; ++j) s += numbered(", b", j) + " = 0";
  s += ";\n    for (int d = (int)a.nd_out - 1; d >= 0; --d) {\n      const long long c = rem % a.out_shape[d];\n"
       "      rem /= a.out_shape[d];\n";
  for (size_t j = 0; j < ni; ++j)
    s += numbered("      b", j) + numbered(" += c * a.out_st[", j * kMaxDims) + " + d];\n";
  s += "    }\n    " + acc + " acc = " + ident + ";\n";
  s += "    for (long long r = threadIdx.x; r < a.n_red; r += blockDim.x) {\n      long long rr = r";
  for (size_t j = 0; j < ni; ++j) s += numbered(", io", j) + numbered(" = b", j);
  s += ";\n      for (int d = (int)a.nd_red - 1; d >= 0; --d) {\n        const long long c = rr % a.red_shape[d];\n"
       "        rr /= a.red_shape[d];\n";
  for (size_t j = 0; j < ni; ++j)
    s += numbered("        io", j) + numbered(" += c * a.red_st[", j * kMaxDims) + " + d];\n";
  s += "      }\n";
  for (size_t j = 0; j < ni; ++j) {
    const std::string T = cuda_type(spec.in[j]);
    s += "    const " + T + numbered(" x", j) + " = *(const " + T + numbered("*)((const char*)a.in[", j) +
         numbered("] + io", j) + ");\n";
  }
  s += spec.body;
  s += "      acc = combine_" + name + "(acc, convert<" + acc + ">(" + spec.out_expr.at(0) + "));\n    }\n";
  s += "    sh[threadIdx.x] = acc;\n    __syncthreads();\n";
  s += "    for (int w = blockDim.x / 2; w > 0; w >>= 1) {\n";
  s += "      if (threadIdx.x < w) sh[threadIdx.x] = combine_" + name + "(sh[threadIdx.x], sh[threadIdx.x + w]);\n";
  s += "      __syncthreads();\n    }\n";
  s += std::string("    if (threadIdx.x == 0) ((") + cuda_type(out) + "*)a.out)[o] = convert<" + cuda_type(out) +
       ">(sh[0]);\n    __syncthreads();\n  }\n}\n";
  return s;
}

void append_dims(std::vector<int64_t>& args, const std::vector<int64_t>& v, int64_t fill) {
  for (int d = 0; d < kMaxDims; ++d) args.push_back(d < static_cast<int>(v.size()) ? v[d] : fill);
}

std::vector<int64_t> elem_args(int64_t n, const std::vector<int64_t>& shape, const std::vector<void*>& outs,
                               const std::vector<std::vector<int64_t>>& out_strides,
                               const std::vector<const void*>& ins,
                               const std::vector<std::vector<int64_t>>& in_strides) {
  std::vector<int64_t> a;
  a.reserve(2 + kMaxDims + (outs.size() + ins.size()) * (1 + kMaxDims));
  a.push_back(n);
  a.push_back(static_cast<int64_t>(shape.size()));
  append_dims(a, shape, 1);
  auto block = [&](const auto& ptrs, const std::vector<std::vector<int64_t>>& strides) {
    for (const auto* p : ptrs) a.push_back(static_cast<int64_t>(reinterpret_cast<uintptr_t>(p)));
    for (const auto& st : strides) append_dims(a, st, 0);
  };
  block(outs, out_strides);
  block(ins, in_strides);
  return a;
}

// ---- NVRTC and the caches

namespace {

/// NVRTC on `source` for sm_<arch>; returns the program (destroyed by the caller) or throws with
/// the log.
nvrtcProgram nvrtc_run(const std::string& source, int arch, bool syntax_only) {
  const Nvrtc& nv = nvrtc();
  nvrtcProgram prog;
  nvrtcResult r = nv.create(&prog, source.c_str(), "hypatia_kernels.cu", 0, nullptr, nullptr);
  if (r != NVRTC_SUCCESS) fail<Error>("NVRTC: nvrtcCreateProgram failed: ", nv.error_string(r));
  const std::string arch_opt = numbered("--gpu-architecture=sm_", arch);
  // No contraction into FMAs: every step rounds as the CPU's (and the unfused graph's) does.
  const char* opts[] = {arch_opt.c_str(), "--std=c++20", "-default-device", "--fmad=false", "-fdevice-syntax-only"};
  r = nv.compile(prog, syntax_only ? 5 : 4, opts);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nv.log_size(prog, &n);
    std::string log(n, '\0');
    nv.log(prog, log.data());
    nv.destroy(&prog);
    fail<InternalError>("NVRTC could not compile a generated kernel (", nv.error_string(r), "):\n", log,
                        "\n--- the kernels (after the table prefix) ---\n",
                        source.size() > table_prefix().size() ? source.substr(table_prefix().size()) : source);
  }
  return prog;
}

}  // namespace

std::vector<char> compile_cubin(const std::string& source, int arch) {
  const Nvrtc& nv = nvrtc();
  nvrtcProgram prog = nvrtc_run(source, arch, false);
  size_t n = 0;
  nv.cubin_size(prog, &n);
  std::vector<char> cubin(n);
  nv.cubin(prog, cubin.data());
  nv.destroy(&prog);
  return cubin;
}

void check_source(const std::string& source) {
  nvrtcProgram prog = nvrtc_run(source, 90, true);
  nvrtc().destroy(&prog);
}

std::string module_cache_dir() {
  if (const char* d = std::getenv("HYPATIA_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/hypatia";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/hypatia";
  return "/tmp/hypatia-cache";
}

/// A module to build: read from the disk cache and loaded, or compiled and loaded (once, by
/// whichever thread first gets to it; the others wait).
struct ModuleJob {
  std::string key, source, what;  // (the source is dropped once built)
  std::mutex mu;
  std::condition_variable cv;
  bool started = false, done = false;
  cudaLibrary_t lib = nullptr;
  std::exception_ptr error;
};

namespace {

struct ModuleCache {
  std::mutex mu;
  std::unordered_map<std::string, cudaLibrary_t> libs;    // by key
  std::unordered_map<std::string, cudaKernel_t> kernels;  // by key + '/' + name
  // By key: requested, not built (held by the refs: a module whose refs are all gone, as those of
  // a function whose compile failed, is not built).
  std::unordered_map<std::string, std::weak_ptr<ModuleJob>> pending;
  ModuleCacheStats stats;
  ModuleLoader loader;  // (null functions: the CUDA runtime's)
};
ModuleCache& module_cache() {
  static ModuleCache* c = new ModuleCache();  // kept for the process: modules stay loaded
  return *c;
}

/// The modules the calling thread requested and has not built (build_requested_kernels).
std::vector<std::weak_ptr<ModuleJob>>& requested() {
  static thread_local std::vector<std::weak_ptr<ModuleJob>> jobs;
  return jobs;
}

constexpr char kMagic[8] = {'H', 'Y', 'P', 'C', 'U', 'B', '1', '\0'};

std::vector<char> read_entry(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  char magic[8];
  uint64_t size = 0;
  if (!f.read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0 || !f.read(reinterpret_cast<char*>(&size), 8) ||
      size == 0 || size > (uint64_t{1} << 30))
    return {};
  std::vector<char> data(size);
  if (!f.read(data.data(), static_cast<std::streamsize>(size))) return {};
  return data;
}

bool write_entry(const std::string& dir, const std::string& path, const std::vector<char>& cubin) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  static std::atomic<uint64_t> serial{0};  // (threads of one process write at once)
  const std::string tmp = path + numbered(".tmp", ::getpid()) + "-" +
                          std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()) + "-" +
                          std::to_string(serial.fetch_add(1));
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) return false;
    const uint64_t size = cubin.size();
    f.write(kMagic, 8);
    f.write(reinterpret_cast<const char*>(&size), 8);
    f.write(cubin.data(), static_cast<std::streamsize>(size));
    if (!f.flush()) {
      std::filesystem::remove(tmp, ec);
      return false;
    }
  }
  std::filesystem::rename(tmp, path, ec);  // atomic: readers see the old entry or the new one
  if (ec) std::filesystem::remove(tmp, ec);
  return !ec;
}

bool runtime_load(const std::vector<char>& cubin, cudaLibrary_t* lib) {
  DeviceScope on_device;  // (the runtime's context: the driven device's, not the thread's)
  if (cudaLibraryLoadData(lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0) == cudaSuccess) return true;
  cudaGetLastError();
  return false;
}

cudaKernel_t runtime_kernel(cudaLibrary_t lib, const char* name) {
  DeviceScope on_device;
  cudaKernel_t k = nullptr;
  check(cudaLibraryGetKernel(&k, lib, name), "cudaLibraryGetKernel");
  return k;
}

/// The loader in use, with the runtime's functions where it names none (called under c.mu).
ModuleLoader current_loader(const ModuleCache& c) {
  ModuleLoader l = c.loader;
  if (!l.load) l.load = runtime_load;
  if (!l.kernel) l.kernel = runtime_kernel;
  return l;
}

/// The architecture modules are compiled for: the stand-in loader's, else the driven device's (which must
/// be usable; require_available says why not).
int loader_arch() {
  ModuleCache& c = module_cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.loader.load) return c.loader.arch;
  }
  require_available("CUDA kernel");
  return arch();
}

/// The module's library: from the disk cache, else compiled by NVRTC (and written to the cache).
cudaLibrary_t load_or_compile(const ModuleJob& j, const ModuleLoader& loader, int arch_) {
  ModuleCache& c = module_cache();
  const std::string dir = module_cache_dir() + "/cuda";
  const std::string path = dir + "/" + j.key + ".cubin";
  std::vector<char> cubin = read_entry(path);
  cudaLibrary_t lib = nullptr;
  if (!cubin.empty() && loader.load(cubin, &lib)) {
    std::lock_guard<std::mutex> lock(c.mu);
    ++c.stats.disk_hits;
    return lib;
  }
  const bool rejected = !cubin.empty();  // corrupt or stale: compiled again and replaced
  const auto t0 = std::chrono::steady_clock::now();
  cubin = compile_cubin(j.source, arch_);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const bool loaded = loader.load(cubin, &lib);
  const bool written = loaded && write_entry(dir, path, cubin);
  {
    std::lock_guard<std::mutex> lock(c.mu);
    c.stats.disk_rejects += rejected;
    c.stats.compile_seconds += seconds;
    ++c.stats.compiles;
    c.stats.disk_writes += written;
  }
  if (!loaded) fail<Error>("CUDA: the compiled module of kernel ", j.what, " could not be loaded");
  return lib;
}

/// Builds `j` on the calling thread, or waits for the thread building it. Never throws: an error
/// is kept in the job.
void build(ModuleJob& j) {
  {
    std::unique_lock<std::mutex> lock(j.mu);
    if (j.started) {
      j.cv.wait(lock, [&] { return j.done; });
      return;
    }
    j.started = true;
  }
  ModuleCache& c = module_cache();
  cudaLibrary_t lib = nullptr;
  std::exception_ptr error;
  try {
    const int arch_ = loader_arch();
    ModuleLoader loader;
    {
      std::lock_guard<std::mutex> lock(c.mu);
      loader = current_loader(c);
    }
    lib = load_or_compile(j, loader, arch_);
  } catch (...) {
    error = std::current_exception();
  }
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (!error) c.libs[j.key] = lib;  // (a module loaded again leaves the earlier one loaded: kernels may use it)
    if (auto it = c.pending.find(j.key); it != c.pending.end()) {
      const std::shared_ptr<ModuleJob> p = it->second.lock();
      if (!p || p.get() == &j) c.pending.erase(it);
    }
  }
  {
    std::lock_guard<std::mutex> lock(j.mu);
    j.lib = lib;
    j.error = error;
    j.done = true;
    std::string().swap(j.source);
  }
  j.cv.notify_all();
}

/// The kernel `name` of a built module (cached by key and name).
cudaKernel_t kernel_of(const std::string& key, cudaLibrary_t lib, const std::string& name) {
  ModuleCache& c = module_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (auto it = c.kernels.find(key + "/" + name); it != c.kernels.end()) return it->second;
  const cudaKernel_t k = current_loader(c).kernel(lib, name.c_str());
  c.kernels[key + "/" + name] = k;
  return k;
}

}  // namespace

ModuleCacheStats module_cache_stats() {
  ModuleCache& c = module_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.stats;
}

ModuleLoader set_module_loader(ModuleLoader loader) {
  ModuleCache& c = module_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return std::exchange(c.loader, loader);
}

int compile_threads() {
  static const int n = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    const int cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
    return std::clamp(cpus, 1, 8);
  }();
  return n;
}

std::string module_key(const std::string& source, int arch_) {
  int major = 0, minor = 0;
  nvrtc().version(&major, &minor);
  const std::string salt = numbered("sm_", arch_) + numbered(" nvrtc ", major) + "." + std::to_string(minor) + "\n";
  const std::array<uint64_t, 2> h = hash128({salt, source});
  return hex(h[0]) + hex(h[1]);
}

KernelRef request_kernel(const std::string& source, const std::string& name) {
  const std::string key = module_key(source, loader_arch());
  KernelRef ref;
  ref.s_ = std::make_shared<KernelRef::State>();
  ref.s_->name = name;
  ModuleCache& c = module_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (auto it = c.kernels.find(key + "/" + name); it != c.kernels.end()) {
    ++c.stats.memory_hits;
    ref.s_->kernel.store(it->second, std::memory_order_relaxed);
    return ref;
  }
  if (auto it = c.libs.find(key); it != c.libs.end()) {
    ++c.stats.memory_hits;
    const cudaKernel_t k = current_loader(c).kernel(it->second, name.c_str());
    c.kernels[key + "/" + name] = k;
    ref.s_->kernel.store(k, std::memory_order_relaxed);
    return ref;
  }
  std::weak_ptr<ModuleJob>& slot = c.pending[key];
  std::shared_ptr<ModuleJob> job = slot.lock();
  if (job) {
    ++c.stats.memory_hits;  // being built, or requested by another kernel
  } else {
    job = std::make_shared<ModuleJob>();
    job->key = key;
    job->source = source;
    job->what = name;
    slot = job;
  }
  ref.s_->job = job;
  auto& mine = requested();
  if (mine.size() >= 256)  // (a thread that never builds its requests: keep the list short)
    std::erase_if(mine, [](const std::weak_ptr<ModuleJob>& w) {
      const std::shared_ptr<ModuleJob> j = w.lock();
      if (!j) return true;
      std::lock_guard<std::mutex> l(j->mu);
      return j->done;
    });
  mine.push_back(job);
  return ref;
}

cudaKernel_t KernelRef::resolve() const {
  ModuleJob& j = *s_->job;
  build(j);
  if (j.error) std::rethrow_exception(j.error);
  const cudaKernel_t k = kernel_of(j.key, j.lib, s_->name);
  s_->kernel.store(k, std::memory_order_release);
  return k;
}

void build_requested_kernels() {
  std::vector<std::shared_ptr<ModuleJob>> jobs;
  for (const auto& w : requested())
    if (auto j = w.lock()) jobs.push_back(std::move(j));  // (gone: its kernels were dropped)
  requested().clear();
  if (jobs.empty()) return;
  std::sort(jobs.begin(), jobs.end());
  jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
  // NVRTC is thread-safe and each program is independent: the modules compile at once, each
  // thread taking the next one; the calling thread is one of them.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < jobs.size();) build(*jobs[i]);
  };
  std::vector<std::thread> threads;
  const size_t n = std::min<size_t>(jobs.size(), static_cast<size_t>(compile_threads()));
  for (size_t t = 1; t < n; ++t) {
    try {
      threads.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no thread to be had: fewer build
    }
  }
  work();
  for (std::thread& t : threads) t.join();
  for (const auto& j : jobs)
    if (j->error) std::rethrow_exception(j->error);
}

cudaKernel_t get_kernel(const std::string& source, const std::string& name, bool memory_cache) {
  if (memory_cache) return request_kernel(source, name).get();
  ModuleJob j;  // built again, from disk or NVRTC, whatever the memory cache holds
  j.key = module_key(source, loader_arch());
  j.source = source;
  j.what = name;
  build(j);
  if (j.error) std::rethrow_exception(j.error);
  ModuleCache& c = module_cache();
  std::lock_guard<std::mutex> lock(c.mu);
  const cudaKernel_t k = current_loader(c).kernel(j.lib, name.c_str());
  c.kernels[j.key + "/" + name] = k;
  return k;
}

}  // namespace hypatia::cuda
