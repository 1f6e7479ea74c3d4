// io::write_file_atomic and remove_stale_temp_files: the public face of detail::AtomicFile
// (file_posix.cpp).
#include "ember/io/file.hpp"

#include "file.hpp"

namespace ember::io {

void write_file_atomic(const std::string& path, std::string_view bytes, const char* what) {
  detail::AtomicFile file(path, what);
  file.write(bytes.data(), bytes.size());
  file.commit();
}

std::vector<std::string> remove_stale_temp_files(
    const std::string& dir, const std::function<bool(const std::string& name)>& is_target) {
  return detail::remove_stale_temp_files(dir, is_target);
}

}  // namespace ember::io
