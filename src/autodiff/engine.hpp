// The backward walk, shared by backward(), grad() and checkpoint's recomputation (not installed).
#pragma once

#include <span>
#include <vector>

#include "ember/autodiff/node.hpp"

namespace ember::autodiff {

/// Propagates `seed` from `root` through the graph. Gradients reaching a node in `stops` are
/// returned (in the order of `stops`) and not propagated further; leaf gradients (and those of
/// nodes marked retain_grad) are added to `sink`.
std::vector<DynTensor> run_backward(const NodePtr& root, const DynTensor& seed,
                                    const BackwardOptions& options, std::span<const NodePtr> stops,
                                    Gradients& sink);

}  // namespace ember::autodiff
