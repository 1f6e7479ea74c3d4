// The op registry: every primitive op is declared here once. Backends implement op families
// (unary, binary, reduce, ...) as kernels instantiated from these lists; the front end, the
// autodiff rules and the test table use the same names. docs/ADDING_AN_OP.md walks through it.
// Each family's gradient rules are one table beside the others in src/autodiff/grad_<family>.cpp
// (unary_grad and binary_grad have one case per entry below).
//
// Elementwise families are X-macros: X(Name, name, kinds)
//   kinds: F = floating inputs only (Int/Bool inputs promote to the default float dtype),
//          N = any numeric (Float and Int), A = any (Float, Int, Bool), I = Int and Bool (bitwise).
#pragma once

#include <cstdint>
#include <string_view>

namespace ember {

// clang-format off
// Unary rows: X(Name, name, kinds, saves, gradient).
//   saves: what the gradient reads, so only that stays alive for backward: None, Input (x),
//          Output (y); NoGrad: not differentiable, never recorded.
//   gradient: dL/dx as an expression in gy (dL/dy), x, y and p (the UnaryParams). It is expanded
//          only in src/autodiff/grad_elementwise.cpp, where the ops it names are declared, so this
//          header includes nothing above core. Rules are ops, so second derivatives come free.
#define EMBER_UNARY_OPS(X)                                                                 \
  X(Neg, neg, N, None, neg(gy))                                                            \
  X(Abs, abs, N, Input, mul(gy, sign(x)))                                                      \
  X(Sign, sign, N, None, zeros_like(gy))  /* piecewise constant: zero almost everywhere */ \
  X(Square, square, N, Input, mul(gy, mul(x, 2.0)))                                            \
  X(Relu, relu, N, Output, relu_backward(gy, y))  /* its mask, as PyTorch's threshold_backward */ \
  X(Exp, exp, F, Output, mul(gy, y))                                                            \
  X(Exp2, exp2, F, Output, mul(gy, mul(y, std::numbers::ln2)))                                  \
  X(Log, log, F, Input, div(gy, x))                                                            \
  X(Log2, log2, F, Input, div(gy, mul(x, std::numbers::ln2)))                                  \
  X(Log10, log10, F, Input, div(gy, mul(x, std::numbers::ln10)))                               \
  X(Log1p, log1p, F, Input, div(gy, add(x, 1.0)))                                              \
  X(Expm1, expm1, F, Output, mul(gy, add(y, 1.0)))                                              \
  X(Sqrt, sqrt, F, Output, div(gy, mul(y, 2.0)))                                                \
  X(Rsqrt, rsqrt, F, Output, mul(gy, mul(pow(y, 3.0), -0.5)))                                   \
  X(Reciprocal, reciprocal, F, Output, mul(gy, neg(square(y))))                                 \
  X(Sin, sin, F, Input, mul(gy, cos(x)))                                                       \
  X(Cos, cos, F, Input, mul(gy, neg(sin(x))))                                                  \
  X(Tan, tan, F, Output, mul(gy, add(square(y), 1.0)))                                          \
  X(Asin, asin, F, Input, div(gy, sqrt(sub(1.0, square(x)))))                                  \
  X(Acos, acos, F, Input, neg(div(gy, sqrt(sub(1.0, square(x))))))                             \
  X(Atan, atan, F, Input, div(gy, add(square(x), 1.0)))                                        \
  X(Sinh, sinh, F, Input, mul(gy, cosh(x)))                                                    \
  X(Cosh, cosh, F, Input, mul(gy, sinh(x)))                                                    \
  X(Tanh, tanh, F, Output, mul(gy, sub(1.0, square(y))))                                        \
  X(Erf, erf, F, Input, mul(gy, mul(exp(neg(square(x))), std::numbers::inv_sqrtpi * 2.0)))    \
  X(Erfinv, erfinv, F, Output, mul(gy, mul(exp(square(y)), 0.5 / std::numbers::inv_sqrtpi)))   \
  X(Lgamma, lgamma, F, Input, mul(gy, digamma(x)))                                             \
  X(Digamma, digamma, F, Input, mul(gy, polygamma(1, x)))                                      \
  X(Sigmoid, sigmoid, F, Output, mul(gy, mul(y, sub(1.0, y))))                                  \
  X(Gelu, gelu, F, Input, gelu_grad(x, gy))                                                    \
  X(GeluTanh, gelu_tanh, F, Input, gelu_tanh_grad(x, gy))                                      \
  X(Silu, silu, F, Input, silu_grad(x, gy))                                                    \
  X(Softplus, softplus, F, Input, softplus_grad(x, gy, p))                                     \
  X(Floor, floor, N, None, zeros_like(gy))                                                 \
  X(Ceil, ceil, N, None, zeros_like(gy))                                                   \
  X(Round, round, N, None, zeros_like(gy))                                                 \
  X(Trunc, trunc, N, None, zeros_like(gy))                                                 \
  X(IsNan, isnan, A, NoGrad, {})                                                           \
  X(IsInf, isinf, A, NoGrad, {})                                                           \
  X(LogicalNot, logical_not, A, NoGrad, {})                                                \
  X(BitwiseNot, bitwise_not, I, NoGrad, {})

// Unary ops that take UnaryParams; their public functions are written by hand (clamp, pow).
#define EMBER_UNARY_PARAM_OPS(X)                 \
  X(Clamp, clamp, N, Input, clamp_grad(x, gy, p))    \
  X(PowScalar, pow_scalar, F, Input, pow_scalar_grad(x, gy, p)) \
  X(Polygamma, polygamma, F, Input, mul(gy, polygamma(static_cast<int64_t>(p.a) + 1, x)))

#define EMBER_ALL_UNARY_OPS(X) EMBER_UNARY_OPS(X) EMBER_UNARY_PARAM_OPS(X)

// Binary rows: X(Name, name, kinds, saves, gradient_a, gradient_b), gradients in gy, a, b, y
// before un-broadcasting (the rule sums them back to the operands' shapes).
//   saves: None (the operands' shapes only), AB (both operands), ABY (and the output), NoGrad.
#define EMBER_BINARY_OPS(X)                                                                      \
  X(Add, add, N, None, gy, gy)                                                                   \
  X(Sub, sub, N, None, gy, neg(gy))                                                              \
  X(Mul, mul, N, AB, mul(gy, b), mul(gy, a))                                                     \
  X(Div, div, N, AB, div(gy, b), neg(div(mul(gy, a), square(b))))                                \
  X(Pow, pow, N, ABY, pow_grad_base(a, b, gy), pow_grad_exponent(a, b, y, gy))                   \
  X(Atan2, atan2, F, AB, mul(gy, div(b, add(square(a), square(b)))),                             \
    mul(gy, div(neg(a), add(square(a), square(b)))))                                             \
  X(Minimum, minimum, N, AB, mul(gy, tie_weight(lt(a, b), a, b, gy)),                            \
    mul(gy, sub(1.0, tie_weight(lt(a, b), a, b, gy))))                                           \
  X(Maximum, maximum, N, AB, mul(gy, tie_weight(gt(a, b), a, b, gy)),                            \
    mul(gy, sub(1.0, tie_weight(gt(a, b), a, b, gy))))                                           \
  X(Hypot, hypot, F, ABY, mul(gy, div(a, y)), mul(gy, div(b, y)))                                \
  X(Copysign, copysign, F, ABY, copysign_grad(a, y, gy), zeros_like(gy))                         \
  /* PyTorch's sign conventions: remainder takes the divisor's sign, fmod the dividend's */      \
  X(Remainder, remainder, N, AB, gy, mul(gy, neg(floor(div(a, b)))))                             \
  X(Fmod, fmod, N, AB, gy, mul(gy, neg(trunc(div(a, b)))))                                       \
  X(FloorDivide, floor_divide, N, NoGrad, {}, {})                                                \
  X(ReluBackward, relu_backward, F, AB, relu_backward(gy, b), zeros_like(gy))                    \
  X(Eq, eq, A, NoGrad, {}, {}) X(Ne, ne, A, NoGrad, {}, {}) X(Lt, lt, A, NoGrad, {}, {})          \
  X(Le, le, A, NoGrad, {}, {}) X(Gt, gt, A, NoGrad, {}, {}) X(Ge, ge, A, NoGrad, {}, {})          \
  X(LogicalAnd, logical_and, A, NoGrad, {}, {}) X(LogicalOr, logical_or, A, NoGrad, {}, {})      \
  X(LogicalXor, logical_xor, A, NoGrad, {}, {})                                                  \
  X(BitwiseAnd, bitwise_and, I, NoGrad, {}, {}) X(BitwiseOr, bitwise_or, I, NoGrad, {}, {})      \
  X(BitwiseXor, bitwise_xor, I, NoGrad, {}, {})                                                  \
  X(BitwiseShl, bitwise_left_shift, I, NoGrad, {}, {})                                           \
  X(BitwiseShr, bitwise_right_shift, I, NoGrad, {}, {})

#define EMBER_REDUCE_OPS(X) \
  X(Sum, sum, A) X(Mean, mean, F) X(Prod, prod, A) X(Amax, amax, A) X(Amin, amin, A)             \
  X(All, all, A) X(Any, any, A)

#define EMBER_ARG_REDUCE_OPS(X) X(ArgMax, argmax, A) X(ArgMin, argmin, A)

#define EMBER_SCAN_OPS(X) X(CumSum, cumsum, A) X(CumProd, cumprod, A)
// clang-format on

#define EMBER_ENUM_ENTRY(Name, name, ...) Name,
enum class UnaryOp : uint8_t { EMBER_ALL_UNARY_OPS(EMBER_ENUM_ENTRY) };
enum class BinaryOp : uint8_t { EMBER_BINARY_OPS(EMBER_ENUM_ENTRY) };
enum class ReduceOp : uint8_t { EMBER_REDUCE_OPS(EMBER_ENUM_ENTRY) };
enum class ArgReduceOp : uint8_t { EMBER_ARG_REDUCE_OPS(EMBER_ENUM_ENTRY) };
enum class ScanOp : uint8_t { EMBER_SCAN_OPS(EMBER_ENUM_ENTRY) };
#undef EMBER_ENUM_ENTRY

/// What an elementwise op's gradient reads (the `saves` column above).
enum class Saves : uint8_t { None, Input, Output, AB, ABY, NoGrad };

struct Recording;  // one op call as its gradient rule sees it (src/tensor/record.hpp)
using GradRule = void (*)(const Recording&);

/// One primitive op as autodiff sees it. The tensor layer hands each call to detail::record()
/// with its descriptor; the descriptor's rule, defined beside the descriptor in
/// src/autodiff/grad_<family>.cpp, makes the output tracked. The tensor layer never calls into
/// autodiff by name (docs/ARCHITECTURE.md, "Recording").
struct OpDef {
  const char* name;
  GradRule grad;     // null: not differentiable, never recorded
  uint8_t code = 0;  // the op's entry in its family's enum, for rules shared by a family
};

// The descriptors: one per elementwise, reduction and scan entry above, and these.
const OpDef& op_def(UnaryOp op);
const OpDef& op_def(BinaryOp op);
const OpDef& op_def(ReduceOp op);
const OpDef& op_def(ArgReduceOp op);  // max/min along a dim: their values' gradient
const OpDef& op_def(ScanOp op);
namespace ops {
// grad_elementwise.cpp
extern const OpDef where, cast, clone, to_device;
// grad_reduce.cpp: sort and topk take values along a dim at indices, as max/min along a dim.
extern const OpDef logsumexp, sort, topk;
// The root of a reduction (norm, std) whose gradient is 0 where it is 0, as PyTorch's.
extern const OpDef root;
// grad_linalg.cpp
extern const OpDef matmul, softmax, log_softmax;
// grad_svd.cpp: linalg.svd's three outputs, each its own node (the gradient is linear in the
// three outputs' gradients, so their contributions add up to the whole).
extern const OpDef svd_u, svd_s, svd_vh;
// grad_conv.cpp
extern const OpDef convolution, conv_transpose, conv_backward_weight, max_pool, max_pool_backward,
    avg_pool, avg_pool_backward;
// grad_movement.cpp: views are recorded too (a view of a tracked tensor is tracked).
extern const OpDef reshape, transpose, permute, expand, slice, select, flip, repeat, cat, pad;
// grad_indexing.cpp
extern const OpDef gather, scatter, scatter_add, index_select, index_add, masked_fill,
    masked_select, slice_assign;
// grad_indexing_extra.cpp
extern const OpDef scatter_reduce;
}  // namespace ops

/// Which input kinds an elementwise op accepts (the `kinds` column above).
enum class OpKinds : uint8_t { F, N, A, I };

/// Parameters of the unary ops that take them; unused fields are ignored.
struct UnaryParams {
  double a = 0.0;                     // clamp: min; pow_scalar: exponent; softplus: beta
  double b = 0.0;                     // clamp: max; softplus: threshold
  bool has_a = false, has_b = false;  // clamp: which bounds are given
};

/// Random distributions a backend fills a tensor from (see core/philox.hpp).
enum class RandomOp : uint8_t { Uniform, Normal, RandInt, Bernoulli };

/// How scatter combines an update with the element it lands on: assign, or +, *, max, min (the
/// last three are scatter_reduce's prod, amax, amin; max and min propagate NaN, as PyTorch).
enum class ScatterReduce : uint8_t { None, Add, Mul, Max, Min };
/// The op name a scatter kernel reports in errors.
inline const char* scatter_name(ScatterReduce r) {
  return r == ScatterReduce::None  ? "scatter"
         : r == ScatterReduce::Add ? "scatter_add"
                                   : "scatter_reduce";
}

/// Geometry of a convolution over `spatial` (1 to 3) dims, with PyTorch's meaning; entries past
/// `spatial` are unused. `output_padding` only matters for transposed convolutions (it picks
/// the output size, which strides make ambiguous).
struct ConvParams {
  int spatial = 2;
  int64_t stride[3] = {1, 1, 1};
  int64_t padding[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  int64_t output_padding[3] = {0, 0, 0};
  int64_t groups = 1;
  bool relu = false;  // forward only: the output is relu(conv + bias), one fused pass
  // Forward only: nothing trains the weight in this call (it is not recorded), so a backend may
  // keep it in its own layout for the next call on the same storage (a storage's contents never
  // change once an op has returned it).
  bool constant_weight = false;
};

/// Geometry of a pooling window over `spatial` (1 to 3) dims. Adaptive pooling ignores kernel,
/// stride, padding and dilation: window i of an output of size o over an input of size n is
/// [floor(i n / o), ceil((i + 1) n / o)).
struct PoolParams {
  int spatial = 2;
  int64_t kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1};
  int64_t padding[3] = {0, 0, 0};
  int64_t dilation[3] = {1, 1, 1};
  int64_t output_size[3] = {1, 1, 1};  // adaptive only
  bool ceil_mode = false;              // the front end's output size; kernels read out's shape
  bool count_include_pad = true;       // average: divide by the window's size within the padding
  bool adaptive = false;
};

/// One Adam or AdamW step (torch.optim's formulas; the step's bias corrections precomputed).
struct AdamParams {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  double bias_correction1 = 1, bias_correction2_sqrt = 1;
  bool decoupled = false;  // AdamW: param *= 1 - lr * weight_decay, instead of grad += wd * param
  bool amsgrad = false;
};

/// One SGD step of torch.optim: L2 weight decay, momentum with dampening, Nesterov momentum.
struct SgdParams {
  double lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
  bool first = false;  // the momentum buffer starts as this step's gradient (its first step)
};

/// Fused scaled-dot-product attention: softmax(q k^T * scale [+ causal mask]) v.
struct AttentionParams {
  double scale = 1.0;
  bool causal = false;  // query i sees keys 0..i (top-left aligned, as PyTorch's is_causal)
};

/// Every op a backend may or may not support, for Backend::supports(op, dtype).
enum class OpFamily : uint8_t {
  Copy,
  Fill,
  Iota,
  Random,
  Unary,
  Binary,
  Where,
  Reduce,
  ArgReduce,
  Scan,
  Sort,
  TopK,
  Matmul,
  Gather,
  Scatter,
  IndexSelect,
  NonZero,
  Conv,            // convolution forward, backward data (= transposed conv) and backward weight
  Pool,            // max and average pooling (plain and adaptive), forward and backward
  Norm,            // per-channel statistics and scale-shift: the fused normalisation kernels
  Optim,           // fused optimizer updates (Adam / AdamW)
  ConvRelu,        // conv honours ConvParams::relu (and conv_backward its y); else conv, then relu
  Svd,             // singular value decomposition (float and double)
  SoftmaxRows,     // cross_entropy's fused row kernels (logsumexp_rows, cross_entropy_backward)
  Attention,       // fused scaled-dot-product attention, forward and backward (no score matrix)
  LayerNorm,       // layer_norm over the last dim in one pass each way (layer_norm_rows*)
  ActivationGrad,  // the backward of GELU (both forms) and SiLU in one pass (activation_grad)
  Linear,          // nn::linear's GEMM with the bias (and the bias gradient) in its epilogue
  BatchNormCoefficients,  // batch norm's per-channel arithmetic on [C] vectors, one kernel a way
  MatmulInt8              // int8 x int8 products summed in int32 (matmul_int8; asked with i8)
};

std::string_view op_name(UnaryOp op);
std::string_view op_name(BinaryOp op);
std::string_view op_name(ReduceOp op);
std::string_view op_name(ArgReduceOp op);
std::string_view op_name(ScanOp op);
OpKinds op_kinds(UnaryOp op);
OpKinds op_kinds(BinaryOp op);

/// Comparisons and logical ops produce Bool whatever their inputs.
constexpr bool returns_bool(BinaryOp op) {
  switch (op) {
    case BinaryOp::Eq:
    case BinaryOp::Ne:
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
    case BinaryOp::LogicalAnd:
    case BinaryOp::LogicalOr:
    case BinaryOp::LogicalXor:
      return true;
    default:
      return false;
  }
}
constexpr bool returns_bool(UnaryOp op) {
  return op == UnaryOp::IsNan || op == UnaryOp::IsInf || op == UnaryOp::LogicalNot;
}

}  // namespace ember
