/*
 * Weft's prediction API: run a saved model (symbol JSON + .params bytes) forward from C.
 *
 * It has the shape of MXNet's c_predict_api.h (MXPredCreate, MXPredSetInput, ...) under
 * Weft's names and rules: every function returns a weft_status_t, with the message of a
 * failure in weft_get_last_error(); handles are checked (NULL, freed or wrong-kind handles
 * give WEFT_ERR_HANDLE); *_free accepts NULL. Both libweft.so and the predict-only
 * libweft_predict.so (CMake option WEFT_PREDICT_ONLY) export these functions, so a program
 * written against this header links with either.
 *
 *   MXNet                   Weft
 *   MXPredCreate            weft_pred_create
 *   MXPredCreatePartialOut  weft_pred_create_partial_out
 *   MXPredSetInput          weft_pred_set_input
 *   MXPredForward           weft_pred_forward
 *   MXPredGetOutputShape    weft_pred_get_output_shape
 *   MXPredGetOutput         weft_pred_get_output
 *   MXPredReshape           weft_pred_reshape
 *   MXPredFree              weft_pred_free
 *   MXNDListCreate/Get/Free weft_ndlist_create/get/free
 *
 * Inputs and outputs are float32 (MXNet's mx_float) and shapes are int64_t, as in c_api.h.
 * A predictor is used by one thread at a time.
 */
#ifndef WEFT_C_PREDICT_API_H_
#define WEFT_C_PREDICT_API_H_

#include "weft/c_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A symbol bound for inference (no gradients) with its parameters loaded. */
typedef struct weft_predictor weft_predictor_t;

/* Creates a predictor from MXNet's symbol JSON text and the bytes of a .params file (an
 * NDArray list whose names are "arg:NAME" / "aux:NAME", as Module and HybridBlock.export
 * save them, or bare NAME). Input i is named input_keys[i] and has the shape
 * input_shape_data[input_shape_indptr[i] .. input_shape_indptr[i + 1]) (indptr has
 * num_inputs + 1 entries, starting at 0). Every other argument and auxiliary state must be in
 * the params; a params entry the symbol does not use is ignored, one whose shape differs from
 * the inferred one is an error naming it. Outputs are the symbol's outputs. */
WEFT_API weft_status_t weft_pred_create(const char* symbol_json, const void* params, size_t params_size,
                                        weft_context_t ctx, int num_inputs, const char* const* input_keys,
                                        const int64_t* input_shape_indptr, const int64_t* input_shape_data,
                                        weft_predictor_t** out);

/* As weft_pred_create, with the outputs chosen among the internal outputs of the graph:
 * output_keys[i] names a node ("fc1": its first output) or an output ("fc1_output"). */
WEFT_API weft_status_t weft_pred_create_partial_out(const char* symbol_json, const void* params,
                                                    size_t params_size, weft_context_t ctx, int num_inputs,
                                                    const char* const* input_keys,
                                                    const int64_t* input_shape_indptr,
                                                    const int64_t* input_shape_data, int num_outputs,
                                                    const char* const* output_keys, weft_predictor_t** out);

/* Copies `size` floats into the input named `key`; size must be the input's element count. */
WEFT_API weft_status_t weft_pred_set_input(weft_predictor_t* pred, const char* key, const float* data,
                                           size_t size);

/* Runs the forward pass (inference mode) and waits for it. */
WEFT_API weft_status_t weft_pred_forward(weft_predictor_t* pred);

/* The number of outputs. */
WEFT_API weft_status_t weft_pred_get_num_outputs(weft_predictor_t* pred, int* out);

/* The shape of output `index`: *shape points to *ndim dims owned by the predictor, valid
 * until the next call on it. */
WEFT_API weft_status_t weft_pred_get_output_shape(weft_predictor_t* pred, int index, const int64_t** shape,
                                                  int* ndim);

/* Copies output `index` (as float32) into data; size must be its element count. */
WEFT_API weft_status_t weft_pred_get_output(weft_predictor_t* pred, int index, float* data, size_t size);

/* A new predictor for new input shapes (inputs not named keep theirs), sharing `pred`'s
 * parameters and memory; `pred` stays usable and is freed separately, but the two must not
 * run at the same time. An input may grow (it gets new memory). Arguments are as for
 * weft_pred_create. */
WEFT_API weft_status_t weft_pred_reshape(weft_predictor_t* pred, int num_inputs, const char* const* input_keys,
                                         const int64_t* input_shape_indptr, const int64_t* input_shape_data,
                                         weft_predictor_t** out);

/* NULL is accepted. */
WEFT_API weft_status_t weft_pred_free(weft_predictor_t* pred);

/* The arrays of an NDArray list file (.nd, .params) read as float32 on the host. */
typedef struct weft_ndlist weft_ndlist_t;

/* Reads the list from `size` bytes; *length = its number of arrays. */
WEFT_API weft_status_t weft_ndlist_create(const void* data, size_t size, weft_ndlist_t** out, int* length);

/* Array `index`: its name ("" when the list has none), its data (float32) and its shape,
 * all owned by the list and valid until weft_ndlist_free. Any out-pointer may be NULL. */
WEFT_API weft_status_t weft_ndlist_get(weft_ndlist_t* list, int index, const char** key, const float** data,
                                       const int64_t** shape, int* ndim);

/* NULL is accepted. */
WEFT_API weft_status_t weft_ndlist_free(weft_ndlist_t* list);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_C_PREDICT_API_H_ */
