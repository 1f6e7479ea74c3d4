// Reads the text fixtures that the PyTorch scripts under tests/*/fixtures write: per tensor a
// line `name rank dims...`, then one line of its row-major values (as float64; nan and inf as
// Python writes them); lines starting with `#` are comments.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ember/ember.hpp"

namespace ember::test {

inline std::map<std::string, DynTensor> load_fixture(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::map<std::string, DynTensor> out;
  std::string header, values;
  while (std::getline(in, header)) {
    if (header.empty() || header[0] == '#') continue;
    std::getline(in, values);
    std::istringstream h(header), v(values);
    std::string name;
    int rank = 0;
    h >> name >> rank;
    Shape shape;
    for (int i = 0; i < rank; ++i) {
      int64_t d = 0;
      h >> d;
      shape.push_back(d);
    }
    std::vector<double> data;
    for (std::string token; v >> token;) data.push_back(std::strtod(token.c_str(), nullptr));
    out[name] = from_data(TensorData::from(data, shape));
  }
  return out;
}

/// A loaded fixture: lookups that report a missing name, and a comparison against a value.
class Fixture {
 public:
  explicit Fixture(const std::string& path) : tensors_(load_fixture(path)) {}

  bool has(const std::string& name) const { return tensors_.count(name) > 0; }
  DynTensor get(const std::string& name) const {
    auto it = tensors_.find(name);
    EXPECT_NE(it, tensors_.end()) << "missing " << name;
    return it == tensors_.end() ? DynTensor() : it->second;
  }
  /// `got` against the fixture's `name`, elementwise within atol + rtol |want|.
  void expect_close(const DynTensor& got, const std::string& name, double rtol, double atol) const {
    const DynTensor want = get(name);
    ASSERT_TRUE(got.defined()) << name;
    ASSERT_EQ(got.shape(), want.shape()) << name;
    const DynTensor g = cast(got, DType::f64);
    EXPECT_TRUE(allclose(g, want, rtol, atol))
        << name << ": max |diff| " << amax(abs(sub(g, want))).item<double>();
  }

 private:
  std::map<std::string, DynTensor> tensors_;
};

}  // namespace ember::test
