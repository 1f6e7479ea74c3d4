// Checks and reductions shared by the loss files (losses.cpp, losses_margin.cpp, losses_ctc.cpp).
#pragma once

#include "ember/nn/losses.hpp"

namespace ember::nn::loss_detail {

/// Fails unless `t` is defined and floating: `[op] what must be a floating tensor, got i64`.
void check_floating(const DynTensor& t, const char* op, const char* what);
/// Fails unless `other` has the input's shape (PyTorch warns and broadcasts; Ember asks).
void check_same_shape(const DynTensor& input, const DynTensor& other, const char* op,
                      const char* what);
/// Fails for BatchMean, which only kl_div takes.
void check_reduction(Reduction r, const char* op);
/// mean, sum, or the loss itself for None.
DynTensor reduce_loss(const DynTensor& loss, Reduction r, const char* op);
/// True when `from` broadcasts to `to` without growing it.
bool broadcasts_to(const Shape& from, const Shape& to);
/// A constant weight in the input's dtype (PyTorch gives weights no gradient).
DynTensor constant_weight(const DynTensor& w, const DynTensor& input, const char* op,
                          const char* what);
/// log(1 + exp(z)) without overflow, with the exact derivative sigmoid(z) everywhere, 0
/// included (the relu + log1p(exp(-|z|)) form has a zero derivative at 0).
DynTensor log1p_exp(const DynTensor& z);

}  // namespace ember::nn::loss_detail
