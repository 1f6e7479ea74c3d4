// Helpers for the io tests: temp directories, raw file bytes built by hand, error matching.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "ember/backends/cpu/cpu.hpp"
#include "ember/io/safetensors.hpp"
#include "ember/tensor/tensor.hpp"

namespace ember::io::test {

namespace fs = std::filesystem;

/// A fresh directory per test, removed at the end.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::temp_directory_path() / std::string("ember_io_")
                                            .append(info->test_suite_name())
                                            .append("_")
                                            .append(info->name())
                                            .append("_")
                                            .append(std::to_string(::getpid()));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const fs::path& path() const { return path_; }
  /// Names of the entries in the directory (temp files start with a dot).
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path_)) out.push_back(e.path().filename());
    return out;
  }

 private:
  fs::path path_;
};

/// A safetensors file from its parts: 8-byte little-endian length, header, data.
inline std::vector<unsigned char> st_bytes(const std::string& header, const std::string& data,
                                           uint64_t length = UINT64_MAX) {
  if (length == UINT64_MAX) length = header.size();
  std::vector<unsigned char> out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<unsigned char>(length >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

inline void write_file(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

inline std::vector<unsigned char> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// Runs `f`, expecting an ember::Error whose message holds every piece of `needles`.
template <class F>
void expect_error(F&& f, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "expected an ember::Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& n : needles) {
      EXPECT_NE(msg.find(n), std::string::npos) << "message lacks \"" << n << "\": " << msg;
    }
  }
}

}  // namespace ember::io::test
