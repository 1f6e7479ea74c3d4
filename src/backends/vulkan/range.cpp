// Range checks queued with the work (Backend::check_range) and the synchronisation that reports
// them, as the Cuda backend's: each check's kernel (range.comp) fills a slot with the extremes of
// the bad values it saw; synchronize reads the used slots back with one copy and returns the
// first failure in queue order, as the Cpu would have raised it at once.
#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "binding.hpp"
#include "shaders.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {
namespace {

constexpr uint64_t kSign = uint64_t{1} << 63;
constexpr size_t kSlotBytes = 4 * sizeof(uint64_t);  // min key, max key, flags, integral

// range.comp's type codes; -1: not checked on Vulkan (the 16-bit floats).
int range_type(DType t) {
  switch (t) {
    case DType::f32:
      return 0;
    case DType::i32:
      return 1;
    case DType::f64:
      return 2;
    case DType::i64:
      return 3;
    case DType::u8:
      return 4;
    case DType::i8:
    case DType::boolean:
      return 5;
    default:
      return -1;
  }
}

// A float key's value: a double's, or (range.comp's PAIR variant) a float32's in the high word.
double float_of_key(uint64_t key, bool float32) {
  if (float32) {
    const auto k = static_cast<uint32_t>(key >> 32);
    const uint32_t u = (k & 0x80000000u) != 0 ? (k & 0x7fffffffu) : ~k;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  const uint64_t u = (key & kSign) != 0 ? (key & ~kSign) : ~key;
  double v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

// A float32's order-preserving key, -0 as +0 (range.comp's PAIR variant).
uint32_t float_key(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if (u == 0x80000000u) u = 0;
  return (u & 0x80000000u) != 0 ? ~u : (u | 0x80000000u);
}

// x < lo, for every float x, iff x < lo rounded up to a float (and x > hi iff x > hi rounded
// down); past float's range, to its largest finite value or to infinity.
float rounded_up(double v) {
  constexpr float kMax = std::numeric_limits<float>::max();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  if (v > kMax) return kInf;
  if (v < -kMax) return std::isinf(v) ? -kInf : -kMax;
  const float f = static_cast<float>(v);
  return static_cast<double>(f) < v ? std::nextafter(f, kInf) : f;
}

// range.comp's PAIR variant compares integers and float32 as keys: the bounds' keys, so that
// those comparisons agree with the Cpu's in double for every value of the operand's type. A NaN
// bound, as the Cpu's comparison, fails every value.
std::pair<uint64_t, uint64_t> pair_bounds(double lo, double hi, bool float32) {
  if (float32) {
    if (std::isnan(lo) || std::isnan(hi)) return {0xffffffffu, 0};
    return {float_key(rounded_up(lo)), float_key(-rounded_up(-hi))};
  }
  constexpr double kTop = 9223372036854775808.0;  // 2^63
  int64_t l = std::numeric_limits<int64_t>::min(), h = std::numeric_limits<int64_t>::max();
  if (!(lo < kTop) || !(hi >= -kTop)) {
    std::swap(l, h);  // no integer inside: lo above hi makes every value outside
  } else {
    if (lo > -kTop) l = static_cast<int64_t>(std::ceil(lo));
    if (hi < kTop) h = static_cast<int64_t>(std::floor(hi));
  }
  return {static_cast<uint64_t>(l) ^ kSign, static_cast<uint64_t>(h) ^ kSign};
}

// The error of a slot whose check failed: NaN when a NaN was seen, else the smallest bad value
// when it is below lo, else the largest (and, for integer operands, that value as the index).
RangeError failure(const uint64_t* slot, const RangeCheck& check) {
  const bool integral = slot[3] == 1, float32 = slot[3] == 2;
  RangeError e;
  e.check = check;
  e.found = true;
  if (slot[2] & 2u) {
    e.value = std::numeric_limits<double>::quiet_NaN();
  } else if (integral) {
    const auto smallest = static_cast<int64_t>(slot[0] ^ kSign);
    e.index =
        static_cast<double>(smallest) < check.lo ? smallest : static_cast<int64_t>(slot[1] ^ kSign);
    e.value = static_cast<double>(e.index);
  } else {
    const double smallest = float_of_key(slot[0], float32);
    e.value = smallest < check.lo ? smallest : float_of_key(slot[1], float32);
  }
  return e;
}

// Waits for the queued work and returns the first failure of the pending checks (one found at an
// earlier drain first), emptying the queue. Called with c.mu held.
RangeError drain(DeviceContext& c) {
  const size_t n = c.range_checks.size();
  RangeError first = std::exchange(c.range_failed, RangeError{});
  std::vector<RangeCheck> checks = std::exchange(c.range_checks, {});
  if (n == 0) {
    c.finish();
    return first;
  }
  const size_t bytes = n * kSlotBytes;
  const uintptr_t s = c.allocate(bytes, true);
  auto [sb, sat] = c.locate(s);
  auto [b, at] = c.locate(c.range_slots);
  c.copy_buffer(b->buffer, at, sb->buffer, sat, bytes);
  c.finish();
  std::vector<uint64_t> slots(n * 4);
  std::memcpy(slots.data(), static_cast<const char*>(sb->mapped) + sat, bytes);
  c.release(s, bytes);
  for (size_t i = 0; i < n && !first.found; ++i) {
    if (slots[4 * i + 2] & 1u) first = failure(&slots[4 * i], checks[i]);
  }
  return first;
}

}  // namespace

RangeError VulkanBackend::check_range(const RawTensor& x, const RangeCheck& check) {
  if (x.numel() == 0) return {};
  const int type = range_type(x.dtype);
  if (type < 0) no_kernel(check.op, x.dtype);
  check_indexable(x, check.op);
  DeviceContext& c = ctx_of(x);
  std::lock_guard lock(c.mu);
  // range.comp compares in double, or in its PAIR variant without float64 (not of float64).
  const bool pair = !c.wide();
  if (pair && x.dtype == DType::f64) check_wide(c, check.op, x.dtype);
  if (c.range_slots == 0) {
    c.range_slots = c.allocate(DeviceContext::kRangeSlots * kSlotBytes, false);
    c.keep(DeviceContext::kRangeSlots * kSlotBytes);
  }
  // Full: wait for the queued checks and keep their first failure for synchronize.
  if (c.range_checks.size() == DeviceContext::kRangeSlots) c.range_failed = drain(c);
  struct {
    uint32_t count, rank, base, type;
    uint32_t slot_at, pad0;
    uint64_t lo, hi;  // doubles' bits, or pair_bounds
    uint32_t shape[kMaxRank];
    int32_t stride[kMaxRank];
  } p{};
  static_assert(sizeof p <= 128, "Vulkan guarantees 128 bytes of push constants");
  const bool bytes = dtype_size(x.dtype) == 1;
  const Bound bx = bytes ? bind_bytes(c, x) : bind(c, x);
  auto [block, at] = c.locate(c.range_slots);
  const size_t slot = c.range_checks.size();
  p.count = static_cast<uint32_t>(x.numel());
  p.rank = static_cast<uint32_t>(x.rank());
  p.base = bx.base;
  p.type = static_cast<uint32_t>(type);
  if (pair) {
    std::tie(p.lo, p.hi) = pair_bounds(check.lo, check.hi, x.dtype == DType::f32);
  } else {
    std::memcpy(&p.lo, &check.lo, sizeof p.lo);
    std::memcpy(&p.hi, &check.hi, sizeof p.hi);
  }
  put_shape(x.shape, p.shape);
  put_strides(x, p.stride);
  // The slots are bound from their own aligned start: slot i is words 4i to 4i + 3.
  const Binding bs[] = {bx.binding, {block->buffer, at, DeviceContext::kRangeSlots * kSlotBytes}};
  p.slot_at = static_cast<uint32_t>(slot * 4);
  c.dispatch(pair ? c.pipeline("range_pair", shaders::range_pair, 2, sizeof p)
                  : c.pipeline("range", shaders::range, 2, sizeof p),
             bs, &p, sizeof p, 1);
  c.range_checks.push_back(check);
  return {};  // queued: a failure comes from synchronize
}

RangeError VulkanBackend::synchronize(Device device) {
  DeviceContext& c = context(device.index);
  std::lock_guard lock(c.mu);
  return drain(c);
}

}  // namespace ember::vulkan
