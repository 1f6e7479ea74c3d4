// Shape and layout ops on the rank-erased tensor. Views share storage (zero-copy) wherever the
// strides allow it, as in PyTorch; the rest copy.
#pragma once

#include <vector>

#include "ember/tensor/dyn_tensor.hpp"

namespace ember {

/// -1 in `shape` is inferred. A view when the strides allow, else a copy.
DynTensor reshape(const DynTensor& x, const Shape& shape);
/// As reshape, but fails instead of copying (torch.Tensor.view).
DynTensor view(const DynTensor& x, const Shape& shape);
DynTensor flatten(const DynTensor& x, int64_t start_dim = 0, int64_t end_dim = -1);
DynTensor squeeze(const DynTensor& x);  // every size-1 dim
DynTensor squeeze(const DynTensor& x, int64_t dim);
DynTensor unsqueeze(const DynTensor& x, int64_t dim);
DynTensor transpose(const DynTensor& x, int64_t dim0, int64_t dim1);
DynTensor permute(const DynTensor& x, const std::vector<int64_t>& dims);
/// Broadcasts to `shape` (-1 keeps a dim); a view with stride 0 on broadcast dims.
DynTensor expand(const DynTensor& x, const Shape& shape);
DynTensor broadcast_to(const DynTensor& x, const Shape& shape);
/// Elements start, start+step, ... before end along dim (negative start/end count from the end,
/// out-of-range ends are clamped as in Python). A view.
DynTensor slice(const DynTensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
DynTensor narrow(const DynTensor& x, int64_t dim, int64_t start, int64_t length);
/// Removes `dim` by picking one index (a view).
DynTensor select(const DynTensor& x, int64_t dim, int64_t index);
DynTensor flip(const DynTensor& x, const std::vector<int64_t>& dims);
/// Tiles the tensor; repeats.size() >= rank (extra leading dims are added, as torch.repeat).
DynTensor repeat(const DynTensor& x, const std::vector<int64_t>& repeats);
DynTensor cat(const std::vector<DynTensor>& xs, int64_t dim = 0);
DynTensor stack(const std::vector<DynTensor>& xs, int64_t dim = 0);
/// Pieces of `split_size` along dim (the last may be smaller).
std::vector<DynTensor> split(const DynTensor& x, int64_t split_size, int64_t dim = 0);
std::vector<DynTensor> split(const DynTensor& x, const std::vector<int64_t>& sizes,
                             int64_t dim = 0);
std::vector<DynTensor> chunk(const DynTensor& x, int64_t chunks, int64_t dim = 0);
/// The same values in row-major order (no copy when already contiguous).
DynTensor contiguous(const DynTensor& x);

/// Constant (PyTorch's "constant", and conv's padding_mode "zeros"), "reflect", "replicate",
/// "circular" (wraps around: pads at most the dim's size, non-negative).
enum class PadMode : uint8_t { Constant, Reflect, Replicate, Circular };
/// Pads the last dims: pads = {left_last, right_last, left_prev, right_prev, ...}
/// (torch.nn.functional.pad).
DynTensor pad(const DynTensor& x, const std::vector<int64_t>& pads,
              PadMode mode = PadMode::Constant, double value = 0.0);

}  // namespace ember
