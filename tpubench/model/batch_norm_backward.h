// The gradient of the training batch norm (batch_norm_forward.h) (with its ReLU and
// residual addition): two passes over x and dy (the two sums, then dx and
// dside), reading y too where a side input was added before the ReLU, all
// arithmetic in fp32.  Registered in batch_norm_cpu.cc;
// tpubench/model/cpu_ops.py makes it TpubenchBatchNormTrain's gradient.

#ifndef TPUBENCH_MODEL_BATCH_NORM_BACKWARD_H_
#define TPUBENCH_MODEL_BATCH_NORM_BACKWARD_H_

#include <cstdint>
#include <vector>

#include "cpu_blocks.h"
#include "cpu_elements.h"

namespace tpubench {

// Where the backward pass learns which elements the ReLU passed.
enum Mask { kNoRelu, kFromX, kFromY };

// dz for element J of a row: dy, zeroed where the ReLU cut.  kFromX
// recomputes the pre-activation a x + b exactly as the forward pass did (the
// library is built without floating-point contraction), so a batch norm with
// no side input never reads y back; with a side input y itself is read.
template <typename E, Mask M>
struct Dz {
  const float* a;
  const float* b;
  inline float operator()(const typename E::Raw* dyr, const typename E::Raw* xr,
                          const typename E::Raw* yr, int64_t j) const {
    const float dy = E::load(dyr, j);
    if (M == kFromX) return E::load(xr, j) * a[j] + b[j] > 0.f ? dy : 0.f;
    if (M == kFromY) return E::load(yr, j) > 0.f ? dy : 0.f;
    return dy;
  }
};

template <typename E, Mask M>
void Backward(OpKernelContext* ctx, const Tensor& dy_t, const Tensor& x_t, const Tensor& y_t,
              const Tensor& scale_t, const Tensor& offset_t, const Tensor& mean_t,
              const Tensor& inv_t, Tensor* dx_t, Tensor* dscale_t, Tensor* doffset_t,
              Tensor* dside_t) {
  using Raw = typename E::Raw;
  const int64_t c = x_t.dim_size(x_t.dims() - 1);
  const int64_t rows = c == 0 ? 0 : x_t.NumElements() / c;
  const Raw* dy = In<Raw>(dy_t);
  const Raw* x = In<Raw>(x_t);
  const Raw* y = M == kFromY ? In<Raw>(y_t) : nullptr;
  Raw* dx = Out<Raw>(dx_t);
  Raw* dside = dside_t ? Out<Raw>(dside_t) : nullptr;
  const float* scale = scale_t.flat<float>().data();
  const float* offset = offset_t.flat<float>().data();
  const float* mean = mean_t.flat<float>().data();
  const float* inv = inv_t.flat<float>().data();
  float* dscale = dscale_t->flat<float>().data();
  float* doffset = doffset_t->flat<float>().data();
  if (rows == 0) {
    for (int64_t j = 0; j < c; ++j) dscale[j] = 0.f, doffset[j] = 0.f;
    return;
  }
  std::vector<float> a, b;  // the forward pass's
  Affine(scale, offset, mean, inv, c, &a, &b);
  const Dz<E, M> dz_of{a.data(), b.data()};
  // The sums of dz and of dz (x - mean) give d offset and d scale.
  const int64_t blocks = NumBlocks(rows);
  std::vector<float> part_g(blocks * c), part_h(blocks * c);
  ForBlocks(ctx, rows, c, [&](int64_t blk, int64_t r0, int64_t r1) {
    float* __restrict g = part_g.data() + blk * c;
    float* __restrict h = part_h.data() + blk * c;
    const float* __restrict m = mean;
    for (int64_t r = r0; r < r1; ++r) {
      const Raw* __restrict dyr = dy + r * c;
      const Raw* __restrict xr = x + r * c;
      const Raw* __restrict yr = y ? y + r * c : nullptr;
      for (int64_t j = 0; j < c; ++j) {
        const float dz = dz_of(dyr, xr, yr, j);
        g[j] += dz;
        h[j] += dz * (E::load(xr, j) - m[j]);
      }
    }
  });
  std::vector<double> g, h;
  SumBlocks(part_g, blocks, c, &g);
  SumBlocks(part_h, blocks, c, &h);
  // dx = scale inv (dz - mean(dz) - xhat mean(dz xhat)), xhat = (x - mean) inv.
  std::vector<float> mg(c), mh(c);
  for (int64_t j = 0; j < c; ++j) {
    doffset[j] = static_cast<float>(g[j]);
    dscale[j] = static_cast<float>(h[j] * inv[j]);
    mg[j] = static_cast<float>(g[j] / rows);
    mh[j] = static_cast<float>(h[j] / rows * inv[j] * inv[j]);
  }
  ForBlocks(ctx, rows, c, [&](int64_t, int64_t r0, int64_t r1) {
    const float* __restrict pk = a.data();
    const float* __restrict pg = mg.data();
    const float* __restrict ph = mh.data();
    const float* __restrict m = mean;
    for (int64_t r = r0; r < r1; ++r) {
      const Raw* __restrict dyr = dy + r * c;
      const Raw* __restrict xr = x + r * c;
      const Raw* __restrict yr = y ? y + r * c : nullptr;
      Raw* __restrict dxr = dx + r * c;
      Raw* __restrict dsr = dside ? dside + r * c : nullptr;
      for (int64_t j = 0; j < c; ++j) {
        const float dz = dz_of(dyr, xr, yr, j);
        E::store(dxr, j, pk[j] * (dz - pg[j] - (E::load(xr, j) - m[j]) * ph[j]));
      }
      if (dsr && M == kNoRelu) {
        std::memcpy(dsr, dyr, c * sizeof(Raw));
      } else if (dsr) {
        for (int64_t j = 0; j < c; ++j) E::store(dsr, j, dz_of(dyr, xr, yr, j));
      }
    }
  });
}

// The gradient op's inputs, in its order: dy, x, y, scale, offset, mean, inv_std.
template <typename E>
void BackwardFor(bool relu, bool has_side, OpKernelContext* ctx, Tensor* dx, Tensor* dscale,
                 Tensor* doffset, Tensor* dside) {
  const Tensor &dy = ctx->input(0), &x = ctx->input(1), &y = ctx->input(2);
  const Tensor &scale = ctx->input(3), &offset = ctx->input(4);
  const Tensor &mean = ctx->input(5), &inv = ctx->input(6);
  if (!relu) {
    Backward<E, kNoRelu>(ctx, dy, x, y, scale, offset, mean, inv, dx, dscale, doffset, dside);
  } else if (has_side) {
    Backward<E, kFromY>(ctx, dy, x, y, scale, offset, mean, inv, dx, dscale, doffset, dside);
  } else {
    Backward<E, kFromX>(ctx, dy, x, y, scale, offset, mean, inv, dx, dscale, doffset, dside);
  }
}

class BatchNormTrainGradOp : public OpKernel {
 public:
  explicit BatchNormTrainGradOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("relu", &relu_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("has_side", &has_side_));
  }

  void Compute(OpKernelContext* ctx) override {
    const Tensor& dy = ctx->input(0);
    const Tensor& x = ctx->input(1);
    const Tensor& y = ctx->input(2);
    const bool needs_y = relu_ && has_side_;
    OP_REQUIRES(ctx, dy.shape() == x.shape() && (!needs_y || y.shape() == x.shape()),
                tensorflow::errors::InvalidArgument("dy, x and y must have one shape"));
    const int64_t c = x.dim_size(x.dims() - 1);
    Tensor *dx, *dscale, *doffset, *dside;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, x.shape(), &dx));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({c}), &dscale));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({c}), &doffset));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(3, has_side_ ? x.shape() : TensorShape({0}), &dside));
    Tensor* ds = has_side_ ? dside : nullptr;
    if (x.dtype() == tensorflow::DT_BFLOAT16) {
      BackwardFor<BF16>(relu_, has_side_, ctx, dx, dscale, doffset, ds);
    } else {
      BackwardFor<F32>(relu_, has_side_, ctx, dx, dscale, doffset, ds);
    }
  }

 private:
  bool relu_, has_side_;
};

}  // namespace tpubench

#endif  // TPUBENCH_MODEL_BATCH_NORM_BACKWARD_H_
