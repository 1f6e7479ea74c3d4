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

}  // namespace ember::test
