// Gradient rules of the elementwise ops: the unary and binary tables, each on one screen, plus
// where, cast, clone and device moves. Rules use ordinary ops, so create_graph records them.
#include <cmath>
#include <numbers>

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "rules.hpp"

namespace ember::autodiff {
namespace {

// Which of x (input) and y (output) a unary rule reads; only those are kept alive.
enum Saves : uint8_t { kNone = 0, kX = 1, kY = 2 };

constexpr uint8_t unary_saves(UnaryOp op) {
  switch (op) {
    case UnaryOp::Neg:
    case UnaryOp::Sign:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc:
      return kNone;
    case UnaryOp::Exp:
    case UnaryOp::Exp2:
    case UnaryOp::Expm1:
    case UnaryOp::Sqrt:
    case UnaryOp::Rsqrt:
    case UnaryOp::Reciprocal:
    case UnaryOp::Tanh:
    case UnaryOp::Sigmoid:
    case UnaryOp::Relu:  // its mask, as PyTorch's threshold_backward(grad, result)
      return kY;
    case UnaryOp::Tan:
      return kY;
    default:
      return kX;
  }
}

// PyTorch's derivatives.yaml, op by op. Ops whose outputs are Bool or Int are never recorded.
DynTensor unary_grad(UnaryOp op, const UnaryParams& p, const DynTensor& x, const DynTensor& y,
                     const DynTensor& gy) {
  using std::numbers::pi;
  // clang-format off
  switch (op) {
    case UnaryOp::Neg: return neg(gy);
    case UnaryOp::Abs: return mul(gy, sign(x));
    case UnaryOp::Sign:
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Round:
    case UnaryOp::Trunc: return zeros_like(gy);  // piecewise constant: zero almost everywhere
    case UnaryOp::Square: return mul(gy, mul(x, 2.0));
    case UnaryOp::Relu: return relu_backward(gy, y);
    case UnaryOp::Exp: return mul(gy, y);
    case UnaryOp::Exp2: return mul(gy, mul(y, std::numbers::ln2));
    case UnaryOp::Log: return div(gy, x);
    case UnaryOp::Log2: return div(gy, mul(x, std::numbers::ln2));
    case UnaryOp::Log1p: return div(gy, add(x, 1.0));
    case UnaryOp::Expm1: return mul(gy, add(y, 1.0));
    case UnaryOp::Sqrt: return div(gy, mul(y, 2.0));
    case UnaryOp::Rsqrt: return mul(gy, mul(pow(y, 3.0), -0.5));
    case UnaryOp::Reciprocal: return mul(gy, neg(square(y)));
    case UnaryOp::Sin: return mul(gy, cos(x));
    case UnaryOp::Cos: return mul(gy, neg(sin(x)));
    case UnaryOp::Tan: return mul(gy, add(square(y), 1.0));
    case UnaryOp::Asin: return div(gy, sqrt(sub(1.0, square(x))));
    case UnaryOp::Acos: return neg(div(gy, sqrt(sub(1.0, square(x)))));
    case UnaryOp::Atan: return div(gy, add(square(x), 1.0));
    case UnaryOp::Sinh: return mul(gy, cosh(x));
    case UnaryOp::Cosh: return mul(gy, sinh(x));
    case UnaryOp::Tanh: return mul(gy, sub(1.0, square(y)));
    case UnaryOp::Erf: return mul(gy, mul(exp(neg(square(x))), 2.0 / std::sqrt(pi)));
    case UnaryOp::Sigmoid: return mul(gy, mul(y, sub(1.0, y)));
    case UnaryOp::Gelu: {
      // Phi(x) + x * phi(x): the normal cdf and density.
      const DynTensor cdf = mul(add(erf(mul(x, 1.0 / std::numbers::sqrt2)), 1.0), 0.5);
      const DynTensor pdf = mul(exp(mul(square(x), -0.5)), 1.0 / std::sqrt(2.0 * pi));
      return mul(gy, add(cdf, mul(x, pdf)));
    }
    case UnaryOp::GeluTanh: {
      // y = x/2 (1 + t), t = tanh(k (x + c x^3)).
      const double k = std::sqrt(2.0 / pi), c = 0.044715;
      const DynTensor t = tanh(mul(add(x, mul(pow(x, 3.0), c)), k));
      const DynTensor dt = mul(sub(1.0, square(t)), mul(add(mul(square(x), 3.0 * c), 1.0), k));
      return mul(gy, add(mul(add(t, 1.0), 0.5), mul(mul(x, dt), 0.5)));
    }
    case UnaryOp::Silu: {
      const DynTensor s = sigmoid(x);
      return mul(gy, mul(s, add(mul(x, sub(1.0, s)), 1.0)));
    }
    case UnaryOp::Softplus: {
      // Linear above the threshold (as the forward is). softplus(x) leaves the params unset:
      // beta 1, threshold 20, as the kernels default them.
      const double beta = p.has_a ? p.a : 1.0, threshold = p.has_b ? p.b : 20.0;
      const DynTensor bx = mul(x, beta);
      return where(gt(bx, threshold), gy, mul(gy, sigmoid(bx)));
    }
    case UnaryOp::Clamp: {
      // Gradient passes where x is inside [min, max] (bounds included), as in PyTorch.
      DynTensor inside = logical_not(isnan(x));
      if (p.has_a) inside = logical_and(inside, ge(x, p.a));
      if (p.has_b) inside = logical_and(inside, le(x, p.b));
      return where(inside, gy, 0);
    }
    case UnaryOp::PowScalar:
      if (p.a == 0.0) return zeros_like(gy);
      return mul(gy, mul(pow(x, p.a - 1.0), p.a));
    case UnaryOp::IsNan:
    case UnaryOp::IsInf:
    case UnaryOp::LogicalNot:
    case UnaryOp::BitwiseNot: break;
  }
  // clang-format on
  EMBER_FAIL("[", op_name(op), "] has no gradient");
}

// Gradients of a and b before un-broadcasting; `y` is the output.
void binary_grad(BinaryOp op, const DynTensor& a, const DynTensor& b, const DynTensor& y,
                 const DynTensor& gy, bool need_a, bool need_b, DynTensor& ga, DynTensor& gb) {
  switch (op) {
    case BinaryOp::Add:
      ga = gy;
      gb = gy;
      return;
    case BinaryOp::Sub:
      ga = gy;
      if (need_b) gb = neg(gy);
      return;
    case BinaryOp::Mul:
      if (need_a) ga = mul(gy, b);
      if (need_b) gb = mul(gy, a);
      return;
    case BinaryOp::Div:
      if (need_a) ga = div(gy, b);
      if (need_b) gb = neg(div(mul(gy, a), square(b)));
      return;
    case BinaryOp::Pow:
      // d/da = b a^(b-1) (0 where b == 0); d/db = a^b log a (0 where a == 0 and b >= 0).
      if (need_a) ga = where(eq(b, 0), 0, mul(gy, mul(b, pow(a, sub(b, 1.0)))));
      if (need_b) gb = where(logical_and(eq(a, 0), ge(b, 0)), 0, mul(gy, mul(y, log(a))));
      return;
    case BinaryOp::Atan2: {
      const DynTensor r = add(square(a), square(b));
      if (need_a) ga = mul(gy, div(b, r));
      if (need_b) gb = mul(gy, div(neg(a), r));
      return;
    }
    case BinaryOp::Minimum:
    case BinaryOp::Maximum: {
      // The chosen side gets the gradient; ties split it evenly (PyTorch).
      const DynTensor wins = op == BinaryOp::Maximum ? gt(a, b) : lt(a, b);
      const DynTensor wa = add(cast(wins, gy.dtype()), mul(cast(eq(a, b), gy.dtype()), 0.5));
      if (need_a) ga = mul(gy, wa);
      if (need_b) gb = mul(gy, sub(1.0, wa));
      return;
    }
    case BinaryOp::ReluBackward:
      // Linear in the gradient; the mask is piecewise constant in y.
      if (need_a) ga = relu_backward(gy, b);
      if (need_b) gb = zeros_like(gy);
      return;
    default:
      EMBER_FAIL("[", op_name(op), "] has no gradient");
  }
}

bool differentiable(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Mul:
    case BinaryOp::Div:
    case BinaryOp::Pow:
    case BinaryOp::Atan2:
    case BinaryOp::Minimum:
    case BinaryOp::Maximum:
    case BinaryOp::ReluBackward:
      return true;
    default:
      return false;
  }
}

}  // namespace

void record_unary(UnaryOp op, const UnaryParams& params, const DynTensor& x, DynTensor& out) {
  const uint8_t saves = unary_saves(op);
  const DynTensor saved_x = (saves & kX) ? x : DynTensor();
  const RawTensor saved_y = (saves & kY) ? out.raw() : RawTensor();
  record(op_name(op).data(), {&x}, out, [op, params, saved_x, saved_y](BackwardArgs& a) {
    const DynTensor y = saved_y.defined() ? a.output(saved_y) : DynTensor();
    a.input_grads[0] = unary_grad(op, params, saved_x, y, a.grad);
  });
}

void record_binary(BinaryOp op, const DynTensor& a, const DynTensor& b, DynTensor& out) {
  if (!differentiable(op)) return;
  const char* name = op_name(op).data();
  if (op == BinaryOp::Add || op == BinaryOp::Sub) {
    // The most frequent ops keep only the shapes: a small node is a cheap one.
    const Shape shape_a = a.shape(), shape_b = b.shape();
    record(name, {&a, &b}, out, [op, shape_a, shape_b](BackwardArgs& args) {
      DynTensor ga, gb;
      binary_grad(op, {}, {}, {}, args.grad, args.needs(0), args.needs(1), ga, gb);
      if (args.needs(0)) args.input_grads[0] = sum_to(ga, shape_a);
      if (args.needs(1)) args.input_grads[1] = sum_to(gb, shape_b);
    });
    return;
  }
  // The rest keep both operands (an untracked one is a constant); pow keeps its output too.
  auto rule = [op, a, b](BackwardArgs& args, const DynTensor& y) {
    DynTensor ga, gb;
    binary_grad(op, a, b, y, args.grad, args.needs(0), args.needs(1), ga, gb);
    if (args.needs(0)) args.input_grads[0] = sum_to(ga, a.shape());
    if (args.needs(1)) args.input_grads[1] = sum_to(gb, b.shape());
  };
  if (op == BinaryOp::Pow) {
    record(name, {&a, &b}, out,
           [rule, y = out.raw()](BackwardArgs& args) { rule(args, args.output(y)); });
  } else {
    record(name, {&a, &b}, out, [rule](BackwardArgs& args) { rule(args, DynTensor()); });
  }
}

void record_where(const DynTensor& cond, const DynTensor& a, const DynTensor& b, DynTensor& out) {
  const Shape shape_a = a.shape(), shape_b = b.shape();
  record("where", {nullptr, &a, &b}, out, [cond, shape_a, shape_b](BackwardArgs& args) {
    if (args.needs(1)) args.input_grads[1] = sum_to(where(cond, args.grad, 0), shape_a);
    if (args.needs(2)) args.input_grads[2] = sum_to(where(cond, 0, args.grad), shape_b);
  });
}

void record_cast(const DynTensor& x, DynTensor& out) {
  if (!is_floating(x.dtype())) return;
  const DType dtype = x.dtype();
  record("cast", {&x}, out, [dtype](BackwardArgs& a) { a.input_grads[0] = cast(a.grad, dtype); });
}

void record_clone(const DynTensor& x, DynTensor& out) {
  record("clone", {&x}, out, [](BackwardArgs& a) { a.input_grads[0] = a.grad; });
}

void record_to_device(const DynTensor& x, DynTensor& out) {
  const Device device = x.device();
  record("to", {&x}, out,
         [device](BackwardArgs& a) { a.input_grads[0] = to_device(a.grad, device); });
}

}  // namespace ember::autodiff
