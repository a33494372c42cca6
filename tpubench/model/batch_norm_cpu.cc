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
//
// This file registers the ops and their CPU kernels: the forward pass is
// batch_norm_forward.h, the backward pass batch_norm_backward.h, and two
// more gradient kernels a residual network's backward pass needs (the sum
// of a block's two branch gradients, a layer's bias and ReLU gradient)
// grads_cpu.h.  One translation unit, so TensorFlow's headers are parsed
// once.

#include "batch_norm_backward.h"
#include "batch_norm_forward.h"
#include "cpu_blocks.h"
#include "grads_cpu.h"

namespace tpubench {

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

REGISTER_KERNEL_BUILDER(
    Name("TpubenchBatchNormTrain").Device(DEVICE_CPU).TypeConstraint<float>("T"),
    BatchNormTrainOp);
REGISTER_KERNEL_BUILDER(Name("TpubenchBatchNormTrain")
                            .Device(DEVICE_CPU)
                            .TypeConstraint<::tensorflow::bfloat16>("T"),
                        BatchNormTrainOp);

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

REGISTER_KERNEL_BUILDER(
    Name("TpubenchBatchNormTrainGrad").Device(DEVICE_CPU).TypeConstraint<float>("T"),
    BatchNormTrainGradOp);
REGISTER_KERNEL_BUILDER(Name("TpubenchBatchNormTrainGrad")
                            .Device(DEVICE_CPU)
                            .TypeConstraint<::tensorflow::bfloat16>("T"),
                        BatchNormTrainGradOp);

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
    Name("TpubenchBiasReluGrad").Device(DEVICE_CPU).TypeConstraint<float>("T"), BiasReluGradOp);
REGISTER_KERNEL_BUILDER(Name("TpubenchBiasReluGrad")
                            .Device(DEVICE_CPU)
                            .TypeConstraint<::tensorflow::bfloat16>("T"),
                        BiasReluGradOp);

}  // namespace tpubench
