// Tensors on a microcontroller: proof that the tensor core (with autodiff) and the Cpu backend
// link into a bare-metal program without threads, a filesystem, iostreams, exceptions or RTTI.
// scripts/cross.sh builds it for a Cortex-M4F; it is linked, not run.
#include <ember/ember.hpp>

using namespace ember;

namespace {

// With exceptions off, a failed EMBER_CHECK calls this hook; a real board would log and reset.
[[noreturn]] void halt(const char*) {
  for (;;) {
  }
}

}  // namespace

int main() {
  set_panic_hook(halt);
  Device dev = Device::cpu();
  auto a = Tensor<2>::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, dev);
  auto b = Tensor<1>::from_vector<float>({10, 20, 30}, dev);
  auto c = a + b;                                            // broadcasts over rows
  const float total = c.sum().item<float>();                 // 21 + 2 * 60 = 141
  const float dot = matmul(a, a.t()).to_vector<float>()[1];  // row 0 . row 1 = 32
  const float spread = Tensor<1>::randn({8}, dev).std().item<float>();
  // On-device gradients: d/dw sum(w * w) = 2w.
  auto w = Tensor<1>::from_vector<float>({0.5f, -1.0f, 2.0f}, dev).require_grad();
  const float grad = w.grad((w * w).sum().backward()).to_vector<float>()[2];  // 4
  const bool ok = c.to_vector<float>()[5] == 36.0f && total == 141.0f && dot == 32.0f &&
                  spread > 0.0f && grad == 4.0f;
  return ok ? 0 : 1;
}
