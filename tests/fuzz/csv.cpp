// Fuzz target: any bytes as a CSV file, read with a header and the first column as the label,
// and without a header or label; the first rows are batched as classes and as values. Only
// ember::Error may come out.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "ember/data/csv.hpp"

namespace {

void read(std::string_view text, const ember::data::CsvConfig& config) {
  using namespace ember::data;
  const auto set = CsvDataset::parse(text, config, "fuzz.csv");
  std::vector<TabularItem> items;
  for (size_t i = 0; i < set->size() && i < 4; ++i) items.push_back(*set->get(i));
  if (items.empty()) return;
  (void)TabularBatcher(TabularBatcher::Target::values).batch(items, ember::Device::cpu());
  (void)TabularBatcher(TabularBatcher::Target::classes).batch(items, ember::Device::cpu());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const auto& config :
       {ember::data::CsvConfig().label_index(0), ember::data::CsvConfig().header(false)}) {
    try {
      read(text, config);
    } catch (const ember::Error&) {
      // Rejected cleanly: what the target checks for.
    }
  }
  return 0;
}
