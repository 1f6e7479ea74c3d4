#include "ember/core/storage.hpp"
#include "file.hpp"

namespace ember::io::detail {
namespace {

void release_owner(void* context, void*, size_t) {
  delete static_cast<std::shared_ptr<const Bytes>*>(context);
}

}  // namespace

std::shared_ptr<Storage> storage_over(std::shared_ptr<const Bytes> bytes, const unsigned char* at,
                                      size_t nbytes) {
  // The release callback drops the storage's one owner of the bytes.
  auto owner = std::make_unique<std::shared_ptr<const Bytes>>(std::move(bytes));
  auto storage = std::make_shared<Storage>(const_cast<unsigned char*>(at), nbytes, Device::cpu(),
                                           &release_owner, owner.get());
  owner.release();
  return storage;
}

}  // namespace ember::io::detail
