/* Runs a saved model with Weft's prediction API and prints its predictions.
 *
 *   predict SYMBOL.json PARAMS INPUT.nd [OUTPUT_NAME]
 *
 * INPUT.nd is an NDArray list file (mx.nd.save) whose first array is a batch of inputs,
 * fed to the graph's input "data". The program prints the output's shape, every value
 * and the arg-max of each row, then runs the first sample alone through a reshaped
 * predictor and prints its row again. With OUTPUT_NAME, the output is that internal node
 * of the graph (a partial-output predictor). It links with libweft.so or libweft_predict.so. */
#include <stdio.h>
#include <stdlib.h>

#include "weft/c_predict_api.h"

static int check(weft_status_t status, const char* what) {
  if (status != WEFT_OK) {
    fprintf(stderr, "%s failed (%d): %s\n", what, (int)status, weft_get_last_error());
    exit(1);
  }
  return 0;
}

static char* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* buf = malloc((size_t)n + 1);
  if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "cannot read %s\n", path);
    exit(1);
  }
  buf[n] = '\0';
  fclose(f);
  *size = (size_t)n;
  return buf;
}

static size_t count(const int64_t* shape, int ndim) {
  size_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= (size_t)shape[i];
  return n;
}

/* Prints the output of `pred` (rows along the first axis) and returns its values. */
static float* print_output(weft_predictor_t* pred, const char* label) {
  const int64_t* shape;
  int ndim;
  check(weft_pred_get_output_shape(pred, 0, &shape, &ndim), "weft_pred_get_output_shape");
  size_t n = count(shape, ndim);
  size_t rows = ndim > 0 ? (size_t)shape[0] : 1;
  printf("%s shape", label);
  for (int i = 0; i < ndim; ++i) printf(" %lld", (long long)shape[i]);
  printf("\n");
  float* out = malloc(n * sizeof(float));
  check(weft_pred_get_output(pred, 0, out, n), "weft_pred_get_output");
  size_t cols = n / rows;
  for (size_t r = 0; r < rows; ++r) {
    size_t best = 0;
    printf("%s row %zu", label, r);
    for (size_t c = 0; c < cols; ++c) {
      printf(" %.9g", out[r * cols + c]);
      if (out[r * cols + c] > out[r * cols + best]) best = c;
    }
    printf("\n%s argmax %zu %zu\n", label, r, best);
  }
  return out;
}

int main(int argc, char** argv) {
  if (argc < 4 || argc > 5) {
    fprintf(stderr, "usage: %s SYMBOL.json PARAMS INPUT.nd [OUTPUT_NAME]\n", argv[0]);
    return 2;
  }
  size_t json_size, params_size, input_size;
  char* json = read_file(argv[1], &json_size);
  char* params = read_file(argv[2], &params_size);
  char* input_bytes = read_file(argv[3], &input_size);

  weft_ndlist_t* inputs;
  int num_arrays;
  check(weft_ndlist_create(input_bytes, input_size, &inputs, &num_arrays), "weft_ndlist_create");
  const float* data;
  const int64_t* shape;
  int ndim;
  check(weft_ndlist_get(inputs, 0, NULL, &data, &shape, &ndim), "weft_ndlist_get");

  const char* keys[] = {"data"};
  int64_t indptr[] = {0, ndim};
  weft_context_t cpu = {WEFT_DEVICE_CPU, 0};
  weft_predictor_t* pred;
  if (argc == 5) {
    const char* outputs[] = {argv[4]};
    check(weft_pred_create_partial_out(json, params, params_size, cpu, 1, keys, indptr, shape, 1, outputs, &pred),
          "weft_pred_create_partial_out");
  } else {
    check(weft_pred_create(json, params, params_size, cpu, 1, keys, indptr, shape, &pred), "weft_pred_create");
  }
  check(weft_pred_set_input(pred, "data", data, count(shape, ndim)), "weft_pred_set_input");
  check(weft_pred_forward(pred), "weft_pred_forward");
  free(print_output(pred, "batch"));

  /* The first sample alone: the same parameters, a batch of one. */
  int64_t one_shape[WEFT_MAX_NDIM];
  one_shape[0] = 1;
  for (int i = 1; i < ndim; ++i) one_shape[i] = shape[i];
  weft_predictor_t* single;
  check(weft_pred_reshape(pred, 1, keys, indptr, one_shape, &single), "weft_pred_reshape");
  check(weft_pred_set_input(single, "data", data, count(one_shape, ndim)), "weft_pred_set_input");
  check(weft_pred_forward(single), "weft_pred_forward");
  free(print_output(single, "single"));

  check(weft_pred_free(single), "weft_pred_free");
  check(weft_pred_free(pred), "weft_pred_free");
  check(weft_ndlist_free(inputs), "weft_ndlist_free");
  free(json);
  free(params);
  free(input_bytes);
  return 0;
}
