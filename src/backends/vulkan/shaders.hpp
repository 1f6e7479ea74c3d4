// The compute shaders, compiled from shaders/*.comp to SPIR-V at build time (glslangValidator,
// CMakeLists.txt) and embedded as arrays of 32-bit words.
#pragma once

#include <cstdint>
#include <span>

#include "shaders/adam.spv.h"
#include "shaders/argreduce_any.spv.h"
#include "shaders/argreduce_f32.spv.h"
#include "shaders/argreduce_pair.spv.h"
#include "shaders/binary32.spv.h"
#include "shaders/binary64.spv.h"
#include "shaders/binary_any.spv.h"
#include "shaders/binary_pair.spv.h"
#include "shaders/compare32.spv.h"
#include "shaders/compare64.spv.h"
#include "shaders/compare_any.spv.h"
#include "shaders/compare_pair.spv.h"
#include "shaders/conv_any.spv.h"
#include "shaders/conv_coop.spv.h"
#include "shaders/conv_coop_emulated.spv.h"
#include "shaders/conv_coop_khr.spv.h"
#include "shaders/conv_f32.spv.h"
#include "shaders/conv_lanes.spv.h"
#include "shaders/conv_tiled.spv.h"
#include "shaders/conv_tiled_plain.spv.h"
#include "shaders/convert.spv.h"
#include "shaders/convert64.spv.h"
#include "shaders/convert_pair.spv.h"
#include "shaders/copy32.spv.h"
#include "shaders/copy64.spv.h"
#include "shaders/copy_pair.spv.h"
#include "shaders/fill.spv.h"
#include "shaders/index32.spv.h"
#include "shaders/index64.spv.h"
#include "shaders/index_any.spv.h"
#include "shaders/index_pair.spv.h"
#include "shaders/matmul_any.spv.h"
#include "shaders/matmul_coop.spv.h"
#include "shaders/matmul_coop_emulated.spv.h"
#include "shaders/matmul_coop_khr.spv.h"
#include "shaders/matmul_lanes.spv.h"
#include "shaders/matmul_lanes_i32.spv.h"
#include "shaders/matmul_tiled.spv.h"
#include "shaders/nonzero.spv.h"
#include "shaders/nonzero_bool.spv.h"
#include "shaders/pool_any.spv.h"
#include "shaders/pool_cpu.spv.h"
#include "shaders/pool_f32.spv.h"
#include "shaders/range.spv.h"
#include "shaders/range_pair.spv.h"
#include "shaders/reduce.spv.h"
#include "shaders/reduce_f32.spv.h"
#include "shaders/reduce_pair.spv.h"
#include "shaders/scan_any.spv.h"
#include "shaders/scan_f32.spv.h"
#include "shaders/scan_pair.spv.h"
#include "shaders/sort.spv.h"
#include "shaders/sort_pair.spv.h"
#include "shaders/sum_parts.spv.h"
#include "shaders/sum_parts_f16.spv.h"
#include "shaders/svd.spv.h"
#include "shaders/unary_any.spv.h"
#include "shaders/unary_f32.spv.h"
#include "shaders/where32.spv.h"
#include "shaders/where64.spv.h"
#include "shaders/where_any.spv.h"
#include "shaders/where_pair.spv.h"

namespace ember::vulkan::shaders {

inline constexpr std::span<const uint32_t> adam{adam_spv};
inline constexpr std::span<const uint32_t> argreduce_any{argreduce_any_spv};
inline constexpr std::span<const uint32_t> argreduce_f32{argreduce_f32_spv};
inline constexpr std::span<const uint32_t> argreduce_pair{argreduce_pair_spv};
inline constexpr std::span<const uint32_t> binary32{binary32_spv};
inline constexpr std::span<const uint32_t> binary64{binary64_spv};
inline constexpr std::span<const uint32_t> binary_pair{binary_pair_spv};
inline constexpr std::span<const uint32_t> binary_any{binary_any_spv};
inline constexpr std::span<const uint32_t> compare32{compare32_spv};
inline constexpr std::span<const uint32_t> compare64{compare64_spv};
inline constexpr std::span<const uint32_t> compare_pair{compare_pair_spv};
inline constexpr std::span<const uint32_t> compare_any{compare_any_spv};
inline constexpr std::span<const uint32_t> conv_any{conv_any_spv};
inline constexpr std::span<const uint32_t> conv_f32{conv_f32_spv};
inline constexpr std::span<const uint32_t> convert{convert_spv};
inline constexpr std::span<const uint32_t> convert64{convert64_spv};
inline constexpr std::span<const uint32_t> convert_pair{convert_pair_spv};
inline constexpr std::span<const uint32_t> copy32{copy32_spv};
inline constexpr std::span<const uint32_t> copy64{copy64_spv};
inline constexpr std::span<const uint32_t> copy_pair{copy_pair_spv};
inline constexpr std::span<const uint32_t> fill{fill_spv};
inline constexpr std::span<const uint32_t> index32{index32_spv};
inline constexpr std::span<const uint32_t> index64{index64_spv};
inline constexpr std::span<const uint32_t> index_pair{index_pair_spv};
inline constexpr std::span<const uint32_t> index_any{index_any_spv};
inline constexpr std::span<const uint32_t> conv_coop{conv_coop_spv};
inline constexpr std::span<const uint32_t> conv_coop_emulated{conv_coop_emulated_spv};
inline constexpr std::span<const uint32_t> conv_coop_khr{conv_coop_khr_spv};
inline constexpr std::span<const uint32_t> conv_tiled{conv_tiled_spv};
inline constexpr std::span<const uint32_t> conv_lanes{conv_lanes_spv};
inline constexpr std::span<const uint32_t> conv_tiled_plain{conv_tiled_plain_spv};
inline constexpr std::span<const uint32_t> matmul_any{matmul_any_spv};
inline constexpr std::span<const uint32_t> matmul_coop{matmul_coop_spv};
inline constexpr std::span<const uint32_t> matmul_coop_emulated{matmul_coop_emulated_spv};
inline constexpr std::span<const uint32_t> matmul_coop_khr{matmul_coop_khr_spv};
inline constexpr std::span<const uint32_t> matmul_tiled{matmul_tiled_spv};
inline constexpr std::span<const uint32_t> matmul_lanes{matmul_lanes_spv};
inline constexpr std::span<const uint32_t> matmul_lanes_i32{matmul_lanes_i32_spv};
inline constexpr std::span<const uint32_t> nonzero{nonzero_spv};
inline constexpr std::span<const uint32_t> nonzero_bool{nonzero_bool_spv};
inline constexpr std::span<const uint32_t> pool_any{pool_any_spv};
inline constexpr std::span<const uint32_t> pool_cpu{pool_cpu_spv};
inline constexpr std::span<const uint32_t> pool_f32{pool_f32_spv};
inline constexpr std::span<const uint32_t> range{range_spv};
inline constexpr std::span<const uint32_t> range_pair{range_pair_spv};
inline constexpr std::span<const uint32_t> reduce{reduce_spv};
inline constexpr std::span<const uint32_t> reduce_pair{reduce_pair_spv};
inline constexpr std::span<const uint32_t> reduce_f32{reduce_f32_spv};
inline constexpr std::span<const uint32_t> scan_any{scan_any_spv};
inline constexpr std::span<const uint32_t> scan_f32{scan_f32_spv};
inline constexpr std::span<const uint32_t> scan_pair{scan_pair_spv};
inline constexpr std::span<const uint32_t> sort{sort_spv};
inline constexpr std::span<const uint32_t> sort_pair{sort_pair_spv};
inline constexpr std::span<const uint32_t> sum_parts{sum_parts_spv};
inline constexpr std::span<const uint32_t> sum_parts_f16{sum_parts_f16_spv};
inline constexpr std::span<const uint32_t> svd{svd_spv};
inline constexpr std::span<const uint32_t> unary_any{unary_any_spv};
inline constexpr std::span<const uint32_t> unary_f32{unary_f32_spv};
inline constexpr std::span<const uint32_t> where32{where32_spv};
inline constexpr std::span<const uint32_t> where64{where64_spv};
inline constexpr std::span<const uint32_t> where_pair{where_pair_spv};
inline constexpr std::span<const uint32_t> where_any{where_any_spv};

}  // namespace ember::vulkan::shaders
