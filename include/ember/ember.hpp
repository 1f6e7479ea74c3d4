// The one header users include, as torch/torch.h is: tensors, ops, autodiff, devices, printing,
// and (on an OS) nn, optim, data, train, io (safetensors, torch.save) and the ONNX importer.
// The reference models are separate: ember/models/*.hpp. A bare-metal build gets the core.
#pragma once

#include "ember/autodiff/autodiff.hpp"
#include "ember/backends/cpu/cpu.hpp"
#include "ember/core/device.hpp"
#include "ember/core/dtype.hpp"
#include "ember/core/embedded.hpp"
#include "ember/core/error.hpp"
#include "ember/nn/init.hpp"
#include "ember/nn/losses.hpp"
#include "ember/tensor/device_graph.hpp"
#include "ember/tensor/generator.hpp"
#include "ember/tensor/memory.hpp"
#include "ember/tensor/print.hpp"
#include "ember/tensor/sync.hpp"
#include "ember/tensor/tensor.hpp"

#ifndef EMBER_BARE_METAL
#include "ember/data/data.hpp"
#include "ember/dist/ddp.hpp"
#include "ember/dist/dist.hpp"
#include "ember/import/onnx.hpp"
#include "ember/io/pytorch.hpp"
#include "ember/io/safetensors.hpp"
#include "ember/nn/nn.hpp"
#include "ember/optim/optim.hpp"
#include "ember/train/train.hpp"
#endif
