// 16-bit 2-d convolutions through cuDNN's graph API (conv_graph.cpp), the path to cuDNN's Hopper
// implicit-GEMM engines that its legacy API (conv.cpp) does not reach.
#pragma once

#include <memory>

#include "ember/backends/cuda/cuda.hpp"
#include "ember/core/backend.hpp"
#include "ember/core/ops.hpp"

namespace ember::cuda {

enum class ConvPass { Forward, Data, Filter };

struct ConvGraph;

/// Whether 16-bit 2-d convolutions of `dtype` run through the graph API here (the frontend is
/// built in and deterministic algorithms are off): CudaBackend::channels_last says so for Conv.
bool conv_graph_runs(DType dtype, int spatial);

/// The built graph of one pass over x [N, C, H, W], w [K, C, R, S], y [N, K, P, Q] (plus a bias
/// [K] added in the forward's epilogue when `bias`), made on first use and cached; null when the
/// frontend is not built in or cuDNN has no engine for it, and the legacy API runs instead.
/// `channels_last`: every operand NHWC (the filter KRSC), else every operand NCHW; the caller
/// stages operands into the layout.
std::shared_ptr<const ConvGraph> conv_graph_for(ConvPass pass, const Shape& x, const Shape& w,
                                                const Shape& y, const ConvParams& p, DType dtype,
                                                bool bias, int device, bool channels_last,
                                                const char* op);

/// Runs `g`. Forward: a = x, b = w, out = y. Data: a = dy, b = w, out = dx. Filter: a = x,
/// b = dy, out = dw.
void conv_graph_run(const ConvGraph& g, const void* a, const void* b, const void* bias, void* out,
                    Device device, const char* op);

}  // namespace ember::cuda
