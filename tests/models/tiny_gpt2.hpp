// A GPT-2 small enough for unit tests (two layers of width 16, vocabulary 50), shared by the
// model tests and the training-step sync test.
#pragma once

#include <ember/models/gpt2.hpp>

namespace ember::test {

inline models::Gpt2Config tiny_gpt2_config() {
  models::Gpt2Config cfg;
  cfg.vocab_size = 50;
  cfg.n_positions = 16;
  cfg.n_embd = 16;
  cfg.n_layer = 2;
  cfg.n_head = 4;
  return cfg;
}

}  // namespace ember::test
