// The nn layer in one include: module machinery, layers, activations.
#pragma once

#include "ember/nn/activation.hpp"
#include "ember/nn/attention.hpp"
#include "ember/nn/conv.hpp"
#include "ember/nn/dropout.hpp"
#include "ember/nn/embedding.hpp"
#include "ember/nn/encoding.hpp"
#include "ember/nn/linear.hpp"
#include "ember/nn/module.hpp"
#include "ember/nn/norm.hpp"
#include "ember/nn/param.hpp"
#include "ember/nn/quantized.hpp"
#include "ember/nn/rnn.hpp"
#include "ember/nn/sequential.hpp"
#include "ember/nn/serialize.hpp"
#include "ember/nn/vision.hpp"
