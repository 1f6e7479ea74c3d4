// Gradient rules of the shape and layout ops: each moves the gradient back to the input's
// layout (reshape back, transpose back, sum over broadcast dims, scatter into the slice...).
#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/reduce.hpp"
#include "rules.hpp"

namespace ember::autodiff {

void record_reshape(const DynTensor& x, DynTensor& out) {
  const Shape shape = x.shape();
  record("reshape", {&x}, out,
         [shape](BackwardArgs& a) { a.input_grads[0] = reshape(a.grad, shape); });
}

void record_transpose(const DynTensor& x, int dim0, int dim1, DynTensor& out) {
  record("transpose", {&x}, out,
         [dim0, dim1](BackwardArgs& a) { a.input_grads[0] = transpose(a.grad, dim0, dim1); });
}

void record_permute(const DynTensor& x, const std::vector<int64_t>& dims, DynTensor& out) {
  std::vector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims[i] < 0 ? dims[i] + x.rank() : dims[i];
    inverse[static_cast<size_t>(d)] = static_cast<int64_t>(i);
  }
  record("permute", {&x}, out,
         [inverse](BackwardArgs& a) { a.input_grads[0] = permute(a.grad, inverse); });
}

void record_expand(const DynTensor& x, DynTensor& out) {
  const Shape shape = x.shape();
  record("expand", {&x}, out,
         [shape](BackwardArgs& a) { a.input_grads[0] = sum_to(a.grad, shape); });
}

}  // namespace ember::autodiff
