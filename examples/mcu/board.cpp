// Start-up code and system calls for the MPS2 AN386 board (QEMU's mps2-an386): the vector
// table, the reset handler (FPU on, .data copied, .bss zeroed, static constructors), newlib's
// system calls over semihosting, and a heap that is a fixed arena (mps2_an386.ld).
#include "board.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

extern "C" {
extern uint32_t __data_start[], __data_end[], __data_load[], __bss_start[], __bss_end[];
extern unsigned char ember_arena_start[], ember_arena_end[];
void __libc_init_array();
int main();
[[noreturn]] void reset_handler();
void fault_handler();
void systick_handler();
}

// Cortex-M's vector table: the initial stack pointer, then the handlers. Written in assembly so
// that it is data in flash, not a table of function pointers made by a static constructor.
__asm__(R"(
  .section .vectors,"a"
  .word ember_stack_top
  .word reset_handler
  .word fault_handler   /* NMI */
  .word fault_handler   /* HardFault */
  .word fault_handler   /* MemManage */
  .word fault_handler   /* BusFault */
  .word fault_handler   /* UsageFault */
  .word 0, 0, 0, 0
  .word fault_handler   /* SVCall */
  .word fault_handler   /* DebugMonitor */
  .word 0
  .word fault_handler   /* PendSV */
  .word systick_handler
  .previous
)");

namespace board {
namespace {

enum : int { kSysOpen = 0x01, kSysWrite = 0x05, kSysExit = 0x18 };
enum : int { kApplicationExit = 0x20026, kRunTimeError = 0x20023 };

int semihost(int op, const void* arg) {
  register int r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

int console() {  // the host's terminal, opened for writing on first use
  static int handle = -1;
  if (handle < 0) {
    const uint32_t args[3] = {reinterpret_cast<uint32_t>(":tt"), 4 /* "w" */, 3};
    handle = semihost(kSysOpen, args);
  }
  return handle;
}

void write(const char* text, size_t n) {
  const uint32_t args[3] = {static_cast<uint32_t>(console()), reinterpret_cast<uint32_t>(text),
                            static_cast<uint32_t>(n)};
  semihost(kSysWrite, args);
}

unsigned char* g_break = ember_arena_start;
unsigned char* g_peak = ember_arena_start;
volatile uint32_t g_systick_wraps = 0;

struct SysTick {
  volatile uint32_t ctrl, load, val, calib;
};
SysTick& systick() { return *reinterpret_cast<SysTick*>(0xE000E010); }

}  // namespace

[[noreturn]] void exit(int status) {
  semihost(kSysExit, reinterpret_cast<const void*>(status == 0 ? kApplicationExit : kRunTimeError));
  for (;;) {
  }
}

[[noreturn]] void panic(const char* message) {
  write("panic: ", 7);
  write(message, std::strlen(message));
  write("\n", 1);
  exit(1);
}

size_t arena_used() { return static_cast<size_t>(g_break - ember_arena_start); }
size_t arena_peak() { return static_cast<size_t>(g_peak - ember_arena_start); }
size_t arena_size() { return static_cast<size_t>(ember_arena_end - ember_arena_start); }

uint64_t nanoseconds() {
  uint32_t wraps = 0, value = 0;
  do {  // read the count and the wraps as one: retry when SysTick wrapped in between
    wraps = g_systick_wraps;
    value = systick().val;
  } while (wraps != g_systick_wraps);
  const uint64_t ticks = (static_cast<uint64_t>(wraps) << 24) + (0xFFFFFFu - value);
  return ticks * 40;  // 25 MHz
}

}  // namespace board

extern "C" {

// Kept out of line: it runs before the FPU is on, so nothing here may touch a float register.
[[gnu::noinline]] static void copy_data_and_zero_bss() {
  for (uint32_t *src = __data_load, *dst = __data_start; dst < __data_end;) *dst++ = *src++;
  for (uint32_t* p = __bss_start; p < __bss_end;) *p++ = 0;
}

void reset_handler() {
  // CP10 and CP11 (the FPU) to full access, before any floating-point instruction.
  *reinterpret_cast<volatile uint32_t*>(0xE000ED88) |= 0xFu << 20;
  __asm__ volatile("dsb\n isb");
  copy_data_and_zero_bss();
  board::systick().load = 0xFFFFFF;
  board::systick().val = 0;
  board::systick().ctrl = 0x7;  // processor clock, interrupt on wrap, enabled
  __libc_init_array();
  board::exit(main());
}

void fault_handler() { board::panic("a processor fault (hard fault, bus fault, ...)"); }
void systick_handler() { board::g_systick_wraps = board::g_systick_wraps + 1; }

// newlib's system calls: output to the host, a heap in the fixed arena, no files.
void* _sbrk(ptrdiff_t increment) {
  if (increment > ember_arena_end - board::g_break || increment < 0) {
    errno = ENOMEM;
    return reinterpret_cast<void*>(-1);
  }
  unsigned char* old = board::g_break;
  board::g_break += increment;
  if (board::g_break > board::g_peak) board::g_peak = board::g_break;
  return old;
}
int _write(int, const char* text, int n) {
  board::write(text, static_cast<size_t>(n));
  return n;
}
int _isatty(int fd) { return fd <= 2; }
int _fstat(int, struct stat* st) {
  st->st_mode = S_IFCHR;
  return 0;
}
int getentropy(void*, size_t) {  // no entropy source: Ember's generators take explicit seeds
  errno = ENOSYS;
  return -1;
}
// What crti, crtn and crtbegin give a hosted program (-nostartfiles leaves them out).
void* __dso_handle = nullptr;
void _init() {}
void _fini() {}

}  // extern "C"
