// CUDA runtime errors as ember::Error naming the op and CUDA's own message.
#pragma once

#include <cuda_runtime.h>

#include "ember/core/error.hpp"

#define EMBER_CUDA_CHECK(expr, op)                                                          \
  do {                                                                                      \
    const cudaError_t ember_cuda_err_ = (expr);                                             \
    if (ember_cuda_err_ != cudaSuccess) {                                                   \
      (void)cudaGetLastError(); /* clear the sticky-free error so the process carries on */ \
      EMBER_FAIL("[", op, "] cuda: ", cudaGetErrorString(ember_cuda_err_));                 \
    }                                                                                       \
  } while (0)
