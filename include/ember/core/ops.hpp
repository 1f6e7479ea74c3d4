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
#define EMBER_UNARY_OPS(X)                                                                   \
  X(Neg, neg, N) X(Abs, abs, N) X(Sign, sign, N) X(Square, square, N) X(Relu, relu, N)       \
  X(Exp, exp, F) X(Exp2, exp2, F) X(Log, log, F) X(Log2, log2, F) X(Log1p, log1p, F)         \
  X(Expm1, expm1, F) X(Sqrt, sqrt, F) X(Rsqrt, rsqrt, F) X(Reciprocal, reciprocal, F)        \
  X(Sin, sin, F) X(Cos, cos, F) X(Tan, tan, F) X(Asin, asin, F) X(Acos, acos, F)             \
  X(Atan, atan, F) X(Sinh, sinh, F) X(Cosh, cosh, F) X(Tanh, tanh, F) X(Erf, erf, F)         \
  X(Sigmoid, sigmoid, F) X(Gelu, gelu, F) X(GeluTanh, gelu_tanh, F) X(Silu, silu, F)         \
  X(Softplus, softplus, F) X(Floor, floor, N) X(Ceil, ceil, N) X(Round, round, N)            \
  X(Trunc, trunc, N) X(IsNan, isnan, A) X(IsInf, isinf, A) X(LogicalNot, logical_not, A)                        \
  X(BitwiseNot, bitwise_not, I)

// Unary ops that take UnaryParams; their public functions are written by hand (clamp, pow).
#define EMBER_UNARY_PARAM_OPS(X) X(Clamp, clamp, N) X(PowScalar, pow_scalar, F)

#define EMBER_ALL_UNARY_OPS(X) EMBER_UNARY_OPS(X) EMBER_UNARY_PARAM_OPS(X)

#define EMBER_BINARY_OPS(X)                                                                  \
  X(Add, add, N) X(Sub, sub, N) X(Mul, mul, N) X(Div, div, N) X(Pow, pow, N)                 \
  X(Atan2, atan2, F) X(Minimum, minimum, N) X(Maximum, maximum, N)                           \
  X(ReluBackward, relu_backward, F)                                                          \
  X(Eq, eq, A) X(Ne, ne, A) X(Lt, lt, A) X(Le, le, A) X(Gt, gt, A) X(Ge, ge, A)              \
  X(LogicalAnd, logical_and, A) X(LogicalOr, logical_or, A) X(LogicalXor, logical_xor, A)    \
  X(BitwiseAnd, bitwise_and, I) X(BitwiseOr, bitwise_or, I) X(BitwiseXor, bitwise_xor, I)    \
  X(BitwiseShl, bitwise_left_shift, I) X(BitwiseShr, bitwise_right_shift, I)

#define EMBER_REDUCE_OPS(X) \
  X(Sum, sum, A) X(Mean, mean, F) X(Prod, prod, A) X(Amax, amax, A) X(Amin, amin, A)             \
  X(All, all, A) X(Any, any, A)

#define EMBER_ARG_REDUCE_OPS(X) X(ArgMax, argmax, A) X(ArgMin, argmin, A)

#define EMBER_SCAN_OPS(X) X(CumSum, cumsum, A) X(CumProd, cumprod, A)
// clang-format on

#define EMBER_ENUM_ENTRY(Name, name, kinds) Name,
enum class UnaryOp : uint8_t { EMBER_ALL_UNARY_OPS(EMBER_ENUM_ENTRY) };
enum class BinaryOp : uint8_t { EMBER_BINARY_OPS(EMBER_ENUM_ENTRY) };
enum class ReduceOp : uint8_t { EMBER_REDUCE_OPS(EMBER_ENUM_ENTRY) };
enum class ArgReduceOp : uint8_t { EMBER_ARG_REDUCE_OPS(EMBER_ENUM_ENTRY) };
enum class ScanOp : uint8_t { EMBER_SCAN_OPS(EMBER_ENUM_ENTRY) };
#undef EMBER_ENUM_ENTRY

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

enum class ScatterReduce : uint8_t { None, Add };

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
  Conv,     // convolution forward, backward data (= transposed conv) and backward weight
  Pool,     // max and average pooling (plain and adaptive), forward and backward
  Norm,     // per-channel statistics and scale-shift: the fused normalisation kernels
  Optim,    // fused optimizer updates (Adam / AdamW)
  ConvRelu  // conv honours ConvParams::relu (and conv_backward its y); else conv, then relu
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
