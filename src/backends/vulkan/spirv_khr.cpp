// SPV_NV_cooperative_matrix to SPV_KHR_cooperative_matrix, instruction by instruction. The two
// extensions differ in four ways: the KHR matrix type names its use (A, B or accumulator),
// loads and stores take a layout constant (RowMajorKHR 0, ColumnMajorKHR 1) before an optional
// stride where NV took a stride then a boolean, the opcodes, and the capability's and the
// extension's names. Everything else (scopes, sizes, memory operands) is encoded alike.
#include "spirv_khr.hpp"

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "ember/core/error.hpp"

namespace ember::vulkan {
namespace {

constexpr uint32_t kMagic = 0x07230203;
constexpr uint32_t kOpExtension = 10, kOpCapability = 17, kOpTypeInt = 21, kOpConstantTrue = 41,
                   kOpConstantFalse = 42, kOpConstant = 43;
constexpr uint32_t kCapabilityNV = 5357, kCapabilityKHR = 6022;
constexpr uint32_t kTypeNV = 5358, kLoadNV = 5359, kStoreNV = 5360, kMulAddNV = 5361,
                   kLengthNV = 5362;
constexpr uint32_t kTypeKHR = 4456, kLoadKHR = 4457, kStoreKHR = 4458, kMulAddKHR = 4459,
                   kLengthKHR = 4460;
constexpr std::string_view kExtensionNV = "SPV_NV_cooperative_matrix";
constexpr std::string_view kExtensionKHR = "SPV_KHR_cooperative_matrix";

// Instructions whose operands start with a result type and a result: those through which a
// cooperative matrix value can pass between its making and a multiply-add.
const std::set<uint32_t> kTyped = {1,   44,  46,  51,  55,  57,  61,      80,
                                   81,  82,  83,  113, 114, 115, 127,     129,
                                   131, 133, 136, 143, 169, 245, kLoadNV, kMulAddNV};

enum Use : uint32_t { kUseA = 0, kUseB = 1, kUseAccumulator = 2 };
constexpr const char* kUseNames[] = {"A", "B", "accumulator"};

// An instruction: its words, the first holding its word count and opcode.
struct Instruction {
  std::span<const uint32_t> words;
  uint32_t op() const { return words[0] & 0xffffu; }
  uint32_t operand(size_t i) const { return words[1 + i]; }
};

std::vector<Instruction> split(std::span<const uint32_t> spirv) {
  EMBER_CHECK(spirv.size() >= 5 && spirv[0] == kMagic,
              "[spirv_khr] not a SPIR-V module: ", spirv.size(), " words",
              spirv.empty() ? "" : ", the first not 0x07230203");
  std::vector<Instruction> out;
  for (size_t at = 5; at < spirv.size();) {
    const uint32_t count = spirv[at] >> 16;
    EMBER_CHECK(count > 0 && at + count <= spirv.size(), "[spirv_khr] the instruction at word ", at,
                " (opcode ", spirv[at] & 0xffffu, ") claims ", count, " words; ", spirv.size() - at,
                " remain");
    out.push_back(Instruction{spirv.subspan(at, count)});
    at += count;
  }
  return out;
}

std::string literal_string(const Instruction& in) {
  std::string s;
  for (size_t i = 1; i < in.words.size(); ++i) {
    for (int b = 0; b < 4; ++b) {
      const char c = static_cast<char>((in.words[i] >> (8 * b)) & 0xffu);
      if (c == '\0') return s;
      s += c;
    }
  }
  return s;
}

void emit(std::vector<uint32_t>& out, uint32_t op, std::initializer_list<uint32_t> operands,
          std::span<const uint32_t> rest = {}) {
  out.push_back(static_cast<uint32_t>((1 + operands.size() + rest.size()) << 16) | op);
  out.insert(out.end(), operands.begin(), operands.end());
  out.insert(out.end(), rest.begin(), rest.end());
}

void emit_extension(std::vector<uint32_t>& out, std::string_view name) {
  std::vector<uint32_t> words((name.size() + 4) / 4, 0u);  // NUL-terminated, zero-padded
  for (size_t i = 0; i < name.size(); ++i) {
    words[i / 4] |= static_cast<uint32_t>(static_cast<unsigned char>(name[i])) << (8 * (i % 4));
  }
  emit(out, kOpExtension, {}, words);
}

// The use of each matrix type, from the multiply-adds' operands.
std::map<uint32_t, Use> matrix_uses(const std::vector<Instruction>& module) {
  std::map<uint32_t, uint32_t> type_of;  // result -> its type
  for (const Instruction& in : module) {
    if (kTyped.contains(in.op()) && in.words.size() >= 3) type_of[in.operand(1)] = in.operand(0);
  }
  std::map<uint32_t, Use> uses;
  const auto use = [&](uint32_t type, Use u, uint32_t mul_add) {
    const auto [it, fresh] = uses.emplace(type, u);
    EMBER_CHECK(fresh || it->second == u, "[spirv_khr] matrix type %", type, " is used as ",
                kUseNames[it->second], " and as ", kUseNames[u], " (multiply-add %", mul_add,
                "); KHR needs a type per use: declare them apart (e.g. a size by a "
                "specialisation constant)");
  };
  for (const Instruction& in : module) {
    if (in.op() != kMulAddNV) continue;
    EMBER_CHECK(in.words.size() == 6, "[spirv_khr] multiply-add of ", in.words.size(),
                " words; expected 6");
    const uint32_t result = in.operand(1);
    use(in.operand(0), kUseAccumulator, result);
    constexpr std::pair<int, Use> kOperands[] = {{2, kUseA}, {3, kUseB}, {4, kUseAccumulator}};
    for (const auto& [i, u] : kOperands) {
      const auto t = type_of.find(in.operand(i));
      EMBER_CHECK(t != type_of.end(), "[spirv_khr] multiply-add %", result, "'s operand %",
                  in.operand(i), " comes from an instruction the rewrite does not follow");
      use(t->second, u, result);
    }
  }
  return uses;
}

}  // namespace

std::vector<uint32_t> cooperative_nv_to_khr(std::span<const uint32_t> spirv) {
  const std::vector<Instruction> module = split(spirv);
  uint32_t uint_type = 0;
  std::map<uint32_t, bool> booleans;  // constant true / false
  bool nv = false;
  for (const Instruction& in : module) {
    if (in.op() == kOpCapability && in.words.size() == 2 && in.operand(0) == kCapabilityNV) {
      nv = true;
    } else if (in.op() == kOpTypeInt && in.words.size() == 4 && in.operand(1) == 32 &&
               in.operand(2) == 0) {
      uint_type = in.operand(0);
    } else if ((in.op() == kOpConstantTrue || in.op() == kOpConstantFalse) &&
               in.words.size() == 3) {
      booleans[in.operand(1)] = in.op() == kOpConstantTrue;
    }
  }
  if (!nv) return {spirv.begin(), spirv.end()};
  EMBER_CHECK(uint_type != 0,
              "[spirv_khr] the module declares no 32-bit unsigned integer type "
              "for the KHR use and layout constants");
  const std::map<uint32_t, Use> uses = matrix_uses(module);

  // Three new constants, uint 0, 1 and 2: the uses A, B, accumulator, and the layouts row-major
  // (0) and column-major (1).
  std::vector<uint32_t> out(spirv.begin(), spirv.begin() + 5);
  const uint32_t constant0 = out[3];
  out[3] += 3;  // the id bound
  const auto layout = [&](uint32_t column_major, const char* what) {
    const auto b = booleans.find(column_major);
    EMBER_CHECK(b != booleans.end(), "[spirv_khr] a ", what, "'s column-major operand %",
                column_major, " is not a constant true or false");
    return constant0 + (b->second ? 1u : 0u);
  };
  bool declared = false;
  for (const Instruction& in : module) {
    const std::span<const uint32_t> ops = in.words.subspan(1);
    switch (in.op()) {
      case kOpCapability:
        if (ops[0] == kCapabilityNV) {
          emit(out, kOpCapability, {kCapabilityKHR});
          continue;
        }
        break;
      case kOpExtension:
        if (literal_string(in) == kExtensionNV) {
          emit_extension(out, kExtensionKHR);
          continue;
        }
        break;
      case kTypeNV: {
        EMBER_CHECK(ops.size() == 5, "[spirv_khr] matrix type of ", in.words.size(),
                    " words; expected 6");
        if (!declared) {  // before the first matrix type: after the types its sizes use
          for (uint32_t v = 0; v < 3; ++v) emit(out, kOpConstant, {uint_type, constant0 + v, v});
          declared = true;
        }
        const auto u = uses.find(ops[0]);
        const uint32_t use = u == uses.end() ? kUseAccumulator : u->second;
        emit(out, kTypeKHR, {ops[0], ops[1], ops[2], ops[3], ops[4], constant0 + use});
        continue;
      }
      case kLoadNV:  // result type, result, pointer, stride, column-major [, memory access]
        EMBER_CHECK(ops.size() >= 5, "[spirv_khr] matrix load of ", in.words.size(), " words");
        emit(out, kLoadKHR, {ops[0], ops[1], ops[2], layout(ops[4], "load"), ops[3]},
             ops.subspan(5));
        continue;
      case kStoreNV:  // pointer, object, stride, column-major [, memory access]
        EMBER_CHECK(ops.size() >= 4, "[spirv_khr] matrix store of ", in.words.size(), " words");
        emit(out, kStoreKHR, {ops[0], ops[1], layout(ops[3], "store"), ops[2]}, ops.subspan(4));
        continue;
      case kMulAddNV:
        emit(out, kMulAddKHR, {}, ops);
        continue;
      case kLengthNV:
        emit(out, kLengthKHR, {}, ops);
        continue;
      default:
        break;
    }
    out.insert(out.end(), in.words.begin(), in.words.end());
  }
  return out;
}

}  // namespace ember::vulkan
