// Gradient rules of convolution and pooling, each written with the primitives of
// ember/tensor/ops/conv.hpp so that the backward pass records itself (second order):
//   conv:              dx = conv_transpose(g, w)   dw = conv_backward_weight(x, g)   db = sum(g)
//                      (with a fused relu, g = relu_backward(g, y) first; unrecorded, all three
//                      come from one conv_backward call)
//   conv_transpose:    dx = conv(g, w)             dw = conv_backward_weight(g, x)   db = sum(g)
//   conv_backward_weight(x, gy) is bilinear:  dx = conv_transpose(gy, G)  dgy = conv(x, G)
//   max_pool:          dx = max_pool_backward(g) (to the argmax);  its own rule gathers back
//   avg_pool:          dx = avg_pool_backward(g) (spread);         its own rule is avg_pool
#include "ember/tensor/ops/conv.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "rules.hpp"

namespace ember::autodiff {
namespace {

// The transposed conv of `g` with `w` whose output has exactly the spatial sizes of `target`
// (output_padding picks them; strides make the size ambiguous).
DynTensor transposed_to(const DynTensor& g, const DynTensor& w, ConvParams p, const Shape& target) {
  for (int i = 0; i < p.spatial; ++i) {
    const int64_t eff = p.dilation[i] * (w.size(2 + i) - 1) + 1;
    p.output_padding[i] =
        target[2 + i] - ((g.size(2 + i) - 1) * p.stride[i] - 2 * p.padding[i] + eff);
  }
  return convolution(g, w, DynTensor(), p, true);
}

// `t` cut to `target`'s spatial sizes: a conv of a transposed conv's output can reach further
// than the input when output_padding was not below the stride.
DynTensor cut_to(DynTensor t, const Shape& target, int spatial) {
  for (int i = 0; i < spatial; ++i) {
    if (t.size(2 + i) != target[2 + i]) t = narrow(t, 2 + i, 0, target[2 + i]);
  }
  return t;
}

Dims bias_dims(int rank) {
  Dims d = {0};
  for (int i = 2; i < rank; ++i) d.push_back(i);
  return d;
}

void convolution_rule(const Recording& r) {
  const DynTensor &x = r.input(0), &w = r.input(1);
  const ConvParams& p = r.param<ConvParams>();
  const bool transposed = &r.op == &ops::conv_transpose;
  // A fused relu keeps the output for its mask; the rule's own convolutions have none.
  const RawTensor saved_y = p.relu ? r.out.raw() : RawTensor();
  ConvParams plain = p;
  plain.relu = false;
  record(r, [x, w, plain, transposed, saved_y](BackwardArgs& a) {
    const DynTensor y = saved_y.defined() ? a.output(saved_y) : DynTensor();
    if (!transposed && !a.options.create_graph) {
      // One backend call: the relu mask applied once, grad_out moved to the kernels' layout
      // once for both gradients, the bias gradient from the weight gradient's pass.
      ConvParams fused = plain;
      fused.relu = y.defined();
      ConvGrads r = conv_backward(x, w, y, a.grad, fused, {a.needs(0), a.needs(1), a.needs(2)});
      a.input_grads[0] = std::move(r.input);
      a.input_grads[1] = std::move(r.weight);
      a.input_grads[2] = std::move(r.bias);
      return;
    }
    // Recorded (second order) or transposed: the composite of differentiable ops.
    const DynTensor g = y.defined() ? relu_backward(a.grad, y) : a.grad;
    const ConvParams& p = plain;
    if (a.needs(0)) {
      a.input_grads[0] =
          transposed ? cut_to(convolution(g, w, DynTensor(), p, false), x.shape(), p.spatial)
                     : transposed_to(g, w, p, x.shape());
    }
    if (a.needs(1)) {
      a.input_grads[1] = transposed ? conv_backward_weight(g, x, w.shape(), p)
                                    : conv_backward_weight(x, g, w.shape(), p);
    }
    if (a.needs(2)) a.input_grads[2] = sum(g, bias_dims(g.rank()));
  });
}

void conv_backward_weight_rule(const Recording& r) {
  record(r, [x = r.input(0), grad_out = r.input(1), p = r.param<ConvParams>()](BackwardArgs& a) {
    const DynTensor& g = a.grad;  // shaped like the weight
    if (a.needs(0)) a.input_grads[0] = transposed_to(grad_out, g, p, x.shape());
    if (a.needs(1)) {
      a.input_grads[1] =
          cut_to(convolution(x, g, DynTensor(), p, false), grad_out.shape(), p.spatial);
    }
  });
}

void max_pool_rule(const Recording& r) {
  const Shape shape = r.input(0).shape();
  const PoolIndices& pi = r.param<PoolIndices>();
  record(r, [indices = pi.indices, shape, p = pi.params](BackwardArgs& a) {
    a.input_grads[0] = max_pool_backward(a.grad, indices, shape, p);
  });
}

void max_pool_backward_rule(const Recording& r) {
  const Shape shape = r.input(0).shape();
  const PoolIndices& pi = r.param<PoolIndices>();
  record(r, [indices = pi.indices, shape, p = pi.params](BackwardArgs& a) {
    // Reads the gradient back at the argmax of each window.
    const int64_t start = a.grad.rank() - p.spatial;
    const DynTensor flat = gather(flatten(a.grad, start), start, flatten(indices, start));
    a.input_grads[0] = reshape(flat, shape);
  });
}

void avg_pool_rule(const Recording& r) {
  const Shape shape = r.input(0).shape();
  record(r, [shape, p = r.param<PoolParams>()](BackwardArgs& a) {
    a.input_grads[0] = avg_pool_backward(a.grad, shape, p);
  });
}

void avg_pool_backward_rule(const Recording& r) {
  record(r,
         [p = r.param<PoolParams>()](BackwardArgs& a) { a.input_grads[0] = avg_pool(a.grad, p); });
}

}  // namespace
}  // namespace ember::autodiff

namespace ember {

const OpDef ops::convolution{"convolution", autodiff::convolution_rule};
const OpDef ops::conv_transpose{"conv_transpose", autodiff::convolution_rule};
const OpDef ops::conv_backward_weight{"conv_backward_weight", autodiff::conv_backward_weight_rule};
const OpDef ops::max_pool{"max_pool", autodiff::max_pool_rule};
const OpDef ops::max_pool_backward{"max_pool_backward", autodiff::max_pool_backward_rule};
const OpDef ops::avg_pool{"avg_pool", autodiff::avg_pool_rule};
const OpDef ops::avg_pool_backward{"avg_pool_backward", autodiff::avg_pool_backward_rule};

}  // namespace ember
