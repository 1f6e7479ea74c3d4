// Sequential: modules applied in order (torch.nn.Sequential); children are named 0, 1, 2, ...
// as in PyTorch, so parameter paths match a PyTorch state dict.
#pragma once

#include <tuple>
#include <utility>

#include "ember/nn/module.hpp"

namespace ember::nn {

template <class... Modules>
class Sequential {
 public:
  std::tuple<Modules...> layers;

  Sequential() = default;
  explicit Sequential(Modules... modules) : layers(std::move(modules)...) {}

  static constexpr const char* ember_module_name() { return "Sequential"; }
  template <class V>
  void ember_visit(V& visitor) {
    visit_each(visitor, std::index_sequence_for<Modules...>{});
  }

  /// The i-th module.
  template <size_t I>
  auto& get() {
    return std::get<I>(layers);
  }

  template <class X>
  auto operator()(const X& x) const {
    return apply<0>(x);
  }

  int64_t num_params() const { return ::ember::nn::num_params(module_tree(*this)); }
  Sequential& train(bool on = true) {
    set_training(module_tree(*this), on);
    return *this;
  }
  Sequential& eval() { return train(false); }
  Sequential& to(Device device) {
    to_device(module_tree(*this), device);
    return *this;
  }
  std::string summary() const { return ::ember::nn::summary(module_tree(*this)); }

 private:
  template <class V, size_t... I>
  void visit_each(V& visitor, std::index_sequence<I...>) {
    (visitor(std::to_string(I), std::get<I>(layers)), ...);
  }
  template <size_t I, class X>
  auto apply(const X& x) const {
    if constexpr (I == sizeof...(Modules)) {
      return x;
    } else {
      return apply<I + 1>(std::get<I>(layers)(x));
    }
  }
};

}  // namespace ember::nn
