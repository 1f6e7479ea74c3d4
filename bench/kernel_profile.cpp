// CUPTI activity tracing for bench/kernel_profile.hpp: buffers handed to CUPTI on request, their
// kernel, memcpy and memset records summed by (demangled) name when CUPTI returns them.
#include "kernel_profile.hpp"

#include <cupti.h>
#include <cxxabi.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace ember::bench {
namespace {

struct Sum {
  double ns = 0;
  int64_t calls = 0;
};
std::mutex g_mutex;
std::map<std::string, Sum> g_sums;

constexpr size_t kBufferBytes = size_t{8} << 20;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = kBufferBytes;
  *max_records = 0;
}

std::string demangled(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string s = status == 0 && d ? d : name;
  std::free(d);
  // Template arguments make names unreadable in a table: keep the function and its first ones.
  if (s.size() > 110) s = s.substr(0, 107) + "...";
  return s;
}

void add(const std::string& name, uint64_t start, uint64_t end) {
  std::lock_guard<std::mutex> lock(g_mutex);
  Sum& s = g_sums[name];
  s.ns += static_cast<double>(end - start);
  ++s.calls;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        add(demangled(k->name), k->start, k->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        add("[memcpy]", m->start, m->end);
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
        add("[memset]", m->start, m->end);
        break;
      }
      default:
        break;
    }
  }
  std::free(buffer);
}

void check(CUptiResult r, const char* what) {
  if (r == CUPTI_SUCCESS) return;
  const char* msg = nullptr;
  cuptiGetResultString(r, &msg);
  std::fprintf(stderr, "kernel profile: %s: %s\n", what, msg ? msg : "?");
}

}  // namespace

void kernel_profile_start() {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_sums.clear();
  }
  check(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "register");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "enable kernels");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "enable memcpy");
  check(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET), "enable memset");
}

void kernel_profile_stop(std::FILE* out, int top, int steps) {
  check(cuptiActivityFlushAll(1), "flush");
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
  std::vector<std::pair<std::string, Sum>> rows;
  double total = 0;
  int64_t calls = 0;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (const auto& [name, s] : g_sums) {
      rows.emplace_back(name, s);
      total += s.ns;
      calls += s.calls;
    }
  }
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  const double per = 1e6 * steps;  // ns -> ms per step
  std::fprintf(out, "profile: %.3f ms of device time per step in %.0f launches per step\n",
               total / per, static_cast<double>(calls) / steps);
  for (int i = 0; i < top && i < static_cast<int>(rows.size()); ++i) {
    const auto& [name, s] = rows[static_cast<size_t>(i)];
    std::fprintf(out, "profile %8.3f ms %5.1f%% %6.0f x  %s\n", s.ns / per, 100 * s.ns / total,
                 static_cast<double>(s.calls) / steps, name.c_str());
  }
}

}  // namespace ember::bench
