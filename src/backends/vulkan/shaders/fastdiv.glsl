// Division by a divisor fixed for a dispatch. With FAST_DIVISION (conv_tiled.comp, and
// pool_cpu, pooling's variant for a CPU device), a multiply-high and shifts (Granlund and
// Montgomery, "Division by invariant integers using multiplication", 1994, the round-up method),
// for 1 <= d <= 2^31 and any n: llvmpipe has no vector integer division and divides lane by
// lane, about 25 cycles each, and a GPU's is a sequence of instructions; either made the index
// arithmetic of the convolution gathers and of pooling most of their time. divisor() costs a
// 32-step loop (a fixed count, which compilers unroll: ending it early where the remainder runs
// out made lavapipe's training step 40% slower), so an invocation should divide by it many
// times. Otherwise the plain division, whose divisor() costs nothing.
struct Divisor {
  uint d, m, s1, s2;
};

#ifdef FAST_DIVISION
Divisor divisor(uint d) {
  const uint l = d <= 1u ? 0u : uint(findMSB(d - 1u)) + 1u;  // 2^(l-1) < d <= 2^l
  // m = floor(2^32 * (2^l - d) / d) + 1 by long division: the remainder stays below d <= 2^31,
  // so doubling it cannot wrap.
  uint r = (l == 32u ? 0u : (1u << l)) - d, q = 0u;
  for (uint i = 0u; i < 32u; ++i) {
    r <<= 1;
    q <<= 1;
    if (r >= d) {
      r -= d;
      q |= 1u;
    }
  }
  Divisor v;
  v.d = d;
  v.m = q + 1u;
  v.s1 = min(l, 1u);
  v.s2 = l == 0u ? 0u : l - 1u;
  return v;
}

uint quot(uint n, Divisor v) {
  uint hi, lo;
  umulExtended(n, v.m, hi, lo);
  return (hi + ((n - hi) >> v.s1)) >> v.s2;
}

#else
Divisor divisor(uint d) { return Divisor(d, 0u, 0u, 0u); }
uint quot(uint n, Divisor v) { return n / v.d; }
#endif

uint rem(uint n, Divisor v) { return n - quot(n, v) * v.d; }

// A flat position in three slots (c fastest, sizes [_, middle, last]) split into them.
uvec3 split3(uint at, Divisor last, Divisor middle) {
  const uint rest = quot(at, last);
  return uvec3(quot(rest, middle), rem(rest, middle), at - rest * last.d);
}
