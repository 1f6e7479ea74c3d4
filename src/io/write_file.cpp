// io::write_file_atomic: the public face of detail::AtomicFile (file_posix.cpp).
#include "ember/io/file.hpp"

#include "file.hpp"

namespace ember::io {

void write_file_atomic(const std::string& path, std::string_view bytes, const char* what) {
  detail::AtomicFile file(path, what);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

}  // namespace ember::io
