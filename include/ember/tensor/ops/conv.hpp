// Convolution and pooling on the rank-erased tensor, with PyTorch's names, arguments and layouts:
// inputs [N, C, *spatial] (or unbatched [C, *spatial]), conv weights [out, in / groups, *k],
// transposed-conv weights [in, out / groups, *k]. Per-dim arguments take one value for every
// spatial dim ({1}) or one per dim ({1, 2}), as PyTorch's int-or-tuple arguments do.
#pragma once

#include <array>

#include <vector>

#include "ember/core/ops.hpp"
#include "ember/tensor/dyn_tensor.hpp"
#include "ember/tensor/ops/reduce.hpp"

namespace ember {

/// A per-spatial-dim argument: one value for all dims, or one per dim.
using SpatialArg = std::vector<int64_t>;

/// torch.nn.functional.conv1d/2d/3d. `bias` ([out]) may be an undefined tensor (no bias).
/// With `relu` the result is relu(conv), fused into the convolution's pass where the backend
/// can (OpFamily::ConvRelu; equal to applying relu() after it, values and gradients; it saves a
/// pass over the output each way).
DynTensor conv1d(const DynTensor& x, const DynTensor& weight, const DynTensor& bias = {},
                 const SpatialArg& stride = {1}, const SpatialArg& padding = {0},
                 const SpatialArg& dilation = {1}, int64_t groups = 1, bool relu = false);
DynTensor conv2d(const DynTensor& x, const DynTensor& weight, const DynTensor& bias = {},
                 const SpatialArg& stride = {1}, const SpatialArg& padding = {0},
                 const SpatialArg& dilation = {1}, int64_t groups = 1, bool relu = false);
DynTensor conv3d(const DynTensor& x, const DynTensor& weight, const DynTensor& bias = {},
                 const SpatialArg& stride = {1}, const SpatialArg& padding = {0},
                 const SpatialArg& dilation = {1}, int64_t groups = 1, bool relu = false);

/// torch.nn.functional.conv_transpose1d/2d/3d (PyTorch's argument order: groups before dilation).
DynTensor conv_transpose1d(const DynTensor& x, const DynTensor& weight, const DynTensor& bias = {},
                           const SpatialArg& stride = {1}, const SpatialArg& padding = {0},
                           const SpatialArg& output_padding = {0}, int64_t groups = 1,
                           const SpatialArg& dilation = {1});
DynTensor conv_transpose2d(const DynTensor& x, const DynTensor& weight, const DynTensor& bias = {},
                           const SpatialArg& stride = {1}, const SpatialArg& padding = {0},
                           const SpatialArg& output_padding = {0}, int64_t groups = 1,
                           const SpatialArg& dilation = {1});
DynTensor conv_transpose3d(const DynTensor& x, const DynTensor& weight, const DynTensor& bias = {},
                           const SpatialArg& stride = {1}, const SpatialArg& padding = {0},
                           const SpatialArg& output_padding = {0}, int64_t groups = 1,
                           const SpatialArg& dilation = {1});

/// torch.nn.functional.max_pool1d/2d; an empty `stride` means the kernel size. Padding counts
/// as -inf and may be at most half the (dilated) kernel.
DynTensor max_pool1d(const DynTensor& x, const SpatialArg& kernel_size,
                     const SpatialArg& stride = {}, const SpatialArg& padding = {0},
                     const SpatialArg& dilation = {1}, bool ceil_mode = false);
DynTensor max_pool2d(const DynTensor& x, const SpatialArg& kernel_size,
                     const SpatialArg& stride = {}, const SpatialArg& padding = {0},
                     const SpatialArg& dilation = {1}, bool ceil_mode = false);
/// The same with return_indices=True: the flat index of each maximum within its input plane.
ValuesIndices max_pool1d_with_indices(const DynTensor& x, const SpatialArg& kernel_size,
                                      const SpatialArg& stride = {},
                                      const SpatialArg& padding = {0},
                                      const SpatialArg& dilation = {1}, bool ceil_mode = false);
ValuesIndices max_pool2d_with_indices(const DynTensor& x, const SpatialArg& kernel_size,
                                      const SpatialArg& stride = {},
                                      const SpatialArg& padding = {0},
                                      const SpatialArg& dilation = {1}, bool ceil_mode = false);

/// torch.nn.functional.avg_pool1d/2d; an empty `stride` means the kernel size.
DynTensor avg_pool1d(const DynTensor& x, const SpatialArg& kernel_size,
                     const SpatialArg& stride = {}, const SpatialArg& padding = {0},
                     bool ceil_mode = false, bool count_include_pad = true);
DynTensor avg_pool2d(const DynTensor& x, const SpatialArg& kernel_size,
                     const SpatialArg& stride = {}, const SpatialArg& padding = {0},
                     bool ceil_mode = false, bool count_include_pad = true);

/// torch.nn.functional.adaptive_avg_pool1d/2d.
DynTensor adaptive_avg_pool1d(const DynTensor& x, const SpatialArg& output_size);
DynTensor adaptive_avg_pool2d(const DynTensor& x, const SpatialArg& output_size);

// The N-d primitives behind the functions above, every parameter explicit (batched inputs
// only). The gradient rules are written with them, so they are differentiable too.

/// aten::convolution: conv (or, with `transposed`, the transposed conv) over p.spatial dims.
DynTensor convolution(const DynTensor& x, const DynTensor& weight, const DynTensor& bias,
                      const ConvParams& p, bool transposed);
namespace detail {
/// relu(convolution(x, w, bias, p without relu)): what convolution runs for p.relu on a backend
/// without OpFamily::ConvRelu.
DynTensor conv_relu_composite(const DynTensor& x, const DynTensor& weight, const DynTensor& bias,
                              const ConvParams& p);
}  // namespace detail
/// The gradient of convolution(x, w) w.r.t. w, whose shape is `weight_shape`; with `grad_bias`,
/// also the gradient w.r.t. the bias (grad_out summed over all dims but 1), in the same pass.
DynTensor conv_backward_weight(const DynTensor& x, const DynTensor& grad_out,
                               const Shape& weight_shape, const ConvParams& p,
                               DynTensor* grad_bias = nullptr);
/// The gradients of convolution(x, w, bias, p) for grad_out, those asked for by `need` (input,
/// weight, bias), in one backend call; with p.relu, `y` is the convolution's output (its relu
/// mask). Not recorded: gradient rules use it when the backward pass is not itself recorded.
struct ConvGrads {
  DynTensor input, weight, bias;
};
ConvGrads conv_backward(const DynTensor& x, const DynTensor& w, const DynTensor& y,
                        const DynTensor& grad_out, const ConvParams& p,
                        const std::array<bool, 3>& need);
/// Max pooling over the trailing p.spatial dims: values and flat indices, i64 (PyTorch's), or
/// i32 when asked and the plane has under 2^31 elements (max_pool1d/2d keep theirs for the
/// gradient only, in half the memory).
ValuesIndices max_pool(const DynTensor& x, const PoolParams& p, DType index_dtype = DType::i64);
/// Max pooling's values alone: the backend computes no indices unless the op is recorded (its
/// gradient reads them, kept in the backend's pool_index_dtype()).
DynTensor max_pool_values(const DynTensor& x, const PoolParams& p);
/// Scatters grad_out to the maxima at `indices` (i64 or i32), into a zero tensor of
/// `input_shape`.
DynTensor max_pool_backward(const DynTensor& grad_out, const DynTensor& indices,
                            const Shape& input_shape, const PoolParams& p);
/// Average pooling (adaptive when p.adaptive) over the trailing p.spatial dims.
DynTensor avg_pool(const DynTensor& x, const PoolParams& p);
/// The gradient of avg_pool w.r.t. an input of `input_shape`.
DynTensor avg_pool_backward(const DynTensor& grad_out, const Shape& input_shape,
                            const PoolParams& p);

}  // namespace ember
