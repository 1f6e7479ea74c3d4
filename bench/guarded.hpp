// A benchmark row's body run so that an Ember error (a kernel a device lacks, a deferred device
// error) becomes that row's error instead of ending the whole run.
#pragma once

#include <benchmark/benchmark.h>

#include <exception>

namespace ember::bench {

template <class F>
void guarded(benchmark::State& state, F&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

}  // namespace ember::bench
