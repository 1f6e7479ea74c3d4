// The benchmarks' profile by kernel (CUPTI's activity records): every kernel, memcpy and memset
// the device ran between start() and stop(), summed by name, printed per step beside PyTorch's
// torch.profiler table from bench/cuda_models.py --profile. Built where CMake finds CUPTI.
#pragma once

#include <cstdio>

namespace ember::bench {

/// Starts recording (clears what an earlier profile recorded).
void kernel_profile_start();
/// Stops recording and prints the `top` names by device time per step over `steps` steps.
void kernel_profile_stop(std::FILE* out, int top, int steps);

}  // namespace ember::bench
