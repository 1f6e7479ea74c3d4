// The build's NV-to-KHR cooperative-matrix rewrite (src/backends/vulkan/spirv_khr.hpp) on the
// shaders it serves: what the KHR twins must hold (no NV instruction left, each matrix type's
// use, layouts for the loads and stores), that the embedded twins are its output, and its errors
// on modules it cannot follow. No device needed: Debian's SPIR-V tools predate the KHR extension,
// so these checks, and the GPU runs of docs/VULKAN.md, are its validation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/error.hpp"
#include "shaders/conv_coop.spv.h"
#include "shaders/conv_coop_khr.spv.h"
#include "shaders/fill.spv.h"
#include "shaders/matmul_coop.spv.h"
#include "shaders/matmul_coop_khr.spv.h"
#include "spirv_khr.hpp"

namespace ember::vulkan {
namespace {

constexpr uint32_t kOpConstant = 43, kOpCapability = 17;
constexpr uint32_t kTypeNV = 5358, kLoadNV = 5359, kMulAddNV = 5361;
constexpr uint32_t kTypeKHR = 4456, kLoadKHR = 4457, kStoreKHR = 4458, kMulAddKHR = 4459;

struct Instruction {
  size_t at;  // its first word
  uint32_t op;
  std::vector<uint32_t> operands;
};

std::vector<Instruction> walk(std::span<const uint32_t> m) {
  std::vector<Instruction> out;
  for (size_t at = 5; at < m.size(); at += m[at] >> 16) {
    const uint32_t count = m[at] >> 16;
    out.push_back({at, m[at] & 0xffffu, {m.begin() + at + 1, m.begin() + at + count}});
  }
  return out;
}

std::vector<uint32_t> rewrite(std::span<const uint32_t> m) { return cooperative_nv_to_khr(m); }

TEST(SpirvKhr, TheTensorCoreShadersBecomeKhrWithAUsePerMatrixType) {
  for (const auto& [nv, khr] : {std::pair{std::span<const uint32_t>(matmul_coop_spv),
                                          std::span<const uint32_t>(matmul_coop_khr_spv)},
                                std::pair{std::span<const uint32_t>(conv_coop_spv),
                                          std::span<const uint32_t>(conv_coop_khr_spv)}}) {
    const std::vector<uint32_t> out = rewrite(nv);
    // The embedded twin is this rewrite of the embedded NV shader (the same source, compiled
    // once for each by the build).
    EXPECT_EQ(out, std::vector<uint32_t>(khr.begin(), khr.end()));
    std::map<uint32_t, uint32_t> constants;  // id -> value (32-bit)
    std::map<uint32_t, uint32_t> use_of;     // matrix type -> its use
    std::map<uint32_t, uint32_t> type_of;    // loaded fragment -> its type
    int mul_adds = 0, loads = 0, stores = 0;
    bool capability = false;
    for (const Instruction& in : walk(out)) {
      EXPECT_TRUE(in.op < 5357 || in.op > 5362) << "an NV opcode " << in.op << " at " << in.at;
      if (in.op == kOpCapability) {
        EXPECT_NE(in.operands[0], 5357u) << "NV's capability left";
        capability |= in.operands[0] == 6022;
      }
      if (in.op == kOpConstant && in.operands.size() == 3)
        constants[in.operands[1]] = in.operands[2];
      if (in.op == kTypeKHR) {
        ASSERT_EQ(in.operands.size(), 6u);
        ASSERT_TRUE(constants.contains(in.operands[5])) << "a use that is no constant";
        use_of[in.operands[0]] = constants[in.operands[5]];
      }
      if (in.op == kLoadKHR) {
        ++loads;
        EXPECT_EQ(constants.at(in.operands[3]), 0u) << "the shaders load row-major";
        type_of[in.operands[1]] = in.operands[0];
      }
      if (in.op == kStoreKHR) {
        ++stores;
        EXPECT_EQ(constants.at(in.operands[2]), 0u) << "and store row-major";
      }
      if (in.op == kMulAddKHR) {
        ++mul_adds;
        EXPECT_EQ(use_of.at(in.operands[0]), 2u) << "the result is an accumulator";
      }
    }
    EXPECT_TRUE(capability);
    EXPECT_EQ(mul_adds, 1);  // gemm_coop.glsl's mul_add, a function
    EXPECT_EQ(stores, 1);    // to_scratch
    EXPECT_EQ(loads, 2);     // load_a, load_b
    std::map<uint32_t, int> uses;
    for (const auto& [type, use] : use_of) ++uses[use];
    EXPECT_EQ(uses, (std::map<uint32_t, int>{{0, 1}, {1, 1}, {2, 1}}));  // A, B, accumulator
    std::vector<uint32_t> loaded;
    for (const auto& [value, type] : type_of) loaded.push_back(use_of.at(type));
    std::sort(loaded.begin(), loaded.end());
    EXPECT_EQ(loaded, (std::vector<uint32_t>{0, 1}));  // an A and a B
  }
}

TEST(SpirvKhr, AModuleWithoutNvMatricesIsUnchanged) {
  const std::span<const uint32_t> fill(fill_spv);
  EXPECT_EQ(rewrite(fill), std::vector<uint32_t>(fill.begin(), fill.end()));
}

// The NV matmul shader, edited: `edit` changes the words of the first instruction of opcode `op`.
template <typename Edit>
std::vector<uint32_t> edited(uint32_t op, Edit edit) {
  std::vector<uint32_t> m(std::begin(matmul_coop_spv), std::end(matmul_coop_spv));
  for (const Instruction& in : walk(m)) {
    if (in.op == op) {
      edit(std::span<uint32_t>(m).subspan(in.at + 1, in.operands.size()));
      return m;
    }
  }
  ADD_FAILURE() << "no opcode " << op;
  return m;
}

void expect_error(const std::vector<uint32_t>& m, const std::string& says) {
  try {
    rewrite(m);
    ADD_FAILURE() << "no error; expected one saying " << says;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
  }
}

TEST(SpirvKhr, ModulesItCannotFollowAreErrors) {
  expect_error({1, 2, 3}, "not a SPIR-V module: 3 words");
  std::vector<uint32_t> cut(std::begin(matmul_coop_spv), std::end(matmul_coop_spv));
  cut.back() = (2u << 16) | (cut.back() & 0xffffu);  // the last instruction claims 2 words
  expect_error(cut, "claims");
  // One fragment type for A and B (KHR needs them apart): the multiply-add given A twice.
  expect_error(edited(kMulAddNV, [](std::span<uint32_t> w) { w[3] = w[2]; }),
               "is used as A and as B");
  // A multiply-add whose operand comes from no instruction the rewrite follows (here a type).
  uint32_t type = 0;
  for (const Instruction& in : walk(std::span<const uint32_t>(matmul_coop_spv))) {
    if (in.op == kTypeNV && type == 0) type = in.operands[0];
  }
  expect_error(edited(kMulAddNV, [&](std::span<uint32_t> w) { w[2] = type; }),
               "comes from an instruction the rewrite does not follow");
  // A load whose column-major operand is no boolean constant.
  expect_error(edited(kLoadNV, [](std::span<uint32_t> w) { w[4] = w[2]; }),
               "is not a constant true or false");
}

}  // namespace
}  // namespace ember::vulkan
