// The gradient rules of the primitive ops, one record_<op> per op (or per family, where one
// switch holds the whole family's table). The tensor layer calls them right after an op's
// forward when autodiff::should_record() says an input is tracked; each attaches a node to
// `out`. The rules live in src/autodiff/grad_<family>.cpp beside each other (not installed).
#pragma once

#include <vector>

#include "ember/autodiff/node.hpp"
#include "ember/core/ops.hpp"
#include "ember/tensor/ops/indexing.hpp"
#include "ember/tensor/ops/movement.hpp"

namespace ember::autodiff {

// grad_elementwise.cpp. `a`, `b`, `x` are the operands as computed (after type promotion,
// before broadcasting): rules sum their gradients back to those shapes.
void record_unary(UnaryOp op, const UnaryParams& params, const DynTensor& x, DynTensor& out);
void record_binary(BinaryOp op, const DynTensor& a, const DynTensor& b, DynTensor& out);
void record_where(const DynTensor& cond, const DynTensor& a, const DynTensor& b, DynTensor& out);
void record_cast(const DynTensor& x, DynTensor& out);
void record_clone(const DynTensor& x, DynTensor& out);
void record_to_device(const DynTensor& x, DynTensor& out);

// grad_reduce.cpp. `out` has the reduced dims kept (size 1).
void record_reduce(ReduceOp op, const DynTensor& x, uint32_t mask, DynTensor& out);
void record_scan(ScanOp op, const DynTensor& x, int dim, DynTensor& out);
/// max/min along a dim, sort and topk: values taken from `x` at `indices` along `dim`, so the
/// gradient goes back to those indices.
void record_take_along(const char* name, const DynTensor& x, int dim, const DynTensor& indices,
                       DynTensor& values);
/// `out` keeps the reduced dims.
void record_logsumexp(const DynTensor& x, DynTensor& out);

// grad_linalg.cpp
void record_matmul(const DynTensor& a, const DynTensor& b, DynTensor& out);
void record_softmax(const DynTensor& x, int64_t dim, DynTensor& out);
void record_log_softmax(const DynTensor& x, int64_t dim, DynTensor& out);

// grad_conv.cpp. Each rule is written with the conv and pool primitives of
// ember/tensor/ops/conv.hpp, which record themselves, so second derivatives work.
void record_convolution(const DynTensor& x, const DynTensor& w, const DynTensor& bias,
                        const ConvParams& p, bool transposed, DynTensor& out);
void record_conv_backward_weight(const DynTensor& x, const DynTensor& grad_out, const ConvParams& p,
                                 DynTensor& out);
void record_max_pool(const DynTensor& x, const DynTensor& indices, const PoolParams& p,
                     DynTensor& out);
void record_max_pool_backward(const DynTensor& grad_out, const DynTensor& indices,
                              const PoolParams& p, DynTensor& out);
void record_avg_pool(const DynTensor& x, const PoolParams& p, DynTensor& out);
void record_avg_pool_backward(const DynTensor& grad_out, const PoolParams& p, DynTensor& out);

// grad_movement.cpp. Views are recorded too: a view of a tracked tensor is tracked.
void record_reshape(const DynTensor& x, DynTensor& out);
void record_transpose(const DynTensor& x, int dim0, int dim1, DynTensor& out);
void record_permute(const DynTensor& x, const std::vector<int64_t>& dims, DynTensor& out);
void record_expand(const DynTensor& x, DynTensor& out);
void record_slice(const DynTensor& x, int dim, int64_t start, int64_t step, DynTensor& out);
void record_select(const DynTensor& x, int dim, int64_t index, DynTensor& out);
void record_flip(const DynTensor& x, const std::vector<int64_t>& dims, DynTensor& out);
void record_repeat(const DynTensor& x, const std::vector<int64_t>& repeats, DynTensor& out);
void record_cat(const std::vector<DynTensor>& xs, int dim, DynTensor& out);
void record_pad(const DynTensor& x, const std::vector<int64_t>& pads, DynTensor& out);

// grad_indexing.cpp
void record_gather(const DynTensor& x, int dim, const DynTensor& index, DynTensor& out);
void record_scatter(const DynTensor& x, int dim, const DynTensor& index, const DynTensor& src,
                    DynTensor& out);
void record_scatter_add(const DynTensor& x, int dim, const DynTensor& index, const DynTensor& src,
                        DynTensor& out);
void record_index_select(const DynTensor& x, int dim, const DynTensor& index, DynTensor& out);
void record_index_add(const DynTensor& x, int dim, const DynTensor& index, const DynTensor& src,
                      double alpha, DynTensor& out);
void record_masked_fill(const DynTensor& x, const DynTensor& mask, DynTensor& out);
void record_masked_select(const DynTensor& x, const DynTensor& mask, DynTensor& out);
void record_slice_assign(const DynTensor& x, const std::vector<Slice>& slices,
                         const DynTensor& value, DynTensor& out);

}  // namespace ember::autodiff
