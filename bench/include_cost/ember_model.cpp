// One model file as a user writes it with the one include: an MLP, an Adam step, printing.
// bench/include_cost.sh compiles it beside torch_model.cpp (LibTorch's torch/torch.h).
#include <ember/ember.hpp>
#include <iostream>
using namespace ember;
struct Mlp {
  nn::Linear fc1, fc2;
  EMBER_MODULE(Mlp, fc1, fc2)
  Tensor<2> forward(const Tensor<2>& x) const { return fc2(relu(fc1(x))); }
};
int main() {
  Mlp m{nn::Linear(784, 128), nn::Linear(128, 10)};
  optim::Optimizer opt(optim::AdamConfig().lr(1e-3));
  auto x = Tensor<2>::randn({4, 784});
  auto loss = (m.forward(x) * m.forward(x)).mean();
  opt.step(m, loss.backward());
  std::cout << m.fc1.weight << "\n";
}
