// The board under the example: Arm's MPS2 with the AN386 image (a Cortex-M4F), as QEMU models
// it. Output goes to the host through semihosting; time is SysTick's count.
#pragma once

#include <cstddef>
#include <cstdint>

namespace board {

/// Ends the program: QEMU exits with status 0 for 0, 1 otherwise.
[[noreturn]] void exit(int status);
/// Prints the message and ends the program with a failure (Ember's panic hook).
[[noreturn]] void panic(const char* message);

/// Bytes of the fixed heap arena in use (the break), its high-water mark and its size.
size_t arena_used();
size_t arena_peak();
size_t arena_size();

/// Nanoseconds of the board's time since start-up, from SysTick at 25 MHz. Under QEMU with
/// -icount shift=0 every instruction takes one nanosecond, so this counts instructions.
uint64_t nanoseconds();

}  // namespace board
