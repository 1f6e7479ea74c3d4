// The Vulkan backend's Adam/AdamW step (OpFamily::Optim) in float32: adam.comp, one dispatch per
// parameter in place, where the composite took a dozen elementwise commands.
#include "../../core/adam_step.hpp"
#include "binding.hpp"
#include "ember/backends/vulkan/vulkan.hpp"
#include "ember/core/error.hpp"
#include "shaders.hpp"
#include "vulkan_backend.hpp"

namespace ember::vulkan {
namespace {

// adam.comp's push constants: the constants rounded to float32 once, as adam::Consts<float>.
struct AdamPush {
  uint32_t count, flags;
  uint32_t w_base, g_base, m_base, v_base, x_base;
  uint32_t w_out_base, m_out_base, v_out_base, x_out_base, pad;
  float decay, wd, one_minus_beta1, beta2, one_minus_beta2, bc2_sqrt, eps, neg_step;
};
static_assert(sizeof(AdamPush) <= 128, "Vulkan guarantees 128 bytes of push constants");

// Records one step: the state in, the new param and state out (the same tensors, in place).
void dispatch_adam(const RawTensor& param, const RawTensor& grad, const RawTensor& exp_avg,
                   const RawTensor& exp_avg_sq, const RawTensor& max_exp_avg_sq,
                   const AdamParams& p, const RawTensor& param_out, const RawTensor& exp_avg_out,
                   const RawTensor& exp_avg_sq_out, const RawTensor& max_exp_avg_sq_out) {
  const char* op = "adam_step";
  for (const RawTensor* t : {&param, &grad, &exp_avg, &exp_avg_sq, &max_exp_avg_sq, &param_out,
                             &exp_avg_out, &exp_avg_sq_out, &max_exp_avg_sq_out}) {
    if (!t->defined()) continue;  // max_exp_avg_sq without amsgrad
    if (t->dtype != DType::f32) backend().no_kernel(op, t->dtype);
    EMBER_CHECK(t->is_contiguous(), "[", op, "] the Vulkan kernel takes contiguous tensors");
  }
  if (param.numel() == 0) return;
  DeviceContext& c = ctx_of(param);
  std::lock_guard lock(c.mu);
  const adam::Consts<float> k(p);
  AdamPush q{};
  q.count = static_cast<uint32_t>(param.numel());
  q.flags = (p.decoupled && p.weight_decay != 0 ? 1u : 0u) |
            (!p.decoupled && p.weight_decay != 0 ? 2u : 0u) | (p.amsgrad ? 4u : 0u);
  const Bound bw = bind(c, param), bg = bind(c, grad), bm = bind(c, exp_avg),
              bv = bind(c, exp_avg_sq), bwo = bind(c, param_out), bmo = bind(c, exp_avg_out),
              bvo = bind(c, exp_avg_sq_out);
  // Without amsgrad, binding 4 and 8 are exp_avg_sq's, unread and unwritten.
  const Bound bx = p.amsgrad ? bind(c, max_exp_avg_sq) : bv,
              bxo = p.amsgrad ? bind(c, max_exp_avg_sq_out) : bvo;
  q.w_base = bw.base;
  q.g_base = bg.base;
  q.m_base = bm.base;
  q.v_base = bv.base;
  q.x_base = bx.base;
  q.w_out_base = bwo.base;
  q.m_out_base = bmo.base;
  q.v_out_base = bvo.base;
  q.x_out_base = bxo.base;
  q.decay = k.decay;
  q.wd = k.wd;
  q.one_minus_beta1 = k.one_minus_beta1;
  q.beta2 = k.beta2;
  q.one_minus_beta2 = k.one_minus_beta2;
  q.bc2_sqrt = k.bc2_sqrt;
  q.eps = k.eps;
  q.neg_step = k.neg_step;
  const Binding bs[] = {bw.binding,  bg.binding,  bm.binding,  bv.binding, bx.binding,
                        bwo.binding, bmo.binding, bvo.binding, bxo.binding};
  c.dispatch(c.pipeline("adam", shaders::adam, 9, sizeof q), bs, &q, sizeof q,
             groups_for(param.numel()));
}

}  // namespace

void VulkanBackend::adam_step(const RawTensor& param, const RawTensor& grad,
                              const RawTensor& exp_avg, const RawTensor& exp_avg_sq,
                              const RawTensor& max_exp_avg_sq, const AdamParams& p,
                              const RawTensor& param_out, const RawTensor& exp_avg_out,
                              const RawTensor& exp_avg_sq_out,
                              const RawTensor& max_exp_avg_sq_out) {
  dispatch_adam(param, grad, exp_avg, exp_avg_sq, p.amsgrad ? max_exp_avg_sq : RawTensor(), p,
                param_out, exp_avg_out, exp_avg_sq_out,
                p.amsgrad ? max_exp_avg_sq_out : RawTensor());
}

void VulkanBackend::adam_step_multi(const std::vector<AdamStepItem>& items) {
  for (const AdamStepItem& it : items) {
    const RawTensor x = it.params.amsgrad ? it.max_exp_avg_sq : RawTensor();
    dispatch_adam(it.param, it.grad, it.exp_avg, it.exp_avg_sq, x, it.params, it.param, it.exp_avg,
                  it.exp_avg_sq, x);
  }
}

}  // namespace ember::vulkan
