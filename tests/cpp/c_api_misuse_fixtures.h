// Live handles of every kind, and freed ones, for the generated C API misuse test
// (c_api_misuse_test.cc, written by tools/codegen/gen_c_api_misuse.py). Each misuse case
// calls one function with valid arguments from here except the one argument it spoils, so
// the error it gets must come from that argument. Built once for the whole suite.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "weft/c_api.h"
#include "weft/c_predict_api.h"
#include "weft/dlpack.h"

namespace weft_misuse {

#define MISUSE_OK(call)                                                                     \
  do {                                                                                     \
    weft_status_t st_ = (call);                                                            \
    if (st_ != WEFT_OK) {                                                                  \
      ADD_FAILURE() << #call << " failed (" << st_ << "): " << weft_get_last_error();     \
      return;                                                                              \
    }                                                                                      \
  } while (0)

// Callbacks the baseline calls pass; the misuse cases never let them run, but a call that
// wrongly succeeds must not crash in them either.
inline int BackwardFn(int, weft_ndarray_t* const*, int, weft_ndarray_t**, void*) { return 0; }
inline void ReleaseFn(void*) {}
inline void MonitorFn(const char*, weft_ndarray_t* value, void*) { weft_ndarray_free(value); }
inline int UpdaterFn(const char*, weft_ndarray_t* merged, weft_ndarray_t* stored, void*) {
  weft_ndarray_free(merged);
  weft_ndarray_free(stored);
  return 0;
}
inline int ControllerFn(int, const void*, size_t, void*) { return 0; }
inline void* BlockEnterFn() { return nullptr; }
inline void BlockLeaveFn(void*) {}
inline int CustomCreatorFn(const char*, int, const char* const*, const char* const*, weft_custom_prop_fns_t*, void*) {
  return 1;
}

struct Fixtures {
  // Live handles. ndarray is float32 (2, 3); image is uint8 (4, 4, 3); exec_arg and
  // exec_grad are what executor is bound with (symbol = _plus_scalar(x, scalar=1)); ag_var
  // is a variable marked with the gradient ag_grad and ag_head = _plus_scalar(ag_var) was
  // recorded from it (a backward from ag_head with retain_graph works again and again);
  // ag_mark is for the marking calls, which would drop ag_var's history; the
  // kvstore ("local") holds key "3"; dataiter (CSVIter, batch 2, data_shape (3,)) has a
  // current batch; recordio reads a file of one record, recordio_writer writes one;
  // rsp is a row_sparse (2, 3) array of rows rsp_indices = {0, 1} (int64) and values ndarray;
  // predictor runs symbol (input x of shape (2, 3), no parameters) and has run forward once;
  // ndlist reads params_bytes; shared is a float32 (2, 3) array on cpu_shared, whose segment
  // is (shared_pid, shared_id).
  weft_ndarray_t* ndarray = nullptr;
  weft_ndarray_t* shared = nullptr;
  int shared_pid = 0;
  int shared_id = -1;
  weft_ndarray_t* rsp = nullptr;
  weft_ndarray_t* rsp_indices = nullptr;
  weft_ndarray_t* image = nullptr;
  weft_ndarray_t* exec_arg = nullptr;
  weft_ndarray_t* exec_grad = nullptr;
  weft_ndarray_t* ag_var = nullptr;
  weft_ndarray_t* ag_grad = nullptr;
  weft_ndarray_t* ag_head = nullptr;
  weft_ndarray_t* ag_mark = nullptr;
  weft_ndarray_list_t* ndarray_list = nullptr;
  weft_bytes_t* bytes = nullptr;
  weft_symbol_t* symbol = nullptr;
  weft_executor_t* executor = nullptr;
  weft_kvstore_t* kvstore = nullptr;
  weft_dataiter_t* dataiter = nullptr;
  weft_recordio_t* recordio = nullptr;
  weft_recordio_t* recordio_writer = nullptr;
  const weft_op_t* op = nullptr;  // _plus_scalar: one input, parameters, an alias
  // The profiler's objects: a domain "misuse", a task of it (not started) and a counter.
  weft_profile_domain_t* profile_domain = nullptr;
  weft_profile_duration_t* profile_duration = nullptr;
  weft_profile_counter_t* profile_counter = nullptr;
  weft_predictor_t* predictor = nullptr;
  weft_ndlist_t* ndlist = nullptr;

  // Handles that were live once and have been freed.
  weft_ndarray_t* freed_ndarray = nullptr;
  weft_ndarray_list_t* freed_ndarray_list = nullptr;
  weft_bytes_t* freed_bytes = nullptr;
  weft_symbol_t* freed_symbol = nullptr;
  weft_executor_t* freed_executor = nullptr;
  weft_kvstore_t* freed_kvstore = nullptr;
  weft_dataiter_t* freed_dataiter = nullptr;
  weft_recordio_t* freed_recordio = nullptr;
  weft_profile_domain_t* freed_profile_domain = nullptr;
  weft_profile_duration_t* freed_profile_duration = nullptr;
  weft_profile_counter_t* freed_profile_counter = nullptr;
  weft_predictor_t* freed_predictor = nullptr;
  weft_ndlist_t* freed_ndlist = nullptr;

  // Valid inputs of the byte-reading functions.
  std::string params_bytes;  // an NDArray list ("a": ndarray)
  std::string raw_bytes;     // ndarray in the raw form
  std::string png_bytes;     // image encoded as PNG
  std::string symbol_json;
  std::string dir, params_path, json_path, rec_path, csv_path;

  std::string Tmp(const char* name) const { return dir + "/" + name; }

  // A new atomic symbol (_plus_scalar, scalar=1, no inputs) or variable, for functions
  // that change the symbol they are given; freed with the suite.
  weft_symbol_t* NewAtomic() {
    const char* keys[] = {"scalar"};
    const char* vals[] = {"1"};
    weft_symbol_t* s = nullptr;
    EXPECT_EQ(weft_symbol_create_atomic(op, 1, keys, vals, &s), WEFT_OK) << weft_get_last_error();
    scratch_symbols.push_back(s);
    return s;
  }
  weft_symbol_t* NewVariable() {
    weft_symbol_t* s = nullptr;
    EXPECT_EQ(weft_symbol_create_variable("v", &s), WEFT_OK) << weft_get_last_error();
    scratch_symbols.push_back(s);
    return s;
  }
  // A DLPack tensor exported from ndarray; the caller hands it to the library or calls
  // its deleter.
  DLManagedTensor* NewTensor() {
    DLManagedTensor* t = nullptr;
    EXPECT_EQ(weft_ndarray_to_dlpack(ndarray, &t), WEFT_OK) << weft_get_last_error();
    return t;
  }

  void Build() {
    char tmpl[] = "/tmp/weft_misuse_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir = tmpl;
    const weft_context_t cpu{WEFT_DEVICE_CPU, 0};
    const int64_t shape[] = {2, 3}, img_shape[] = {4, 4, 3};
    const float vals[6] = {1, 2, 3, 4, 5, 6};
    for (weft_ndarray_t** a : {&ndarray, &exec_arg, &exec_grad, &ag_var, &ag_grad, &ag_mark, &freed_ndarray}) {
      MISUSE_OK(weft_ndarray_create(shape, 2, WEFT_DTYPE_FLOAT32, cpu, a));
      MISUSE_OK(weft_ndarray_copy_from_host(*a, vals, sizeof(vals)));
    }
    MISUSE_OK(weft_ndarray_create(shape, 2, WEFT_DTYPE_FLOAT32, weft_context_t{WEFT_DEVICE_CPU_SHARED, 0}, &shared));
    MISUSE_OK(weft_ndarray_copy_from_host(shared, vals, sizeof(vals)));
    int64_t shared_offset = -1;
    MISUSE_OK(weft_ndarray_get_shared_mem(shared, &shared_pid, &shared_id, &shared_offset));
    const int64_t idx_shape[] = {2}, rows[] = {0, 1};
    MISUSE_OK(weft_ndarray_create(idx_shape, 1, WEFT_DTYPE_INT64, cpu, &rsp_indices));
    MISUSE_OK(weft_ndarray_copy_from_host(rsp_indices, rows, sizeof(rows)));
    MISUSE_OK(weft_ndarray_create_sparse(1, shape, 2, ndarray, 1, &rsp_indices, &rsp));
    MISUSE_OK(weft_ndarray_create(img_shape, 3, WEFT_DTYPE_UINT8, cpu, &image));
    std::vector<unsigned char> pixels(48, 100);
    MISUSE_OK(weft_ndarray_copy_from_host(image, pixels.data(), pixels.size()));

    const char* names[] = {"a"};
    MISUSE_OK(weft_ndarray_save_to_bytes(1, &ndarray, names, &bytes));
    params_bytes = Contents(bytes);
    MISUSE_OK(weft_ndarray_save_to_bytes(1, &ndarray, names, &freed_bytes));
    weft_bytes_t* b = nullptr;
    MISUSE_OK(weft_ndarray_save_raw_bytes(ndarray, &b));
    raw_bytes = Contents(b);
    MISUSE_OK(weft_bytes_free(b));
    MISUSE_OK(weft_image_encode(image, ".png", 3, 0, &b));
    png_bytes = Contents(b);
    MISUSE_OK(weft_bytes_free(b));
    MISUSE_OK(weft_ndarray_load_from_bytes(params_bytes.data(), params_bytes.size(), &ndarray_list));
    MISUSE_OK(weft_ndarray_load_from_bytes(params_bytes.data(), params_bytes.size(), &freed_ndarray_list));
    params_path = Tmp("fixture.params");
    MISUSE_OK(weft_ndarray_save(params_path.c_str(), 1, &ndarray, names));

    MISUSE_OK(weft_op_get("_plus_scalar", &op));
    const char* scalar_key[] = {"scalar"};
    const char* scalar_val[] = {"1"};
    const char* write_req[] = {"write"};
    MISUSE_OK(weft_autograd_mark_variables(1, &ag_var, write_req, &ag_grad));
    MISUSE_OK(weft_autograd_set_is_recording(1, nullptr));
    int nout = 0;
    weft_ndarray_t* const* outs = nullptr;
    const weft_status_t recorded = weft_imperative_invoke(op, 1, &ag_var, 1, scalar_key, scalar_val, 0, nullptr, &nout,
                                                          &outs);
    MISUSE_OK(weft_autograd_set_is_recording(0, nullptr));
    MISUSE_OK(recorded);
    ASSERT_EQ(nout, 1);
    ag_head = outs[0];
    weft_symbol_t* x = nullptr;
    MISUSE_OK(weft_symbol_create_variable("x", &x));
    MISUSE_OK(weft_symbol_create_atomic(op, 1, scalar_key, scalar_val, &symbol));
    MISUSE_OK(weft_symbol_compose(symbol, "plus", 1, nullptr, &x));
    MISUSE_OK(weft_symbol_free(x));
    MISUSE_OK(weft_symbol_copy(symbol, &freed_symbol));
    const char* json = nullptr;
    MISUSE_OK(weft_symbol_to_json(symbol, &json));
    symbol_json = json;
    json_path = Tmp("fixture.json");
    MISUSE_OK(weft_symbol_save_file(symbol, json_path.c_str()));

    MISUSE_OK(weft_executor_bind(symbol, cpu, 1, &exec_arg, &exec_grad, nullptr, 0, nullptr, &executor));
    const char* pred_keys[] = {"x"};
    const int64_t pred_indptr[] = {0, 2};
    for (weft_predictor_t** p : {&predictor, &freed_predictor})
      MISUSE_OK(weft_pred_create(symbol_json.c_str(), params_bytes.data(), params_bytes.size(), cpu, 1, pred_keys,
                                 pred_indptr, shape, p));
    MISUSE_OK(weft_pred_set_input(predictor, "x", vals, 6));
    MISUSE_OK(weft_pred_forward(predictor));
    int nlist = 0;
    for (weft_ndlist_t** l : {&ndlist, &freed_ndlist})
      MISUSE_OK(weft_ndlist_create(params_bytes.data(), params_bytes.size(), l, &nlist));
    MISUSE_OK(weft_executor_bind(symbol, cpu, 1, &exec_arg, nullptr, nullptr, 0, nullptr, &freed_executor));

    const char* key[] = {"3"};
    MISUSE_OK(weft_kvstore_create("local", &kvstore));
    MISUSE_OK(weft_kvstore_init(kvstore, 1, key, &ndarray));
    MISUSE_OK(weft_kvstore_create("local", &freed_kvstore));

    csv_path = Tmp("fixture.csv");
    std::ofstream(csv_path) << "1,2,3\n4,5,6\n7,8,9\n10,11,12\n";
    const char* iter_keys[] = {"data_csv", "data_shape", "batch_size"};
    const char* iter_vals[] = {csv_path.c_str(), "(3,)", "2"};
    MISUSE_OK(weft_dataiter_create("CSVIter", 3, iter_keys, iter_vals, &dataiter));
    int more = 0;
    MISUSE_OK(weft_dataiter_next(dataiter, &more));
    EXPECT_EQ(more, 1) << "the fixture iterator has no first batch";
    MISUSE_OK(weft_dataiter_create("CSVIter", 3, iter_keys, iter_vals, &freed_dataiter));

    rec_path = Tmp("fixture.rec");
    MISUSE_OK(weft_recordio_writer_create(rec_path.c_str(), &recordio));
    MISUSE_OK(weft_recordio_write(recordio, "record", 6));
    MISUSE_OK(weft_recordio_free(recordio));
    MISUSE_OK(weft_recordio_reader_create(rec_path.c_str(), &recordio));
    MISUSE_OK(weft_recordio_reader_create(rec_path.c_str(), &freed_recordio));
    MISUSE_OK(weft_recordio_writer_create(Tmp("written.rec").c_str(), &recordio_writer));

    MISUSE_OK(weft_profile_domain_create("misuse", &profile_domain));
    MISUSE_OK(weft_profile_task_create(profile_domain, "task", &profile_duration));
    MISUSE_OK(weft_profile_counter_create(profile_domain, "counter", &profile_counter));
    MISUSE_OK(weft_profile_domain_create("misuse", &freed_profile_domain));
    MISUSE_OK(weft_profile_event_create("event", &freed_profile_duration));
    MISUSE_OK(weft_profile_counter_create(profile_domain, "counter", &freed_profile_counter));

    MISUSE_OK(weft_ndarray_free(freed_ndarray));
    MISUSE_OK(weft_ndarray_list_free(freed_ndarray_list));
    MISUSE_OK(weft_bytes_free(freed_bytes));
    MISUSE_OK(weft_symbol_free(freed_symbol));
    MISUSE_OK(weft_executor_free(freed_executor));
    MISUSE_OK(weft_kvstore_free(freed_kvstore));
    MISUSE_OK(weft_dataiter_free(freed_dataiter));
    MISUSE_OK(weft_recordio_free(freed_recordio));
    MISUSE_OK(weft_profile_domain_free(freed_profile_domain));
    MISUSE_OK(weft_profile_duration_free(freed_profile_duration));
    MISUSE_OK(weft_profile_counter_free(freed_profile_counter));
    MISUSE_OK(weft_pred_free(freed_predictor));
    MISUSE_OK(weft_ndlist_free(freed_ndlist));
  }

  void Destroy() {
    EXPECT_EQ(weft_ndlist_free(ndlist), WEFT_OK) << weft_get_last_error();
    EXPECT_EQ(weft_pred_free(predictor), WEFT_OK) << weft_get_last_error();
    EXPECT_EQ(weft_profile_counter_free(profile_counter), WEFT_OK) << weft_get_last_error();
    EXPECT_EQ(weft_profile_duration_free(profile_duration), WEFT_OK) << weft_get_last_error();
    EXPECT_EQ(weft_profile_domain_free(profile_domain), WEFT_OK) << weft_get_last_error();
    for (weft_symbol_t* s : scratch_symbols) EXPECT_EQ(weft_symbol_free(s), WEFT_OK) << weft_get_last_error();
    EXPECT_EQ(weft_recordio_free(recordio_writer), WEFT_OK) << weft_get_last_error();
    EXPECT_EQ(weft_recordio_free(recordio), WEFT_OK) << weft_get_last_error();
    EXPECT_EQ(weft_dataiter_free(dataiter), WEFT_OK) << weft_get_last_error();
    EXPECT_EQ(weft_kvstore_free(kvstore), WEFT_OK) << weft_get_last_error();
    EXPECT_EQ(weft_executor_free(executor), WEFT_OK) << weft_get_last_error();
    EXPECT_EQ(weft_symbol_free(symbol), WEFT_OK) << weft_get_last_error();
    EXPECT_EQ(weft_bytes_free(bytes), WEFT_OK) << weft_get_last_error();
    EXPECT_EQ(weft_ndarray_list_free(ndarray_list), WEFT_OK) << weft_get_last_error();
    for (weft_ndarray_t* a :
         {ndarray, shared, rsp, rsp_indices, image, exec_arg, exec_grad, ag_var, ag_grad, ag_head, ag_mark})
      EXPECT_EQ(weft_ndarray_free(a), WEFT_OK) << weft_get_last_error();
    EXPECT_EQ(weft_wait_all(), WEFT_OK) << weft_get_last_error();
    std::string cmd = "rm -rf '" + dir + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }

 private:
  static std::string Contents(weft_bytes_t* b) {
    const void* data = nullptr;
    size_t size = 0;
    EXPECT_EQ(weft_bytes_get(b, &data, &size), WEFT_OK) << weft_get_last_error();
    return std::string(static_cast<const char*>(data), size);
  }

  std::vector<weft_symbol_t*> scratch_symbols;
};

// What a misuse case must get back.
enum class Want {
  kHandle,  // WEFT_ERR_HANDLE
  kError,   // an error status other than WEFT_ERR_INTERNAL (a broken invariant is a bug)
  kOk,      // WEFT_OK: the header documents that this NULL is accepted
  kAny,     // documented as accepted, with a result that depends on the state: only no
            // crash and no WEFT_ERR_INTERNAL
};

// Checks one case; `names` are the parameter names of which the error message must name
// one (empty: the message is not checked, e.g. for a context, which has no name in it).
inline void Check(weft_status_t got, Want want, const char* fn, const char* what,
                  std::initializer_list<const char*> names) {
  const std::string msg = weft_get_last_error();
  const std::string where = std::string(fn) + " with " + what;
  switch (want) {
    case Want::kHandle:
      EXPECT_EQ(got, WEFT_ERR_HANDLE) << where << ": expected WEFT_ERR_HANDLE; message: " << msg;
      break;
    case Want::kError:
      EXPECT_NE(got, WEFT_OK) << where << ": expected an error status, got WEFT_OK";
      EXPECT_NE(got, WEFT_ERR_INTERNAL) << where << ": expected a caller error, got WEFT_ERR_INTERNAL: " << msg;
      break;
    case Want::kOk:
      EXPECT_EQ(got, WEFT_OK) << where << ": documented as accepted, got status " << got << ": " << msg;
      return;
    case Want::kAny:
      EXPECT_NE(got, WEFT_ERR_INTERNAL) << where << ": got WEFT_ERR_INTERNAL: " << msg;
      return;
  }
  if (got == WEFT_OK || names.size() == 0) return;
  bool named = false;
  for (const char* n : names) named = named || msg.find(n) != std::string::npos;
  std::string list;
  for (const char* n : names) list += std::string(list.empty() ? "" : ", ") + "'" + n + "'";
  EXPECT_TRUE(named) << where << ": the message should name " << list << ", got: " << msg;
}

// Frees what a call that succeeded handed out.
inline void Release(weft_ndarray_t* h) { EXPECT_EQ(weft_ndarray_free(h), WEFT_OK); }
inline void Release(weft_ndarray_list_t* h) { EXPECT_EQ(weft_ndarray_list_free(h), WEFT_OK); }
inline void Release(weft_bytes_t* h) { EXPECT_EQ(weft_bytes_free(h), WEFT_OK); }
inline void Release(weft_symbol_t* h) { EXPECT_EQ(weft_symbol_free(h), WEFT_OK); }
inline void Release(weft_executor_t* h) { EXPECT_EQ(weft_executor_free(h), WEFT_OK); }
inline void Release(weft_kvstore_t* h) { EXPECT_EQ(weft_kvstore_free(h), WEFT_OK); }
inline void Release(weft_dataiter_t* h) { EXPECT_EQ(weft_dataiter_free(h), WEFT_OK); }
inline void Release(weft_recordio_t* h) { EXPECT_EQ(weft_recordio_free(h), WEFT_OK); }
inline void Release(weft_profile_domain_t* h) { EXPECT_EQ(weft_profile_domain_free(h), WEFT_OK); }
inline void Release(weft_profile_duration_t* h) { EXPECT_EQ(weft_profile_duration_free(h), WEFT_OK); }
inline void Release(weft_profile_counter_t* h) { EXPECT_EQ(weft_profile_counter_free(h), WEFT_OK); }
inline void Release(weft_predictor_t* h) { EXPECT_EQ(weft_pred_free(h), WEFT_OK); }
inline void Release(weft_ndlist_t* h) { EXPECT_EQ(weft_ndlist_free(h), WEFT_OK); }
inline void Release(const weft_op_t*) {}  // operators live as long as the library
inline void Release(DLManagedTensor* t) {
  if (t != nullptr && t->deleter != nullptr) t->deleter(t);
}
inline void ReleaseAll(int n, weft_ndarray_t* const* hs) {
  for (int i = 0; hs != nullptr && i < n; ++i) Release(hs[i]);
}

}  // namespace weft_misuse
