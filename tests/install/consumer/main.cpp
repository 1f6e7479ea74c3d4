// Uses an installed Ember: creation, broadcasting, a reduction, matmul (the GEMM library, when
// Ember was built with one, must come along at link time), random draws, printing and a
// safetensors round trip (ember_io, whose JSON library must not be needed here).
#include <ember/ember.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>

using namespace ember;

int main() {
  Device dev = Device::cpu();
  auto a = Tensor<2>::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}, dev);
  auto b = a * 2.0f + Tensor<1>::from_vector<float>({10, 20, 30}, dev);
  auto g = matmul(a, a.t());
  auto r = Tensor<2>::randn({64, 64}, dev);
  std::cout << "b =\n" << b << "\ng =\n" << g << "\n";

  const bool ok = b.sum().item<float>() == 162.0f &&
                  g.to_vector<float>() == std::vector<float>{14, 32, 32, 77} &&
                  abs(matmul(r, Tensor<2>::eye(64, -1, dev)) - r).max().item<float>() < 1e-5f;
  const std::string path =
      (std::filesystem::temp_directory_path() / "ember_consumer.safetensors").string();
  io::save_safetensors({{"a", a.dyn()}}, path);
  const bool io_ok =
      io::load_safetensors(path).tensor("a").to_vector<float>() == a.to_vector<float>();
  std::remove(path.c_str());
  std::cout << (ok && io_ok ? "install consumer: ok" : "install consumer: WRONG RESULT") << "\n";
  return ok && io_ok ? 0 : 1;
}
