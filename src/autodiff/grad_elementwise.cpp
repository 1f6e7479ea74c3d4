// Gradient rules of the elementwise ops: the unary and binary tables, each on one screen, plus
// where, cast, clone and device moves. Rules use ordinary ops, so create_graph records them.
#include <cmath>
#include <numbers>
#include <type_traits>

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "rules.hpp"

namespace ember::autodiff {
namespace {

// Helpers the registry's gradient columns name (core/ops.hpp), for rules longer than a line.
DynTensor gelu_grad(const DynTensor& x, const DynTensor& gy) {
  if (DynTensor g = fused_activation_grad(UnaryOp::Gelu, x, gy); g.defined()) return g;
  // Phi(x) + x * phi(x): the normal cdf and density.
  const DynTensor cdf = mul(add(erf(mul(x, 1.0 / std::numbers::sqrt2)), 1.0), 0.5);
  const DynTensor pdf = mul(exp(mul(square(x), -0.5)), 1.0 / std::sqrt(2.0 * std::numbers::pi));
  return mul(gy, add(cdf, mul(x, pdf)));
}

DynTensor gelu_tanh_grad(const DynTensor& x, const DynTensor& gy) {
  if (DynTensor g = fused_activation_grad(UnaryOp::GeluTanh, x, gy); g.defined()) return g;
  // y = x/2 (1 + t), t = tanh(k (x + c x^3)).
  const double k = std::sqrt(2.0 / std::numbers::pi), c = 0.044715;
  const DynTensor t = tanh(mul(add(x, mul(pow(x, 3.0), c)), k));
  const DynTensor dt = mul(sub(1.0, square(t)), mul(add(mul(square(x), 3.0 * c), 1.0), k));
  return mul(gy, add(mul(add(t, 1.0), 0.5), mul(mul(x, dt), 0.5)));
}

DynTensor silu_grad(const DynTensor& x, const DynTensor& gy) {
  if (DynTensor g = fused_activation_grad(UnaryOp::Silu, x, gy); g.defined()) return g;
  const DynTensor s = sigmoid(x);
  return mul(gy, mul(s, add(mul(x, sub(1.0, s)), 1.0)));
}

DynTensor softplus_grad(const DynTensor& x, const DynTensor& gy, const UnaryParams& p) {
  // Linear above the threshold (as the forward is). softplus(x) leaves the params unset:
  // beta 1, threshold 20, as the kernels default them.
  const double beta = p.has_a ? p.a : 1.0, threshold = p.has_b ? p.b : 20.0;
  const DynTensor bx = mul(x, beta);
  return where(gt(bx, threshold), gy, mul(gy, sigmoid(bx)));
}

DynTensor clamp_grad(const DynTensor& x, const DynTensor& gy, const UnaryParams& p) {
  // Gradient passes where x is inside [min, max] (bounds included), as in PyTorch.
  DynTensor inside = logical_not(isnan(x));
  if (p.has_a) inside = logical_and(inside, ge(x, p.a));
  if (p.has_b) inside = logical_and(inside, le(x, p.b));
  return where(inside, gy, 0);
}

DynTensor pow_scalar_grad(const DynTensor& x, const DynTensor& gy, const UnaryParams& p) {
  if (p.a == 0.0) return zeros_like(gy);
  return mul(gy, mul(pow(x, p.a - 1.0), p.a));
}

// d/da a^b = b a^(b-1) (0 where b == 0); d/db = a^b log a (0 where a == 0 and b >= 0).
DynTensor pow_grad_base(const DynTensor& a, const DynTensor& b, const DynTensor& gy) {
  return where(eq(b, 0), 0, mul(gy, mul(b, pow(a, sub(b, 1.0)))));
}
DynTensor pow_grad_exponent(const DynTensor& a, const DynTensor& b, const DynTensor& y,
                            const DynTensor& gy) {
  return where(logical_and(eq(a, 0), ge(b, 0)), 0, mul(gy, mul(y, log(a))));
}

// copysign: d/da = y / a, 0 where a is 0 (PyTorch's rule); the sign operand gets none.
DynTensor copysign_grad(const DynTensor& a, const DynTensor& y, const DynTensor& gy) {
  return where(eq(a, 0), 0, mul(gy, div(y, a)));
}

// minimum/maximum: the chosen side gets the gradient; ties split it evenly (PyTorch).
DynTensor tie_weight(const DynTensor& wins, const DynTensor& a, const DynTensor& b,
                     const DynTensor& gy) {
  return add(cast(wins, gy.dtype()), mul(cast(eq(a, b), gy.dtype()), 0.5));
}

// The registry's gradient column as a switch: x, y, gy and p are the names it uses.
DynTensor unary_grad(UnaryOp op, const UnaryParams& p, const DynTensor& x, const DynTensor& y,
                     const DynTensor& gy) {
#define EMBER_UNARY_GRAD_CASE(Name, name, kinds, saves, gradient) \
  case UnaryOp::Name:                                             \
    return gradient;
  switch (op) { EMBER_ALL_UNARY_OPS(EMBER_UNARY_GRAD_CASE) }
#undef EMBER_UNARY_GRAD_CASE
  EMBER_FAIL("[", op_name(op), "] has no gradient");
}

// Gradients of a and b before un-broadcasting; `y` is the output.
void binary_grad(BinaryOp op, const DynTensor& a, const DynTensor& b, const DynTensor& y,
                 const DynTensor& gy, bool need_a, bool need_b, DynTensor& ga, DynTensor& gb) {
#define EMBER_BINARY_GRAD_CASE(Name, name, kinds, saves, gradient_a, gradient_b) \
  case BinaryOp::Name:                                                           \
    if (need_a) ga = gradient_a;                                                 \
    if (need_b) gb = gradient_b;                                                 \
    return;
  switch (op) { EMBER_BINARY_OPS(EMBER_BINARY_GRAD_CASE) }
#undef EMBER_BINARY_GRAD_CASE
}

template <class Op>
Saves saves_of(Op op) {
#define EMBER_SAVES_CASE(Name, name, kinds, saves, ...) \
  case Op::Name:                                        \
    return Saves::saves;
  if constexpr (std::is_same_v<Op, UnaryOp>) {
    switch (op) { EMBER_ALL_UNARY_OPS(EMBER_SAVES_CASE) }
  } else {
    switch (op) { EMBER_BINARY_OPS(EMBER_SAVES_CASE) }
  }
#undef EMBER_SAVES_CASE
  return Saves::NoGrad;
}

void unary_rule(const Recording& r) {
  const auto op = static_cast<UnaryOp>(r.op.code);
  const UnaryParams params = r.param<UnaryParams>();
  const Saves saves = saves_of(op);
  // Only what the gradient reads stays alive for backward.
  const DynTensor saved_x = saves == Saves::Input ? r.input(0) : DynTensor();
  const RawTensor saved_y = saves == Saves::Output ? r.out.raw() : RawTensor();
  record(r, [op, params, saved_x, saved_y](BackwardArgs& a) {
    const DynTensor y = saved_y.defined() ? a.output(saved_y) : DynTensor();
    a.input_grads[0] = unary_grad(op, params, saved_x, y, a.grad);
  });
}

void binary_rule(const Recording& r) {
  const auto op = static_cast<BinaryOp>(r.op.code);
  const DynTensor &a = r.input(0), &b = r.input(1);
  const Saves saves = saves_of(op);
  if (saves == Saves::None) {
    // add and sub, the most frequent: a node that keeps only the shapes is a cheap one.
    const Shape shape_a = a.shape(), shape_b = b.shape();
    record(r, [op, shape_a, shape_b](BackwardArgs& args) {
      DynTensor ga, gb;
      binary_grad(op, {}, {}, {}, args.grad, args.needs(0), args.needs(1), ga, gb);
      if (args.needs(0)) args.input_grads[0] = sum_to(ga, shape_a);
      if (args.needs(1)) args.input_grads[1] = sum_to(gb, shape_b);
    });
    return;
  }
  // The rest keep both operands (an untracked one is a constant); pow keeps its output too.
  const RawTensor saved_y = saves == Saves::ABY ? r.out.raw() : RawTensor();
  record(r, [op, a, b, saved_y](BackwardArgs& args) {
    const DynTensor y = saved_y.defined() ? args.output(saved_y) : DynTensor();
    DynTensor ga, gb;
    binary_grad(op, a, b, y, args.grad, args.needs(0), args.needs(1), ga, gb);
    if (args.needs(0)) args.input_grads[0] = sum_to(ga, a.shape());
    if (args.needs(1)) args.input_grads[1] = sum_to(gb, b.shape());
  });
}

void where_rule(const Recording& r) {
  const DynTensor cond = r.input(0);
  const Shape shape_a = r.input(1).shape(), shape_b = r.input(2).shape();
  record(r, [cond, shape_a, shape_b](BackwardArgs& args) {
    if (args.needs(1)) args.input_grads[1] = sum_to(where(cond, args.grad, 0), shape_a);
    if (args.needs(2)) args.input_grads[2] = sum_to(where(cond, 0, args.grad), shape_b);
  });
}

void cast_rule(const Recording& r) {
  const DType dtype = r.input(0).dtype();
  if (!is_floating(dtype)) return;
  record(r, [dtype](BackwardArgs& a) { a.input_grads[0] = cast(a.grad, dtype); });
}

void clone_rule(const Recording& r) {
  record(r, [](BackwardArgs& a) { a.input_grads[0] = a.grad; });
}

void to_device_rule(const Recording& r) {
  const Device device = r.input(0).device();
  record(r, [device](BackwardArgs& a) { a.input_grads[0] = to_device(a.grad, device); });
}

constexpr GradRule unless_nograd(Saves saves, GradRule rule) {
  return saves == Saves::NoGrad ? nullptr : rule;
}

#define EMBER_UNARY_DEF(Name, name, kinds, saves, ...) \
  {#name, unless_nograd(Saves::saves, unary_rule), static_cast<uint8_t>(UnaryOp::Name)},
#define EMBER_BINARY_DEF(Name, name, kinds, saves, ...) \
  {#name, unless_nograd(Saves::saves, binary_rule), static_cast<uint8_t>(BinaryOp::Name)},
constexpr OpDef kUnaryDefs[] = {EMBER_ALL_UNARY_OPS(EMBER_UNARY_DEF)};
constexpr OpDef kBinaryDefs[] = {EMBER_BINARY_OPS(EMBER_BINARY_DEF)};
#undef EMBER_UNARY_DEF
#undef EMBER_BINARY_DEF

}  // namespace
}  // namespace ember::autodiff

namespace ember {

const OpDef& op_def(UnaryOp op) { return autodiff::kUnaryDefs[static_cast<int>(op)]; }
const OpDef& op_def(BinaryOp op) { return autodiff::kBinaryDefs[static_cast<int>(op)]; }

const OpDef ops::where{"where", autodiff::where_rule};
const OpDef ops::cast{"cast", autodiff::cast_rule};
const OpDef ops::clone{"clone", autodiff::clone_rule};
const OpDef ops::to_device{"to", autodiff::to_device_rule};

}  // namespace ember
