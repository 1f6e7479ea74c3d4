// The 2x3 linear model and Learner the cli fuzz target loads files into (as `ember eval` and
// `ember train --resume` do for the CNN), shared with make_seeds.cpp, which writes its seeds.
#pragma once

#include <memory>

#include "ember/nn/linear.hpp"
#include "ember/optim/optim.hpp"
#include "ember/train/train.hpp"

namespace ember::fuzz {

struct Tiny {
  nn::Linear fc;
  EMBER_MODULE(Tiny, fc)
};

/// Adam with a cosine schedule stepped per batch, as the CLI's trainer has.
struct TinyLearner {
  Tiny model{nn::Linear(2, 3)};
  std::unique_ptr<optim::CosineAnnealingLR> cosine;
  std::unique_ptr<train::Learner<Tiny>> learner;
  TinyLearner() {
    auto opt = optim::AdamConfig().lr(1e-3).init();
    cosine = std::make_unique<optim::CosineAnnealingLR>(opt, 10);
    learner = std::make_unique<train::Learner<Tiny>>(
        model, std::move(opt),
        train::LearnerConfig().epochs(2).monitor("valid_accuracy", train::Goal::maximize));
    learner->set_scheduler(*cosine, train::ScheduleEvery::batch);
  }
};

}  // namespace ember::fuzz
