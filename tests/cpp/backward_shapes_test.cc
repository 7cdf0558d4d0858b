// Backward operators called by hand with inputs that do not fit their forward: every
// registered `_backward_*` operator (and MXNet's other gradient names, `*_backward*`) is
// taken from the registry (so a new one is covered, and fails here until it has a valid
// call below), called once as its forward would call it, then once for each input and
// each output given a shape that breaks the contract. Each such call must raise an error
// naming the operator, never compute: an unchecked input is read out of bounds (which the
// ASan build of this test reports) or gives garbage.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "op_test_util.h"

namespace weft {
namespace test {
namespace {

// How one input is filled: its dtype and the range of its values.
struct Fill {
  DType dtype;
  double lo, hi;
};

struct Call {
  KwArgs params;
  std::vector<Shape> in;
  // Inputs that are not float32 values in [0, 1): input index -> fill.
  std::map<int, Fill> fill = {};
};

const Shape kD{3, 4, 5};

// A call that fits for each backward operator whose inputs are not simply two arrays of
// one shape (the unary math gradients: out_grad and the forward's input or output).
const std::map<std::string, Call>& ValidCalls() {
  static const std::map<std::string, Call> calls = {
      {"_backward_Activation", {{{"act_type", "tanh"}}, {kD, kD}}},
      {"_backward_BatchNorm", {{{"fix_gamma", "False"}}, {kD, kD, {4}, {4}, {4}}}},
      {"_backward_Convolution",
       {{{"kernel", "(3,3)"}, {"num_filter", "4"}, {"num_group", "2"}, {"stride", "(2,1)"}, {"pad", "(1,1)"}},
        {{2, 4, 4, 6}, {2, 4, 7, 6}, {4, 2, 3, 3}}}},
      {"_backward_Deconvolution",
       {{{"kernel", "(3,2)"}, {"num_filter", "4"}, {"stride", "(2,1)"}, {"pad", "(1,0)"}, {"adj", "(1,0)"},
         {"no_bias", "False"}},
        {{2, 4, 8, 6}, {2, 3, 4, 5}, {3, 4, 3, 2}}}},
      {"_backward_Dropout", {{{"p", "0.5"}}, {kD, kD}}},
      {"_backward_Embedding", {{{"input_dim", "5"}, {"output_dim", "3"}}, {{2, 4, 3}, {2, 4}}}},
      {"_backward_FullyConnected", {{{"num_hidden", "4"}}, {{2, 4}, {2, 3}, {4, 3}, {4}}}},
      {"_backward_GroupNorm", {{{"num_groups", "2"}}, {kD, kD, {2}, {3, 2}, {3, 2}}}},
      {"_backward_InstanceNorm", {{}, {kD, kD, {4}, {3, 4}, {3, 4}}}},
      {"_backward_L2Normalization", {{{"mode", "channel"}}, {kD, kD, kD}}},
      {"_backward_LRN", {{{"nsize", "3"}}, {kD, kD}}},
      {"_backward_LayerNorm", {{}, {kD, kD, {5}, {3, 4, 1}, {3, 4, 1}}}},
      {"_backward_LeakyReLU", {{{"act_type", "prelu"}}, {kD, kD, {4}}}},
      {"_backward_MakeLoss", {{}, {kD}}},
      {"_backward_Pad",
       {{{"mode", "constant"}, {"pad_width", "(0,0,0,0,1,2,2,2)"}}, {{2, 3, 7, 9}, {2, 3, 4, 5}}}},
      {"_backward_Pooling",
       {{{"kernel", "(3,3)"}, {"stride", "(2,2)"}, {"pad", "(1,1)"}, {"pool_type", "max"}},
        {{2, 3, 4, 4}, {2, 3, 7, 8}, {2, 3, 4, 4}}}},
      // data (T, N, C), packed parameters, initial state, the reserve, out_grad.
      {"_backward_RNN",
       {{{"mode", "rnn_tanh"}, {"state_size", "3"}, {"num_layers", "1"}},
        {{2, 2, 3}, {24}, {1, 2, 3}, {1}, {2, 2, 3}}}},
      {"_backward_SequenceLast", {{{"use_sequence_length", "True"}}, {{3, 2}, {4, 3, 2}, {3}}}},
      {"_backward_SequenceMask", {{{"use_sequence_length", "True"}}, {{4, 3, 2}, {3}}}},
      {"_backward_SoftmaxOutput", {{}, {{3, 4}, {3, 4}, {3}}}},
      {"_backward_UpSampling",
       {{{"scale", "2"}, {"sample_type", "nearest"}, {"num_args", "1"}}, {{1, 3, 4, 6}, {1, 3, 2, 3}}}},
      {"_backward_clip", {{{"a_min", "0"}, {"a_max", "1"}}, {kD, kD}}},
      {"_backward_concat", {{{"num_args", "2"}, {"dim", "1"}}, {{2, 5}, {2, 2}, {2, 3}}}},
      {"_backward_dot", {{}, {{2, 4}, {2, 3}, {3, 4}}}},
      {"_backward_max", {{{"axis", "1"}}, {{3, 5}, kD, {3, 5}}}},
      {"_backward_min", {{{"axis", "1"}}, {{3, 5}, kD, {3, 5}}}},
      {"_backward_prod", {{{"axis", "1"}}, {{3, 5}, kD, {3, 5}}}},
      {"_backward_nanprod", {{{"axis", "1"}}, {{3, 5}, kD, {3, 5}}}},
      {"_backward_sum", {{{"axis", "1"}}, {{3, 5}, kD}}},
      {"_backward_mean", {{{"axis", "1"}}, {{3, 5}, kD}}},
      {"_backward_nansum", {{{"axis", "1"}}, {{3, 5}, kD}}},
      {"_backward_norm", {{{"axis", "1"}}, {{3, 5}, kD, {3, 5}}}},
      // Picking along the first axis, so that a wider data no longer fits the index.
      {"_backward_pick", {{{"axis", "0"}}, {{3}, {3}, {4, 3}}}},
      {"_backward_repeat", {{{"repeats", "2"}, {"axis", "1"}}, {{3, 8}, {3, 4}}}},
      // One draw per row of (2, 5) probabilities: ograd and samples (int32 categories) (2).
      {"_backward_sample_multinomial", {{}, {{2}, {2, 5}, {2}}, {{2, {DType::kInt32, 0.0, 5.0}}}}},
      // Slices reaching the end of an axis, so that a wider data no longer fits the ograd.
      {"_backward_slice", {{{"begin", "(0,1)"}, {"end", "(2,None)"}}, {{2, 3}, {3, 4}}}},
      {"_backward_slice_axis", {{{"axis", "1"}, {"begin", "1"}, {"end", "None"}}, {{3, 3}, {3, 4}}}},
      {"_backward_softmax_cross_entropy", {{}, {{1}, {3, 4}, {3}}}},
      {"_backward_sparse_softmax_cross_entropy", {{{"axis", "0"}}, {{1, 3}, {4, 3}, {3}}}},
      {"_backward_take", {{}, {{2, 4}, {2}, {5, 4}}}},
      // The control-flow gradients: output gradients, then the forward inputs. foreach:
      // out_t = x_t * w + s, s' = out_t over data (4, 3), state (3), w (3).
      {"_backward_foreach",
       {{{"num_args", "4"}, {"num_outputs", "2"}, {"num_out_data", "1"}, {"in_data_locs", "[0]"},
         {"in_state_locs", "[2]"}, {"remain_locs", "[1]"},
         {"__subgraphs__",
          R"([{"nodes": [{"op": "null", "name": "x", "inputs": []}, {"op": "null", "name": "w", "inputs": []},
                         {"op": "elemwise_mul", "name": "m", "inputs": [[0, 0, 0], [1, 0, 0]]},
                         {"op": "null", "name": "s", "inputs": []},
                         {"op": "elemwise_add", "name": "a", "inputs": [[2, 0, 0], [3, 0, 0]]}],
               "arg_nodes": [0, 1, 3], "heads": [[4, 0, 0], [4, 0, 0]]}])"}},
        {{4, 3}, {3}, {4, 3}, {3}, {3}}}},
      // while i < limit: out = acc, i += 1, acc *= 2 (at most 3 steps); i (1), acc (3), limit (1).
      {"_backward_while_loop",
       {{{"num_args", "5"}, {"num_outputs", "3"}, {"num_out_data", "1"}, {"max_iterations", "3"},
         {"cond_input_locs", "[0, 2]"}, {"func_input_locs", "[1, 0]"}, {"func_var_locs", "[1, 0]"},
         {"__subgraphs__",
          R"([{"nodes": [{"op": "null", "name": "i", "inputs": []}, {"op": "null", "name": "l", "inputs": []},
                         {"op": "broadcast_lesser", "name": "lt", "inputs": [[0, 0, 0], [1, 0, 0]]}],
               "arg_nodes": [0, 1], "heads": [[2, 0, 0]]},
              {"nodes": [{"op": "null", "name": "acc", "inputs": []}, {"op": "null", "name": "i", "inputs": []},
                         {"op": "_copy", "name": "out", "inputs": [[0, 0, 0]]},
                         {"op": "_plus_scalar", "name": "n", "attrs": {"scalar": "1"}, "inputs": [[1, 0, 0]]},
                         {"op": "_mul_scalar", "name": "d", "attrs": {"scalar": "2"}, "inputs": [[0, 0, 0]]}],
               "arg_nodes": [0, 1], "heads": [[2, 0, 0], [3, 0, 0], [4, 0, 0]]}])"}},
        {{3, 3}, {1}, {3}, {1}, {3}, {1}}, {{5, {DType::kFloat32, 2.0, 3.0}}}}},
      // p > 0.5 ? a * b : a - b over p (1), a (3), b (3).
      {"_backward_cond",
       {{{"num_args", "6"}, {"num_outputs", "1"}, {"cond_input_locs", "[0]"}, {"then_input_locs", "[1, 2]"},
         {"else_input_locs", "[1, 2]"},
         {"__subgraphs__",
          R"([{"nodes": [{"op": "null", "name": "p", "inputs": []},
                         {"op": "_greater_scalar", "name": "g", "attrs": {"scalar": "0.5"}, "inputs": [[0, 0, 0]]}],
               "arg_nodes": [0], "heads": [[1, 0, 0]]},
              {"nodes": [{"op": "null", "name": "a", "inputs": []}, {"op": "null", "name": "b", "inputs": []},
                         {"op": "elemwise_mul", "name": "m", "inputs": [[0, 0, 0], [1, 0, 0]]}],
               "arg_nodes": [0, 1], "heads": [[2, 0, 0]]},
              {"nodes": [{"op": "null", "name": "a", "inputs": []}, {"op": "null", "name": "b", "inputs": []},
                         {"op": "elemwise_sub", "name": "d", "inputs": [[0, 0, 0], [1, 0, 0]]}],
               "arg_nodes": [0, 1], "heads": [[2, 0, 0]]}])"}},
        {{3}, {1}, {3}, {3}}}},
      {"_backward_tile", {{{"reps", "(2,1)"}}, {{6, 4}, {3, 4}}}},
      {"_backward_BatchNorm_v1", {{{"fix_gamma", "False"}}, {kD, kD, {4}, {4}, {4}}}},
      {"_backward_contrib_SyncBatchNorm", {{{"fix_gamma", "False"}, {"key", "k"}}, {kD, kD, {4}, {4}, {4}}}},
      // out_grad, output, data, gamma, mean, var.
      {"_backward_contrib_BatchNormWithReLU", {{{"fix_gamma", "False"}}, {kD, kD, kD, {4}, {4}, {4}}}},
      // ograd, data, h (buckets in [0, out_dim)), s.
      {"_backward_contrib_count_sketch",
       {{{"out_dim", "3"}}, {{2, 3}, {2, 5}, {1, 5}, {1, 5}}, {{2, {DType::kFloat32, 0.0, 3.0}}}}},
      {"_contrib_backward_gradientmultiplier", {{{"scalar", "2"}}, {kD}}},
      // ograd, old_tensor, index_vector (rows of old_tensor), new_tensor.
      {"_contrib_backward_index_copy", {{}, {{5, 3}, {5, 3}, {2}, {2, 3}}, {{2, {DType::kFloat32, 0.0, 5.0}}}}},
      // ograd (N,), ograd_state (N, K), lda, alpha, beta, state, lags, marks (int32 process
      // ids), valid_length (whole numbers: none), max_time.
      {"_contrib_backward_hawkesll",
       {{},
        {{3}, {3, 2}, {3, 2}, {2}, {2}, {3, 2}, {3, 5}, {3, 5}, {3}, {3}},
        {{7, {DType::kInt32, 0.0, 2.0}}, {8, {DType::kFloat32, 0.0, 0.0}}}}},
      // The gradients of the two pieces _split_v2 cuts at (0, 1) from an axis of 3.
      {"_split_v2_backward", {{{"indices", "(0,1)"}, {"axis", "1"}}, {{2, 1}, {2, 2}}}},
      // Two heads of 2: ograd, then the forward's inputs.
      {"_backward_interleaved_matmul_selfatt_qk", {{{"heads", "2"}}, {{4, 3, 3}, {3, 2, 12}}}},
      {"_backward_interleaved_matmul_selfatt_valatt", {{{"heads", "2"}}, {{3, 2, 4}, {3, 2, 12}, {4, 3, 3}}}},
      {"_backward_interleaved_matmul_encdec_qk", {{{"heads", "2"}}, {{4, 3, 5}, {3, 2, 4}, {5, 2, 8}}}},
      {"_backward_interleaved_matmul_encdec_valatt", {{{"heads", "2"}}, {{3, 2, 4}, {5, 2, 8}, {4, 3, 5}}}},
      {"_backward_Convolution_v1",
       {{{"kernel", "(3,3)"}, {"num_filter", "4"}, {"num_group", "2"}, {"stride", "(2,1)"}, {"pad", "(1,1)"}},
        {{2, 4, 4, 6}, {2, 4, 7, 6}, {4, 2, 3, 3}}}},
      {"_backward_Pooling_v1",
       {{{"kernel", "(3,3)"}, {"stride", "(2,2)"}, {"pad", "(1,1)"}, {"pool_type", "max"}},
        {{2, 3, 4, 4}, {2, 3, 7, 8}, {2, 3, 4, 4}}}},
      {"_backward_GridGenerator", {{{"transform_type", "affine"}, {"target_shape", "(3,4)"}}, {{2, 2, 3, 4}}}},
      {"_backward_BilinearSampler", {{}, {{2, 3, 4, 5}, {2, 3, 6, 7}, {2, 2, 4, 5}}}},
      {"_backward_SpatialTransformer",
       {{{"transform_type", "affine"}, {"sampler_type", "bilinear"}, {"target_shape", "(4,5)"}},
        {{2, 3, 4, 5}, {2, 3, 6, 7}, {2, 6}}}},
      {"_backward_Correlation",
       {{{"kernel_size", "1"}, {"max_displacement", "1"}, {"pad_size", "1"}}, {{2, 9, 5, 6}, {2, 3, 5, 6}, {2, 3, 5, 6}}}},
      {"_backward_Crop", {{{"num_args", "1"}, {"h_w", "(2,3)"}}, {{2, 3, 2, 3}, {2, 3, 4, 5}}}},
      {"_backward_IdentityAttachKLSparseReg", {{}, {{3, 4}, {3, 4}, {4}}}},
      // ograd (rois, channels, pooled), data, rois (batch index, x1, y1, x2, y2).
      {"_backward_ROIPooling",
       {{{"pooled_size", "(2,2)"}, {"spatial_scale", "1"}}, {{3, 2, 2, 2}, {1, 2, 6, 6}, {3, 5}}}},
      {"_backward_ROIAlign", {{{"pooled_size", "(2,2)"}, {"spatial_scale", "1"}}, {{3, 2, 2, 2}, {1, 2, 6, 6}, {3, 5}}}},
      {"_backward_PSROIPooling",
       {{{"pooled_size", "2"}, {"output_dim", "2"}, {"spatial_scale", "1"}}, {{3, 2, 2, 2}, {1, 8, 6, 6}, {3, 5}}}},
      // ograd (rois, channels, pooled), data, rois (batch index, centre, size, degrees).
      {"_backward_RROIAlign", {{{"pooled_size", "(2,2)"}, {"spatial_scale", "1"}}, {{3, 2, 2, 2}, {1, 2, 6, 6}, {3, 6}}}},
      // ograd, data, rois, trans (rois, 2 * classes, part, part).
      {"_backward_DeformablePSROIPooling",
       {{{"pooled_size", "2"}, {"output_dim", "2"}, {"group_size", "2"}, {"spatial_scale", "1"}},
        {{3, 2, 2, 2}, {1, 8, 6, 6}, {3, 5}, {3, 2, 2, 2}}}},
      // ograd, data, offset (n, 2 * 9, oh, ow), [mask (n, 9, oh, ow)], weight.
      {"_backward_DeformableConvolution",
       {{{"kernel", "(3,3)"}, {"num_filter", "2"}, {"no_bias", "True"}},
        {{1, 2, 3, 3}, {1, 4, 5, 5}, {1, 18, 3, 3}, {2, 4, 3, 3}}}},
      {"_backward_ModulatedDeformableConvolution",
       {{{"kernel", "(3,3)"}, {"num_filter", "2"}}, {{1, 2, 3, 3}, {1, 4, 5, 5}, {1, 18, 3, 3}, {1, 9, 3, 3}, {2, 4, 3, 3}}}},
      {"_backward_SVMOutput", {{}, {{3, 4}, {3}}}},
      {"_backward_im2col", {{{"kernel", "(2,2)"}}, {{1, 8, 9}, {1, 2, 4, 4}}}},
      {"_backward_col2im", {{{"output_size", "(4,4)"}, {"kernel", "(2,2)"}}, {{1, 2, 4, 4}}}},
      {"_backward_contrib_BilinearResize2D", {{{"height", "6"}, {"width", "8"}}, {{1, 2, 6, 8}, {1, 2, 3, 4}}}},
      {"_backward_contrib_AdaptiveAvgPooling2D", {{{"output_size", "(2,2)"}}, {{1, 2, 2, 2}, {1, 2, 5, 6}}}},
      // An index of nonzero values keeps every row.
      {"_backward_contrib_boolean_mask", {{}, {{4, 3}, {4, 3}, {4}}}},
      {"_backward_contrib_box_nms", {{}, {{2, 4, 6}, {2, 4, 1}}}},
      {"_backward_ctc_loss", {{}, {{3}, {5, 3, 4}}}},
      {"_backward_diag", {{}, {{3}, {3, 4}}}},
      {"_backward_gather_nd", {{{"shape", "(3,4)"}}, {{2, 4}, {1, 2}}}},
      // ograd, indices, data.
      {"_backward_gather_nd_like", {{}, {{2, 4}, {1, 2}, {3, 4}}}},
      {"_backward_image_normalize", {{{"mean", "(0.5,0.5,0.5)"}, {"std", "(1,2,3)"}}, {kD, kD}}},
      {"_backward_image_crop", {{{"x", "1"}, {"y", "1"}, {"width", "3"}, {"height", "2"}}, {{2, 3, 3}, {6, 7, 3}}}},
      {"_backward_moments", {{{"axes", "(1,)"}}, {{3, 5}, {3, 5}, kD, {3, 5}, {3, 5}}}},
      {"_backward_np_cumsum", {{{"axis", "1"}}, {kD, kD}}},
      {"_backward_slice_like", {{}, {{2, 3, 5}, kD, {2, 3, 5}}}},
      // ograd, indices, data.
      {"_backward_topk", {{{"k", "2"}, {"ret_typ", "value"}}, {{3, 4, 2}, {3, 4, 2}, kD}}},
      // The output gradients, then the forward inputs.
      {"_backward_amp_multicast", {{{"num_outputs", "2"}}, {kD, {4}, kD, {4}}}},
      // ograd, sample, the parameters, the forward output.
      {"_backward_pdf_uniform", {{}, {{2, 3}, {2, 3}, {2}, {2}, {2, 3}}}},
      {"_backward_pdf_normal", {{}, {{2, 3}, {2, 3}, {2}, {2}, {2, 3}}}},
      {"_backward_pdf_gamma", {{}, {{2, 3}, {2, 3}, {2}, {2}, {2, 3}}}},
      {"_backward_pdf_negative_binomial", {{}, {{2, 3}, {2, 3}, {2}, {2}, {2, 3}}}},
      {"_backward_pdf_generalized_negative_binomial", {{}, {{2, 3}, {2, 3}, {2}, {2}, {2, 3}}}},
      {"_backward_pdf_exponential", {{}, {{2, 3}, {2, 3}, {2}, {2, 3}}}},
      {"_backward_pdf_poisson", {{}, {{2, 3}, {2, 3}, {2}, {2, 3}}}},
      {"_backward_pdf_dirichlet", {{}, {{2, 3}, {2, 3, 4}, {2, 4}, {2, 3}}}},
      // Linear algebra: batches of two matrices where a batch axis can be checked.
      {"_backward_linalg_gemm", {{}, {{2, 4}, {2, 3}, {3, 4}, {2, 4}}}},
      {"_backward_linalg_gemm2", {{}, {{2, 4}, {2, 3}, {3, 4}}}},
      // dQ, dL, Q, L of a 2x3 A.
      {"_backward_linalg_gelqf", {{}, {{2, 3}, {2, 2}, {2, 3}, {2, 2}}}},
      {"_backward_linalg_syevd", {{}, {{3, 3}, {3}, {3, 3}, {3}}}},
      {"_backward_linalg_inverse", {{}, {{2, 3, 3}, {2, 3, 3}}}},
      // out_grad, det, LU, pivots (1-based, int32).
      {"_backward_linalg_det", {{}, {{2}, {2}, {2, 3, 3}, {2, 3}}, {{3, {DType::kInt32, 1.0, 1.5}}}}},
      {"_backward_linalg_slogdet", {{}, {{2}, {2}, {2}, {2, 3, 3}, {2, 3}}, {{4, {DType::kInt32, 1.0, 1.5}}}}},
      {"_backward_linalg_extractdiag", {{}, {{2, 3}}}},
      {"_backward_linalg_makediag", {{}, {{2, 3, 3}}}},
      {"_backward_linalg_extracttrian", {{}, {{2, 6}}}},
      {"_backward_linalg_maketrian", {{}, {{2, 3, 3}}}},
      {"_backward_linalg_potrf", {{}, {{2, 3, 3}, {2, 3, 3}}}},
      {"_backward_linalg_potri", {{}, {{2, 3, 3}, {2, 3, 3}, {2, 3, 3}}}},
      {"_backward_linalg_trmm", {{}, {{3, 4}, {3, 3}, {3, 4}}}},
      {"_backward_linalg_trsm", {{}, {{3, 4}, {3, 3}, {3, 4}, {3, 4}}}},
      {"_backward_linalg_sumlogdiag", {{}, {{2}, {2, 3, 3}}}},
      {"_backward_linalg_syrk", {{}, {{3, 3}, {3, 4}}}},
  };
  return calls;
}

// Operators this test cannot call as their forward would, with the reason.
const std::map<std::string, std::string>& Unreachable() {
  static const std::map<std::string, std::string> ops = {
      // Its shapes all come from the region its `region` id names (made by the executor's
      // gradient pass): its shape inference sets every input shape from the region, so the
      // imperative path compares each input with them. A hand call's id names no region.
      {"_backward_dnnl_train_region", "needs a region made by the executor"},
      // Its shapes all come from the live state of a Custom forward (named by the hidden
      // __custom_state__), which only a Custom operator registered through the C API and
      // run forward makes; a hand call without one is refused (tested below).
      {"_backward_Custom", "needs the state of a Custom forward"},
  };
  return ops;
}

// The ways a shape is changed to break a call: one more element on the last axis, an extra
// leading axis, one axis fewer, an empty first axis.
enum class Change { kWider, kTaller, kShorter, kEmpty };

// Changes that still fit one input of one operator: op -> input index -> changes.
const std::map<std::string, std::map<int, std::set<Change>>>& StillFitting() {
  static const std::map<std::string, std::map<int, std::set<Change>>> fit = {
      // Any vector passes as RNN's reserve: one that is not a training forward's makes the
      // backward recompute the forward (only its being a vector is checked).
      {"_backward_RNN", {{3, {Change::kWider, Change::kEmpty}}}},
      // The gradient is shaped like ograd; only its batch axis is tied to sequence_length.
      {"_backward_SequenceMask", {{0, {Change::kWider, Change::kEmpty}}}},
      // Any number of classes fits.
      {"_backward_softmax_cross_entropy", {{1, {Change::kWider}}}},
      // More categories fit the drawn ones; one distribution (data (5)) fits any draws.
      {"_backward_sample_multinomial", {{1, {Change::kWider, Change::kShorter}}}},
      // Samplers and resizers read any image size (their grids are normalised).
      {"_backward_BilinearSampler", {{1, {Change::kWider}}}},
      {"_backward_SpatialTransformer", {{1, {Change::kWider}}}},
      {"_backward_contrib_BilinearResize2D", {{1, {Change::kWider}}}},
      {"_backward_contrib_AdaptiveAvgPooling2D", {{1, {Change::kWider}}}},
      // A larger image still holds the crop window; the slice and the top k of a wider data too.
      {"_backward_Crop", {{1, {Change::kWider}}}},
      {"_backward_slice_like", {{1, {Change::kWider}}}},
      {"_backward_topk", {{2, {Change::kWider}}}},
      // The diagonal of a wider matrix is as long.
      {"_backward_diag", {{1, {Change::kWider}}}},
      // A*A^T has the same shape for any number of columns.
      {"_backward_linalg_syrk", {{1, {Change::kWider}}}},
      // The qk scores are (batch*heads, seq, seq) for any last axis of at least 3*heads
      // (a head_dim of floor(floor(C / 3) / heads), as in MXNet).
      {"_backward_interleaved_matmul_selfatt_qk", {{1, {Change::kWider}}}},
      // Any image size fits the rois; an ROI naming no image of the batch (all of them, for an
      // empty batch) is skipped.
      {"_backward_ROIPooling", {{1, {Change::kWider, Change::kEmpty}}}},
      {"_backward_ROIAlign", {{1, {Change::kWider, Change::kEmpty}}}},
      {"_backward_PSROIPooling", {{1, {Change::kWider, Change::kEmpty}}}},
      {"_backward_RROIAlign", {{1, {Change::kWider, Change::kEmpty}}}},
      {"_backward_DeformablePSROIPooling", {{1, {Change::kWider, Change::kEmpty}}}},
      // Any number of classes fits.
      {"_backward_SVMOutput", {{0, {Change::kWider}}}},
      // Boxes of any width: the record gives only which input row each output row came from.
      {"_backward_contrib_box_nms", {{0, {Change::kWider}}}},
      // Any sequence length and alphabet fit the per-sequence ograd.
      {"_backward_ctc_loss", {{1, {Change::kWider, Change::kEmpty}}}},
      // An empty data fits the shapes; the index 0 into it is refused by the index check.
      {"_backward_gather_nd_like", {{2, {Change::kEmpty}}}},
      // The last piece cut at (0, 1) reaches the end of the axis, whatever its length.
      {"_split_v2_backward", {{1, {Change::kWider}}}},
      // h and s of (d,) hold the same d entries as (1, d).
      {"_backward_contrib_count_sketch", {{2, {Change::kShorter}}, {3, {Change::kShorter}}}},
      // One alpha vector of (k,) is one distribution for all the samples.
      {"_backward_pdf_dirichlet", {{2, {Change::kShorter}}}},
  };
  return fit;
}

std::vector<std::pair<Change, Shape>> IllFitting(const Shape& s) {
  std::vector<int64_t> d(s.begin(), s.end());
  std::vector<std::pair<Change, Shape>> bad;
  if (d.empty()) {
    bad.emplace_back(Change::kTaller, Shape{2});
    return bad;
  }
  std::vector<int64_t> wider = d;
  wider.back() += 1;
  bad.emplace_back(Change::kWider, Shape(wider));
  std::vector<int64_t> taller = d;
  taller.insert(taller.begin(), 2);
  bad.emplace_back(Change::kTaller, Shape(taller));
  if (d.size() >= 2) bad.emplace_back(Change::kShorter, Shape(std::vector<int64_t>(d.begin() + 1, d.end())));
  if (d[0] != 0) {
    std::vector<int64_t> empty = d;
    empty[0] = 0;
    bad.emplace_back(Change::kEmpty, Shape(empty));
  }
  return bad;
}

std::vector<NDArray> Arrays(const std::vector<Shape>& shapes, const std::map<int, Fill>& fill) {
  std::vector<NDArray> a;
  // Values in [0, 1): valid labels and indices (0) wherever one is read.
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto f = fill.find(static_cast<int>(i));
    Fill v = f != fill.end() ? f->second : Fill{DType::kFloat32, 0.0, 1.0};
    a.push_back(RandomArray(shapes[i], v.dtype, v.lo, v.hi, 7 + static_cast<uint32_t>(i)));
  }
  return a;
}

// Runs `op` on arrays of `shapes`; writes into `outs` when given. Waits for the result.
void Invoke(const NodeAttrs& attrs, const std::vector<Shape>& shapes, std::vector<NDArray>* outs,
            const std::map<int, Fill>& fill = {}) {
  Context cpu = Context::CPU();
  imperative::Invoke(attrs, Arrays(shapes, fill), outs, &cpu, nullptr, true);
  for (const NDArray& o : *outs) o.WaitToRead();
}

// The call `op` accepts: its entry in ValidCalls, else out_grad and one array of its shape.
bool FindValidCall(const Op* op, Call* call, std::vector<NDArray>* outs, std::string* why) {
  auto it = ValidCalls().find(op->name);
  *call = it != ValidCalls().end() ? it->second : Call{{}, {{2, 3}, {2, 3}}};
  try {
    Invoke(MakeAttrs(op, call->params), call->in, outs, call->fill);
    return true;
  } catch (const Error& e) {
    *why = e.what();
    return false;
  }
}

// Expects `what` (a call with one ill-fitting shape) to raise an error naming the operator
// and one of `shapes` (the changed one, or the one of the array it no longer fits), or a
// parameter the changed rank no longer fits ("... out of range for an input with 1
// dimension").
template <typename F>
void ExpectRefused(const Op* op, const std::string& what, F&& call, const std::vector<Shape>& shapes = {}) {
  try {
    call();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(op->name), std::string::npos) << what << ": the error does not name the operator: " << msg;
    bool gives_shape = shapes.empty() || msg.find(" dimension") != std::string::npos;
    for (const Shape& x : shapes) gives_shape = gives_shape || msg.find(x.ToString()) != std::string::npos;
    EXPECT_TRUE(gives_shape) << what << ": the error gives none of the shapes: " << msg;
    return;
  }
  ADD_FAILURE() << what << ": accepted";
}

std::string Describe(const std::vector<Shape>& shapes) {
  std::string s;
  for (const Shape& x : shapes) s += (s.empty() ? "" : ", ") + x.ToString();
  return "[" + s + "]";
}

std::vector<std::string> BackwardOps() {
  std::vector<std::string> ops;
  for (const std::string& name : Op::ListNames())
    // MXNet names a few gradients otherwise (_contrib_backward_*, _split_v2_backward).
    if (name.find("_backward") != std::string::npos && !Unreachable().count(name)) ops.push_back(name);
  return ops;
}

// One test per operator, so that ctest runs each in its own process: a crash names it.
class BackwardShapes : public ::testing::TestWithParam<std::string> {};

TEST_P(BackwardShapes, RefusesIllFittingInputsAndOutputs) {
  const std::string& name = GetParam();
  const Op* op = Op::Get(name);
  Call call;
  std::vector<NDArray> fitting_outs;
  std::string why;
  ASSERT_TRUE(FindValidCall(op, &call, &fitting_outs, &why))
      << name << ": no fitting call known (add one to ValidCalls): " << why;
  NodeAttrs attrs = MakeAttrs(op, call.params);
  auto fit = StillFitting().find(name);
  for (size_t i = 0; i < call.in.size(); ++i) {
    for (const auto& changed : IllFitting(call.in[i])) {
      std::vector<Shape> shapes = call.in;
      shapes[i] = changed.second;
      // With one input, every shape of it is a consistent call.
      if (call.in.size() == 1 || (fit != StillFitting().end() && fit->second.count(static_cast<int>(i)) &&
                                  fit->second.at(static_cast<int>(i)).count(changed.first))) {
        // Still a valid call: it may run or be refused, but must stay within its arrays
        // (which the ASan build checks).
        try {
          std::vector<NDArray> outs;
          Invoke(attrs, shapes, &outs, call.fill);
        } catch (const Error&) {
        }
        continue;
      }
      ExpectRefused(
          op, name + " inputs " + Describe(shapes),
          [&] {
            std::vector<NDArray> outs;
            Invoke(attrs, shapes, &outs, call.fill);
          },
          shapes);
    }
  }
  for (size_t j = 0; j < fitting_outs.size(); ++j) {
    for (const auto& changed : IllFitting(fitting_outs[j].shape())) {
      const Shape& bad = changed.second;
      std::vector<NDArray> outs;
      for (const NDArray& o : fitting_outs) outs.emplace_back(o.shape(), o.ctx(), o.dtype());
      outs[j] = NDArray(bad, Context::CPU(), fitting_outs[j].dtype());
      ExpectRefused(
          op, name + " output " + std::to_string(j) + " of shape " + bad.ToString(),
          [&] { Invoke(attrs, call.in, &outs, call.fill); }, {bad});
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, BackwardShapes, ::testing::ValuesIn(BackwardOps()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

TEST(BackwardShapesCoverage, EveryBackwardOperatorIsCalled) {
  // The registry has dozens; an empty list would make the tests above pass vacuously.
  EXPECT_GT(BackwardOps().size(), 70u);
}

// A hand call of the region gradient names no region: refused, whatever the inputs.
TEST(BackwardShapesCoverage, RegionGradientWithoutARegionIsRefused) {
  const Op* op = Op::Get("_backward_dnnl_train_region");
  for (const char* id : {"0", "12345", "-1"}) {
    ExpectRefused(op, std::string("region ") + id, [&] {
      std::vector<NDArray> outs;
      Invoke(MakeAttrs(op, {{"region", id}}), {{2, 3}, {2, 3}}, &outs);
    });
  }
}

// A hand call of the Custom gradient names no forward state: refused, whatever the inputs.
TEST(BackwardShapesCoverage, CustomGradientWithoutAForwardIsRefused) {
  const Op* op = Op::Get("_backward_Custom");
  for (const KwArgs& params : {KwArgs{}, KwArgs{{"__custom_state__", "987654"}}}) {
    ExpectRefused(op, "_backward_Custom", [&] {
      std::vector<NDArray> outs;
      Invoke(MakeAttrs(op, params), {{2, 3}, {2, 3}}, &outs);
    });
  }
}

// Found with the tests above: the forwards clipped an index into an empty axis to -1.
TEST(BackwardShapesCoverage, IndexIntoAnEmptyAxisIsRefused) {
  const std::vector<std::pair<std::string, KwArgs>> cases = {
      {"pick", {{"axis", "0"}}}, {"_sparse_softmax_cross_entropy", {{"axis", "0"}}}};
  for (const auto& c : cases) {
    const Op* op = Op::Get(c.first);
    ExpectRefused(op, c.first, [&] {
      std::vector<NDArray> outs;
      Invoke(MakeAttrs(op, c.second), {{0, 3}, {3}}, &outs);
    });
  }
  const Op* take = Op::Get("_backward_take");
  ExpectRefused(take, "_backward_take", [&] {
    std::vector<NDArray> outs;
    Invoke(MakeAttrs(take, {}), {{3, 3}, {3}, {0, 3}}, &outs);
  });
}

}  // namespace
}  // namespace test
}  // namespace weft
