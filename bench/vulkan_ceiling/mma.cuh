// One warp-level MMA of the card, mma.sync m16n8k16: c (16x8 float32, 4 a lane) += a (16x16
// float16, 8 a lane in 4 words) x b (16x8 float16, 4 a lane in 2 words); the fragments' lane
// layouts are PTX's. Shared by mma_sync.cu and gemm_staged.cu.
#pragma once

__device__ inline void mma_16816(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
