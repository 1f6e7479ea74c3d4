// linalg.svd of float32 or float64 matrices: the Cpu's one-sided Jacobi (core/svd_jacobi.hpp,
// backends/cpu/linalg.cpp) in double, a workgroup per matrix. The rotations of one round-robin
// step touch disjoint column pairs, so the invocations take a pair each; each sums its dot
// products over the rows in the Cpu's order, so the results agree with the Cpu's to rounding,
// signs included. A wide matrix is decomposed as its transpose (the rotated columns are the
// short side). Scratch per matrix (doubles): the columns W, the rotations V, the long side's
// vectors, the squared norms, the order of the singular values and how many are not zero.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "elements.glsl"
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(std430, set = 0, binding = 1) coherent buffer Scratch { double w[]; };  // shared by the workgroup
layout(std430, set = 0, binding = 2) buffer S { uint s_out[]; };
layout(std430, set = 0, binding = 3) buffer U { uint u_out[]; };
layout(std430, set = 0, binding = 4) buffer Vh { uint vh_out[]; };
layout(push_constant) uniform Params {
  uint batch, m, n, type;  // type: float32 or float64 (convert_code)
  uint ku, kv, vectors, a_base;
  uint s_base, u_base, vh_base, mode;  // mode 0: values and the valid vectors; 1: the completion;
                                       // 2: the vectors out (three dispatches: each reads what
                                       // the one before wrote)
} p;

shared double s_max[256];
shared bool s_finite[256];
shared uint s_index[256];
shared bool rotated;
shared uint valid_count;

const int kMaxSweeps = 60;

void put(uint which, uint at, double v) {
  const uint64_t bits = float_bits(p.type, v);
  if (which == 0u) STORE_BITS(s_out, p.type, p.s_base + at, bits);
  if (which == 1u) STORE_BITS(u_out, p.type, p.u_base + at, bits);
  if (which == 2u) STORE_BITS(vh_out, p.type, p.vh_base + at, bits);
}

// The workgroup's sum of every invocation's `v`, by a tree in shared memory (a fixed order).
double workgroup_sum(double v) {
  const uint t = gl_LocalInvocationID.x;
  s_max[t] = v;
  barrier();
  for (uint width = 128u; width > 0u; width >>= 1) {
    if (t < width) s_max[t] += s_max[t + width];
    barrier();
  }
  const double total = s_max[0];
  barrier();
  return total;
}

// Columns [from, to) of the basis at `basis` (rows long, the first `from` orthonormal) made an
// orthonormal completion, as the Cpu's complete(): each starts from the unit vector the others
// cover least (the first on ties) and is orthogonalised twice. The whole workgroup takes part.
void complete(uint basis, uint rows, uint from, uint to) {
  const uint t = gl_LocalInvocationID.x;
  for (uint c = from; c < to; ++c) {
    uint least = 0xffffffffu;
    double least_covered = 0.0;
    for (uint i = t; i < rows; i += 256u) {
      double covered = 0.0;
      for (uint l = 0u; l < c; ++l) covered += w[basis + l * rows + i] * w[basis + l * rows + i];
      if (least == 0xffffffffu || covered < least_covered) {
        least = i;
        least_covered = covered;
      }
    }
    s_max[t] = least_covered;
    s_index[t] = least;
    barrier();
    for (uint width = 128u; width > 0u; width >>= 1) {
      if (t < width) {
        const uint other = s_index[t + width];
        if (other != 0xffffffffu &&
            (s_index[t] == 0xffffffffu || s_max[t + width] < s_max[t] ||
             (s_max[t + width] == s_max[t] && other < s_index[t]))) {
          s_max[t] = s_max[t + width];
          s_index[t] = other;
        }
      }
      barrier();
    }
    const uint pick = s_index[0];
    barrier();
    for (uint i = t; i < rows; i += 256u) w[basis + c * rows + i] = i == pick ? 1.0 : 0.0;
    memoryBarrierBuffer();
    barrier();
    for (int pass = 0; pass < 2; ++pass) {
      for (uint l = 0u; l < c; ++l) {
        double part = 0.0;
        for (uint i = t; i < rows; i += 256u) {
          part += w[basis + l * rows + i] * w[basis + c * rows + i];
        }
        const double d = workgroup_sum(part);
        for (uint i = t; i < rows; i += 256u) w[basis + c * rows + i] -= d * w[basis + l * rows + i];
        memoryBarrierBuffer();
        barrier();
      }
    }
    double part = 0.0;
    for (uint i = t; i < rows; i += 256u) part += w[basis + c * rows + i] * w[basis + c * rows + i];
    const double len = sqrt(workgroup_sum(part));
    for (uint i = t; i < rows; i += 256u) w[basis + c * rows + i] /= len;
    memoryBarrierBuffer();
    barrier();
  }
}

// The long side's vectors (L) and the short side's (V, in the order ORD) into u and vh.
void write_vectors(uint b, uint L, uint V, uint ORD, uint rows, uint k, uint kl, bool tall) {
  const uint t = gl_LocalInvocationID.x;
  for (uint e = t; e < kl * rows; e += 256u) {
    const uint r = e / rows, i = e % rows;
    if (tall) {
      put(1u, b * p.m * p.ku + i * p.ku + r, w[L + e]);
    } else {
      put(2u, b * p.kv * p.n + r * p.n + i, w[L + e]);
    }
  }
  for (uint e = t; e < k * k; e += 256u) {
    const uint r = e / k, i = e % k;
    const double v = w[V + uint(w[ORD + r]) * k + i];
    if (tall) {
      put(2u, b * p.kv * p.n + r * p.n + i, v);
    } else {
      put(1u, b * p.m * p.ku + i * p.ku + r, v);
    }
  }
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  const bool tall = p.m >= p.n;
  const uint rows = tall ? p.m : p.n, k = tall ? p.n : p.m;
  const uint kl = tall ? p.ku : p.kv;
  const uint pn = k + (k & 1u);
  const uint per = rows * k + k * k + rows * kl + 2u * k + 1u;
  for (uint b = gl_WorkGroupID.x; b < p.batch; b += gl_NumWorkGroups.x) {
    const uint W = b * per, V = W + rows * k, L = V + k * k, N2 = L + rows * kl, ORD = N2 + k;
    const uint VALID = ORD + k;  // the count of nonzero singular values, as a double
    if (p.mode != 0u) {
      if (w[VALID] < 0.0) continue;  // a matrix with NaN or inf: its outputs are NaN already
      const uint valid = uint(w[VALID]);
      if (p.mode == 1u) {
        complete(L, rows, valid, kl);
      } else {
        write_vectors(b, L, V, ORD, rows, k, kl, tall);
      }
      continue;
    }
    const uint a0 = p.a_base + b * p.m * p.n;
    // Scaled to max |a| = 1; NaN or inf anywhere makes every output NaN.
    double mx = 0.0;
    bool finite = true;
    for (uint i = t; i < p.m * p.n; i += 256u) {
      const double x = float_value(p.type, LOAD_BITS(a, p.type, a0 + i));
      finite = finite && !isnan(x) && !isinf(x);
      mx = max(mx, abs(x));
    }
    s_max[t] = mx;
    s_finite[t] = finite;
    barrier();
    for (uint width = 128u; width > 0u; width >>= 1) {
      if (t < width) {
        s_max[t] = max(s_max[t], s_max[t + width]);
        s_finite[t] = s_finite[t] && s_finite[t + width];
      }
      barrier();
    }
    const bool all_finite = s_finite[0];
    const double scale = s_max[0] > 0.0 ? s_max[0] : 1.0;
    barrier();
    if (!all_finite) {
      const double nan = uint64BitsToDouble(0x7ff8000000000000UL);
      for (uint i = t; i < k; i += 256u) put(0u, b * k + i, nan);
      if (p.vectors != 0u) {
        for (uint i = t; i < p.m * p.ku; i += 256u) put(1u, b * p.m * p.ku + i, nan);
        for (uint i = t; i < p.kv * p.n; i += 256u) put(2u, b * p.kv * p.n + i, nan);
      }
      if (t == 0u) w[VALID] = -1.0;  // the later modes leave this matrix alone
      barrier();
      continue;
    }
    for (uint e = t; e < p.m * p.n; e += 256u) {
      const uint i = e / p.n, j = e % p.n;
      const double x = float_value(p.type, LOAD_BITS(a, p.type, a0 + e)) / scale;
      w[W + (tall ? j * rows + i : i * rows + j)] = x;
    }
    if (p.vectors != 0u) {
      for (uint e = t; e < k * k; e += 256u) w[V + e] = e / k == e % k ? 1.0 : 0.0;
    }
    memoryBarrierBuffer();
    barrier();
    const double tol = sqrt(double(max(rows, 1u))) * 2.220446049250313e-16LF;
    for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
      if (t == 0u) rotated = false;
      barrier();
      for (uint step = 0u; step + 1u < pn; ++step) {
        for (uint i = t; i < pn / 2u; i += 256u) {
          // jacobi::pair: column 0 stays, the others turn one place per step
          const uint turn = pn - 1u;
          const uint x = i == 0u ? 0u : (i - 1u + step) % turn + 1u;
          const uint pos = pn - 1u - i;
          const uint y = pos == 0u ? 0u : (pos - 1u + step) % turn + 1u;
          const uint ca = min(x, y), cb = max(x, y);
          if (cb >= k) continue;
          double alpha = 0.0, beta = 0.0, gamma = 0.0;
          for (uint r = 0u; r < rows; ++r) {
            const double u = w[W + ca * rows + r], v = w[W + cb * rows + r];
            alpha += u * u;
            beta += v * v;
            gamma += u * v;
          }
          // jacobi::rotation
          if (!(abs(gamma) > tol * sqrt(alpha * beta))) continue;
          const double zeta = (beta - alpha) / (2.0 * gamma);
          const double az = abs(zeta);  // hypot(1, zeta), without overflow
          const double h = az > 1.0 ? az * sqrt(1.0 + (1.0 / az) * (1.0 / az)) : sqrt(1.0 + az * az);
          const double tt = (zeta >= 0.0 ? 1.0 : -1.0) / (az + h);
          const double c = 1.0 / sqrt(1.0 + tt * tt), sn = c * tt;
          rotated = true;
          for (uint r = 0u; r < rows; ++r) {
            const double u = w[W + ca * rows + r], v = w[W + cb * rows + r];
            w[W + ca * rows + r] = c * u - sn * v;
            w[W + cb * rows + r] = sn * u + c * v;
          }
          if (p.vectors != 0u) {
            for (uint r = 0u; r < k; ++r) {
              const double u = w[V + ca * k + r], v = w[V + cb * k + r];
              w[V + ca * k + r] = c * u - sn * v;
              w[V + cb * k + r] = sn * u + c * v;
            }
          }
        }
        memoryBarrierBuffer();
        barrier();
      }
      const bool again = rotated;
      barrier();
      if (!again) break;
    }
    for (uint j = t; j < k; j += 256u) {
      double acc = 0.0;
      for (uint r = 0u; r < rows; ++r) acc += w[W + j * rows + r] * w[W + j * rows + r];
      w[N2 + j] = acc;
    }
    memoryBarrierBuffer();
    barrier();
    if (t == 0u) {  // descending, ties in column order (an insertion sort: stable)
      for (uint j = 0u; j < k; ++j) {
        const double v = w[N2 + j];
        uint at = j;
        while (at > 0u && w[N2 + uint(w[ORD + at - 1u])] < v) {
          w[ORD + at] = w[ORD + at - 1u];
          --at;
        }
        w[ORD + at] = double(j);
      }
      uint valid = 0u;
      while (valid < k && w[N2 + uint(w[ORD + valid])] >= 2.2250738585072014e-308LF) ++valid;
      valid_count = valid;
    }
    memoryBarrierBuffer();
    barrier();
    for (uint r = t; r < k; r += 256u) put(0u, b * k + r, sqrt(w[N2 + uint(w[ORD + r])]) * scale);
    if (p.vectors == 0u) {
      barrier();
      continue;
    }
    const uint valid = valid_count;
    for (uint e = t; e < valid * rows; e += 256u) {
      const uint r = e / rows, i = e % rows, col = uint(w[ORD + r]);
      w[L + e] = w[W + col * rows + i] / sqrt(w[N2 + col]);
    }
    if (t == 0u) w[VALID] = double(valid);
    barrier();  // the shared variables serve the next matrix
  }
}
