# Cross-compiles Ember for a Cortex-M4F microcontroller (hard float) with the GNU Arm Embedded
# toolchain and newlib-nano (Debian: gcc-arm-none-eabi, libstdc++-arm-none-eabi-newlib).
# Use it with -DEMBER_EMBEDDED=ON; scripts/cross.sh is the whole step. For a Cortex-M7 with a
# double-precision FPU use -mcpu=cortex-m7 -mfpu=fpv5-d16.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
# There is no OS to run a test executable on: CMake's compiler checks build a static library.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

set(_ember_mcu "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16 --specs=nano.specs")
set(CMAKE_C_FLAGS_INIT "${_ember_mcu} -ffunction-sections -fdata-sections")
# -Wno-psabi: GCC notes that the ARM calling convention for some types changed in GCC 7.1, which
# only matters when linking objects from before GCC 7.
set(CMAKE_CXX_FLAGS_INIT
    "${_ember_mcu} -ffunction-sections -fdata-sections -fno-exceptions -fno-rtti -Wno-psabi")
# nosys.specs stubs the system calls newlib needs (_sbrk, _write, ...); a board support package
# replaces it. -u _printf_float keeps numbers in error messages (nano's printf drops floats).
set(CMAKE_EXE_LINKER_FLAGS_INIT "--specs=nosys.specs -u _printf_float -Wl,--gc-sections")

# Look for libraries and headers only in the toolchain's sysroot, for programs only on the host.
set(CMAKE_FIND_ROOT_PATH /usr/lib/arm-none-eabi)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
