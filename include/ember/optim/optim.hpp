// The optim layer in one include: optimizers, gradient clipping and accumulation, schedules.
#pragma once

#include "ember/optim/grad_scaler.hpp"
#include "ember/optim/grads.hpp"
#include "ember/optim/optimizer.hpp"
#include "ember/optim/scheduler.hpp"
