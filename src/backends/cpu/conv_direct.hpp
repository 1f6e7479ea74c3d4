// Direct f32 convolution kernels for a few input channels (an image CNN's first layer), where
// oneDNN's plain-layout kernel and im2col + GEMM spend their time moving the im2col matrix.
// Each entry returns false, having written nothing, when it does not handle the geometry or the
// build has no AVX2 + FMA; the caller then takes its general path.
#pragma once

#include "ember/core/backend.hpp"

namespace ember::cpu {

/// out = conv(x, w) + bias (then relu with p.relu) for f32, 2-d, ungrouped, stride 1,
/// dilation 1, 1 to 4 input channels, kernel width 2 to 6, any height and zero padding, output
/// at least 4 wide. `bias` may be undefined. Operands contiguous, as Backend::conv has them.
bool conv_direct(const RawTensor& x, const RawTensor& w, const RawTensor& bias, const ConvParams& p,
                 const RawTensor& out);

/// grad_w = the weight gradient of that convolution and, when defined, grad_bias = grad_out
/// summed over images and positions. Sums go through partials of a fixed 8 images, added in a
/// fixed order, so results do not depend on the thread count. With `y` defined (the output of
/// a fused relu), grad_out is read as relu_backward(grad_out, y) without making it.
bool conv_direct_backward_weight(const RawTensor& x, const RawTensor& grad_out, const ConvParams& p,
                                 const RawTensor& grad_w, const RawTensor& grad_bias,
                                 const RawTensor& y = RawTensor());

}  // namespace ember::cpu
