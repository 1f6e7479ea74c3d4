// One thread setting per process: a plugin backend that has its own thread pools (LibTorch)
// follows cpu::set_num_threads through this listener (src/tensor/plugin.cpp registers it).
#pragma once

namespace ember::cpu::detail {

using ThreadListener = void (*)(int threads);

/// `listener` is called with the thread count now (sizing the Cpu backend if it has not been)
/// and after every later set_num_threads, after the Cpu backend has sized OpenMP and OpenBLAS:
/// it has the last word on the pools they share.
void set_thread_listener(ThreadListener listener);

}  // namespace ember::cpu::detail
