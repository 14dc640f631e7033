import type { HiddenAct } from '../config';

/**
 * WGSL of a gated MLP's activation a(g), `gateValue`, and its slope a'(g), `gateSlope`, for the
 * programs that apply it (swiglu.webgpu.ts's, the down projection's backward in lora.webgpu.ts,
 * the decoding step's finishSwigluShader):
 *
 *   silu: a = g s,  a' = s (1 + g (1 - s)),  s = sigmoid(g)
 *   gelu: a = g/2 (1 + t),  a' = (1 + t)/2 + g/2 (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 g^2),
 *         t = tanh(sqrt(2/pi) (g + 0.044715 g^3))
 *
 * tanh's argument is clamped to +-20, where it is +-1 in f32 already, so that no backend's tanh
 * meets an overflowing exp.
 */
export function gateActivationWgsl(activation: HiddenAct): string {
  if (activation === 'silu') {
    return `fn gateValue(g : f32) -> f32 { return g / (1.0 + exp(-g)); }
fn gateSlope(g : f32) -> f32 {
  let s = 1.0 / (1.0 + exp(-g));
  return s * (1.0 + g * (1.0 - s));
}`;
  }
  return `const GELU_C : f32 = ${Math.sqrt(2 / Math.PI)};
fn geluTanh(g : f32) -> f32 { return tanh(clamp(GELU_C * (g + 0.044715 * g * g * g), -20.0, 20.0)); }
fn gateValue(g : f32) -> f32 { return g * 0.5 * (geluTanh(g) + 1.0); }
fn gateSlope(g : f32) -> f32 {
  let t = geluTanh(g);
  return (t + 1.0) * 0.5 + g * 0.5 * (1.0 - t * t) * ((g * g * ${3 * 0.044715} + 1.0) * GELU_C);
}`;
}
