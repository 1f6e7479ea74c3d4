// The same model file with LibTorch's one include, torch/torch.h: the peer of ember_model.cpp.
#include <torch/torch.h>

#include <iostream>

struct Mlp : torch::nn::Module {
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  Mlp() {
    fc1 = register_module("fc1", torch::nn::Linear(784, 128));
    fc2 = register_module("fc2", torch::nn::Linear(128, 10));
  }
  torch::Tensor forward(const torch::Tensor& x) { return fc2(torch::relu(fc1(x))); }
};

int main() {
  Mlp m;
  torch::optim::Adam opt(m.parameters(), torch::optim::AdamOptions(1e-3));
  auto x = torch::randn({4, 784});
  auto y = m.forward(x);
  auto loss = (y * y).mean();
  opt.zero_grad();
  loss.backward();
  opt.step();
  std::cout << m.fc1->weight << "\n";
}
