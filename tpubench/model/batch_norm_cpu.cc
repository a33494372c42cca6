// Training batch norm for channels-last tensors on a CPU, with the ReLU and
// the residual addition that follow it in one pass over the activations.
//
// TensorFlow's CPU batch norm (oneDNN's, for NHWC) reads the activations
// three or four times and runs no faster in bf16 than in fp32, and the ReLU,
// its gradient and the residual addition after it are separate passes in
// TensorFlow's own element-wise kernels, which are scalar code for bfloat16.
// Here the forward pass reads x twice (statistics, then y = relu(a x + b +
// side)) and the backward pass reads x and dy twice (the two sums, then dx
// and dside), and y too where a side input was added before the ReLU,
// converting bf16 to fp32 in registers; all arithmetic is fp32, as in
// oneDNN's kernel.  tpubench/model/cpu_ops.py compiles this
// file on first use and registers the gradient.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"

#include "cpu_elements.h"

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
static void Affine(const float* scale, const float* offset, const float* mean, const float* inv,
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
static void SumBlocks(const std::vector<float>& part, int64_t blocks, int64_t c,
                      std::vector<double>* out) {
  out->assign(c, 0.0);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* p = part.data() + b * c;
    for (int64_t j = 0; j < c; ++j) (*out)[j] += p[j];
  }
}

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

static Status VectorOfChannels(InferenceContext* c, int output, ShapeHandle x) {
  if (c->RankKnown(x)) {
    c->set_output(output, c->Vector(c->Dim(x, c->Rank(x) - 1)));
  } else {
    c->set_output(output, c->Vector(InferenceContext::kUnknownDim));
  }
  return Status();
}

REGISTER_OP("TpubenchBatchNormTrain")
    .Input("x: T")
    .Input("scale: float")
    .Input("offset: float")
    .Input("side: T")
    .Output("y: T")
    .Output("mean: float")
    .Output("variance: float")
    .Output("inv_std: float")
    .Attr("T: {bfloat16, float}")
    .Attr("epsilon: float")
    .Attr("relu: bool")
    .Attr("has_side: bool")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->input(0));
      for (int i = 1; i < 4; ++i) VectorOfChannels(c, i, c->input(0)).IgnoreError();
      return Status();
    });

REGISTER_OP("TpubenchBatchNormTrainGrad")
    .Input("dy: T")
    .Input("x: T")
    .Input("y: T")
    .Input("scale: float")
    .Input("offset: float")
    .Input("mean: float")
    .Input("inv_std: float")
    .Output("dx: T")
    .Output("dscale: float")
    .Output("doffset: float")
    .Output("dside: T")
    .Attr("T: {bfloat16, float}")
    .Attr("relu: bool")
    .Attr("has_side: bool")
    .SetShapeFn([](InferenceContext* c) {
      bool has_side;
      TF_RETURN_IF_ERROR(c->GetAttr("has_side", &has_side));
      c->set_output(0, c->input(1));
      VectorOfChannels(c, 1, c->input(1)).IgnoreError();
      VectorOfChannels(c, 2, c->input(1)).IgnoreError();
      c->set_output(3, has_side ? c->input(1) : c->Vector(0));
      return Status();
    });

REGISTER_OP("TpubenchAdd")
    .Input("a: T")
    .Input("b: T")
    .Output("sum: T")
    .Attr("T: {bfloat16, float}")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->input(0));
      return Status();
    });

REGISTER_OP("TpubenchBiasReluGrad")
    .Input("dy: T")
    .Input("y: T")
    .Output("dz: T")
    .Output("dbias: T")
    .Attr("T: {bfloat16, float}")
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->input(1));
      return VectorOfChannels(c, 1, c->input(1));
    });

REGISTER_KERNEL_BUILDER(Name("TpubenchAdd").Device(DEVICE_CPU).TypeConstraint<float>("T"),
                        AddOp);
REGISTER_KERNEL_BUILDER(
    Name("TpubenchAdd").Device(DEVICE_CPU).TypeConstraint<::tensorflow::bfloat16>("T"), AddOp);
REGISTER_KERNEL_BUILDER(
    Name("TpubenchBatchNormTrain").Device(DEVICE_CPU).TypeConstraint<float>("T"),
    BatchNormTrainOp);
REGISTER_KERNEL_BUILDER(Name("TpubenchBatchNormTrain")
                            .Device(DEVICE_CPU)
                            .TypeConstraint<::tensorflow::bfloat16>("T"),
                        BatchNormTrainOp);
REGISTER_KERNEL_BUILDER(
    Name("TpubenchBatchNormTrainGrad").Device(DEVICE_CPU).TypeConstraint<float>("T"),
    BatchNormTrainGradOp);
REGISTER_KERNEL_BUILDER(Name("TpubenchBatchNormTrainGrad")
                            .Device(DEVICE_CPU)
                            .TypeConstraint<::tensorflow::bfloat16>("T"),
                        BatchNormTrainGradOp);

REGISTER_KERNEL_BUILDER(
    Name("TpubenchBiasReluGrad").Device(DEVICE_CPU).TypeConstraint<float>("T"), BiasReluGradOp);
REGISTER_KERNEL_BUILDER(Name("TpubenchBiasReluGrad")
                            .Device(DEVICE_CPU)
                            .TypeConstraint<::tensorflow::bfloat16>("T"),
                        BiasReluGradOp);

}  // namespace tpubench
