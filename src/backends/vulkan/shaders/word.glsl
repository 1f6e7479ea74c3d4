// An element's bits in the 32-bit variant of a shader, or in the 64-bit one (compiled with
// -DWIDE, which needs shaderInt64, and shaderFloat64 where FLOAT is used): WORD holds them,
// FLOAT and INT read them as a float or a signed integer of that width.
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : enable
#ifdef WIDE
#define WORD uint64_t
#define FLOAT double
#define INT int64_t
#define AS_FLOAT(w) uint64BitsToDouble(w)
#define FLOAT_BITS(f) doubleBitsToUint64(f)
#define MAGNITUDE_BITS 0x7fffffffffffffffUL
#define ALL_BITS 0xffffffffffffffffUL
#else
#define WORD uint
#define FLOAT float
#define INT int
#define AS_FLOAT(w) uintBitsToFloat(w)
#define FLOAT_BITS(f) floatBitsToUint(f)
#define MAGNITUDE_BITS 0x7fffffffu
#define ALL_BITS 0xffffffffu
#endif
