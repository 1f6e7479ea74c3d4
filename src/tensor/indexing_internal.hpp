// Index checks shared by indexing.cpp and indexing_extra.cpp.
#pragma once

#include "ember/tensor/dyn_tensor.hpp"

namespace ember::detail {

/// Checks that `index` is an Int tensor whose values all lie in [0, size), where it lives (no
/// host read). False when a bad index was found and its error deferred: skip the kernel then.
bool check_index(const DynTensor& index, int64_t size, int dim, const char* op);

/// gather/scatter shapes: index has x's rank and is no larger than x (and src) outside `dim`.
/// Returns the wrapped dim; `ok` is false when the index check failed and was deferred.
int check_gather_shapes(const DynTensor& x, int64_t dim, const DynTensor& index,
                        const DynTensor* src, const char* op, bool& ok);

}  // namespace ember::detail
