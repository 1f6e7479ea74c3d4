// ember_spirv_khr IN.spv OUT.h NAME: the build's step from a shader compiled for
// VK_NV_cooperative_matrix to its VK_KHR_cooperative_matrix twin (spirv_khr.hpp), written as the
// C header glslangValidator's --vn writes: `const uint32_t NAME[] = {...};`.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "spirv_khr.hpp"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: ember_spirv_khr IN.spv OUT.h NAME\n");
    return 2;
  }
  try {
    std::ifstream in(argv[1], std::ios::binary);
    const std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
    if (!in.good() && !in.eof()) throw std::runtime_error("cannot read it");
    if (bytes.size() % 4 != 0) throw std::runtime_error("its size is not a multiple of 4 bytes");
    std::vector<uint32_t> words(bytes.size() / 4);
    std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(words.data()));
    const std::vector<uint32_t> khr = ember::vulkan::cooperative_nv_to_khr(words);

    const std::string tmp = std::string(argv[2]) + ".tmp";
    {
      std::ofstream out(tmp);
      out << "// " << argv[1] << " rewritten for VK_KHR_cooperative_matrix by ember_spirv_khr\n"
          << "#pragma once\nconst uint32_t " << argv[3] << "[] = {\n";
      char word[16];
      for (size_t i = 0; i < khr.size(); ++i) {
        std::snprintf(word, sizeof word, "0x%08x,", khr[i]);
        out << word << ((i % 8 == 7 || i + 1 == khr.size()) ? "\n" : "");
      }
      out << "};\n";
      if (!out) throw std::runtime_error(std::string("cannot write ") + tmp);
    }
    std::filesystem::rename(tmp, argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ember_spirv_khr: %s: %s\n", argv[1], e.what());
    return 1;
  }
  return 0;
}
