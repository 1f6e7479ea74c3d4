// Printing tensors exactly as PyTorch prints them: `std::cout << t` writes what `print(t)` writes
// in Python (torch/_tensor_str.py), so outputs can be diffed against PyTorch character for
// character.
#pragma once

#include <iosfwd>

#include "ember/tensor/tensor.hpp"

namespace ember {

/// torch.set_printoptions. Defaults are PyTorch's.
struct PrintOptions {
  int precision = 4;          // digits after the point (fixed) or in the mantissa (scientific)
  int64_t threshold = 1000;   // more elements than this are summarised with "..."
  int edgeitems = 3;          // elements kept at each end of a summarised dim
  int linewidth = 80;         // 1-D rows wrap to stay within this many characters
  bool sci_mode_auto = true;  // pick fixed or scientific notation per tensor, as PyTorch does
  bool sci_mode = false;      // when sci_mode_auto is false: true forces scientific, false fixed
};

/// Sets the options used by every later print (process-wide, like torch.set_printoptions).
void set_print_options(const PrintOptions& options);
PrintOptions print_options();

/// "tensor([1., 2.])": the text `str(t)` gives in PyTorch; "tensor(undefined)" for an empty handle.
std::string to_string(const DynTensor& t);
std::ostream& operator<<(std::ostream& os, const DynTensor& t);
/// "[2, 3]", as errors print shapes (and test frameworks, through this operator).
std::ostream& operator<<(std::ostream& os, const Shape& shape);

template <int D, class K>
std::string to_string(const Tensor<D, K>& t) {
  return to_string(t.dyn());
}
template <int D, class K>
std::ostream& operator<<(std::ostream& os, const Tensor<D, K>& t) {
  return os << t.dyn();
}

namespace detail {
/// The formatting core over host data; `device` only adds PyTorch's device='...' suffix.
std::string format_tensor_data(const TensorData& data, Device device, const PrintOptions& options);
}  // namespace detail

}  // namespace ember
