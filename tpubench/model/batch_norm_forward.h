// The training batch norm's forward pass for channels-last tensors on a CPU,
// with the ReLU and the residual addition that follow it: x read twice
// (statistics, then y = relu(a x + b + side)), bf16 converted to fp32 in
// registers, all arithmetic fp32.  Registered in batch_norm_cpu.cc.

#ifndef TPUBENCH_MODEL_BATCH_NORM_FORWARD_H_
#define TPUBENCH_MODEL_BATCH_NORM_FORWARD_H_

#include <cstdint>
#include <vector>

#include "cpu_blocks.h"
#include "cpu_elements.h"

namespace tpubench {

template <typename E>
void Forward(OpKernelContext* ctx, const Tensor& x_t, const Tensor& scale_t,
             const Tensor& offset_t, const Tensor* side_t, bool relu, float epsilon,
             Tensor* y_t, Tensor* mean_t, Tensor* var_t, Tensor* inv_t) {
  using Raw = typename E::Raw;
  const int64_t c = x_t.dim_size(x_t.dims() - 1);
  const int64_t rows = c == 0 ? 0 : x_t.NumElements() / c;
  const Raw* x = In<Raw>(x_t);
  const Raw* side = side_t ? In<Raw>(*side_t) : nullptr;
  Raw* y = Out<Raw>(y_t);
  const float* scale = scale_t.flat<float>().data();
  const float* offset = offset_t.flat<float>().data();
  float* mean = mean_t->flat<float>().data();
  float* var = var_t->flat<float>().data();
  float* inv = inv_t->flat<float>().data();
  if (rows == 0) {
    for (int64_t j = 0; j < c; ++j) mean[j] = 0.f, var[j] = 0.f, inv[j] = 1.f / std::sqrt(epsilon);
    return;
  }
  // Sums of (x - shift) and its square, the shift being the first row: with
  // it, E[v^2] - E[v]^2 loses little to cancellation when |mean| >> std.
  std::vector<float> shift(c);
  for (int64_t j = 0; j < c; ++j) shift[j] = E::load(x, j);
  const int64_t blocks = NumBlocks(rows);
  std::vector<float> part_s(blocks * c), part_q(blocks * c);
  ForBlocks(ctx, rows, c, [&](int64_t b, int64_t r0, int64_t r1) {
    float* __restrict s = part_s.data() + b * c;
    float* __restrict q = part_q.data() + b * c;
    const float* __restrict k = shift.data();
    for (int64_t r = r0; r < r1; ++r) {
      const Raw* __restrict row = x + r * c;
      for (int64_t j = 0; j < c; ++j) {
        const float v = E::load(row, j) - k[j];
        s[j] += v;
        q[j] += v * v;
      }
    }
  });
  std::vector<double> s, q;
  SumBlocks(part_s, blocks, c, &s);
  SumBlocks(part_q, blocks, c, &q);
  for (int64_t j = 0; j < c; ++j) {
    const double m = s[j] / rows;
    const double v = std::max(q[j] / rows - m * m, 0.0);
    mean[j] = static_cast<float>(shift[j] + m);
    var[j] = static_cast<float>(v);
    inv[j] = static_cast<float>(1.0 / std::sqrt(v + epsilon));
  }
  std::vector<float> a, b;
  Affine(scale, offset, mean, inv, c, &a, &b);
  ForBlocks(ctx, rows, c, [&](int64_t, int64_t r0, int64_t r1) {
    const float* __restrict pa = a.data();
    const float* __restrict pb = b.data();
    for (int64_t r = r0; r < r1; ++r) {
      const Raw* __restrict xr = x + r * c;
      const Raw* __restrict sr = side ? side + r * c : nullptr;
      Raw* __restrict yr = y + r * c;
      if (sr && relu) {
        for (int64_t j = 0; j < c; ++j)
          E::store(yr, j, std::max(E::load(xr, j) * pa[j] + pb[j] + E::load(sr, j), 0.f));
      } else if (sr) {
        for (int64_t j = 0; j < c; ++j)
          E::store(yr, j, E::load(xr, j) * pa[j] + pb[j] + E::load(sr, j));
      } else if (relu) {
        for (int64_t j = 0; j < c; ++j)
          E::store(yr, j, std::max(E::load(xr, j) * pa[j] + pb[j], 0.f));
      } else {
        for (int64_t j = 0; j < c; ++j) E::store(yr, j, E::load(xr, j) * pa[j] + pb[j]);
      }
    }
  });
}

class BatchNormTrainOp : public OpKernel {
 public:
  explicit BatchNormTrainOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("epsilon", &epsilon_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("relu", &relu_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("has_side", &has_side_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& x = ctx->input(0);
    const Tensor& side = ctx->input(3);
    OP_REQUIRES(ctx, x.dims() >= 1,
                tensorflow::errors::InvalidArgument("x must have a channel axis"));
    const int64_t c = x.dim_size(x.dims() - 1);
    OP_REQUIRES(ctx, ctx->input(1).NumElements() == c && ctx->input(2).NumElements() == c,
                tensorflow::errors::InvalidArgument("scale and offset must have ", c, " values"));
    OP_REQUIRES(ctx, !has_side_ || side.shape() == x.shape(),
                tensorflow::errors::InvalidArgument("side must have x's shape"));
    Tensor *y, *mean, *var, *inv;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &y));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({c}), &mean));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({c}), &var));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(3, TensorShape({c}), &inv));
    const Tensor* s = has_side_ ? &side : nullptr;
    if (x.dtype() == tensorflow::DT_BFLOAT16) {
      Forward<BF16>(ctx, x, ctx->input(1), ctx->input(2), s, relu_, epsilon_, y, mean, var, inv);
    } else {
      Forward<F32>(ctx, x, ctx->input(1), ctx->input(2), s, relu_, epsilon_, y, mean, var, inv);
    }
  }

 private:
  float epsilon_;
  bool relu_, has_side_;
};

}  // namespace tpubench

#endif  // TPUBENCH_MODEL_BATCH_NORM_FORWARD_H_
