/* Registers the generated routines (src/raw.c) and the hand-written ones (src/glue.c)
 * and turns dynamic symbol lookup off, so that only registered routines are callable. */
#include <stdlib.h>
#include <string.h>

#include "raw.h"

SEXP weft_r_init(SEXP handler);
SEXP weft_r_nd_from_r(SEXP x, SEXP dtype, SEXP ctx);
SEXP weft_r_nd_to_r(SEXP arr);
SEXP weft_r_nd_copy_from_r(SEXP arr, SEXP x);
SEXP weft_r_kvstore_set_updater(SEXP kv, SEXP fun);
SEXP weft_r_kvstore_run_server(SEXP kv);
SEXP weft_r_is_null_handle(SEXP x);

static const R_CallMethodDef hand_written[] = {
  {"C_weft_r_init", (DL_FUNC)&weft_r_init, 1},
  {"C_weft_r_nd_from_r", (DL_FUNC)&weft_r_nd_from_r, 3},
  {"C_weft_r_nd_to_r", (DL_FUNC)&weft_r_nd_to_r, 1},
  {"C_weft_r_nd_copy_from_r", (DL_FUNC)&weft_r_nd_copy_from_r, 2},
  {"C_weft_r_kvstore_set_updater", (DL_FUNC)&weft_r_kvstore_set_updater, 2},
  {"C_weft_r_kvstore_run_server", (DL_FUNC)&weft_r_kvstore_run_server, 1},
  {"C_weft_r_is_null_handle", (DL_FUNC)&weft_r_is_null_handle, 1},
  {NULL, NULL, 0}
};

#define NUM_HAND_WRITTEN (sizeof(hand_written) / sizeof(hand_written[0]) - 1)

static R_CallMethodDef all_routines[WEFT_R_NUM_RAW_ROUTINES + NUM_HAND_WRITTEN + 1];

void R_init_weft(DllInfo* dll) {
  memcpy(all_routines, weft_r_raw_routines, WEFT_R_NUM_RAW_ROUTINES * sizeof(R_CallMethodDef));
  memcpy(all_routines + WEFT_R_NUM_RAW_ROUTINES, hand_written, (NUM_HAND_WRITTEN + 1) * sizeof(R_CallMethodDef));
  R_registerRoutines(dll, NULL, all_routines, NULL, NULL);
  R_useDynamicSymbols(dll, FALSE);
  R_forceSymbols(dll, TRUE);
}
