/* An example library of operators built against weft/op_library.h alone, loaded by
 * tests/python/test_library.py with mx.library.load:
 *   my_gemm(a, b)          matrix product of float32 (n, k) and (k, m), with its gradient
 *   my_scale(data, alpha)  alpha * data + 1 for float32 or float64, with its gradient
 *   my_fail(data)          fails in forward with a message (error reporting) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/op_library.h"

static const char* param(const weft_lib_params_t* p, const char* key, const char* fallback) {
  for (int i = 0; i < p->num; ++i)
    if (strcmp(p->keys[i], key) == 0) return p->values[i];
  return fallback;
}

static void store(float* dst, int req, float v) {
  if (req == 3) *dst += v;
  else if (req != 0) *dst = v;
}

/* ------------------------------------------------------------------ my_gemm */
static int gemm_shape(const weft_lib_params_t* p, int ni, const int* nd, const int64_t* const* s, int no, int* ond,
                      int64_t* os, char* err, size_t len) {
  (void)p, (void)ni, (void)no;
  if (nd[0] != 2 || nd[1] != 2 || s[0][1] != s[1][0]) {
    snprintf(err, len, "my_gemm: expected (n, k) and (k, m) matrices");
    return 1;
  }
  ond[0] = 2;
  os[0] = s[0][0];
  os[1] = s[1][1];
  return 0;
}

static int gemm_type(const weft_lib_params_t* p, int ni, const int* in, int no, int* out, char* err, size_t len) {
  (void)p, (void)ni, (void)no;
  if (in[0] != 0 || in[1] != 0) {
    snprintf(err, len, "my_gemm: expected float32 inputs, got dtypes %d and %d", in[0], in[1]);
    return 1;
  }
  out[0] = 0;
  return 0;
}

/* c[i][j] (+)= sum_l a[i*sa_i + l*sa_l] * b[l*sb_l + j*sb_j] */
static void matmul(const float* a, int64_t sa_i, int64_t sa_l, const float* b, int64_t sb_l, int64_t sb_j, float* c,
                   int64_t n, int64_t k, int64_t m, int req) {
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      float acc = 0;
      for (int64_t l = 0; l < k; ++l) acc += a[i * sa_i + l * sa_l] * b[l * sb_l + j * sb_j];
      store(&c[i * m + j], req, acc);
    }
}

static int gemm_forward(const weft_lib_params_t* p, int ni, const weft_lib_tensor_t* in, int no,
                        const weft_lib_tensor_t* out, const int* req, char* err, size_t len) {
  (void)p, (void)ni, (void)no, (void)err, (void)len;
  int64_t n = in[0].shape[0], k = in[0].shape[1], m = in[1].shape[1];
  matmul(in[0].data, k, 1, in[1].data, m, 1, out[0].data, n, k, m, req[0]);
  return 0;
}

static int gemm_backward(const weft_lib_params_t* p, int no, const weft_lib_tensor_t* og, int ni,
                         const weft_lib_tensor_t* in, const weft_lib_tensor_t* out, const weft_lib_tensor_t* ig,
                         const int* req, char* err, size_t len) {
  (void)p, (void)no, (void)ni, (void)out, (void)err, (void)len;
  int64_t n = in[0].shape[0], k = in[0].shape[1], m = in[1].shape[1];
  /* da (n, k) = dc (n, m) . b^T ; db (k, m) = a^T . dc */
  matmul(og[0].data, m, 1, in[1].data, 1, m, ig[0].data, n, m, k, req[0]);
  matmul(in[0].data, 1, k, og[0].data, m, 1, ig[1].data, k, n, m, req[1]);
  return 0;
}

/* ------------------------------------------------------------------ my_scale */
static int same_shape(const weft_lib_params_t* p, int ni, const int* nd, const int64_t* const* s, int no, int* ond,
                      int64_t* os, char* err, size_t len) {
  (void)p, (void)ni, (void)no, (void)err, (void)len;
  ond[0] = nd[0];
  for (int d = 0; d < nd[0]; ++d) os[d] = s[0][d];
  return 0;
}

static int64_t numel(const weft_lib_tensor_t* t) {
  int64_t n = 1;
  for (int d = 0; d < t->ndim; ++d) n *= t->shape[d];
  return n;
}

static int scale_forward(const weft_lib_params_t* p, int ni, const weft_lib_tensor_t* in, int no,
                         const weft_lib_tensor_t* out, const int* req, char* err, size_t len) {
  (void)ni, (void)no;
  double alpha = atof(param(p, "alpha", "1"));
  int64_t n = numel(&in[0]);
  if (in[0].dtype == 0) {
    const float* x = in[0].data;
    float* y = out[0].data;
    for (int64_t i = 0; i < n; ++i) store(&y[i], req[0], (float)(alpha * x[i] + 1));
  } else if (in[0].dtype == 1) {
    const double* x = in[0].data;
    double* y = out[0].data;
    for (int64_t i = 0; i < n; ++i) {
      double v = alpha * x[i] + 1;
      if (req[0] == 3) y[i] += v;
      else if (req[0] != 0) y[i] = v;
    }
  } else {
    snprintf(err, len, "my_scale: expected float32 or float64, got dtype %d", in[0].dtype);
    return 1;
  }
  return 0;
}

static int scale_backward(const weft_lib_params_t* p, int no, const weft_lib_tensor_t* og, int ni,
                          const weft_lib_tensor_t* in, const weft_lib_tensor_t* out, const weft_lib_tensor_t* ig,
                          const int* req, char* err, size_t len) {
  (void)no, (void)ni, (void)out, (void)err, (void)len;
  double alpha = atof(param(p, "alpha", "1"));
  int64_t n = numel(&in[0]);
  if (in[0].dtype == 0) {
    const float* g = og[0].data;
    float* dx = ig[0].data;
    for (int64_t i = 0; i < n; ++i) store(&dx[i], req[0], (float)(alpha * g[i]));
  } else {
    const double* g = og[0].data;
    double* dx = ig[0].data;
    for (int64_t i = 0; i < n; ++i) {
      if (req[0] == 3) dx[i] += alpha * g[i];
      else if (req[0] != 0) dx[i] = alpha * g[i];
    }
  }
  return 0;
}

/* ------------------------------------------------------------------ my_fail */
static int fail_forward(const weft_lib_params_t* p, int ni, const weft_lib_tensor_t* in, int no,
                        const weft_lib_tensor_t* out, const int* req, char* err, size_t len) {
  (void)p, (void)ni, (void)in, (void)no, (void)out, (void)req;
  snprintf(err, len, "my_fail: this operator always fails");
  return 1;
}

static const char* const gemm_inputs[] = {"a", "b"};
static const char* const scale_inputs[] = {"data"};

static const weft_lib_op_t ops[] = {
    {"my_gemm", 2, 1, gemm_inputs, NULL, gemm_shape, gemm_type, gemm_forward, gemm_backward},
    {"my_scale", 1, 1, scale_inputs, NULL, same_shape, NULL, scale_forward, scale_backward},
    {"my_fail", 1, 1, NULL, NULL, same_shape, NULL, fail_forward, NULL},
};

int weft_op_library_init(int weft_version, int* version, int* num_ops, const weft_lib_op_t** table) {
  if (weft_version < 1) return 1;
  *version = WEFT_OP_LIBRARY_VERSION;
  *num_ops = (int)(sizeof(ops) / sizeof(ops[0]));
  *table = ops;
  return 0;
}
