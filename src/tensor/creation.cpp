// Creation ops: constants, ranges, random draws, host data, copies and casts.
#include <atomic>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "ember/tensor/ops/creation.hpp"
#include "ember/tensor/ops/elementwise.hpp"
#include "ember/tensor/ops/movement.hpp"
#include "internal.hpp"
#include "layout.hpp"
#include "record.hpp"

namespace ember {

using detail::backend_for;
using detail::backend_of;
using detail::make_empty;

Generator& default_generator() {
  static Generator gen;
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

uint64_t Generator::reserve(uint64_t n) {
#if defined(EMBER_NO_THREADS)
  return std::exchange(offset_, offset_ + n);
#else
  return std::atomic_ref<uint64_t>(offset_).fetch_add(n);
#endif
}

DynTensor empty(const Shape& shape, DType dtype, Device device) {
  return make_empty(shape, dtype, device, "empty");
}

namespace {

DynTensor filled(const Shape& shape, const Scalar& value, DType dtype, Device device,
                 const char* op) {
  detail::check_supported(backend_for(device), OpFamily::Fill, dtype, op);
  DynTensor t = make_empty(shape, dtype, device, op);
  backend_of(t).fill(t.raw(), value);
  return t;
}

}  // namespace

DynTensor full(const Shape& shape, const Scalar& value, DType dtype, Device device) {
  return filled(shape, value, dtype, device, "full");
}

DynTensor zeros(const Shape& shape, DType dtype, Device device) {
  return filled(shape, 0, dtype, device, "zeros");
}

DynTensor ones(const Shape& shape, DType dtype, Device device) {
  return filled(shape, 1, dtype, device, "ones");
}

DynTensor arange(const Scalar& start, const Scalar& end, const Scalar& step, DType dtype,
                 Device device) {
  const bool integral =
      start.kind() != KindId::Float && end.kind() != KindId::Float && step.kind() != KindId::Float;
  int64_t n = 0;
  if (integral) {
    const int64_t s = start.to_int(), e = end.to_int(), st = step.to_int();
    EMBER_CHECK(st != 0, "[arange] step must be nonzero");
    EMBER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "[arange] the range [", s, ", ", e,
                ") is inconsistent with step ", st);
    // In uint64 the span and the step's magnitude never overflow; the count must fit int64.
    const uint64_t span = st > 0 ? static_cast<uint64_t>(e) - static_cast<uint64_t>(s)
                                 : static_cast<uint64_t>(s) - static_cast<uint64_t>(e);
    const uint64_t mag = st > 0 ? static_cast<uint64_t>(st) : 0 - static_cast<uint64_t>(st);
    const uint64_t count = span == 0 ? 0 : (span - 1) / mag + 1;
    EMBER_CHECK(count <= static_cast<uint64_t>(INT64_MAX), "[arange] the range [", s, ", ", e,
                ") with step ", st, " has ", count, " elements, more than 2^63 - 1");
    n = static_cast<int64_t>(count);
  } else {
    const double s = start.to_double(), e = end.to_double(), st = step.to_double();
    EMBER_CHECK(st != 0.0, "[arange] step must be nonzero");
    EMBER_CHECK(std::isfinite(s) && std::isfinite(e), "[arange] bounds must be finite, got ", s,
                " and ", e);
    EMBER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "[arange] the range [", s, ", ", e,
                ") is inconsistent with step ", st);
    const double count = std::ceil((e - s) / st);
    // 2^63 is the first double past int64: converting it or more would be undefined.
    EMBER_CHECK(count < 9223372036854775808.0, "[arange] the range [", s, ", ", e, ") with step ",
                st, " has ", count, " elements, more than 2^63 - 1");
    n = static_cast<int64_t>(count);
  }
  detail::check_supported(backend_for(device), OpFamily::Iota, dtype, "arange");
  DynTensor t = make_empty(Shape{n}, dtype, device, "arange");
  backend_of(t).iota(t.raw(), start.to_double(), step.to_double());
  return t;
}

DynTensor linspace(double start, double end, int64_t steps, DType dtype, Device device) {
  EMBER_CHECK(steps >= 0, "[linspace] number of steps must be non-negative, got ", steps);
  // The result is allocated first: a length beyond the allocator's limit fails before the host
  // staging below, which is 8 bytes a point.
  detail::check_copy(backend_for(device), DType::f64, dtype, "linspace");
  DynTensor out = make_empty(Shape{steps}, dtype, device, "linspace");
  return as_op("linspace", [&] {
    // Computed from both ends, as PyTorch does, so the last value is exactly `end`.
    std::vector<double> v(static_cast<size_t>(steps));
    const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
    for (int64_t i = 0; i < steps; ++i) {
      v[static_cast<size_t>(i)] = (i < steps / 2 || steps == 1)
                                      ? start + step * static_cast<double>(i)
                                      : end - step * static_cast<double>(steps - 1 - i);
    }
    const DynTensor f64 = from_data(TensorData::from(v, Shape{steps}), device);
    backend_of(out).copy(f64.raw(), out.raw());
    return out;
  });
}

DynTensor eye(int64_t n, int64_t m, DType dtype, Device device) {
  if (m < 0) m = n;
  EMBER_CHECK(n >= 0, "[eye] n must be non-negative, got ", n);
  DynTensor t = filled(Shape{n, m}, 0, dtype, device, "eye");
  const int64_t diag = std::min(n, m);
  if (diag > 0) {
    backend_of(t).fill(t.raw().view(Shape{diag}, Strides{m + 1}, t.raw().offset), 1);
  }
  return t;
}

namespace {

DynTensor draw(RandomOp op, const char* name, double a, double b, const Shape& shape, DType dtype,
               Device device, Generator* gen) {
  // A backend without a Philox kernel of its own gets the Cpu's draw, copied: the same numbers
  // for a seed on every device.
  if (!backend_for(device).supports(OpFamily::Random, dtype) && !device.is_cpu()) {
    return to_device(draw(op, name, a, b, shape, dtype, Device::cpu(), gen), device);
  }
  detail::check_supported(backend_for(device), OpFamily::Random, dtype, name);
  // Refused before the generator moves on: a capture that fails here leaves the random stream
  // as it was, so the step run eagerly instead draws what it would have drawn.
  EMBER_CHECK(!backend_for(device).capturing(device), "[", name,
              "] cannot run inside a DeviceGraph capture on ", device,
              ": a replay would draw the same numbers again (make random tensors outside the "
              "capture and pass them in)");
  DynTensor t = make_empty(shape, dtype, device, name);
  Generator& g = gen ? *gen : default_generator();
  RandomParams p;
  p.a = a;
  p.b = b;
  p.seed = g.seed();
  p.offset = g.reserve(static_cast<uint64_t>(t.numel()));
  backend_of(t).random(op, p, t.raw());
  return t;
}

void check_float(DType dtype, const char* op) {
  EMBER_CHECK(is_floating(dtype), "[", op, "] needs a floating dtype, got ", dtype);
}

}  // namespace

DynTensor rand(const Shape& shape, DType dtype, Device device, Generator* gen, double low,
               double high) {
  check_float(dtype, "rand");
  EMBER_CHECK(low <= high, "[rand] low must not exceed high, got [", low, ", ", high, ")");
  return draw(RandomOp::Uniform, "rand", low, high, shape, dtype, device, gen);
}

DynTensor randn(const Shape& shape, DType dtype, Device device, Generator* gen, double mean,
                double std) {
  check_float(dtype, "randn");
  EMBER_CHECK(std >= 0.0, "[randn] std must be non-negative, got ", std);
  return draw(RandomOp::Normal, "randn", mean, std, shape, dtype, device, gen);
}

DynTensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype, Device device,
                  Generator* gen) {
  EMBER_CHECK(low < high, "[randint] low must be less than high, got [", low, ", ", high, ")");
  EMBER_CHECK(dtype != DType::boolean, "[randint] cannot draw into ", dtype);
  return draw(RandomOp::RandInt, "randint", static_cast<double>(low), static_cast<double>(high),
              shape, dtype, device, gen);
}

DynTensor bernoulli(const Shape& shape, double p, DType dtype, Device device, Generator* gen) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "[bernoulli] p must be in [0, 1], got ", p);
  return draw(RandomOp::Bernoulli, "bernoulli", p, 0.0, shape, dtype, device, gen);
}

DynTensor bernoulli(const DynTensor& probs, Generator* gen) {
  detail::check_defined(probs, "bernoulli");
  check_float(probs.dtype(), "bernoulli");
  const DynTensor u = rand(probs.shape(), probs.dtype(), probs.device(), gen);
  return cast(lt(u, probs), probs.dtype());
}

DynTensor empty_like(const DynTensor& x) { return empty(x.shape(), x.dtype(), x.device()); }
DynTensor zeros_like(const DynTensor& x) { return zeros(x.shape(), x.dtype(), x.device()); }
DynTensor ones_like(const DynTensor& x) { return ones(x.shape(), x.dtype(), x.device()); }
DynTensor full_like(const DynTensor& x, const Scalar& value) {
  return full(x.shape(), value, x.dtype(), x.device());
}
DynTensor rand_like(const DynTensor& x, Generator* gen) {
  return rand(x.shape(), x.dtype(), x.device(), gen);
}
DynTensor randn_like(const DynTensor& x, Generator* gen) {
  return randn(x.shape(), x.dtype(), x.device(), gen);
}

DynTensor from_data(const TensorData& data, Device device) {
  const size_t expected = checked_nbytes(data.shape, dtype_size(data.dtype), "from_data");
  EMBER_CHECK(data.bytes.size() == expected, "[from_data] shape ", data.shape, " of ", data.dtype,
              " needs ", expected, " bytes, got ", data.bytes.size());
  DynTensor t = make_empty(data.shape, data.dtype, device, "from_data");
  backend_of(t).write_from_host(data.bytes.data(), t.raw());
  return t;
}

DynTensor clone(const DynTensor& x) {
  detail::check_defined(x, "clone");
  detail::check_copy(backend_of(x), x.dtype(), x.dtype(), "clone");
  DynTensor t = make_empty(x.shape(), x.dtype(), x.device(), "clone");
  backend_of(t).copy(x.raw(), t.raw());
  detail::record(ops::clone, {&x}, t);
  return t;
}

DynTensor cast(const DynTensor& x, DType dtype) {
  detail::check_defined(x, "cast");
  if (x.dtype() == dtype) return x;
  detail::check_copy(backend_of(x), x.dtype(), dtype, "cast");
  // A dense layout is kept (PyTorch's preserve_format): cast in memory order.
  const auto order = detail::MemoryOrder::of(x.raw());
  DynTensor t = order.empty(x.shape(), dtype, x.device(), "cast");
  backend_of(t).copy(order.apply(x.raw()), order.apply(t.raw()));
  detail::record(ops::cast, {&x}, t);
  return t;
}

DynTensor to_device(const DynTensor& x, Device device) {
  detail::check_defined(x, "to");
  if (x.device() == device) return x;
  Backend& src_backend = backend_of(x);
  Backend& dst_backend = backend_for(device);  // fails clearly if not built
  DynTensor t = make_empty(x.shape(), x.dtype(), device, "to");
  // One copy through whichever side is host memory; a host buffer only between two devices.
  // Transfers take contiguous tensors (a strided view is packed on its own device first).
  const DynTensor c = contiguous(DynTensor(x.raw()));  // untracked: only its bytes are used
  if (dst_backend.host_memory()) {
    detail::host_sync(x.device());  // the host reads x's device
    src_backend.read_to_host(c.raw(), t.raw().data());
  } else if (src_backend.host_memory()) {
    dst_backend.write_from_host(c.raw().data(), t.raw());
  } else {
    dst_backend.write_from_host(c.to_data().bytes.data(), t.raw());
  }
  detail::record(ops::to_device, {&x}, t);
  return t;
}

}  // namespace ember
