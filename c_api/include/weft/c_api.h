/*
 * Weft C API: the one public header of libweft.
 *
 * Rules that hold for every function here:
 *  - Every function returns a weft_status_t: WEFT_OK (0) on success, otherwise an error code,
 *    with a message readable through weft_get_last_error() on the same thread.
 *  - Handles are typed opaque pointers, one type per kind of object. The library checks every
 *    handle it is given: NULL, already freed or of the wrong kind gives WEFT_ERR_HANDLE, never a
 *    crash. Handles are not memory addresses; never dereference or compare them for order.
 *  - A handle returned through an out-parameter is owned by the caller, who frees it with the
 *    matching *_free function, unless the documentation says otherwise. *_free accepts NULL.
 *  - Strings returned as `const char*` are owned by the library; the documentation of each
 *    function says how long they stay valid. Strings passed in are only read during the call.
 *  - Arrays are asynchronous: functions that create or modify arrays return at once and the work
 *    runs on the engine. Only functions that read data back (copy_to_host, wait_*) block.
 *    An error raised by asynchronous work is reported by the next blocking call on the arrays
 *    it wrote.
 *  - The ABI only grows: enums are append-only and no signature changes within a major version.
 *    The library's SONAME is libweft.so.WEFT_ABI_VERSION.
 *  - Counts and sizes are checked before the arrays they describe are read: a count of arrays,
 *    handles, strings or keys is in [0, WEFT_MAX_COUNT], a rank (ndim) in [0, WEFT_MAX_NDIM], and
 *    the size of a buffer the caller passes at most WEFT_MAX_BUFFER_BYTES; beyond that (or
 *    negative) the call fails with WEFT_ERR_VALUE naming the argument and reads nothing. A count
 *    within the bound must still match the array the caller gives: the library cannot check
 *    that.
 */
#ifndef WEFT_C_API_H_
#define WEFT_C_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0
/* The ABI version; the library's SONAME carries it. */
#define WEFT_ABI_VERSION 0

/* Bounds on counts, ranks and buffer sizes (see the rules above): 2^24, 32 and 2^48. */
#define WEFT_MAX_COUNT 16777216
#define WEFT_MAX_NDIM 32
#define WEFT_MAX_BUFFER_BYTES 281474976710656ULL

#if defined(__GNUC__)
#define WEFT_API __attribute__((visibility("default")))
#else
#define WEFT_API
#endif

/* ------------------------------------------------------------------ status and errors */

/* Status codes. Append-only. */
typedef enum weft_status {
  WEFT_OK = 0,
  WEFT_ERR_VALUE = 1,       /* a value is out of range or malformed */
  WEFT_ERR_TYPE = 2,        /* wrong dtype */
  WEFT_ERR_INDEX = 3,       /* index or axis out of bounds */
  WEFT_ERR_SHAPE = 4,       /* shapes do not fit */
  WEFT_ERR_IO = 5,          /* file or stream problem, corrupt data */
  WEFT_ERR_NOT_FOUND = 6,   /* unknown operator, key or file */
  WEFT_ERR_UNSUPPORTED = 7, /* this build or machine cannot do it (e.g. no GPU) */
  WEFT_ERR_RUNTIME = 8,     /* failure while running (out of memory, device error) */
  WEFT_ERR_INTERNAL = 9,    /* a broken invariant inside Weft: please report it */
  WEFT_ERR_HANDLE = 10      /* NULL, freed or wrong-kind handle */
} weft_status_t;

/* The message of the last failed call on this thread ("" if none). Valid until the next
 * failing call on this thread. Never NULL. */
WEFT_API const char* weft_get_last_error(void);

/* The version of the library actually loaded (compare with WEFT_VERSION_* from this header).
 * Any out-pointer may be NULL. */
WEFT_API weft_status_t weft_get_version(int* major, int* minor, int* patch, int* abi);

/* ------------------------------------------------------------------ contexts and dtypes */

/* Device types, numbered as MXNet's. Append-only. cpu_shared is host memory that other
 * processes can map (see weft_ndarray_get_shared_mem); kernels use it as CPU memory. */
typedef enum weft_device_type {
  WEFT_DEVICE_CPU = 1,
  WEFT_DEVICE_GPU = 2,
  WEFT_DEVICE_CPU_PINNED = 3,
  WEFT_DEVICE_CPU_SHARED = 5
} weft_device_type_t;

typedef struct weft_context {
  int32_t device_type; /* a weft_device_type_t */
  int32_t device_id;
} weft_context_t;

/* Element types, numbered as MXNet's type flags. Append-only. */
typedef enum weft_dtype {
  WEFT_DTYPE_FLOAT32 = 0,
  WEFT_DTYPE_FLOAT64 = 1,
  WEFT_DTYPE_FLOAT16 = 2,
  WEFT_DTYPE_UINT8 = 3,
  WEFT_DTYPE_INT32 = 4,
  WEFT_DTYPE_INT8 = 5,
  WEFT_DTYPE_INT64 = 6,
  WEFT_DTYPE_BOOL = 7,
  WEFT_DTYPE_BFLOAT16 = 12
} weft_dtype_t;

/* Number of usable GPUs: 0 without CUDA support or without a device. */
WEFT_API weft_status_t weft_get_gpu_count(int* out);

/* Free and total memory of GPU `dev`, in bytes, as the CUDA driver reports them (memory
 * Weft's pool holds counts as used). Fails without CUDA support or for a GPU not visible. */
WEFT_API weft_status_t weft_get_gpu_memory_info(int dev, int64_t* free_bytes, int64_t* total_bytes);

/* Size in bytes of one element of `dtype`. */
WEFT_API weft_status_t weft_dtype_size(int dtype, size_t* out);

/* Name of `dtype` ("float32", ...); static storage. */
WEFT_API weft_status_t weft_dtype_name(int dtype, const char** out);

/* ------------------------------------------------------------------ fork */

/* Call weft_before_fork right before fork() and weft_after_fork right after it, in the parent
 * (in_child = 0) and in the child (in_child = 1), in a process that may have used the engine:
 * a child has none of its parent's threads, so the engine finishes everything pushed (an
 * error it raised stays for a later wait) and stops its worker threads and those of custom
 * operators first; they start again with the next operation, in both processes. The library
 * also registers these with pthread_atfork, but a front end that holds a lock the pending
 * work may need (Python's GIL, for a custom operator) must call weft_before_fork itself,
 * having let go of it. Calls that find the threads already stopped (or running) do nothing. */
WEFT_API weft_status_t weft_before_fork(void);
WEFT_API weft_status_t weft_after_fork(int in_child);

/* ------------------------------------------------------------------ blocking waits */

/* A front end whose callers may hold a lock that work on the engine needs (Python's GIL,
 * which custom operators' callbacks take on the library's thread) sets `enter` and `leave`:
 * whenever a call blocks on the engine for work to finish (a wait, a read of data, a
 * synchronous storage cast inside an operation or autograd), the blocked
 * thread runs enter() right before it waits and leave(token), with enter's result, right
 * after; so such a lock can be let go of only while it is not needed. Both NULL removes
 * them; one NULL without the other is an error. */
typedef void* (*weft_block_enter_t)(void);
typedef void (*weft_block_leave_t)(void* token);
WEFT_API weft_status_t weft_set_blocking_hooks(weft_block_enter_t enter, weft_block_leave_t leave);
/* Waits while a push to any device would wait for room (the engine's bound on queued work,
 * WEFT_ENGINE_MAX_PENDING and WEFT_ENGINE_MAX_PENDING_BYTES), with the blocking hooks run
 * around the wait; returns at once when there is room. A call that pushes waits for room
 * without the hooks (it may hold locks that make letting go unsafe): a front end that holds
 * its lock across such calls calls this first, so that the wait, when there is one, happens
 * with its lock let go. Pushes from an engine operation's own threads (workers, custom
 * operators' callbacks) never wait, here or in a push. */
WEFT_API weft_status_t weft_engine_wait_for_room(void);

/* ------------------------------------------------------------------ NDArray */

typedef struct weft_ndarray weft_ndarray_t;

/* Creates an array of the given shape (ndim >= 0, dims >= 0; `shape` may be NULL when ndim
 * is 0), dtype and context. Contents are uninitialised. */
WEFT_API weft_status_t weft_ndarray_create(const int64_t* shape, int ndim, int dtype, weft_context_t ctx,
                                           weft_ndarray_t** out);

/* Releases the caller's handle. The memory is returned once no view and no pending operation
 * uses it. NULL is accepted. */
WEFT_API weft_status_t weft_ndarray_free(weft_ndarray_t* arr);

/* Number of dimensions. */
WEFT_API weft_status_t weft_ndarray_get_ndim(const weft_ndarray_t* arr, int* out);

/* Writes min(capacity, ndim) dims into `dims` (may be NULL when capacity is 0) and the rank
 * into *ndim. */
WEFT_API weft_status_t weft_ndarray_get_shape(const weft_ndarray_t* arr, int64_t* dims, int capacity, int* ndim);

/* Number of elements. */
WEFT_API weft_status_t weft_ndarray_get_size(const weft_ndarray_t* arr, int64_t* out);

WEFT_API weft_status_t weft_ndarray_get_dtype(const weft_ndarray_t* arr, int* out);
WEFT_API weft_status_t weft_ndarray_get_context(const weft_ndarray_t* arr, weft_context_t* out);

/* Copies `nbytes` from host memory `data` into the array; nbytes must equal size * dtype
 * size. Blocks until the copy is done, so `data` may be reused at once. */
WEFT_API weft_status_t weft_ndarray_copy_from_host(weft_ndarray_t* arr, const void* data, size_t nbytes);

/* Waits for pending writes, then copies the array into host memory `data` (nbytes must
 * equal size * dtype size). Reports errors of the asynchronous work that wrote it. */
WEFT_API weft_status_t weft_ndarray_copy_to_host(const weft_ndarray_t* arr, void* data, size_t nbytes);

/* Pushes an asynchronous copy of `src` into `dst` (equal sizes; across contexts and dtypes). */
WEFT_API weft_status_t weft_ndarray_copy_to(const weft_ndarray_t* src, weft_ndarray_t* dst);

/* Block until pending writes (wait_to_read) or all pending reads and writes (wait_to_write)
 * of the array are done; report the error of any failed write. */
WEFT_API weft_status_t weft_ndarray_wait_to_read(const weft_ndarray_t* arr);
WEFT_API weft_status_t weft_ndarray_wait_to_write(const weft_ndarray_t* arr);

/* A view of rows [begin, end) along the first axis, sharing memory. */
WEFT_API weft_status_t weft_ndarray_slice(const weft_ndarray_t* arr, int64_t begin, int64_t end,
                                          weft_ndarray_t** out);

/* A view of row `index` (negative counts from the end) with the first axis removed. */
WEFT_API weft_status_t weft_ndarray_at(const weft_ndarray_t* arr, int64_t index, weft_ndarray_t** out);

/* A view with another shape of the same size; one dim may be -1 (inferred). */
WEFT_API weft_status_t weft_ndarray_reshape(const weft_ndarray_t* arr, const int64_t* shape, int ndim,
                                            weft_ndarray_t** out);

/* Whether two handles view the same memory (same chunk), in *out (0 or 1). */
WEFT_API weft_status_t weft_ndarray_shares_memory(const weft_ndarray_t* a, const weft_ndarray_t* b, int* out);

/* Shared memory between processes (MXNet's MXNDArrayGetSharedMemHandle and
 * MXNDArrayCreateFromSharedMem). Every block of a cpu_shared array is an anonymous
 * shared-memory segment (Linux memfd) that the creating process holds open as a file
 * descriptor: (shared_pid, shared_id) are that process's id and that descriptor's number.
 * Nothing is ever named in /dev/shm; a segment is gone once every process that mapped it has
 * freed its arrays (or exited).
 *
 * weft_ndarray_get_shared_mem waits for the array's pending writes, then writes its segment's
 * (shared_pid, shared_id) and the byte offset of the array's first element in it (non-zero
 * for views). The array must be dense, non-empty and on cpu_shared (WEFT_ERR_VALUE
 * otherwise). From then on this process never reuses the block for another array. The id
 * stays valid while the array (or a view of it) lives in shared_pid. */
WEFT_API weft_status_t weft_ndarray_get_shared_mem(const weft_ndarray_t* arr, int* shared_pid, int* shared_id,
                                                   int64_t* byte_offset);

/* A new array on cpu_shared(0) of `shape` and `dtype` over segment (shared_pid, shared_id)
 * from `byte_offset`, sharing its memory (no copy; the caller keeps its own descriptor, which
 * it may close). shared_pid may be this process (shared_id is then one of its descriptors,
 * e.g. one received over a Unix socket) or another one, whose segment is opened through
 * /proc/<shared_pid>/fd/<shared_id> while the array lives there. Errors name what was
 * expected and what was found: WEFT_ERR_NOT_FOUND for a process or descriptor that does not
 * exist, WEFT_ERR_VALUE for a descriptor that is not a Weft segment, for an array that does
 * not fit in the segment from byte_offset, or for an offset that is not a multiple of the
 * dtype's size; WEFT_ERR_TYPE for an unknown dtype. */
WEFT_API weft_status_t weft_ndarray_create_from_shared_mem(int shared_pid, int shared_id, int64_t byte_offset,
                                                           const int64_t* shape, int ndim, int dtype,
                                                           weft_ndarray_t** out);

/* ------------------------------------------------------------------ sparse NDArrays */
/* Storage types use MXNet's codes: 0 default (dense), 1 row_sparse, 2 csr. A sparse array
 * has a logical shape, stored values and int64 auxiliary arrays: csr (2-D) has aux 0 indptr
 * (rows + 1) and aux 1 column indices (nnz), values (nnz); row_sparse has aux 0 row indices
 * (k), values (k, shape[1:]). Indices are strictly increasing (per row for csr) and in range.
 * Operators given a sparse array compute on a dense copy and return dense arrays; copies
 * to and from host memory, views and in-place writes refuse sparse arrays (WEFT_ERR_UNSUPPORTED). */

/* A sparse array of `stype` (1 or 2) from its parts, which are checked and shared, not
 * copied (num_aux: 1 for row_sparse, 2 for csr; all on one context). */
WEFT_API weft_status_t weft_ndarray_create_sparse(int stype, const int64_t* shape, int ndim,
                                                  const weft_ndarray_t* values, int num_aux,
                                                  weft_ndarray_t* const* aux, weft_ndarray_t** out);
/* The same without refusing parts whose lengths or values break the format, as MXNet's
 * MXNDArrayCreateSparseEx: dtypes, dimensions, context and shape are checked, the fault is
 * kept with the array, and every function that reads such an array's contents (operators,
 * copies, cast_storage, saving) fails naming it. weft_ndarray_check_format reports it. */
WEFT_API weft_status_t weft_ndarray_create_sparse_unchecked(int stype, const int64_t* shape, int ndim,
                                                            const weft_ndarray_t* values, int num_aux,
                                                            weft_ndarray_t* const* aux, weft_ndarray_t** out);
/* MXNet's check_format: fails (WEFT_ERR_SHAPE, _VALUE or _INDEX, naming the fault) when the
 * parts of a sparse array break its format. With full_check 0 only part lengths that do not
 * fit the shape are found; otherwise also indptr and index values. Dense arrays pass. */
WEFT_API weft_status_t weft_ndarray_check_format(const weft_ndarray_t* arr, int full_check);
/* An array of `stype` (0, 1 or 2) holding only zeros (no stored values when sparse). */
WEFT_API weft_status_t weft_ndarray_create_sparse_zeros(int stype, const int64_t* shape, int ndim, int dtype,
                                                        weft_context_t ctx, weft_ndarray_t** out);
/* The storage type code (-1 for an empty array). */
WEFT_API weft_status_t weft_ndarray_get_storage_type(const weft_ndarray_t* arr, int* out);
/* A new handle on a sparse array's stored values (dense), shared with it. Fails, naming the
 * fault, for an array whose parts break its format (weft_ndarray_create_sparse_unchecked). */
WEFT_API weft_status_t weft_ndarray_get_sparse_values(const weft_ndarray_t* arr, weft_ndarray_t** out);
/* A new handle on a sparse array's auxiliary array i (int64, dense), shared with it (refused as the
 * values are). */
WEFT_API weft_status_t weft_ndarray_get_aux(const weft_ndarray_t* arr, int i, weft_ndarray_t** out);
/* A new handle on one part of a sparse array (part -1: the stored values, part >= 0: aux
 * array `part`; others WEFT_ERR_INDEX) as it was given, also where the parts break the format:
 * for inspecting them (MXNet's .data, .indices and .indptr), not for computing with them. */
WEFT_API weft_status_t weft_ndarray_get_sparse_part_unchecked(const weft_ndarray_t* arr, int part,
                                                              weft_ndarray_t** out);
/* Makes the sparse array behind handle `dst` hold the contents of `src` (both sparse, of one
 * storage type, shape and dtype; the parts are shared, not copied). Other handles keep what
 * they held. This is how a front end fills an existing sparse array (a row_sparse pull). */
WEFT_API weft_status_t weft_ndarray_sparse_assign(weft_ndarray_t* dst, const weft_ndarray_t* src);
/* The values of `arr` in storage type `stype` (0, 1 or 2), as a new array. Dense to csr
 * needs a 2-D array; zeros (zero rows, for row_sparse) are not stored. Blocks until done. */
WEFT_API weft_status_t weft_ndarray_cast_storage(const weft_ndarray_t* arr, int stype, weft_ndarray_t** out);

/* Block until every operation pushed so far has finished; report the first error since the
 * last call that no wait on an array has reported already. */
WEFT_API weft_status_t weft_wait_all(void);

/* ------------------------------------------------------------------ NDArray lists and files */

/* A list of arrays with optional names, as `.params` files hold them. */
typedef struct weft_ndarray_list weft_ndarray_list_t;
/* Bytes owned by the library. */
typedef struct weft_bytes weft_bytes_t;

WEFT_API weft_status_t weft_ndarray_list_free(weft_ndarray_list_t* list);
WEFT_API weft_status_t weft_ndarray_list_size(const weft_ndarray_list_t* list, int* out);
/* 1 when the list carries names (a dict in MXNet's terms), else 0. */
WEFT_API weft_status_t weft_ndarray_list_has_names(const weft_ndarray_list_t* list, int* out);
/* A new handle on element i; the caller frees it. */
WEFT_API weft_status_t weft_ndarray_list_get(const weft_ndarray_list_t* list, int i, weft_ndarray_t** out);
/* Name of element i ("" when the list has no names); valid while the list lives. */
WEFT_API weft_status_t weft_ndarray_list_name(const weft_ndarray_list_t* list, int i, const char** out);

/* MXNet's numpy shape semantics (mx.util.set_np_shape), process-wide: 0 off (the default),
 * 1 on, 2 on for the whole program (MXNet's "global" mode). It decides which NDArray
 * records the save and load functions below write and accept, as in MXNet: on, arrays are
 * saved as V3 records (0-d arrays allowed; sparse and uninitialised arrays refused) and
 * only V3 records load, dense ones only (mode 2 also loads the classic V2/V1/V0 records);
 * off, arrays are saved as V2 records and V3 records are refused (WEFT_ERR_UNSUPPORTED).
 * `out` receives the previous mode. */
WEFT_API weft_status_t weft_set_np_shape(int mode, int* out);
WEFT_API weft_status_t weft_get_np_shape(int* out);

/* Saves `num` arrays in MXNet's NDArray list format (what `.params` files use). `names` is
 * NULL for an unnamed list, else `num` strings. Waits for the arrays' pending writes. */
WEFT_API weft_status_t weft_ndarray_save(const char* fname, int num, weft_ndarray_t* const* arrays,
                                         const char* const* names);
/* The same bytes in memory. */
WEFT_API weft_status_t weft_ndarray_save_to_bytes(int num, weft_ndarray_t* const* arrays, const char* const* names,
                                                  weft_bytes_t** out);
/* Loads an NDArray list file (MXNet V0, V1 and V2 records; V3 records in numpy-shape mode,
 * see weft_set_np_shape). Arrays saved from a GPU load on that GPU when it exists, else on
 * the CPU. A truncated or corrupt file gives WEFT_ERR_IO naming the file and the byte
 * offset. */
WEFT_API weft_status_t weft_ndarray_load(const char* fname, weft_ndarray_list_t** out);
WEFT_API weft_status_t weft_ndarray_load_from_bytes(const void* data, size_t size, weft_ndarray_list_t** out);

/* One array without the list header (MXNet's raw-bytes form, used for pickling). */
WEFT_API weft_status_t weft_ndarray_save_raw_bytes(const weft_ndarray_t* arr, weft_bytes_t** out);
WEFT_API weft_status_t weft_ndarray_load_raw_bytes(const void* data, size_t size, weft_ndarray_t** out);

/* The bytes' data and size; valid until weft_bytes_free. */
WEFT_API weft_status_t weft_bytes_get(const weft_bytes_t* bytes, const void** data, size_t* size);
WEFT_API weft_status_t weft_bytes_free(weft_bytes_t* bytes);

/* ------------------------------------------------------------------ DLPack */

/* DLPack's DLManagedTensor (https://github.com/dmlc/dlpack, ABI v0.x); see weft/dlpack.h. */
struct DLManagedTensor;

/* Exports the array (waiting for pending writes) as a DLManagedTensor that shares its memory.
 * The consumer calls the tensor's deleter when done, which releases Weft's reference. */
WEFT_API weft_status_t weft_ndarray_to_dlpack(const weft_ndarray_t* arr, struct DLManagedTensor** out);

/* Wraps a DLManagedTensor (contiguous, a supported dtype, on cpu or cuda) without copying.
 * Weft takes ownership and calls its deleter when the last view is gone. On error the
 * tensor is left untouched and still owned by the caller. */
WEFT_API weft_status_t weft_ndarray_from_dlpack(struct DLManagedTensor* tensor, weft_ndarray_t** out);

/* ------------------------------------------------------------------ the operator registry */

/* An operator. Operator handles live as long as the library and are never freed. */
typedef struct weft_op weft_op_t;

/* Number of registered operators (primary names, without aliases). */
WEFT_API weft_status_t weft_op_count(int* out);
/* The i-th operator, in order of name. */
WEFT_API weft_status_t weft_op_get_by_index(int i, const weft_op_t** out);
/* Looks an operator up by name or alias; WEFT_ERR_NOT_FOUND when unknown. */
WEFT_API weft_status_t weft_op_get(const char* name, const weft_op_t** out);

/* Strings below live as long as the library. */
WEFT_API weft_status_t weft_op_get_name(const weft_op_t* op, const char** out);
WEFT_API weft_status_t weft_op_get_doc(const weft_op_t* op, const char** out);
WEFT_API weft_status_t weft_op_get_num_aliases(const weft_op_t* op, int* out);
WEFT_API weft_status_t weft_op_get_alias(const weft_op_t* op, int i, const char** out);

/* Inputs: name, type ("NDArray-or-Symbol", or "NDArray-or-Symbol[]" for a variadic list)
 * and doc. Any out-pointer may be NULL. */
WEFT_API weft_status_t weft_op_get_num_inputs(const weft_op_t* op, int* out);
WEFT_API weft_status_t weft_op_get_input(const weft_op_t* op, int i, const char** name, const char** type,
                                         const char** doc);
/* For operators taking a variable number of inputs, the parameter that counts them
 * ("num_args"); "" otherwise. */
WEFT_API weft_status_t weft_op_get_key_var_num_args(const weft_op_t* op, const char** out);
/* 1 when the operator has GPU code (FCompute<gpu> or FComputeAsync<gpu>), else 0; always 0
 * in a build without CUDA. */
WEFT_API weft_status_t weft_op_get_has_gpu(const weft_op_t* op, int* out);

/* Parameters: name, type description, default ("" when required), doc, and whether it is
 * required. Any out-pointer may be NULL. */
WEFT_API weft_status_t weft_op_get_num_params(const weft_op_t* op, int* out);
WEFT_API weft_status_t weft_op_get_param(const weft_op_t* op, int i, const char** name, const char** type,
                                         const char** default_value, const char** doc, int* required);

/* ------------------------------------------------------------------ running operators */

/* Runs `op` on `inputs` with string parameters (keys[i] = vals[i]; parsed and checked by the
 * operator, e.g. "axis" = "1", "shape" = "(2, 3)").
 * The key "ctx" (e.g. "cpu(0)", "gpu(1)") chooses the context of operators without inputs.
 * Outputs:
 *  - num_given > 0: results are written into given[0..num_given) (the visible outputs), which
 *    remain owned by the caller; *outputs points at `given`.
 *  - num_given == 0: new arrays are created; *outputs points at a library-owned array of
 *    *num_outputs new handles, valid until the next call of this function on this thread.
 *    The caller owns (and frees) each handle.
 * The call returns once the work is queued. */
WEFT_API weft_status_t weft_imperative_invoke(const weft_op_t* op, int num_inputs, weft_ndarray_t* const* inputs,
                                              int num_params, const char* const* keys, const char* const* vals,
                                              int num_given, weft_ndarray_t* const* given, int* num_outputs,
                                              weft_ndarray_t* const** outputs);

/* Runs the registered gradient of `op` once, eagerly: given the forward inputs, the forward
 * outputs and a gradient for each output, writes one new handle per input into in_grads
 * (NULL where the operator has no gradient for that input, e.g. an integer index). The
 * outputs may be all of them or only the visible ones (what weft_imperative_invoke returns):
 * the hidden ones (a dropout mask, an RNN's reserve) then come from running the operator once
 * more in training mode. The caller frees the non-NULL handles. WEFT_ERR_UNSUPPORTED when
 * the operator is not differentiable. */
WEFT_API weft_status_t weft_imperative_gradient(const weft_op_t* op, int num_inputs, weft_ndarray_t* const* inputs,
                                                int num_outputs, weft_ndarray_t* const* outputs,
                                                weft_ndarray_t* const* out_grads, int num_params,
                                                const char* const* keys, const char* const* vals,
                                                weft_ndarray_t** in_grads);

/* Training mode of the calling thread (off at start): operators invoked while it is on
 * behave as in training (Dropout drops, BatchNorm uses and updates batch statistics).
 * set_is_training stores is_training != 0 and, when `out` is not NULL, the previous mode
 * (0 or 1) in *out. */
WEFT_API weft_status_t weft_set_is_training(int is_training, int* out);
WEFT_API weft_status_t weft_is_training(int* out);

/* ------------------------------------------------------------------ random numbers */

/* Seeds the generators of every context (seed_context with one context only). Draws after
 * this are reproducible whatever the number of threads. */
WEFT_API weft_status_t weft_random_seed(int64_t seed);
WEFT_API weft_status_t weft_random_seed_context(int64_t seed, weft_context_t ctx);

/* ------------------------------------------------------------------ memory statistics */

/* Statistics kinds. Append-only. */
typedef enum weft_storage_stat {
  WEFT_STORAGE_BYTES_IN_USE = 0,  /* bytes handed out to arrays and not yet freed */
  WEFT_STORAGE_PEAK_BYTES = 1,    /* high-water mark of bytes in use */
  WEFT_STORAGE_BYTES_POOLED = 2,  /* bytes kept by the pool for reuse */
  WEFT_STORAGE_NUM_ALLOCS = 3,    /* allocations requested */
  WEFT_STORAGE_NUM_OS_ALLOCS = 4  /* allocations that reached the OS or driver */
} weft_storage_stat_t;

WEFT_API weft_status_t weft_storage_get_stat(weft_context_t ctx, int stat, int64_t* out);

/* Returns the pooled memory of `ctx` to the OS or driver. */
WEFT_API weft_status_t weft_storage_release_pooled(weft_context_t ctx);

/* ------------------------------------------------------------------ symbols */

/* A symbolic graph: a list of outputs of operator nodes and variables. Strings returned by
 * the functions below (names, JSON) belong to the library and stay valid until the next
 * call of a symbol function on the same thread. Lists and inference results are returned
 * as JSON text, so that every front end reads them the same way. */
typedef struct weft_symbol weft_symbol_t;

/* A variable named `name` (not empty). */
WEFT_API weft_status_t weft_symbol_create_variable(const char* name, weft_symbol_t** out);
/* Operator `op` with string parameters keys[i] = vals[i] and no inputs yet (compose gives
 * them). Unknown keys and bad values are errors naming the operator and the key. */
WEFT_API weft_status_t weft_symbol_create_atomic(const weft_op_t* op, int num_params, const char* const* keys,
                                                 const char* const* vals, weft_symbol_t** out);
/* Gives `sym` its inputs, in place. arg_names NULL: args are positional (the operator's
 * input order, or list_arguments order for a composed symbol); otherwise arg_names[i] names
 * the input (or, for a composed symbol, the variable) args[i] replaces. An atomic symbol's
 * inputs not given become variables "<name>_<input>". `name` (may be NULL or empty: a
 * unique name is made) names the operator node of an atomic symbol. `sym` keeps its own
 * references to the args: they may be freed after the call. */
WEFT_API weft_status_t weft_symbol_compose(weft_symbol_t* sym, const char* name, int num_args,
                                           const char* const* arg_names, weft_symbol_t* const* args);
/* A deep copy sharing no node with `sym`. */
WEFT_API weft_status_t weft_symbol_copy(const weft_symbol_t* sym, weft_symbol_t** out);
/* The outputs of syms[0..num) as one symbol. */
WEFT_API weft_status_t weft_symbol_group(int num, weft_symbol_t* const* syms, weft_symbol_t** out);
/* Output `index` alone; every internal output; the inputs of the output nodes. */
WEFT_API weft_status_t weft_symbol_get_output(const weft_symbol_t* sym, int index, weft_symbol_t** out);
WEFT_API weft_status_t weft_symbol_get_internals(const weft_symbol_t* sym, weft_symbol_t** out);
WEFT_API weft_status_t weft_symbol_get_children(const weft_symbol_t* sym, weft_symbol_t** out);
/* A new symbol: `sym` partitioned for the subgraph backend `backend`, as MXNet's
 * Symbol.get_backend_symbol. "MKLDNN" (MXNet 1.9's oneDNN fusions, for inference) makes
 * each 2-D/3-D convolution with the BatchNorm, residual sum and activation after it one
 * _sg_mkldnn_conv node, and each fully connected layer with the elementwise operator after
 * it one _sg_mkldnn_fully_connected node; the result computes what `sym` computes.
 * "MKLDNN_QUANTIZE" (for a graph quantized by mx.contrib.quantization) also folds each
 * calibrated requantize, and each dequantize after a fully connected layer or elemwise_mul,
 * into the quantized operator before it, removes identities (_copy, Dropout) and makes the
 * self-attention products _sg_mkldnn_selfatt_qk/_valatt nodes.
 * WEFT_ERR_NOT_FOUND for a backend Weft does not have. */
WEFT_API weft_status_t weft_symbol_get_backend_symbol(const weft_symbol_t* sym, const char* backend,
                                                      weft_symbol_t** out);
/* NULL is accepted. */
WEFT_API weft_status_t weft_symbol_free(weft_symbol_t* sym);

/* Which names weft_symbol_list gives. Append-only. */
typedef enum weft_symbol_list_kind {
  WEFT_SYMBOL_ARGUMENTS = 0,  /* variables read (list_arguments) */
  WEFT_SYMBOL_OUTPUTS = 1,    /* outputs (list_outputs) */
  WEFT_SYMBOL_AUXILIARY = 2,  /* variables written by operators (list_auxiliary_states) */
  WEFT_SYMBOL_INPUTS = 3      /* every variable (list_inputs) */
} weft_symbol_list_kind_t;

/* *out = a JSON array of the names of that kind, in graph order. */
WEFT_API weft_status_t weft_symbol_list(const weft_symbol_t* sym, int kind, const char** out);
/* *out = the name of a one-output symbol's node, or "" for a group. */
WEFT_API weft_status_t weft_symbol_get_name(const weft_symbol_t* sym, const char** out);
/* The attribute `key` of a one-output symbol's node: *found = 1 and *out its value, or
 * *found = 0 and *out = "". */
WEFT_API weft_status_t weft_symbol_get_attr(const weft_symbol_t* sym, const char* key, const char** out,
                                            int* found);
/* Sets an attribute of a one-output symbol's node; an operator parameter is checked. */
WEFT_API weft_status_t weft_symbol_set_attr(weft_symbol_t* sym, const char* key, const char* value);
/* *out = a JSON object {node name: {key: value}} over every node with attributes. */
WEFT_API weft_status_t weft_symbol_attr_dict(const weft_symbol_t* sym, const char** out);
/* *out = MXNet's debug_str text. */
WEFT_API weft_status_t weft_symbol_debug_str(const weft_symbol_t* sym, const char** out);

/* MXNet's symbol JSON (compat/mxnet/FORMATS.md). Loading accepts every MXNet version and
 * upgrades older files; malformed text is an error naming the node and the problem. */
WEFT_API weft_status_t weft_symbol_to_json(const weft_symbol_t* sym, const char** out);
WEFT_API weft_status_t weft_symbol_from_json(const char* json, weft_symbol_t** out);
WEFT_API weft_status_t weft_symbol_save_file(const weft_symbol_t* sym, const char* path);
WEFT_API weft_status_t weft_symbol_load_file(const char* path, weft_symbol_t** out);

/* Shape inference. `known` is a JSON object {input name: [dims...]} (unknown dims -1), or
 * NULL or "" for none.
 * *out = {"arguments": [...], "outputs": [...], "auxiliary": [...], "complete": bool}
 * with each shape a list of dims, or null when its rank is unknown. A conflict is an error
 * naming the node and both shapes. */
WEFT_API weft_status_t weft_symbol_infer_shape(const weft_symbol_t* sym, const char* known, const char** out);
/* Type inference: `known` is {input name: dtype code}, or NULL or "" for none; *out as for
 * shapes, with dtype codes (-1 unknown). */
WEFT_API weft_status_t weft_symbol_infer_type(const weft_symbol_t* sym, const char* known, const char** out);

/* ------------------------------------------------------------------ executors */

/* A symbol bound to arrays, run forward and backward (MXNet's Executor). */
typedef struct weft_executor weft_executor_t;

/* Binds `sym` on `ctx`. args[0..num_args) follow list_arguments, aux[0..num_aux) follow
 * list_auxiliary_states; their shapes and dtypes fix the graph's. arg_grads (may be NULL:
 * no gradients) has num_args entries, NULL where no gradient is wanted; grad_req (may be
 * NULL: "write" where a gradient array is given) has num_args strings among "null",
 * "write" and "add" (accumulate). The executor keeps its own references to every array.
 * A count, shape or dtype that does not fit is an error naming the argument or node. */
WEFT_API weft_status_t weft_executor_bind(const weft_symbol_t* sym, weft_context_t ctx, int num_args,
                                          weft_ndarray_t* const* args, weft_ndarray_t* const* arg_grads,
                                          const char* const* grad_req, int num_aux, weft_ndarray_t* const* aux,
                                          weft_executor_t** out);
/* Pushes the forward pass; is_train != 0 runs operators in training mode. */
WEFT_API weft_status_t weft_executor_forward(weft_executor_t* exec, int is_train);
/* Pushes the backward pass. head_grads has one array per output, or num_heads is 0 for
 * ones (the gradient of loss outputs). */
WEFT_API weft_status_t weft_executor_backward(weft_executor_t* exec, int num_heads,
                                              weft_ndarray_t* const* head_grads);
/* The output arrays (allocated at bind, rewritten by each forward): *outputs points to
 * *num_outputs new handles, which the caller frees; the array of handles itself stays
 * valid until the thread's next executor call. An executor that runs node by node (bound
 * with some csr or row_sparse array, or whose graph makes sparse arrays from dense ones:
 * see weft_executor_set_array) has no outputs before its first forward, and new output
 * arrays after each. */
WEFT_API weft_status_t weft_executor_outputs(weft_executor_t* exec, int* num_outputs,
                                             weft_ndarray_t* const** outputs);
/* *out = the bound graph, one line per node, then "Total N MB allocated" (the planned
 * internal memory) and "Total M MB without memory sharing"; valid until the thread's next
 * symbol or executor call. */
WEFT_API weft_status_t weft_executor_debug_str(weft_executor_t* exec, const char** out);
/* *out = a new symbol of the forward graph as the executor runs it, after the passes that
 * rewrite it (common subexpressions merged, outputs that became one value kept apart by
 * _copy nodes): MXNet's Executor.get_optimized_symbol. */
WEFT_API weft_status_t weft_executor_optimized_symbol(weft_executor_t* exec, weft_symbol_t** out);
/* The monitor: called on the thread that pushes forward or backward, right after each node
 * is pushed, with the name of each output ("fc1_output") and a new handle (the callee frees
 * it) on the array that will hold the value; reading it waits for the node. With
 * monitor_all != 0 the node's inputs are reported first. callback NULL removes the monitor.
 * user_data is passed back unchanged and must outlive the executor or the next call. */
typedef void (*weft_executor_monitor_fn)(const char* name, weft_ndarray_t* value, void* user_data);
WEFT_API weft_status_t weft_executor_set_monitor_callback(weft_executor_t* exec, weft_executor_monitor_fn callback,
                                                         void* user_data, int monitor_all);
/* NULL is accepted. Pending work on the executor's arrays still completes. */
WEFT_API weft_status_t weft_executor_free(weft_executor_t* exec);

/* As weft_executor_bind, with parts of the graph on other contexts (MXNet's group2ctx).
 * group2ctx (NULL or "": none) is a JSON object {group: [device_type, device_id]}: a node
 * whose "__ctx_group__" attribute names a group runs on that group's context (a group it
 * does not map is an error naming the node and the group). The arrays may then be on any
 * context; each variable is where its array is. A node without a group runs where its
 * first input was made, a gradient node where its forward node runs; a value read on
 * another context is copied there by an inserted "_CrossDeviceCopy" node (debug_str lists
 * the placement and the copies), and each gradient lands on its gradient array's context.
 * Memory is planned per context. */
WEFT_API weft_status_t weft_executor_bind_ex(const weft_symbol_t* sym, weft_context_t ctx, const char* group2ctx,
                                             int num_args, weft_ndarray_t* const* args,
                                             weft_ndarray_t* const* arg_grads, const char* const* grad_req,
                                             int num_aux, weft_ndarray_t* const* aux, weft_executor_t** out);
/* MXNet's simple_bind: infers every shape from `shapes` ({input name: [dims]}) and every
 * dtype from `dtypes` (NULL or {input name: dtype code}; float32 where neither it nor the
 * variable's "__dtype__" says otherwise), allocates zeroed arguments, gradients and
 * auxiliary states, each on its variable's group context (group2ctx, as in
 * weft_executor_bind_ex) or on ctx, and binds them. grad_req: NULL or "" ("write"), one request
 * for every argument ("null", "write", "add"), or a JSON object {argument: request} (the
 * others "null"); arguments with "null" get no gradient array. Read the arrays with
 * weft_executor_arrays. An unknown name, or shapes that leave some shape unknown, is an
 * error naming them. */
WEFT_API weft_status_t weft_executor_simple_bind(const weft_symbol_t* sym, weft_context_t ctx, const char* group2ctx,
                                                 const char* shapes, const char* dtypes, const char* grad_req,
                                                 weft_executor_t** out);
/* MXNet's Executor.reshape: a new executor of the same symbol, contexts and gradient
 * requests for new input shapes (`shapes`, {input name: [dims]}). An array whose shape
 * does not change is shared with `exec`; one that shrinks is a view of its old memory; one
 * that grows is an error unless allow_up_sizing != 0 (it then gets new zeroed memory).
 * Arrays other than the inputs named may change shape only with partial_shaping != 0.
 * `exec` stays usable; the new executor shares its memory, so run one at a time. */
WEFT_API weft_status_t weft_executor_reshape(weft_executor_t* exec, const char* shapes, int partial_shaping,
                                             int allow_up_sizing, weft_executor_t** out);
/* Which arrays weft_executor_arrays gives. Append-only. */
typedef enum weft_executor_array_kind {
  WEFT_EXECUTOR_ARGUMENTS = 0, /* list_arguments order */
  WEFT_EXECUTOR_GRADIENTS = 1, /* one per argument, NULL where it has no gradient */
  WEFT_EXECUTOR_AUXILIARY = 2  /* list_auxiliary_states order */
} weft_executor_array_kind_t;
/* The bound arrays of one kind: *outputs points to *num_outputs new handles (NULL entries
 * for gradients not asked for), which the caller frees; the array of handles itself stays
 * valid until the thread's next executor call. */
WEFT_API weft_status_t weft_executor_arrays(weft_executor_t* exec, int kind, int* num_outputs,
                                            weft_ndarray_t* const** outputs);
/* Executors that run node by node only (others refuse): those bound with some csr or
 * row_sparse array, or whose graph makes sparse arrays from dense ones (cast_storage to
 * csr or row_sparse, the DGL graph operators). Replaces bound array `index` of `kind`
 * (weft_executor_array_kind_t) with `array`, which must have the old array's shape and
 * dtype. Such an executor runs its nodes one by one through the sparse kernels (or the
 * dense fallback), planning no memory; its outputs are new arrays at every forward
 * (read them with weft_executor_outputs) and a sparse gradient array is replaced by each
 * backward (read it with weft_executor_arrays), since sparse arrays are immutable. */
WEFT_API weft_status_t weft_executor_set_array(weft_executor_t* exec, int kind, int index,
                                               const weft_ndarray_t* array);

/* ------------------------------------------------------------------ autograd */

/* Recording state of the calling thread (off at start). While it is on, every operator call
 * (and reshape, slice, at, copy_to) that reads an array with a history is recorded, and its
 * outputs get a history. set_is_recording stores is_recording != 0 and, when `out` is not NULL,
 * the previous state (0 or 1) in *out. */
WEFT_API weft_status_t weft_autograd_set_is_recording(int is_recording, int* out);
WEFT_API weft_status_t weft_autograd_is_recording(int* out);

/* Marks num arrays as variables (leaves of recorded graphs). grad_reqs has num strings among
 * "null", "write" or "inplace" (a backward overwrites the gradient) and "add" (it accumulates); grads has
 * num arrays of the variables' shapes (an entry may be NULL where grad_req is "null", and grads
 * itself NULL when every grad_req is "null"). The library keeps references to the gradient
 * arrays; an array's earlier history is dropped. */
WEFT_API weft_status_t weft_autograd_mark_variables(int num, weft_ndarray_t* const* vars,
                                                   const char* const* grad_reqs, weft_ndarray_t* const* grads);

/* Runs backward from num_heads recorded arrays. head_grads is NULL or has num_heads entries,
 * NULL meaning ones. With num_variables == 0 every variable reached receives its gradient as
 * its grad_req says and *num_outputs is 0; otherwise *outputs holds one new handle per
 * variable (its gradient; the caller frees them; the array of handles stays valid until the
 * thread's next autograd call) and no variable's gradient array is touched. retain_graph != 0
 * keeps the recorded graph for another backward; create_graph != 0 records the backward
 * itself (higher-order gradients); is_train sets the training mode of the backward. */
WEFT_API weft_status_t weft_autograd_backward(int num_heads, weft_ndarray_t* const* heads,
                                             weft_ndarray_t* const* head_grads, int num_variables,
                                             weft_ndarray_t* const* variables, int retain_graph, int create_graph,
                                             int is_train, int* num_outputs, weft_ndarray_t* const** outputs);

/* *out = a new handle on the gradient array of a variable, or NULL when `arr` was not marked
 * (or was marked with grad_req "null"). */
WEFT_API weft_status_t weft_ndarray_get_grad(const weft_ndarray_t* arr, weft_ndarray_t** out);
/* MXNet's gradient state of a variable: *out = 1 when a backward wrote its gradient since the
 * state was last set to 0, else 0 (0 too for an array that is not a variable). Gluon's
 * Trainer reads it to find the parameters a step's backward did not reach. */
WEFT_API weft_status_t weft_ndarray_get_grad_state(const weft_ndarray_t* arr, int* out);
/* Sets that state (fresh when state != 0). An array that is not a variable is an error. */
WEFT_API weft_status_t weft_ndarray_set_grad_state(weft_ndarray_t* arr, int state);
/* *out = 1 when `arr` has a recorded history (a variable or a recorded result), else 0. */
WEFT_API weft_status_t weft_ndarray_has_history(const weft_ndarray_t* arr, int* out);
/* *out = a new handle on the same memory without history: gradients stop there. */
WEFT_API weft_status_t weft_ndarray_detach(const weft_ndarray_t* arr, weft_ndarray_t** out);
/* *out = a new symbol of the recorded history of `arr` (MXNet's autograd.get_symbol): a node per
 * recorded call, named after its operator in lower case and a counter, and a variable per marked
 * array or per array a call read without a history, named "var0", "var1", ... The caller frees
 * it. An array without a history, a history freed by a backward or holding a custom function
 * (weft_autograd_record_function) is an error. */
WEFT_API weft_status_t weft_autograd_get_symbol(const weft_ndarray_t* arr, weft_symbol_t** out);

/* A caller-defined gradient (autograd.Function). Called during a backward on the thread that
 * runs it, with one gradient per output; writes one new array handle per input into
 * in_grads (NULL for "no gradient"); the library takes ownership of those handles. Returns 0
 * on success; any other value makes the backward fail. */
typedef int (*weft_autograd_backward_fn)(int num_out_grads, weft_ndarray_t* const* out_grads, int num_in_grads,
                                         weft_ndarray_t** in_grads, void* user_data);
/* Called once when the recorded call is released (after a backward without retain_graph, or
 * when no array refers to it any more); may be NULL. */
typedef void (*weft_autograd_release_fn)(void* user_data);

/* Records that `outputs` were computed from `inputs` by code the library did not see, with
 * `backward` as the gradient. The output arrays (existing handles) get the history. `name`
 * is used in error messages. Nothing is recorded when the thread is not recording or no
 * input has a history (then `release` is called at once). */
WEFT_API weft_status_t weft_autograd_record_function(const char* name, int num_inputs, weft_ndarray_t* const* inputs,
                                                    int num_outputs, weft_ndarray_t* const* outputs,
                                                    weft_autograd_backward_fn backward,
                                                    weft_autograd_release_fn release, void* user_data);

/* ------------------------------------------------------------------ cached graphs (hybridize) */

/* *out = 1 when the two symbols are the same graph (the same operators with the same
 * parameters and attributes, the same variable and node names, the same wiring and the same
 * outputs), else 0. Cheaper than comparing their JSON: a hybridized block compares each
 * call's trace with the graph it cached. */
WEFT_API weft_status_t weft_symbol_same_graph(const weft_symbol_t* a, const weft_symbol_t* b, int* out);

/* Runs a bound executor as one imperative call, as a hybridized block does: copies inputs[i]
 * into bound_inputs[i] (arrays the executor was bound with), runs forward with is_train, and
 * returns new arrays holding copies of the outputs (*outputs holds *num_outputs new handles
 * the caller frees; the array of handles stays valid until the thread's next call). While
 * the thread records and some of inputs or params (the executor's parameters, read by the
 * call) has a history, the call is recorded as one node whose gradient runs the executor's
 * backward: the parameters' gradients go to the arrays bound as the executor's gradients,
 * and input i gets a copy of input_grads[i] (NULL entries: no gradient). A backward must
 * come before the executor's next forward, which would overwrite what it reads. */
WEFT_API weft_status_t weft_executor_invoke(weft_executor_t* exec, int num_inputs, weft_ndarray_t* const* inputs,
                                           weft_ndarray_t* const* bound_inputs, weft_ndarray_t* const* input_grads,
                                           int num_params, weft_ndarray_t* const* params, int is_train,
                                           int* num_outputs, weft_ndarray_t* const** outputs);
/* *out = 1 while a call of weft_executor_invoke that autograd recorded still awaits its
 * backward (its recorded history is alive and no backward without retain_graph went through
 * it), else 0. A second recorded call meanwhile must run elsewhere (another executor, or
 * operator by operator): this executor's next forward would overwrite what that backward
 * reads. */
WEFT_API weft_status_t weft_executor_backward_pending(const weft_executor_t* exec, int* out);

/* ------------------------------------------------------------------ RecordIO files */

/* A dmlc RecordIO file (MXNet's `.rec`), opened for reading or for writing. */
typedef struct weft_recordio weft_recordio_t;

/* Creates (or truncates) `path` for writing records. */
WEFT_API weft_status_t weft_recordio_writer_create(const char* path, weft_recordio_t** out);
/* Opens `path` for reading records from its start. */
WEFT_API weft_status_t weft_recordio_reader_create(const char* path, weft_recordio_t** out);
/* Appends one record (split and padded as dmlc RecordIO writes it; at most 2^29-1 bytes). */
WEFT_API weft_status_t weft_recordio_write(weft_recordio_t* rec, const void* data, size_t size);
/* Reads the next record: *out = new bytes, or NULL at the end of the file. A corrupt or
 * truncated record (bad magic, bad length, a continuation without a start) gives
 * WEFT_ERR_IO naming the file and the byte offset. */
WEFT_API weft_status_t weft_recordio_read(weft_recordio_t* rec, weft_bytes_t** out);
/* *out = the byte offset of the next record (what `.idx` files store). */
WEFT_API weft_status_t weft_recordio_tell(const weft_recordio_t* rec, int64_t* out);
/* Moves a reader to `pos`, the offset of a record's start (from tell or an `.idx` file). */
WEFT_API weft_status_t weft_recordio_seek(weft_recordio_t* rec, int64_t pos);
/* Closes the file (flushing a writer; a failed flush is reported, the handle is freed
 * anyway). NULL is accepted. */
WEFT_API weft_status_t weft_recordio_free(weft_recordio_t* rec);

/* ------------------------------------------------------------------ images */

/* Decodes a JPEG or PNG into a new uint8 CPU array of shape (H, W, C). flag as
 * cv2.imdecode: 1 colour (C = 3), 0 grey (C = 1), -1 as stored (1, 3 or 4). Colour is RGB
 * when to_rgb != 0, else BGR (OpenCV's order). Data that is not a JPEG/PNG or is corrupt
 * gives WEFT_ERR_IO. */
WEFT_API weft_status_t weft_image_decode(const void* data, size_t size, int flag, int to_rgb, weft_ndarray_t** out);
/* Encodes a uint8 image of shape (H, W) or (H, W, C), C in 1, 3, 4, as `format` ".jpg"
 * (quality 0..100) or ".png" (quality = zlib level, clamped to 0..9). is_bgr != 0 says the
 * channels are in OpenCV's order. */
WEFT_API weft_status_t weft_image_encode(const weft_ndarray_t* img, const char* format, int quality, int is_bgr,
                                         weft_bytes_t** out);
/* Resizes a uint8 (H, W[, C]) image to width x height; interp as cv2: 0 nearest,
 * 1 bilinear, 2 bicubic, 3 area. */
WEFT_API weft_status_t weft_image_resize(const weft_ndarray_t* img, int width, int height, int interp,
                                         weft_ndarray_t** out);

/* ------------------------------------------------------------------ key-value stores */

/* A key-value store for parameter synchronisation (MXNet's KVStore). Keys are strings: a
 * key whose text is a non-negative decimal integer below 2^30 ("3") is that integer key;
 * any other text is a string key. Keys may repeat within one call: pushed values of one
 * key are summed (one value per device), pulled ones are all written (broadcast).
 * push, pull and pushpull return at once: the work runs on the engine, and reading the
 * outputs waits for it (errors, e.g. a lost node, are reported by that wait). */
typedef struct weft_kvstore weft_kvstore_t;

/* The updater: called by push (on the pushing thread, or on a server's thread) as
 * update(key, merged, stored, user). `key` is the key's text (valid during the call);
 * `merged` is the sum of the pushed values and `stored` the array held for the key, which
 * the updater changes in place (with operators: they run on the engine). Both handles
 * are new and owned by the callee, which frees them with weft_ndarray_free. `user` is the
 * pointer given to weft_kvstore_set_updater. Return 0 on success, non-zero on failure
 * (the push then fails with WEFT_ERR_RUNTIME naming the key). */
typedef int (*weft_kvstore_updater_t)(const char* key, weft_ndarray_t* merged, weft_ndarray_t* stored, void* user);

/* A server's command handler: called on the server's thread for each command a worker
 * sends (weft_kvstore_send_command_to_servers) with its head, its body (`size` bytes,
 * valid during the call) and `user`. Return 0 on success, non-zero on failure (the
 * sending worker's call then fails). */
typedef int (*weft_kvstore_controller_t)(int head, const void* body, size_t size, void* user);

/* Creates a store. `type`: "local" (sum on the CPU), "device" (values on GPUs summed on a
 * GPU, with NCCL where built in; host values on the CPU), "nccl" (as device), "dist_sync"/"dist" (sum of
 * every worker's push applied once), "dist_async" (each push applied when it arrives),
 * "dist_device_sync". A dist type reads the DMLC_* environment: in a worker it registers
 * with the scheduler and returns once every node has joined; in a server it gives the
 * store whose weft_kvstore_run_server runs the server. */
WEFT_API weft_status_t weft_kvstore_create(const char* type, weft_kvstore_t** out);
/* Frees the store; a dist worker waits for its pending pushes and pulls and leaves the job
 * (the scheduler ends the job once every worker has left). NULL is accepted. */
WEFT_API weft_status_t weft_kvstore_free(weft_kvstore_t* kv);
/* *out = the type given at creation; valid while the store lives. */
WEFT_API weft_status_t weft_kvstore_get_type(const weft_kvstore_t* kv, const char** out);

/* Initialises `num` keys (new ones): key_names[i] (the key texts) with values[i] (copied;
 * in a dist store rank 0's value reaches the servers and every worker waits for it). */
WEFT_API weft_status_t weft_kvstore_init(weft_kvstore_t* kv, int num, const char* const* key_names,
                                         weft_ndarray_t* const* values);
/* Pushes values[i] for key_names[i] (i < num); the values of one key are summed, then the
 * updater (if any) or a copy updates the stored value. priority: higher runs earlier. */
WEFT_API weft_status_t weft_kvstore_push(weft_kvstore_t* kv, int num, const char* const* key_names,
                                         weft_ndarray_t* const* values, int priority);
/* Copies the stored value of key_names[i] into outs[i] (i < num; same shape). */
WEFT_API weft_status_t weft_kvstore_pull(weft_kvstore_t* kv, int num, const char* const* key_names,
                                         weft_ndarray_t* const* outs, int priority);
/* Copies the rows row_ids (a dense 1-D int64 array, strictly increasing, each within the
 * stored value's first dimension) of key_name's stored value into out (dense, shape
 * (length of row_ids, stored shape[1:]), the stored dtype). Only those rows are read; a dist
 * store sends only them over the network. Backs kv.row_sparse_pull. */
WEFT_API weft_status_t weft_kvstore_pull_rows(weft_kvstore_t* kv, const char* key_name, const weft_ndarray_t* row_ids,
                                              weft_ndarray_t* out, int priority);
/* Push of `num` (key_names, values) then pull of num_pull (pull_key_names, pull_outs), in
 * one call. */
WEFT_API weft_status_t weft_kvstore_pushpull(weft_kvstore_t* kv, int num, const char* const* key_names,
                                             weft_ndarray_t* const* values, int num_pull,
                                             const char* const* pull_key_names, weft_ndarray_t* const* pull_outs,
                                             int priority);

/* Sets the updater (see weft_kvstore_updater_t; NULL removes it: stored = merged) and the
 * pointer passed to it. `user` must stay valid while the store may call the updater. A
 * dist worker refuses (the update runs on the servers). */
WEFT_API weft_status_t weft_kvstore_set_updater(weft_kvstore_t* kv, weft_kvstore_updater_t updater, void* user);

/* Gradient compression with string parameters keys[i] = vals[i] (i < num_params):
 * "type" ("2bit" or "none"), "threshold" (> 0, default 0.5). Device and dist stores only. */
WEFT_API weft_status_t weft_kvstore_set_gradient_compression(weft_kvstore_t* kv, int num_params,
                                                             const char* const* keys, const char* const* vals);

/* *out = this worker's rank (0 outside dist), the number of workers (1 outside dist). */
WEFT_API weft_status_t weft_kvstore_get_rank(const weft_kvstore_t* kv, int* out);
WEFT_API weft_status_t weft_kvstore_get_num_workers(const weft_kvstore_t* kv, int* out);
/* Blocks until every worker has reached the barrier (returns at once outside dist). */
WEFT_API weft_status_t weft_kvstore_barrier(weft_kvstore_t* kv);

/* Sends a command (head, `size` bytes of body at `data`) to every server and waits until
 * all have handled it. Dist workers only. */
WEFT_API weft_status_t weft_kvstore_send_command_to_servers(weft_kvstore_t* kv, int head, const void* data,
                                                            size_t size);
/* Runs the server loop of a dist store in a server process until the job ends; commands go
 * to `controller` with `user` (controller may be NULL: commands are acknowledged and
 * ignored). Fails with WEFT_ERR_RUNTIME naming the lost node when the job breaks. */
WEFT_API weft_status_t weft_kvstore_run_server(weft_kvstore_t* kv, weft_kvstore_controller_t controller,
                                               void* user);
/* Runs the scheduler of a dist job (DMLC_ROLE=scheduler, from the DMLC_* environment)
 * until every worker has left; fails naming the lost node when one dies. */
WEFT_API weft_status_t weft_kvstore_run_scheduler(void);
/* *out = this process's role from DMLC_ROLE: "worker" (also when unset), "server" or
 * "scheduler"; static storage. */
WEFT_API weft_status_t weft_kvstore_get_role(const char** out);

/* ------------------------------------------------------------------ data iterators */

/* A data iterator (MNISTIter, CSVIter, LibSVMIter, ImageRecordIter, ...): yields batches of
 * data and label arrays; most run a background thread that prepares the next batches while
 * the caller computes. Created by name from string parameters, freed by weft_dataiter_free. */
typedef struct weft_dataiter weft_dataiter_t;

/* The registry of iterator types, for front ends to generate constructors (as for operators).
 * *out = number of registered iterator types. */
WEFT_API weft_status_t weft_dataiter_type_count(int* out);
/* *out = the name of the i-th type (0 <= i < count), in order of name. */
WEFT_API weft_status_t weft_dataiter_type_name(int i, const char** out);
/* *out = the documentation of the type `name`; WEFT_ERR_NOT_FOUND when unknown. */
WEFT_API weft_status_t weft_dataiter_type_doc(const char* name, const char** out);
/* Parameters of the type `name`: *out = how many; then for parameter i: its name, type
 * description ("int, in [1, inf]", "boolean", "Shape(tuple)", "{'a', 'b'}"), default (""
 * when required), doc, and whether it is required. Any out-pointer of
 * weft_dataiter_type_param may be NULL. Strings of these four functions live as long as the
 * library. */
WEFT_API weft_status_t weft_dataiter_type_num_params(const char* name, int* out);
WEFT_API weft_status_t weft_dataiter_type_param(const char* iter, int i, const char** name, const char** type,
                                                const char** default_value, const char** doc, int* required);

/* Creates an iterator of type `name` with string parameters keys[i] = vals[i] (i < num_params;
 * e.g. "batch_size" = "64", "data_shape" = "(3, 28, 28)", "shuffle" = "1"). Files are opened
 * and checked here: a missing file is WEFT_ERR_NOT_FOUND, a corrupt one WEFT_ERR_IO, a bad
 * parameter WEFT_ERR_VALUE, each message naming the file or parameter. A parameter the
 * iterator does not know is ignored with a warning on stderr, as MXNet's iterators ignore
 * them. The caller owns *out. */
WEFT_API weft_status_t weft_dataiter_create(const char* name, int num_params, const char* const* keys,
                                            const char* const* vals, weft_dataiter_t** out);
/* Stops the iterator's threads and frees it (NULL is accepted). Arrays obtained from it stay
 * valid: they are separate handles. */
WEFT_API weft_status_t weft_dataiter_free(weft_dataiter_t* it);
/* Starts a new epoch (discarding prepared batches). */
WEFT_API weft_status_t weft_dataiter_reset(weft_dataiter_t* it);
/* Starts a new epoch from the first sample, as reset does unless the last batch taken wrapped
 * around (round_batch), where reset goes on after the samples it took. A prefetcher in front
 * of the iterator calls it when it took a batch its own consumer never saw. */
WEFT_API weft_status_t weft_dataiter_rewind(weft_dataiter_t* it);
/* Moves to the next batch: *out = 1, or 0 at the end of the epoch. Blocks until the batch is
 * ready; a failure while preparing it (e.g. a corrupt record) is reported by this call. */
WEFT_API weft_status_t weft_dataiter_next(weft_dataiter_t* it, int* out);

/* The current batch (after weft_dataiter_next gave 1). Arrays come as new handles the caller
 * owns and frees; every batch has its own arrays, so they stay valid after the next call. */
WEFT_API weft_status_t weft_dataiter_get_num_data(const weft_dataiter_t* it, int* out);
WEFT_API weft_status_t weft_dataiter_get_data(const weft_dataiter_t* it, int i, weft_ndarray_t** out);
WEFT_API weft_status_t weft_dataiter_get_num_label(const weft_dataiter_t* it, int* out);
WEFT_API weft_status_t weft_dataiter_get_label(const weft_dataiter_t* it, int i, weft_ndarray_t** out);
/* *out = how many trailing samples of the batch are padding (filler, or samples reused to
 * complete the last batch). */
WEFT_API weft_status_t weft_dataiter_get_pad(const weft_dataiter_t* it, int* out);
/* *out = the number of sample indices of the batch (the batch size; 0 when none). */
WEFT_API weft_status_t weft_dataiter_get_index_size(const weft_dataiter_t* it, int* out);
/* Copies the dataset index of every sample of the batch into `data` as uint64 values;
 * nbytes must equal 8 * weft_dataiter_get_index_size. */
WEFT_API weft_status_t weft_dataiter_get_index(const weft_dataiter_t* it, void* data, size_t nbytes);

/* What every batch holds, known before the first batch: *out = the number of data arrays
 * (is_label = 0) or label arrays (is_label = 1); for array i, its name ("data",
 * "softmax_label"; valid while the iterator lives), its batch shape (dims[0..*ndim), at most
 * `capacity` written) and its dtype (*out, a weft_dtype_t). Any out-pointer of
 * weft_dataiter_get_desc (name, ndim, out) may be NULL; dims may be NULL when capacity is 0. */
WEFT_API weft_status_t weft_dataiter_get_num_descs(const weft_dataiter_t* it, int is_label, int* out);
WEFT_API weft_status_t weft_dataiter_get_desc(const weft_dataiter_t* it, int is_label, int i, const char** name,
                                              int64_t* dims, int capacity, int* ndim, int* out);

/* ------------------------------------------------------------------ custom operators */

/* Sets this thread's last error message (what weft_get_last_error returns). For callbacks
 * that fail: a callback below sets the message, returns nonzero, and the library raises the
 * message where the failure is reported. `message` NULL sets "". */
WEFT_API weft_status_t weft_set_last_error(const char* message);

/* What each array a custom operator's forward or backward receives is (MXNet's tags). */
typedef enum weft_custom_tag {
  WEFT_CUSTOM_IN_DATA = 0,
  WEFT_CUSTOM_OUT_DATA = 1,
  WEFT_CUSTOM_IN_GRAD = 2,
  WEFT_CUSTOM_OUT_GRAD = 3,
  WEFT_CUSTOM_AUX = 4
} weft_custom_tag_t;

/* An operator instance (MXNet's CustomOp), made by a property's create_operator. forward and
 * backward run on a thread of the library's pool for custom operators, never on an engine
 * worker nor on the thread that pushed the call, so they may take a lock that thread holds (a
 * GIL), call any function of this API and wait for arrays. They receive `num_arrays` new array
 * handles, which the callee owns and frees, with tags[i] (a weft_custom_tag_t) and reqs[i]
 * (0 null, 1 write, 2 write in place, 3 add; for what the call writes: out_data in forward,
 * in_grad in backward; 0 for the others). forward gets in_data (one per argument), out_data,
 * then aux; backward in_data, out_data, in_grad (one per argument), out_grad, then aux, where
 * an array the backward did not declare it needs is a NULL handle. The arrays alias the
 * call's memory with engine variables of their own: the call completes once the callback
 * returned and everything it pushed on them is done. Return 0, or nonzero after
 * weft_set_last_error: the call's outputs then carry the message, raised by the next wait on
 * them. release (may be NULL) is called once when the library drops the instance. */
typedef int (*weft_custom_run_fn)(void* self, int is_train, int num_arrays, weft_ndarray_t* const* arrays,
                                  const int* tags, const int* reqs);
typedef void (*weft_custom_release_fn)(void* self);
typedef struct weft_custom_op_fns {
  void* self;
  weft_custom_run_fn forward;
  weft_custom_run_fn backward;
  weft_custom_release_fn release;
} weft_custom_op_fns_t;

/* The property of one custom operator for one set of parameters (MXNet's CustomOpProp).
 * Called on the thread that builds a call or a graph node (except release: any thread).
 * Every callback returns 0, or nonzero after weft_set_last_error.
 *  - list_arguments / list_outputs / list_auxiliary_states: *n names in *names; the strings
 *    and the array stay valid until the next callback on `self` (or its release).
 *  - infer_shape: n = arguments + outputs + auxiliary states, in that order. On entry ndims[i]
 *    is the rank of the i-th argument's shape (dims in shapes[i]; -1 when unknown, and a dim
 *    of -1 is unknown); the callee sets ndims[i] and shapes[i] for all n, pointing to dims
 *    that stay valid until the next callback on `self`.
 *  - infer_type: dtypes[i] for the same n entries (weft_dtype_t, -1 unknown): called once
 *    some argument's dtype is known; the callee fills every entry it can and leaves -1 where
 *    it cannot yet (asked again when graph inference knows more).
 *  - declare_backward_dependency: out_grad (one flag per output), in_data (per argument) and
 *    out_data (per output) come zero; the callee sets to 1 those the backward reads.
 *  - create_operator: makes an instance for the device `ctx` and the n shapes and dtypes (as
 *    infer_shape and infer_type give them) into *out.
 *  - need_top_grad: whether the backward reads the gradients of the outputs.
 *  - release (may be NULL): called once when the library drops the property. */
typedef int (*weft_custom_list_fn)(void* self, int* n, const char* const** names);
typedef int (*weft_custom_infer_shape_fn)(void* self, int n, int* ndims, const int64_t** shapes);
typedef int (*weft_custom_infer_type_fn)(void* self, int n, int* dtypes);
typedef int (*weft_custom_backward_dependency_fn)(void* self, int* out_grad, int* in_data, int* out_data);
typedef int (*weft_custom_create_operator_fn)(void* self, weft_context_t ctx, int n, const int* ndims,
                                              const int64_t* const* shapes, const int* dtypes,
                                              weft_custom_op_fns_t* out);
typedef struct weft_custom_prop_fns {
  void* self;
  int need_top_grad;
  weft_custom_list_fn list_arguments;
  weft_custom_list_fn list_outputs;
  weft_custom_list_fn list_auxiliary_states;
  weft_custom_infer_shape_fn infer_shape;
  weft_custom_infer_type_fn infer_type;
  weft_custom_backward_dependency_fn declare_backward_dependency;
  weft_custom_create_operator_fn create_operator;
  weft_custom_release_fn release;
} weft_custom_prop_fns_t;

/* Makes the property of `op_type` for the parameters keys[i] = values[i] (the call's keyword
 * arguments other than op_type, as strings) into *out. Returns 0, or nonzero after
 * weft_set_last_error. */
typedef int (*weft_custom_creator_fn)(const char* op_type, int num_kwargs, const char* const* keys,
                                      const char* const* values, weft_custom_prop_fns_t* out, void* user_data);

/* Registers (or replaces) the custom operator `op_type`: the registry operator "Custom"
 * called with op_type=`op_type` asks `creator` for its property. `user_data` is passed to
 * every call of `creator` and must stay valid as long as the library may call it. */
WEFT_API weft_status_t weft_custom_op_register(const char* op_type, weft_custom_creator_fn creator, void* user_data);

/* From this call on, the library calls no release callback of a custom operator or property
 * any more: what they would free is left to the end of the process. For a front end whose
 * callbacks stop working before the library's objects go, as Python's do at interpreter exit
 * while arrays still hold the operators of recorded graphs. Forward and backward callbacks
 * are not affected (wait for the work first). */
WEFT_API weft_status_t weft_custom_op_stop_releases(void);

/* ------------------------------------------------------------------ operator libraries */

/* Loads the shared library of operators at `path`, built against weft/op_library.h, and
 * registers each of its operators as a custom operator of that name (the registry operator
 * "Custom" with op_type = the name). *num_ops = how many operators it has. A path this
 * process already loaded is not loaded again: the call gives the same count. A missing file
 * is WEFT_ERR_NOT_FOUND; a file that is not such a library, or one built for a newer
 * version of op_library.h, WEFT_ERR_VALUE. Libraries stay loaded until the process ends. */
WEFT_API weft_status_t weft_library_load(const char* path, int* num_ops);
/* *out = the name of operator i (0 <= i < num_ops) of the library at `path` (loaded first, as
 * weft_library_load does, when it is not yet); valid as long as the process. */
WEFT_API weft_status_t weft_library_op_name(const char* path, int i, const char** out);
/* ------------------------------------------------------------------ profiler */

/* The profiler (MXNet's mx.profiler). While it runs, the engine records every operation
 * (name, device, worker thread, start and end, bytes allocated; executor steps by their
 * graph node's name), storage the bytes in use per device, and the C API its calls, as
 * configured. weft_profiler_dump writes them as Chrome trace event JSON (chrome://tracing,
 * Perfetto); weft_profiler_dumps returns aggregate statistics. The state is per process;
 * every function may be called from any thread. */

/* Profiler states. Append-only. */
typedef enum weft_profiler_state {
  WEFT_PROFILER_STOP = 0,
  WEFT_PROFILER_RUN = 1
} weft_profiler_state_t;

/* Configures the profiler with string parameters keys[i] = vals[i] (i < num), MXNet's
 * set_config keys with MXNet's defaults for keys not given: "profile_all" (False),
 * "profile_symbolic", "profile_imperative", "profile_memory", "profile_api" (True each),
 * "filename" ("profile.json"), "continuous_dump" (True: the file is rewritten every
 * dump_period seconds while running), "dump_period" (seconds, 1.0), "aggregate_stats"
 * (False; needed by weft_profiler_dumps), "profile_process" ("worker"; "server" is
 * WEFT_ERR_UNSUPPORTED). Booleans are "True"/"False"/"1"/"0". An unknown key or bad value is
 * WEFT_ERR_VALUE naming it, and nothing is applied. */
WEFT_API weft_status_t weft_profiler_set_config(int num, const char* const* keys, const char* const* vals);
/* Starts (WEFT_PROFILER_RUN, which also resumes a paused profiler) or stops
 * (WEFT_PROFILER_STOP) recording. A profile that was started is written to the configured
 * file at exit unless weft_profiler_dump(1) came first. */
WEFT_API weft_status_t weft_profiler_set_state(int state);
/* *out = the state (a weft_profiler_state_t). */
WEFT_API weft_status_t weft_profiler_get_state(int* out);
/* paused != 0 pauses recording (the state stays RUN); 0 resumes it. */
WEFT_API weft_status_t weft_profiler_set_paused(int paused);
/* Writes what was recorded to the configured file as Chrome trace JSON (atomically: the
 * file is never seen half written); does nothing if the profiler never ran since the last
 * final dump. finished != 0 makes it the final dump: the profiler stops and its records
 * are dropped. An unwritable file is WEFT_ERR_IO naming it. */
WEFT_API weft_status_t weft_profiler_dump(int finished);
/* *out = the aggregate statistics (per category, one row per name: count, total, min, max
 * and average time in ms, or use in kB for memory) as a table (format 0) or JSON (format 1),
 * rows sorted by sort_by (0 total, 1 avg, 2 min, 3 max, 4 count), descending unless
 * ascending != 0; reset != 0 clears them afterwards. Needs aggregate_stats=True in the
 * configuration (otherwise WEFT_ERR_VALUE). The caller frees *out. */
WEFT_API weft_status_t weft_profiler_dumps(int reset, int format, int sort_by, int ascending, weft_bytes_t** out);
/* Sets the calling thread's profiler scope (MXNet 2's profiler.scope): operators called by
 * this thread are then recorded as "<scope><operator>" ("fwd:relu"); "" or "<unk>:" is
 * the default scope, no prefix. */
WEFT_API weft_status_t weft_profiler_set_scope(const char* scope);

/* A domain groups user objects (it is their category in the trace). Domains are interned
 * by name: two handles of one name are the same domain. Freeing the handle leaves the
 * domain (and objects created in it) usable. */
typedef struct weft_profile_domain weft_profile_domain_t;
/* A task, frame or event: start and stop bracket a stretch of the caller's work, written
 * as a 'B'/'E' pair on the track of the thread that started it. */
typedef struct weft_profile_duration weft_profile_duration_t;
/* A counter: an integer whose every change is written as a 'C' event. */
typedef struct weft_profile_counter weft_profile_counter_t;

/* Creates (or finds) the domain `name` (not empty). */
WEFT_API weft_status_t weft_profile_domain_create(const char* name, weft_profile_domain_t** out);
WEFT_API weft_status_t weft_profile_domain_free(weft_profile_domain_t* domain);
/* Creates a task, a frame (in `domain`) or an event (no domain) named `name` (not empty). */
WEFT_API weft_status_t weft_profile_task_create(const weft_profile_domain_t* domain, const char* name,
                                                weft_profile_duration_t** out);
WEFT_API weft_status_t weft_profile_frame_create(const weft_profile_domain_t* domain, const char* name,
                                                 weft_profile_duration_t** out);
WEFT_API weft_status_t weft_profile_event_create(const char* name, weft_profile_duration_t** out);
/* Starts or stops timing. A start while started, or a stop while not, is WEFT_ERR_VALUE.
 * Nothing is written while the profiler is stopped or paused, but the calls still pair. */
WEFT_API weft_status_t weft_profile_duration_start(weft_profile_duration_t* duration);
WEFT_API weft_status_t weft_profile_duration_stop(weft_profile_duration_t* duration);
WEFT_API weft_status_t weft_profile_duration_free(weft_profile_duration_t* duration);
/* Creates a counter named `name` (not empty) in `domain`, with value 0. */
WEFT_API weft_status_t weft_profile_counter_create(const weft_profile_domain_t* domain, const char* name,
                                                   weft_profile_counter_t** out);
/* Sets the counter to `value`, or adds `delta` (negative to decrease) to it. */
WEFT_API weft_status_t weft_profile_counter_set(weft_profile_counter_t* counter, int64_t value);
WEFT_API weft_status_t weft_profile_counter_adjust(weft_profile_counter_t* counter, int64_t delta);
/* *out = the counter's value. */
WEFT_API weft_status_t weft_profile_counter_get(const weft_profile_counter_t* counter, int64_t* out);
WEFT_API weft_status_t weft_profile_counter_free(weft_profile_counter_t* counter);
/* Writes an instant marker `name` in `domain` with `scope` "global", "process", "thread",
 * "task" or "marker" (the last two show as thread scope); another scope is WEFT_ERR_VALUE. */
WEFT_API weft_status_t weft_profile_marker(const weft_profile_domain_t* domain, const char* name, const char* scope);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_C_API_H_ */
