"""bench/profile_top.py: each GPU kernel lands in the kind its work is.

The names are kernels seen in a ResNet-50 bf16 profile on an H200 (TensorFlow 2.21,
cuDNN 9), cut where they stop mattering.  Eigen's element-wise kernels spell casts
"TensorConversionOp", which once put ReLU's gradient under convolution/GEMM.
"""

from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import profile_top  # noqa: E402

RELU_GRAD = (
    "void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<Eigen::TensorAssignOp<"
    "Eigen::TensorMap<Eigen::Tensor<Eigen::bfloat16, 1, 1, long>, 16, Eigen::MakePointer>, "
    "Eigen::TensorCwiseBinaryOp<Eigen::internal::scalar_product_op<Eigen::bfloat16 const, "
    "Eigen::bfloat16 const>, Eigen::TensorMap<Eigen::Tensor<Eigen::bfloat16 const, 1, 1, long>"
    ", 16, Eigen::MakePointer> const, Eigen::TensorConversionOp<Eigen::bfloat16, "
    "Eigen::TensorCwiseBinaryOp<Eigen::internal::scalar_cmp_op<"
)


@pytest.mark.parametrize(
    "name, kind",
    [
        (RELU_GRAD, "element-wise"),
        (
            "void Eigen::internal::EigenMetaKernel<Eigen::TensorEvaluator<Eigen::TensorAssignOp<"
            "Eigen::TensorMap<Eigen::Tensor<Eigen::bfloat16, 4, 1, int>>, "
            "Eigen::TensorShufflingOp<const Eigen::array<int, 4>",
            "transpose",
        ),
        (
            "void cudnn::batchnorm_bwtr_nhwc_semiPersist<__nv_bfloat16, float, __nv_bfloat16, "
            "512, 16, 3, 4, 1, 0, true, 2>(cudnn::NhwcBatchNormBwdParams<__nv_bfloat16, float>)",
            "batch norm",
        ),
        (
            "sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64",
            "convolution/GEMM",
        ),
        ("nvjet_sm90_tst_128x256_64x4_2x1_v_bz_coopA_NNN", "convolution/GEMM"),
        (
            "void cutlass__5x_cudnn::Kernel<cutlass_tensorop_bf16_s16816fprop_optimized_bf16_"
            "256x64_32x4_nhwc_align8>",
            "convolution/GEMM",
        ),
        (
            "void cudnn::pooling_bw_max_nhwc_kernel<__nv_bfloat16, float, 3, "
            "(cudnnNanPropagation_t)0>(cudnnTensorStruct, __nv_bfloat16 const*)",
            "pooling",
        ),
        (
            "void tensorflow::BiasGradNHWC_SharedAtomics<Eigen::bfloat16>(int, "
            "Eigen::bfloat16 const*, Eigen::bfloat16*, int)",
            "element-wise",
        ),
        ("Memcpy DtoD", "copies"),
        ("Conv2DBackpropFilter", "convolution/GEMM"),
        ("Relu", "element-wise"),
    ],
)
def test_a_kernel_is_put_under_the_kind_of_work_it_does(name, kind):
    assert profile_top.kind(name) == kind
