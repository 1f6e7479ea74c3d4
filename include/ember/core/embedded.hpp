// Files linked into the program: the CMake function ember_embed(target FILE f NAME n) puts f's
// bytes into the executable's read-only data (flash on a microcontroller) and registers them
// here under n before main runs. io::embedded_safetensors(n) reads weights from them without a
// copy, so a program and its model ship as one file.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ember {

/// The bytes embedded under `name`; an error listing the embedded names when there is none.
std::span<const unsigned char> embedded_file(std::string_view name);

/// The names of every embedded file, sorted.
std::vector<std::string> embedded_files();

namespace detail {
/// Made by the code ember_embed generates, one per file, at static-initialisation time.
struct EmbeddedFile {
  EmbeddedFile(const char* name, const unsigned char* begin, const unsigned char* end);
};
}  // namespace detail

}  // namespace ember
