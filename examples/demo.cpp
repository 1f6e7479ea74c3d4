// A tour of the tensor API: creation, arithmetic with broadcasting, reductions, views, matmul,
// indexing, gradients and a clear error. Run with `ember_demo` (the README's first command builds
// it).
#include <ember/ember.hpp>
#include <iostream>

using namespace ember;

int main() {
  Device dev = Device::cpu();  // the one line to change for another backend
  manual_seed(0);

  auto a = Tensor<2>::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, dev);
  auto [rows, cols] = a.dims();
  std::cout << "a (" << rows << "x" << cols << ") =\n" << a << "\n";
  std::cout << "a.sum() = " << a.sum().item<float>() << "\n";
  std::cout << "a.mean(1) = " << a.mean(1) << "\n";
  std::cout << "a * 2 + [10, 20, 30] =\n"
            << a * 2.0f + Tensor<1>::from_vector<float>({10, 20, 30}, dev) << "\n";
  std::cout << "a.t() (a zero-copy view) =\n" << a.t() << "\n";
  std::cout << "softmax(a, 1) =\n" << softmax(a, 1) << "\n";

  auto x = Tensor<2>::randn({64, 784}, dev);
  auto w = Tensor<2>::randn({784, 10}, dev) * 0.05f;
  auto logits = relu(matmul(x, w) + 1.0f);
  std::cout << "relu(x @ w + 1): shape " << to_string(logits.shape()) << ", mean "
            << logits.mean().item<float>() << "\n";
  auto [best, cls] = logits.max(1);
  std::cout << "first 8 predicted classes: " << cls.slice(0, 0, 8) << "\n";

  auto mask = a > 3.0f;
  std::cout << "a > 3 =\n" << mask << "\n";
  std::cout << "masked_fill(a > 3, 0) =\n" << a.masked_fill(mask, 0) << "\n";
  std::cout << "arange(6).reshape({2, 3}) in int32 =\n"
            << Tensor<1, Int>::arange(6, dev, DType::i32).reshape({2, 3}) << "\n";

  // Autodiff: fit y = 3x + 2 by gradient descent; gradients come back in a container.
  auto xs = Tensor<2>::rand({32, 1}, dev) * 4.0f - 2.0f;
  auto ys = xs * 3.0f + 2.0f;
  auto slope = Tensor<1>::zeros({1}, dev), bias = Tensor<1>::zeros({1}, dev);
  for (int step = 0; step < 200; ++step) {
    auto s = slope.require_grad(), b = bias.require_grad();
    auto loss = square(xs * s + b - ys).mean();
    Gradients grads = loss.backward();
    slope = slope - s.grad(grads) * 0.1f;
    bias = bias - b.grad(grads) * 0.1f;
  }
  std::cout << "gradient descent on y = 3x + 2: slope " << slope.item<float>() << ", bias "
            << bias.item<float>() << "\n";

  try {
    matmul(Tensor<2>::ones({2, 3}, dev), Tensor<2>::ones({4, 5}, dev));
  } catch (const Error& e) {
    std::cout << "bad shapes give a clear error: " << e.what() << "\n";
  }
  return 0;
}
