// Optimizer updates of one fp32 variable in one pass over its arrays:
// Adadelta's, and RMSprop's without momentum.
//
// TensorFlow's ResourceApplyAdadelta writes the update as three Eigen
// assignments (accum, var, accum_update), each a pass over the arrays, and
// computes the step twice.  Here each element is read and written once:
//
//   accum        = rho accum + (1 - rho) grad^2
//   update       = sqrt(accum_update + eps) / sqrt(accum + eps) grad
//   accum_update = rho accum_update + (1 - rho) update^2
//   var         -= lr update
//
// On a 2-vCPU AMD EPYC it took 0.7 ms for 1.18 million parameters where
// TensorFlow's kernel took 1.0 (docs/cpu.md).
//
// RMSprop without momentum (Keras' arithmetic):
//
//   ms   = rho ms + (1 - rho) grad^2
//   var -= lr grad / sqrt(ms + eps)
//
// TensorFlow's ResourceApplyRMSProp always keeps a momentum buffer, so
// without momentum it reads and writes a third array for nothing.
//
// Both take the gradient in fp32 or bf16 (widened in registers, exactly as
// a cast would), and may also write the new weights, rounded to bf16 as
// TensorFlow's cast rounds, into a bf16 variable: the copy a bf16 layer
// reads in the next step's forward pass (tpubench/model/weight_copy.py),
// so that step needs no cast of its weights either way.
//
// Built with the batch-norm kernel into one library by
// tpubench/model/cpu_ops.py.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/resource_mgr.h"
#include "tensorflow/core/framework/resource_var.h"

#include "cpu_elements.h"

namespace tpubench {

using ::tensorflow::DEVICE_CPU;
using ::tensorflow::OpKernel;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Status;
using ::tensorflow::Tensor;
using ::tensorflow::Var;

// Elements [0, n) of one block; the arrays never overlap.  G: the
// gradient's element type (F32 or BF16).  COPY: the new weights in bf16, or null.
template <typename G>
static void AdadeltaBlock(float* __restrict var, float* __restrict accum,
                          float* __restrict accum_update, const typename G::Raw* __restrict grad,
                          uint16_t* __restrict copy, int64_t n, float lr, float rho,
                          float epsilon) {
  const float keep = 1.0f - rho;
  for (int64_t i = 0; i < n; ++i) {
    const float g = G::load(grad, i);
    const float a = accum[i] * rho + g * g * keep;
    const float u = std::sqrt(accum_update[i] + epsilon) / std::sqrt(a + epsilon) * g;
    accum[i] = a;
    accum_update[i] = accum_update[i] * rho + u * u * keep;
    var[i] -= lr * u;
  }
  if (copy != nullptr) {
    for (int64_t i = 0; i < n; ++i) BF16::store(copy, i, var[i]);
  }
}

template <typename G>
static void RmspropBlock(float* __restrict var, float* __restrict ms,
                         const typename G::Raw* __restrict grad,
                         uint16_t* __restrict copy, int64_t n, float lr, float rho,
                         float epsilon) {
  const float keep = 1.0f - rho;
  for (int64_t i = 0; i < n; ++i) {
    const float g = G::load(grad, i);
    const float m = ms[i] * rho + g * g * keep;
    ms[i] = m;
    var[i] -= lr * g / std::sqrt(m + epsilon);
  }
  if (copy != nullptr) {
    for (int64_t i = 0; i < n; ++i) BF16::store(copy, i, var[i]);
  }
}

// The variable's buffer, ready to write in place: copied first where a read
// still holds it (as TensorFlow's own training ops do).
static Status Writable(OpKernelContext* ctx, Var* v, char** out) {
  Tensor* t = v->tensor();
  if (!t->IsInitialized()) {
    return tensorflow::errors::FailedPrecondition("a variable of the update is not initialised");
  }
  if (v->copy_on_read_mode.load() || !t->RefCountIsOne()) {
    Tensor copy;
    TF_RETURN_IF_ERROR(ctx->allocate_temp(t->dtype(), t->shape(), &copy));
    std::memcpy(const_cast<char*>(copy.tensor_data().data()), t->tensor_data().data(),
                t->TotalBytes());
    *t = copy;
  }
  *out = const_cast<char*>(t->tensor_data().data());
  return Status();
}

// The update of K resource variables (inputs 0..K-1; the first is the
// weights) by one gradient (input K, fp32 or bf16) and three scalars
// (K+1..K+3), run over blocks of the flat arrays on the op's intra-op
// threads; with one more resource (input K+4), a bf16 variable of the same
// shape, the new weights are also written there in bf16.
template <int K>
class ApplyOp : public OpKernel {
 public:
  explicit ApplyOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) override {
    OP_REQUIRES(ctx, ctx->num_inputs() <= K + 5,
                tensorflow::errors::InvalidArgument("at most one bf16 copy of the weights"));
    const bool has_copy = ctx->num_inputs() > K + 4;
    const int count = K + (has_copy ? 1 : 0);
    tensorflow::core::RefCountPtr<Var> vars[K + 1];
    for (int i = 0; i < count; ++i) {
      const int input = i < K ? i : K + 4;
      OP_REQUIRES_OK(ctx, LookupResource(ctx, HandleFromInput(ctx, input), &vars[i]));
    }
    // Each variable's lock, in address order (as TensorFlow takes them), once each.
    std::vector<tensorflow::mutex*> locks;
    for (int i = 0; i < count; ++i) locks.push_back(vars[i]->mu());
    std::sort(locks.begin(), locks.end());
    locks.erase(std::unique(locks.begin(), locks.end()), locks.end());
    for (auto* mu : locks) mu->lock();
    struct Unlock {
      std::vector<tensorflow::mutex*>* held;
      ~Unlock() {
        for (auto* mu : *held) mu->unlock();
      }
    } unlock{&locks};

    const Tensor& grad = ctx->input(K);
    for (int i = 0; i < count; ++i) {
      const Tensor* t = vars[i]->tensor();
      const auto want = i < K ? tensorflow::DT_FLOAT : tensorflow::DT_BFLOAT16;
      OP_REQUIRES(ctx, t->dtype() == want,
                  tensorflow::errors::InvalidArgument(
                      i < K ? "the variables must be float32" : "the copy must be bfloat16"));
      OP_REQUIRES(ctx, t->shape() == grad.shape(),
                  tensorflow::errors::InvalidArgument(
                      "grad and the variables must have one shape: grad ",
                      grad.shape().DebugString(), ", variable ", t->shape().DebugString()));
    }
    float scalars[3];
    for (int i = 0; i < 3; ++i) {
      const Tensor& t = ctx->input(K + 1 + i);
      OP_REQUIRES(ctx, tensorflow::TensorShapeUtils::IsScalar(t.shape()),
                  tensorflow::errors::InvalidArgument("the hyperparameters must be scalars"));
      scalars[i] = t.scalar<float>()();
    }
    char* raw[K + 1] = {};
    for (int i = 0; i < count; ++i) OP_REQUIRES_OK(ctx, Writable(ctx, vars[i].get(), &raw[i]));
    if (grad.dtype() == tensorflow::DT_BFLOAT16) {
      Run<BF16>(ctx, raw, grad, scalars);
    } else {
      Run<F32>(ctx, raw, grad, scalars);
    }
  }

 private:
  // G: the gradient's element type (F32 or BF16).
  template <typename G>
  static void Run(OpKernelContext* ctx, char* const* raw, const Tensor& grad,
                  const float* scalars) {
    const auto* g = reinterpret_cast<const typename G::Raw*>(grad.tensor_data().data());
    float* arrays[K];
    for (int i = 0; i < K; ++i) arrays[i] = reinterpret_cast<float*>(raw[i]);
    uint16_t* copy = reinterpret_cast<uint16_t*>(raw[K]);
    const int64_t n = grad.NumElements();
    constexpr int64_t kBlock = 4096;
    auto* pool = ctx->device()->tensorflow_cpu_worker_threads()->workers;
    pool->ParallelFor((n + kBlock - 1) / kBlock, kBlock * 32, [&](int64_t b0, int64_t b1) {
      const int64_t first = b0 * kBlock;
      const int64_t len = std::min(n, b1 * kBlock) - first;
      uint16_t* out = copy == nullptr ? nullptr : copy + first;
      if (K == 3) {
        AdadeltaBlock<G>(arrays[0] + first, arrays[1] + first, arrays[K - 1] + first, g + first,
                         out, len, scalars[0], scalars[1], scalars[2]);
      } else {
        RmspropBlock<G>(arrays[0] + first, arrays[1] + first, g + first, out, len, scalars[0],
                        scalars[1], scalars[2]);
      }
    });
  }
};

REGISTER_OP("TpubenchApplyAdadelta")
    .Input("var: resource")
    .Input("accum: resource")
    .Input("accum_update: resource")
    .Input("grad: Tgrad")
    .Input("lr: float")
    .Input("rho: float")
    .Input("epsilon: float")
    .Input("copy: Ncopy * resource")
    .Attr("Tgrad: {float, bfloat16} = DT_FLOAT")
    .Attr("Ncopy: int >= 0 = 0")
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext*) { return Status(); });

REGISTER_OP("TpubenchApplyRmsprop")
    .Input("var: resource")
    .Input("ms: resource")
    .Input("grad: Tgrad")
    .Input("lr: float")
    .Input("rho: float")
    .Input("epsilon: float")
    .Input("copy: Ncopy * resource")
    .Attr("Tgrad: {float, bfloat16} = DT_FLOAT")
    .Attr("Ncopy: int >= 0 = 0")
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext*) { return Status(); });

REGISTER_KERNEL_BUILDER(Name("TpubenchApplyAdadelta").Device(DEVICE_CPU), ApplyOp<3>);
REGISTER_KERNEL_BUILDER(Name("TpubenchApplyRmsprop").Device(DEVICE_CPU), ApplyOp<2>);

}  // namespace tpubench
