// The dense models of Debian's ONNX test data (libonnx-testdata) that the
// tests import and plan (OnnxImport.OnnxTestdataSampleImportsPlansAndVerifies)
// and bench/order_bench tables as one row: every value of them is planned.
#pragma once

namespace memplan::test {

inline constexpr const char* kOnnxTestdataDir = "/usr/share/libonnx-testdata/data";
inline constexpr const char* kOnnxTestdataDense[] = {
    "node/test_conv_with_strides_padding", "node/test_lstm_defaults",
    "node/test_gru_defaults", "node/test_resize_downsample_scales_linear", "node/test_if",
    "node/test_scan9_sum", "node/test_scan_sum", "node/test_range_float_type_positive_delta",
    "node/test_reduce_mean_default_axes_keepdims_example", "node/test_split_equal_parts_1d",
    "node/test_gather_0", "node/test_matmul_4d", "node/test_softmax_axis_0",
    "node/test_einsum_batch_matmul", "node/test_maxpool_2d_pads",
    "node/test_averagepool_2d_same_upper", "node/test_batchnorm_example",
    "node/test_layer_normalization_2d_axis0", "node/test_reshape_reordered_all_dims",
    "node/test_transpose_all_permutations_0", "node/test_concat_3d_axis_1", "node/test_slice",
    "node/test_expand_dim_changed", "node/test_tile", "node/test_top_k",
    "node/test_convtranspose", "node/test_dft", "node/test_stft", "node/test_sce_mean",
    "node/test_dynamicquantizelinear", "node/test_qlinearconv",
    "simple/test_expand_shape_model1"};

}  // namespace memplan::test
