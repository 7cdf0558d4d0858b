/*
 * Weft operator libraries: the plain C interface of a shared library of operators that a
 * program loads at run time (Python: mx.library.load(path); C: weft_library_load in
 * c_api.h). The library is compiled against this header alone; it never links libweft.
 *
 * A library exports one function, weft_op_library_init, which says which version of this
 * header it was built with and hands over a table of operators. Each operator has a name
 * (it becomes a custom operator of that op_type, and mx.nd.<name> / mx.sym.<name> in Python),
 * named inputs and outputs, shape inference, optional type inference, a forward and an
 * optional backward, all on CPU buffers:
 *
 *  - Every call gets the call's parameters as strings (params), as the user gave them.
 *  - Functions return 0 on success; on failure, nonzero after writing a NUL-terminated
 *    message of at most err_len bytes into err. The message reaches the user as the error
 *    of the call (raised at the next wait on its outputs, or at once for inference).
 *  - forward and backward run on a thread of Weft's pool for custom operators, one call at
 *    a time per operator call; several calls may run at once on different threads, so
 *    functions must not keep unguarded global state.
 *  - Buffers are dense, row-major (C order), of the dtype in the tensor (a weft_dtype_t
 *    value of c_api.h: 0 float32, 1 float64, 4 int32, 6 int64, ...). They belong to Weft and
 *    are valid only during the call.
 *  - req[i] says how to write output i: 0 not at all, 1 or 2 overwrite, 3 add to what is
 *    there (gradient accumulation).
 *
 * The version only grows; a library built for a newer version than the loading Weft
 * supports is refused.
 */
#ifndef WEFT_OP_LIBRARY_H_
#define WEFT_OP_LIBRARY_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_OP_LIBRARY_VERSION 1
/* The largest rank a shape may have (as WEFT_MAX_NDIM in c_api.h). */
#define WEFT_OP_LIBRARY_MAX_NDIM 32

#if defined(__GNUC__)
#define WEFT_OP_LIBRARY_EXPORT __attribute__((visibility("default")))
#else
#define WEFT_OP_LIBRARY_EXPORT
#endif

/* The parameters of one call: num strings keys[i] = values[i]. */
typedef struct weft_lib_params {
  int num;
  const char* const* keys;
  const char* const* values;
} weft_lib_params_t;

/* A buffer with its shape (shape[0..ndim)) and dtype. */
typedef struct weft_lib_tensor {
  void* data;
  const int64_t* shape;
  int ndim;
  int dtype;
} weft_lib_tensor_t;

/* Fills out_ndims[i] and out_shapes[i * WEFT_OP_LIBRARY_MAX_NDIM + d] for each output i from
 * the input shapes in_shapes[i][0..in_ndims[i]). */
typedef int (*weft_lib_infer_shape_fn)(const weft_lib_params_t* params, int num_inputs, const int* in_ndims,
                                       const int64_t* const* in_shapes, int num_outputs, int* out_ndims,
                                       int64_t* out_shapes, char* err, size_t err_len);
/* Fills out_dtypes[i] for each output from the input dtypes. */
typedef int (*weft_lib_infer_type_fn)(const weft_lib_params_t* params, int num_inputs, const int* in_dtypes,
                                      int num_outputs, int* out_dtypes, char* err, size_t err_len);
/* Computes the outputs from the inputs, writing each output as req[i] says. */
typedef int (*weft_lib_forward_fn)(const weft_lib_params_t* params, int num_inputs, const weft_lib_tensor_t* inputs,
                                   int num_outputs, const weft_lib_tensor_t* outputs, const int* req, char* err,
                                   size_t err_len);
/* Computes the gradient of each input (in_grads, one per input, written as req[i] says)
 * from the gradient of each output (out_grads), the inputs and the outputs. */
typedef int (*weft_lib_backward_fn)(const weft_lib_params_t* params, int num_outputs,
                                    const weft_lib_tensor_t* out_grads, int num_inputs,
                                    const weft_lib_tensor_t* inputs, const weft_lib_tensor_t* outputs,
                                    const weft_lib_tensor_t* in_grads, const int* req, char* err, size_t err_len);

/* One operator. input_names and output_names hold num_inputs and num_outputs names (NULL:
 * "data" for a single input, else "data0", "data1", ...; "output", else "output0", ...).
 * infer_type may be NULL: every output then has the first input's dtype. backward may be
 * NULL: the operator then has no gradient. Everything the table points to must stay valid
 * as long as the library is loaded. */
typedef struct weft_lib_op {
  const char* name;
  int num_inputs;
  int num_outputs;
  const char* const* input_names;
  const char* const* output_names;
  weft_lib_infer_shape_fn infer_shape;
  weft_lib_infer_type_fn infer_type;
  weft_lib_forward_fn forward;
  weft_lib_backward_fn backward;
} weft_lib_op_t;

/* The entry point a library defines. `weft_version` is the WEFT_OP_LIBRARY_VERSION of the
 * loading Weft; the function sets *version to the one the library was built with, and
 * *ops to its table of *num_ops operators. Returns 0, or nonzero to refuse to load. */
WEFT_OP_LIBRARY_EXPORT int weft_op_library_init(int weft_version, int* version, int* num_ops,
                                                const weft_lib_op_t** ops);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_OP_LIBRARY_H_ */
