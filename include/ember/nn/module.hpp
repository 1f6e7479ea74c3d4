// The module machinery. Models are plain structs; one line lists their fields:
//
//   struct Mlp {
//     nn::Linear fc1, fc2;
//     nn::Dropout drop;
//     EMBER_MODULE(Mlp, fc1, fc2, drop)
//     Tensor<2> forward(const Tensor<2>& x) const { return fc2(drop(relu(fc1(x)))); }
//   };
//
// EMBER_MODULE gives the struct a visitor over its fields and the members below (num_params,
// train/eval, to, freeze, summary, valid, deep_copy). A field may be a Param, a Buffer, a
// ModeFlag, another module, or a std::vector / std::array / std::optional of those; other fields
// (configs, sizes) are ignored. Parameter paths follow PyTorch: `layers.0.fc1.weight`.
// The visitor only flattens the module into a list (ModuleTree); everything else is compiled
// once in src/nn/module.cpp.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ember/nn/param.hpp"

namespace ember::nn {

/// One entry of a flattened module: a module, a parameter or buffer, or a mode flag.
struct ModuleEntry {
  enum class Kind : uint8_t { Module, Tensor, Mode };
  Kind kind;
  std::string path;            // dotted, "" for the root
  const char* type = nullptr;  // Module: its type name
  TensorSlot* slot = nullptr;  // Tensor: the Param or Buffer
  ModeFlag* mode = nullptr;    // Mode
  int depth = 0;               // nesting level (the root is 0)
};
using ModuleTree = std::vector<ModuleEntry>;

// Operations on a flattened module (src/nn/module.cpp).
/// Elements of every Param (frozen ones included, as PyTorch's parameters() counts them).
int64_t num_params(const ModuleTree& tree);
void set_training(const ModuleTree& tree, bool training);
void to_device(const ModuleTree& tree, Device device);
/// Converts floating Params and Buffers; Int and Bool buffers keep their dtype.
void to_dtype(const ModuleTree& tree, DType dtype);
/// Freezes (trainable = false) or unfreezes the Params whose path matches `pattern`: equal to
/// it, inside the module it names (`encoder` matches `encoder.fc1.weight`), or matching it as a
/// regular expression (ECMAScript, whole path). An empty pattern matches all. Returns how many
/// Params matched; none is an error naming the pattern.
int set_trainable(const ModuleTree& tree, std::string_view pattern, bool trainable);
/// Frozen, evaluation mode: what valid() does to its copy.
void make_valid(const ModuleTree& tree);
/// New storage and new ids for every Param and Buffer: what deep_copy() does to its copy.
void make_independent(const ModuleTree& tree);
/// A table: path, type, shape, parameter count, trainable; totals at the end.
std::string summary(const ModuleTree& tree);

/// A named tensor of a module, for saving and loading by path.
struct NamedTensor {
  std::string path;
  TensorSlot* slot;
};
/// Every Param and Buffer, in declaration order.
std::vector<NamedTensor> named_tensors(const ModuleTree& tree);
/// Only the Params (what an optimizer updates).
std::vector<NamedTensor> named_params(const ModuleTree& tree);

namespace detail {

template <class T>
concept Module = requires(T& m) {
  T::ember_module_name();
};
template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};
template <class T>
struct IsArray : std::false_type {};
template <class T, size_t N>
struct IsArray<std::array<T, N>> : std::true_type {};
template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

inline std::string join_path(const std::string& prefix, std::string_view name) {
  return prefix.empty() ? std::string(name) : prefix + "." + std::string(name);
}

struct Collector {
  ModuleTree& tree;
  std::string prefix;
  int depth;

  template <class T>
  void operator()(std::string_view name, T& field) {
    add(join_path(prefix, name), field);
  }

  template <class T>
  void add(const std::string& path, T& field) {
    if constexpr (std::is_base_of_v<TensorSlot, T>) {
      tree.push_back({ModuleEntry::Kind::Tensor, path, nullptr, &field, nullptr, depth});
    } else if constexpr (std::is_same_v<T, ModeFlag>) {
      tree.push_back({ModuleEntry::Kind::Mode, path, nullptr, nullptr, &field, depth});
    } else if constexpr (Module<T>) {
      tree.push_back(
          {ModuleEntry::Kind::Module, path, T::ember_module_name(), nullptr, nullptr, depth});
      Collector sub{tree, path, depth + 1};
      field.ember_visit(sub);
    } else if constexpr (IsVector<T>::value || IsArray<T>::value) {
      for (size_t i = 0; i < field.size(); ++i) add(join_path(path, std::to_string(i)), field[i]);
    } else if constexpr (IsOptional<T>::value) {
      if (field) add(path, *field);
    }
    // Anything else (configs, sizes, flags of the user's own) is not part of the module tree.
  }
};

}  // namespace detail

/// The module flattened: the root first, then every field in declaration order, depth first.
template <detail::Module M>
ModuleTree module_tree(M& m) {
  ModuleTree tree;
  tree.push_back({ModuleEntry::Kind::Module, "", M::ember_module_name(), nullptr, nullptr, 0});
  detail::Collector c{tree, "", 1};
  m.ember_visit(c);
  return tree;
}
/// Read-only uses (counting, summaries) of a const module.
template <detail::Module M>
ModuleTree module_tree(const M& m) {
  return module_tree(const_cast<M&>(m));
}

}  // namespace ember::nn

// EMBER_FOR_EACH(macro, a, b, c) expands to macro(a) macro(b) macro(c) (up to 256 arguments).
#define EMBER_PARENS ()
#define EMBER_EXPAND(...) EMBER_EXPAND4(EMBER_EXPAND4(EMBER_EXPAND4(EMBER_EXPAND4(__VA_ARGS__))))
#define EMBER_EXPAND4(...) EMBER_EXPAND3(EMBER_EXPAND3(EMBER_EXPAND3(EMBER_EXPAND3(__VA_ARGS__))))
#define EMBER_EXPAND3(...) EMBER_EXPAND2(EMBER_EXPAND2(EMBER_EXPAND2(EMBER_EXPAND2(__VA_ARGS__))))
#define EMBER_EXPAND2(...) EMBER_EXPAND1(EMBER_EXPAND1(EMBER_EXPAND1(EMBER_EXPAND1(__VA_ARGS__))))
#define EMBER_EXPAND1(...) __VA_ARGS__
#define EMBER_FOR_EACH(macro, ...) \
  __VA_OPT__(EMBER_EXPAND(EMBER_FOR_EACH_HELPER(macro, __VA_ARGS__)))
#define EMBER_FOR_EACH_HELPER(macro, a1, ...) \
  macro(a1) __VA_OPT__(EMBER_FOR_EACH_AGAIN EMBER_PARENS(macro, __VA_ARGS__))
#define EMBER_FOR_EACH_AGAIN() EMBER_FOR_EACH_HELPER

#define EMBER_MODULE_FIELD(field) ember_visitor(#field, field);

/// Lists a struct's module fields and gives it the module members (see the top of this file).
#define EMBER_MODULE(Type, ...) EMBER_MODULE_NAMED(Type, #Type __VA_OPT__(, ) __VA_ARGS__)

/// The same, with the name summaries print given as an expression (templates: "Conv2d").
#define EMBER_MODULE_NAMED(Type, name, ...)                                                   \
  static constexpr const char* ember_module_name() { return name; }                           \
  template <class EmberVisitor>                                                               \
  void ember_visit([[maybe_unused]] EmberVisitor& ember_visitor){                             \
      EMBER_FOR_EACH(EMBER_MODULE_FIELD, __VA_ARGS__)} /** Elements of every parameter. */    \
  int64_t                                                                                     \
  num_params() const {                                                                        \
    return ::ember::nn::num_params(::ember::nn::module_tree(*this));                          \
  }                                                                                           \
  /** Training mode (Dropout drops, BatchNorm uses batch statistics); eval() turns it off. */ \
  Type& train(bool on = true) {                                                               \
    ::ember::nn::set_training(::ember::nn::module_tree(*this), on);                           \
    return *this;                                                                             \
  }                                                                                           \
  Type& eval() { return train(false); }                                                       \
  /** Moves every parameter and buffer (ids are kept). */                                     \
  Type& to(::ember::Device device) {                                                          \
    ::ember::nn::to_device(::ember::nn::module_tree(*this), device);                          \
    return *this;                                                                             \
  }                                                                                           \
  Type& to(::ember::DType dtype) {                                                            \
    ::ember::nn::to_dtype(::ember::nn::module_tree(*this), dtype);                            \
    return *this;                                                                             \
  }                                                                                           \
  /** Freezes the parameters matching a path, a module prefix or a regex ("" = all). */       \
  Type& freeze(std::string_view pattern = "") {                                               \
    ::ember::nn::set_trainable(::ember::nn::module_tree(*this), pattern, false);              \
    return *this;                                                                             \
  }                                                                                           \
  Type& unfreeze(std::string_view pattern = "") {                                             \
    ::ember::nn::set_trainable(::ember::nn::module_tree(*this), pattern, true);               \
    return *this;                                                                             \
  }                                                                                           \
  /** The model for inference: a copy sharing storage, frozen, in evaluation mode. */         \
  Type valid() const {                                                                        \
    Type copy = *this;                                                                        \
    ::ember::nn::make_valid(::ember::nn::module_tree(copy));                                  \
    return copy;                                                                              \
  }                                                                                           \
  /** A copy with its own storage and new parameter ids. */                                   \
  Type deep_copy() const {                                                                    \
    Type copy = *this;                                                                        \
    ::ember::nn::make_independent(::ember::nn::module_tree(copy));                            \
    return copy;                                                                              \
  }                                                                                           \
  /** A table of every module and parameter: path, type, shape, count. */                     \
  std::string summary() const { return ::ember::nn::summary(::ember::nn::module_tree(*this)); }
