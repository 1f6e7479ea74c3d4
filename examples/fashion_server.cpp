// A model server of one's own, in one binary with its weights inside: the Fashion-MNIST CNN
// (weights linked in by ember_embed, examples/CMakeLists.txt) served over HTTP by
// ember::serve::Server. Its input is raw pixels (u8 [N, 28, 28]); the normalisation the model was
// trained with happens inside, so clients send what an image holds.
//   fashion_server [--port N]      (0: any free port; it prints which)
#include <cstdio>
#include <cstring>
#include <ember/ember.hpp>
#include <ember/models/fashion_cnn.hpp>
#include <ember/serve/serve.hpp>
#include <memory>
#include <string>

using namespace ember;

int main(int argc, char** argv) {
  serve::ServerConfig config;
  config.port = argc == 3 && std::strcmp(argv[1], "--port") == 0 ? std::atoi(argv[2]) : 8080;
  try {
    auto model = std::make_shared<models::FashionCnn>(Device::cpu());
    load(*model, io::embedded_safetensors("fashion_cnn"));  // in place, from the binary
    model->eval();
    auto servable = serve::make_servable(
        {"pixels", DType::u8, {28, 28}}, {"logits", DType::f32, {10}}, Device::cpu(),
        [model](const DynTensor& pixels) {
          const DynTensor x = (cast(pixels, DType::f32) / 255.0 - 0.2860) / 0.3530;
          return model->forward(Tensor<4>(unsqueeze(x, 1))).dyn();
        });
    serve::Server server(servable, config);
    std::printf("fashion_server: listening on http://%s:%d\n", config.host.c_str(), server.bind());
    std::fflush(stdout);
    serve::run_until_signal(server);
    std::printf("fashion_server: stopped after %lld requests\n",
                static_cast<long long>(server.stats().requests));
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "fashion_server: %s\n", e.what());
    return 1;
  }
}
