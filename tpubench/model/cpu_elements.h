// Element access shared by tpubench's CPU kernels (batch_norm_cpu.cc and its headers,
// optim_cpu.cc): fp32 as is; bf16 as its 16 bits, widened by a shift and
// narrowed with round-to-nearest-even (NaN kept NaN), as TensorFlow rounds.

#ifndef TPUBENCH_MODEL_CPU_ELEMENTS_H_
#define TPUBENCH_MODEL_CPU_ELEMENTS_H_

#include <cstdint>
#include <cstring>

namespace tpubench {

struct F32 {
  using Raw = float;
  static inline float widen(float v) { return v; }
  static inline float keep(float v, bool on) { return on ? v : 0.f; }
  static inline float load(const float* p, int64_t i) { return p[i]; }
  static inline void store(float* p, int64_t i, float v) { p[i] = v; }
};

struct BF16 {
  using Raw = uint16_t;
  static inline float widen(uint16_t v) {
    uint32_t u = static_cast<uint32_t>(v) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
  }
  static inline float load(const uint16_t* p, int64_t i) { return widen(p[i]); }
  // V where ON, else +0, as a mask: the compiler vectorises this, not a select.
  static inline uint16_t keep(uint16_t v, bool on) {
    return v & static_cast<uint16_t>(0u - static_cast<uint32_t>(on));
  }
  static inline void store(uint16_t* p, int64_t i, float v) {
    uint32_t u;
    std::memcpy(&u, &v, sizeof u);
    uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
    uint32_t nan = (u >> 16) | 0x40u;
    p[i] = static_cast<uint16_t>((u & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
  }
};

}  // namespace tpubench

#endif  // TPUBENCH_MODEL_CPU_ELEMENTS_H_
