// The one header users include: tensors, ops, autodiff, devices, printing, nn.
#pragma once

#include "ember/autodiff/autodiff.hpp"
#include "ember/backends/cpu/cpu.hpp"
#include "ember/core/device.hpp"
#include "ember/core/dtype.hpp"
#include "ember/core/error.hpp"
#include "ember/io/safetensors.hpp"
#include "ember/nn/init.hpp"
#include "ember/nn/losses.hpp"
#include "ember/tensor/generator.hpp"
#include "ember/tensor/memory.hpp"
#include "ember/tensor/print.hpp"
#include "ember/tensor/sync.hpp"
#include "ember/tensor/tensor.hpp"
