// The train layer in one include: the Learner, its metrics and its checkpoints.
#pragma once

#include "ember/train/checkpoint.hpp"
#include "ember/train/learner.hpp"
#include "ember/train/metrics.hpp"
