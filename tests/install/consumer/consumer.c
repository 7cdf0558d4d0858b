/* A program built against an installed Weft, the way a user's code would be: it checks that
 * the loaded library is the one its header describes and that an array round-trips. */
#include <stdio.h>
#include <string.h>

#include <weft/c_api.h>

static int check(weft_status_t status, const char* what) {
  if (status != WEFT_OK) {
    fprintf(stderr, "consumer: %s failed (status %d): %s\n", what, (int)status, weft_get_last_error());
    return 1;
  }
  return 0;
}

int main(void) {
  int major = -1, minor = -1, patch = -1, abi = -1;
  if (check(weft_get_version(&major, &minor, &patch, &abi), "weft_get_version")) return 1;
  if (major != WEFT_VERSION_MAJOR || minor != WEFT_VERSION_MINOR || patch != WEFT_VERSION_PATCH ||
      abi != WEFT_ABI_VERSION) {
    fprintf(stderr, "consumer: header says %d.%d.%d (ABI %d), library says %d.%d.%d (ABI %d)\n", WEFT_VERSION_MAJOR,
            WEFT_VERSION_MINOR, WEFT_VERSION_PATCH, WEFT_ABI_VERSION, major, minor, patch, abi);
    return 1;
  }

  const int64_t shape[2] = {2, 3};
  const float in[6] = {1.5f, -2.0f, 0.0f, 4.25f, 1e6f, -7.5f};
  float out[6] = {0};
  weft_context_t cpu = {WEFT_DEVICE_CPU, 0};
  weft_ndarray_t* arr = NULL;
  if (check(weft_ndarray_create(shape, 2, WEFT_DTYPE_FLOAT32, cpu, &arr), "weft_ndarray_create")) return 1;
  if (check(weft_ndarray_copy_from_host(arr, in, sizeof in), "weft_ndarray_copy_from_host")) return 1;
  if (check(weft_ndarray_copy_to_host(arr, out, sizeof out), "weft_ndarray_copy_to_host")) return 1;
  if (memcmp(in, out, sizeof in) != 0) {
    fprintf(stderr, "consumer: values read back differ from those written\n");
    return 1;
  }
  int64_t size = 0;
  if (check(weft_ndarray_get_size(arr, &size), "weft_ndarray_get_size")) return 1;
  if (size != 6) {
    fprintf(stderr, "consumer: expected size 6, got %lld\n", (long long)size);
    return 1;
  }
  if (check(weft_ndarray_free(arr), "weft_ndarray_free")) return 1;
  printf("consumer: Weft %d.%d.%d (ABI %d) works\n", major, minor, patch, abi);
  return 0;
}
