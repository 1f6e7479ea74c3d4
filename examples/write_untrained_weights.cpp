// Writes untrained FashionCnn weights (seeded) to argv[1]: what examples/fashion_server embeds
// when the build is not given trained ones (-DEMBER_SERVER_WEIGHTS=runs/.../model.safetensors).
#include <ember/ember.hpp>
#include <ember/models/fashion_cnn.hpp>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  ember::manual_seed(0);
  ember::save(ember::models::FashionCnn(), argv[1]);
  return 0;
}
