// Two gradient kernels a residual network's backward pass needs on a CPU,
// each one pass over its tensors: the sum of a residual block's two branch
// gradients (TpubenchAdd) and a layer's bias and ReLU gradient
// (TpubenchBiasReluGrad).
// Registered in batch_norm_cpu.cc.

#ifndef TPUBENCH_MODEL_GRADS_CPU_H_
#define TPUBENCH_MODEL_GRADS_CPU_H_

#include <cstdint>
#include <vector>

#include "cpu_blocks.h"
#include "cpu_elements.h"

namespace tpubench {

// The sum of two gradients of one tensor, for the two branches a residual
// block's input feeds: TensorFlow's AddN converts bf16 element by element.
class AddOp : public OpKernel {
 public:
  explicit AddOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& a = ctx->input(0);
    const Tensor& b = ctx->input(1);
    OP_REQUIRES(ctx, a.shape() == b.shape(),
                tensorflow::errors::InvalidArgument("a and b must have one shape"));
    Tensor* out;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0, 1}, 0, a.shape(), &out));
    if (a.dtype() == tensorflow::DT_BFLOAT16) {
      Add<BF16>(ctx, a, b, out);
    } else {
      Add<F32>(ctx, a, b, out);
    }
  }

 private:
  template <typename E>
  static void Add(OpKernelContext* ctx, const Tensor& a_t, const Tensor& b_t, Tensor* out_t) {
    using Raw = typename E::Raw;
    const Raw* a = In<Raw>(a_t);
    const Raw* b = In<Raw>(b_t);
    Raw* out = Out<Raw>(out_t);
    const int64_t n = a_t.NumElements();
    constexpr int64_t kRow = 1024;  // the flat tensor as rows of this many elements
    ForBlocks(ctx, (n + kRow - 1) / kRow, kRow, [&](int64_t, int64_t r0, int64_t r1) {
      const int64_t end = std::min(n, r1 * kRow);
      for (int64_t i = r0 * kRow; i < end; ++i) E::store(out, i, E::load(a, i) + E::load(b, i));
    });
  }
};

// The gradient of y = relu(z + bias) over the last axis (a convolution's or
// dense layer's bias and ReLU): dz = dy where y > 0, else 0, and dbias = the
// sum of dz over every row, in one pass over dy and y.  TensorFlow runs it as
// ReluGrad then BiasAddGrad, two passes of scalar code for bfloat16.  The
// sums are fp32 per block of rows and double across blocks, as the batch
// norm's are; dbias is rounded to T once.
class BiasReluGradOp : public OpKernel {
 public:
  explicit BiasReluGradOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& y = ctx->input(1);
    OP_REQUIRES(ctx, dy.shape() == y.shape(),
                tensorflow::errors::InvalidArgument("dy and y must have one shape, got ",
                                                    dy.shape().DebugString(), " and ",
                                                    y.shape().DebugString()));
    OP_REQUIRES(ctx, y.dims() >= 1,
                tensorflow::errors::InvalidArgument("y must have a channel axis"));
    const int64_t c = y.dim_size(y.dims() - 1);
    Tensor *dz, *dbias;
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, y.shape(), &dz));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({c}), &dbias));
    if (y.dtype() == tensorflow::DT_BFLOAT16) {
      Grad<BF16>(ctx, dy, y, dz, dbias);
    } else {
      Grad<F32>(ctx, dy, y, dz, dbias);
    }
  }

 private:
  template <typename E>
  static void Grad(OpKernelContext* ctx, const Tensor& dy_t, const Tensor& y_t, Tensor* dz_t,
                   Tensor* dbias_t) {
    using Raw = typename E::Raw;
    const int64_t c = y_t.dim_size(y_t.dims() - 1);
    const int64_t rows = c == 0 ? 0 : y_t.NumElements() / c;
    const Raw* dy = In<Raw>(dy_t);
    const Raw* y = In<Raw>(y_t);
    Raw* dz = Out<Raw>(dz_t);  // may be dy's buffer: each element is read before it is written
    Raw* dbias = Out<Raw>(dbias_t);
    const int64_t blocks = NumBlocks(rows);
    std::vector<float> part(blocks * c);
    ForBlocks(ctx, rows, c, [&](int64_t blk, int64_t r0, int64_t r1) {
      float* __restrict g = part.data() + blk * c;
      for (int64_t r = r0; r < r1; ++r) {
        const Raw* dyr = dy + r * c;
        const Raw* __restrict yr = y + r * c;
        Raw* dzr = dz + r * c;
        for (int64_t j = 0; j < c; ++j) {
          // dz is dy or zero, copied as its bits: no rounding, and no branch.
          const Raw d = E::keep(dyr[j], E::load(yr, j) > 0.f);
          dzr[j] = d;
          g[j] += E::widen(d);
        }
      }
    });
    std::vector<double> sum;
    SumBlocks(part, blocks, c, &sum);
    for (int64_t j = 0; j < c; ++j) E::store(dbias, j, static_cast<float>(sum[j]));
  }
};

}  // namespace tpubench

#endif  // TPUBENCH_MODEL_GRADS_CPU_H_
