// Waiting for a device, and counting the waits (docs/ARCHITECTURE.md, "Asynchrony").
#pragma once

#include <cstdint>

#include "ember/core/backend.hpp"
#include "ember/core/device.hpp"

namespace ember {

class DynTensor;

/// Waits until the work queued on `device` is done (torch.cuda.synchronize). Raises, once, the
/// first error that a deferred check found in that work (an index out of range, naming the op
/// and the index); the error is then cleared, so the process can carry on after catching it.
void synchronize(Device device = default_device());

/// How many times the host has waited for `device` since the process started: item, to_data,
/// to_vector, printing and saving (which read to the host), nonzero and masked_select (whose
/// size is data), tensor.to() from it, and synchronize. A training step makes none.
uint64_t host_sync_count(Device device = default_device());

/// Checks, where x lives and without a host read, that every value of x lies in
/// [check.lo, check.hi] (Backend::check_range): for ops and losses that validate indices, classes
/// or probabilities. Raises at once where the backend knows at once (Cpu, LibTorch), else at the
/// next synchronisation of x's device. False when the error was deferred: skip work that would
/// trust the values.
bool check_range(const DynTensor& x, const RangeCheck& check);

namespace detail {
/// For tests: range errors of synchronous backends (Cpu, LibTorch), which raise at the op, are
/// deferred to the next synchronisation as an asynchronous backend defers them; the failed op
/// then returns zeros (gather, index_select) or its input unchanged (scatter, index_add).
void set_defer_range_errors(bool on);
}  // namespace detail

}  // namespace ember
