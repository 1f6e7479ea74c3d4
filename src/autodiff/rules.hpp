// What the gradient rules in src/autodiff/grad_<family>.cpp share: each rule receives one op
// call (a Recording, handed over by the tensor layer's detail::record) and attaches a node to
// its output with record(r, backward), where backward(BackwardArgs&) computes the inputs'
// gradients with ordinary ops. Each descriptor in core/ops.hpp is defined beside its rule.
#pragma once

#include "../tensor/record.hpp"
#include "ember/autodiff/node.hpp"

namespace ember::autodiff {

/// Makes r.out tracked by a node named after r's op, over r's inputs, running `backward`.
template <class Backward>
void record(const Recording& r, Backward&& backward) {
  record(r.op.name, r.inputs, r.out, std::forward<Backward>(backward));
}

}  // namespace ember::autodiff
