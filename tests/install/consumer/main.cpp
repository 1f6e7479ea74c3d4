// Uses an installed Ember: creation, broadcasting, a reduction, matmul (the GEMM library, when
// Ember was built with one, must come along at link time), random draws, printing and a
// safetensors round trip (ember_io, whose JSON library must not be needed here), and a file
// linked in by the package's ember_embed().
#include <ember/ember.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

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
  std::ifstream in(CONSUMER_MAIN, std::ios::binary);
  const std::vector<unsigned char> source{std::istreambuf_iterator<char>(in), {}};
  const std::span<const unsigned char> embedded = embedded_file("source");
  const bool embed_ok = std::equal(embedded.begin(), embedded.end(), source.begin(), source.end());
  const bool all = ok && io_ok && embed_ok;
  std::cout << (all ? "install consumer: ok" : "install consumer: WRONG RESULT") << "\n";
  return all ? 0 : 1;
}
