// What tpubench's batch norm and gradient kernels share (batch_norm_forward.h,
// batch_norm_backward.h, grads_cpu.h; registered in batch_norm_cpu.cc): rows
// split into blocks run on the op's intra-op threads, per-block sums added in
// double, a tensor's raw elements, the batch norm's per-channel affine map and
// its channel-vector shapes.

#ifndef TPUBENCH_MODEL_CPU_BLOCKS_H_
#define TPUBENCH_MODEL_CPU_BLOCKS_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace tpubench {

using ::tensorflow::DEVICE_CPU;
using ::tensorflow::OpKernel;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Status;
using ::tensorflow::Tensor;
using ::tensorflow::TensorShape;
using ::tensorflow::shape_inference::InferenceContext;
using ::tensorflow::shape_inference::ShapeHandle;

constexpr int64_t kRowsPerBlock = 128;

inline int64_t NumBlocks(int64_t rows) { return (rows + kRowsPerBlock - 1) / kRowsPerBlock; }

// A tensor's elements as E's raw type (bf16 as its 16 bits).
template <typename Raw>
const Raw* In(const Tensor& t) {
  return reinterpret_cast<const Raw*>(t.tensor_data().data());
}
template <typename Raw>
Raw* Out(Tensor* t) {
  return reinterpret_cast<Raw*>(const_cast<char*>(t->tensor_data().data()));
}

// y = a x + b per channel: a = scale inv, b = offset - mean a.  The forward
// pass normalises with these and the backward pass recomputes the ReLU's
// input from them, so both must get them from here, bit for bit.
inline void Affine(const float* scale, const float* offset, const float* mean, const float* inv,
                   int64_t c, std::vector<float>* a, std::vector<float>* b) {
  a->resize(c);
  b->resize(c);
  for (int64_t j = 0; j < c; ++j) {
    (*a)[j] = scale[j] * inv[j];
    (*b)[j] = offset[j] - mean[j] * (*a)[j];
  }
}

// Splits ROWS into blocks of kRowsPerBlock and runs FN(block, first, end)
// for each on the op's intra-op threads.
template <typename Fn>
void ForBlocks(OpKernelContext* ctx, int64_t rows, int64_t channels, const Fn& fn) {
  const int64_t blocks = NumBlocks(rows);
  auto* pool = ctx->device()->tensorflow_cpu_worker_threads()->workers;
  const int64_t cost = kRowsPerBlock * channels * 8;
  pool->ParallelFor(blocks, cost, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t first = b * kRowsPerBlock;
      fn(b, first, std::min(rows, first + kRowsPerBlock));
    }
  });
}

// Sums the per-block partial sums (fp32, blocks x channels) in double.
inline void SumBlocks(const std::vector<float>& part, int64_t blocks, int64_t c,
                      std::vector<double>* out) {
  out->assign(c, 0.0);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* p = part.data() + b * c;
    for (int64_t j = 0; j < c; ++j) (*out)[j] += p[j];
  }
}

inline Status VectorOfChannels(InferenceContext* c, int output, ShapeHandle x) {
  if (c->RankKnown(x)) {
    c->set_output(output, c->Vector(c->Dim(x, c->Rank(x) - 1)));
  } else {
    c->set_output(output, c->Vector(InferenceContext::kUnknownDim));
  }
  return Status();
}

}  // namespace tpubench

#endif  // TPUBENCH_MODEL_CPU_BLOCKS_H_
