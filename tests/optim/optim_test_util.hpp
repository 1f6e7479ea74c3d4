// Shared by the optim tests: the fixture model (two Linear layers in float64, as the PyTorch
// script builds it), the fixture's gradients as ParamGrads, and an error-message check.
#pragma once

#include <gtest/gtest.h>

#include <ember/ember.hpp>
#include <ember/nn/nn.hpp>
#include <ember/optim/optim.hpp>
#include <string>

#include "autodiff/fixture.hpp"

namespace ember::test {

struct Net {
  nn::Linear fc1, fc2;
  EMBER_MODULE(Net, fc1, fc2)
  DynTensor forward(const DynTensor& x) const { return fc2.forward(relu(fc1.forward(x))); }
};

inline const Fixture& optim_fixture() {
  static const Fixture f(EMBER_OPTIM_FIXTURES "/optim.txt");
  return f;
}

inline Net make_net(DType dtype = DType::f64) {
  return Net{nn::Linear(nn::LinearConfig(4, 3).with_dtype(dtype)),
             nn::Linear(nn::LinearConfig(3, 2).with_dtype(dtype))};
}

/// The fixture's initial parameters.
inline Net fixture_net() {
  Net net = make_net();
  for (const nn::NamedTensor& p : nn::named_params(nn::module_tree(net))) {
    p.slot->set_dyn(optim_fixture().get("init." + p.path));
  }
  return net;
}

/// The gradients PyTorch was given at step k (parameters without one are left out).
inline optim::ParamGrads fixture_grads(Net& net, int k) {
  optim::ParamGrads g;
  for (const nn::NamedTensor& p : nn::named_params(nn::module_tree(net))) {
    const std::string name = "grad." + std::to_string(k) + "." + p.path;
    if (optim_fixture().has(name)) g.set(p.slot->id(), optim_fixture().get(name));
  }
  return g;
}

/// Runs `fn` and checks that it raises an ember::Error whose message contains every part.
template <class Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> parts) {
  try {
    fn();
    synchronize(default_device());  // a range error of a queued check is raised here
    ADD_FAILURE() << "no error; expected one containing \"" << *parts.begin() << "\"";
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(what.find(part), std::string::npos) << "\"" << part << "\" not in: " << what;
    }
  }
}

}  // namespace ember::test
