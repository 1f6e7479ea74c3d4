// EMBER_HD marks the few core functions the Cuda backend's kernels share with the Cpu's (element
// conversions, the 16-bit floats, Philox), so both compute them with the same code: __host__
// __device__ under nvcc, nothing for any other compiler. No CUDA header is needed for it.
#pragma once

#if defined(__CUDACC__)
#define EMBER_HD __host__ __device__
#else
#define EMBER_HD
#endif
