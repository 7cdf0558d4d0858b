// Sequences of C API calls, as a program embedding libweft might make them by mistake: the
// input is a little program of one-byte opcodes and their operands, run against a pool of
// handles that includes freed ones. Every call must return a status; none may crash.
#include <cstring>
#include <string>
#include <vector>

#include "weft/c_api.h"

namespace {

class Program {
 public:
  Program(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool done() const { return i_ >= n_; }
  uint8_t Byte() { return i_ < n_ ? p_[i_++] : 0; }
  int Small(int mod) { return Byte() % mod; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t i_ = 0;
};

// Parameter values a caller might pass: valid ones of every kind, and wrong ones. Shapes
// stay small so that a run is about handling, not about allocating.
const char* const kValues[] = {"1", "0", "-1", "2", "3", "(2,3)", "(1,)", "()", "(3,-1)", "true", "False", "relu",
                               "max", "float32", "int64", "0.5", "nan", "1e400", "abc", "", "(2,3", "[1, 2]",
                               "99999999999999999999"};
const int kDTypes[] = {0, 1, 2, 3, 4, 5, 6, 7, 12, 99};

weft_ndarray_t* Pick(const std::vector<weft_ndarray_t*>& pool, Program* prog) {
  if (pool.empty()) return nullptr;
  int i = prog->Small(static_cast<int>(pool.size()) + 1);
  return i == static_cast<int>(pool.size()) ? nullptr : pool[i];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Program prog(data, size);
  std::vector<weft_ndarray_t*> live, pool;  // pool: live and freed handles alike
  int num_ops = 0;
  weft_op_count(&num_ops);
  for (int step = 0; step < 64 && !prog.done(); ++step) {
    switch (prog.Small(10)) {
      case 0: {  // create
        int ndim = prog.Small(4);
        int64_t dims[3];
        for (int k = 0; k < ndim; ++k) dims[k] = prog.Small(6) - (prog.Small(16) == 0 ? 3 : 0);
        weft_ndarray_t* a = nullptr;
        weft_context_t ctx{1 + prog.Small(3) / 2, 0};
        if (weft_ndarray_create(dims, ndim, kDTypes[prog.Small(10)], ctx, &a) == WEFT_OK) {
          // New arrays are uninitialised (the header says so; reading them is the caller's
          // bug): fill them with the program's bytes, whatever they mean in the dtype.
          int64_t n = 0;
          int dtype = 0;
          size_t item = 0;
          if (weft_ndarray_get_size(a, &n) == WEFT_OK && weft_ndarray_get_dtype(a, &dtype) == WEFT_OK &&
              weft_dtype_size(dtype, &item) == WEFT_OK) {
            std::vector<uint8_t> bytes(static_cast<size_t>(n) * item);
            for (auto& b : bytes) b = prog.Byte();
            weft_ndarray_copy_from_host(a, bytes.data(), bytes.size());
          }
          live.push_back(a);
          pool.push_back(a);
        }
        break;
      }
      case 1: {  // free (the handle stays in the pool, now stale)
        if (live.empty()) break;
        size_t k = prog.Small(static_cast<int>(live.size()));
        weft_ndarray_free(live[k]);
        live.erase(live.begin() + k);
        break;
      }
      case 2: {  // views
        weft_ndarray_t* a = Pick(pool, &prog);
        weft_ndarray_t* v = nullptr;
        int64_t dims[3] = {prog.Small(7) - 1, prog.Small(7) - 1, prog.Small(7) - 1};
        int which = prog.Small(3);
        weft_status_t st = which == 0   ? weft_ndarray_reshape(a, dims, prog.Small(4), &v)
                           : which == 1 ? weft_ndarray_slice(a, dims[0], dims[1], &v)
                                        : weft_ndarray_at(a, dims[0], &v);
        if (st == WEFT_OK) {
          live.push_back(v);
          pool.push_back(v);
        }
        break;
      }
      case 3: {  // invoke a registered operator with chosen inputs and parameters
        const weft_op_t* op = nullptr;
        if (num_ops == 0 || weft_op_get_by_index(prog.Small(num_ops), &op) != WEFT_OK) break;
        weft_ndarray_t* ins[4];
        int num_in = prog.Small(5);
        for (int k = 0; k < num_in; ++k) ins[k] = Pick(pool, &prog);
        int num_params = 0;
        weft_op_get_num_params(op, &num_params);
        const char* keys[4];
        const char* vals[4];
        int np = num_params > 0 ? prog.Small(4) : 0;
        for (int k = 0; k < np; ++k) {
          weft_op_get_param(op, prog.Small(num_params), &keys[k], nullptr, nullptr, nullptr, nullptr);
          vals[k] = kValues[prog.Small(sizeof(kValues) / sizeof(kValues[0]))];
        }
        int num_out = 0;
        weft_ndarray_t* const* outs = nullptr;
        if (weft_imperative_invoke(op, num_in, ins, np, keys, vals, 0, nullptr, &num_out, &outs) == WEFT_OK) {
          for (int k = 0; k < num_out; ++k) {
            live.push_back(outs[k]);
            pool.push_back(outs[k]);
          }
        }
        break;
      }
      case 4: {  // read back, with a right or a wrong size
        weft_ndarray_t* a = Pick(pool, &prog);
        int64_t n = 0;
        int dtype = 0;
        size_t item = 0;
        if (weft_ndarray_get_size(a, &n) != WEFT_OK || weft_ndarray_get_dtype(a, &dtype) != WEFT_OK ||
            weft_dtype_size(dtype, &item) != WEFT_OK || n > (1 << 16))
          break;
        std::vector<char> buf(static_cast<size_t>(n) * item + 8);
        size_t nbytes = static_cast<size_t>(n) * item + (prog.Small(4) == 0 ? 1 : 0);
        weft_ndarray_copy_to_host(a, buf.data(), nbytes);
        break;
      }
      case 5: {  // save to bytes and load back
        weft_ndarray_t* arrs[2] = {Pick(pool, &prog), Pick(pool, &prog)};
        weft_bytes_t* bytes = nullptr;
        if (weft_ndarray_save_to_bytes(prog.Small(3), arrs, nullptr, &bytes) == WEFT_OK) {
          const void* d = nullptr;
          size_t sz = 0;
          weft_bytes_get(bytes, &d, &sz);
          weft_ndarray_list_t* list = nullptr;
          if (weft_ndarray_load_from_bytes(d, sz - (sz > 0 ? prog.Small(2) : 0), &list) == WEFT_OK)
            weft_ndarray_list_free(list);
          weft_bytes_free(bytes);
        }
        break;
      }
      case 6: {  // symbols from text, shape inference with a JSON argument
        std::string text;
        for (int k = prog.Small(32); k > 0; --k) text.push_back(static_cast<char>(prog.Byte()));
        weft_symbol_t* sym = nullptr;
        if (weft_symbol_from_json(text.c_str(), &sym) != WEFT_OK) weft_symbol_create_variable(text.c_str(), &sym);
        const char* out = nullptr;
        weft_symbol_infer_shape(sym, prog.Small(2) ? "{\"x\": [2, 3]}" : text.c_str(), &out);
        weft_symbol_free(sym);
        break;
      }
      case 7:
        weft_wait_all();
        break;
      case 8: {  // a handle of one kind passed where another is expected
        weft_ndarray_t* a = Pick(pool, &prog);
        const char* name = nullptr;
        weft_symbol_get_name(reinterpret_cast<const weft_symbol_t*>(a), &name);
        weft_kvstore_free(reinterpret_cast<weft_kvstore_t*>(a));
        break;
      }
      default: {  // copies between arrays of any shapes and dtypes
        weft_ndarray_copy_to(Pick(pool, &prog), Pick(pool, &prog));
        break;
      }
    }
  }
  weft_wait_all();
  for (weft_ndarray_t* a : live) weft_ndarray_free(a);
  return 0;
}
