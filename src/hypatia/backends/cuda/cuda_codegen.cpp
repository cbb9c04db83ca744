#include "hypatia/backends/cuda/cuda_codegen.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>

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

const char* std_prefix() { return kNvrtcStdText; }

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

}  // namespace hypatia::cuda
