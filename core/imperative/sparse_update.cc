#include "core/imperative/sparse_update.h"

#include <cstring>
#include <string>

#include "core/base/error.h"
#include "core/imperative/imperative.h"

namespace weft {
namespace imperative {

namespace {

// The updates MXNet 1.9 runs row by row for a row_sparse gradient: its lazy updates (SGD,
// Adam), FTRL, its sparse AdaGrad (_sparse_adagrad_update; Weft's Python AdaGrad sends
// row_sparse gradients to adagrad_update, which also takes wd) and GroupAdaGrad.
bool IsLazyUpdateOp(const std::string& name) {
  return name == "sgd_update" || name == "sgd_mom_update" || name == "mp_sgd_update" || name == "mp_sgd_mom_update" ||
         name == "adam_update" || name == "ftrl_update" || name == "adagrad_update" ||
         name == "_sparse_adagrad_update" || name == "_contrib_group_adagrad_update";
}

bool LazyFlag(const NodeAttrs& attrs) {
  for (const auto& [key, v] : attrs.dict)
    if (key == "lazy_update") return !(v == "0" || v == "false" || v == "False");
  return true;  // MXNet's default
}

// Host pointer to the start of a dense CPU array, after every pending read and write.
char* HostPtr(const NDArray& a) {
  a.WaitToWrite();
  return static_cast<char*>(a.data().dptr);
}

// The dense array behind `a`: itself when dense, the values of a row_sparse array that
// stores every row in order (as a row_sparse weight or state from MXNet's optimizers
// does, so the row update applies to it as to a dense one); none otherwise.
NDArray DenseRows(const NDArray& a) {
  if (!a.is_sparse()) return a;
  if (a.stype() != StorageType::kRowSparse || a.shape().ndim() < 1) return NDArray();
  const NDArray& values = a.sparse_values();
  const int64_t n = a.shape()[0];
  if (values.shape() != a.shape() || a.aux(0).Size() != n) return NDArray();
  std::vector<int64_t> rows(static_cast<size_t>(n));
  a.aux(0).SyncCopyToCPU(rows.data(), rows.size() * sizeof(int64_t));
  for (int64_t r = 0; r < n; ++r)
    if (rows[r] != r) return NDArray();
  return values;
}

}  // namespace

bool LazyRowSparseUpdate(const NodeAttrs& attrs, const std::vector<NDArray>& inputs, std::vector<NDArray>* outputs,
                         bool is_train) {
  if (attrs.op == nullptr || !IsLazyUpdateOp(attrs.op->name) || inputs.size() < 2) return false;
  const NDArray& grad = inputs[1];
  if (grad.stype() != StorageType::kRowSparse || !LazyFlag(attrs)) return false;
  // Dense views of the weight and states (row_sparse ones that store every row count as
  // dense); any other sparse or GPU array takes the dense fallback.
  std::vector<NDArray> dense(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i == 1) continue;
    dense[i] = DenseRows(inputs[i]);
    if (dense[i].is_none() || dense[i].ctx().is_gpu()) return false;
  }
  const NDArray& weight = dense[0];
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i == 1) continue;
    // GroupAdaGrad's history has one value per row (rows, 1); every other state is the
    // weight's shape. Either way row r of a state belongs to row r of the weight.
    bool fits = dense[i].shape() == weight.shape() ||
                (attrs.op->name == "_contrib_group_adagrad_update" && weight.shape().ndim() >= 1 &&
                 dense[i].shape() == Shape{weight.shape()[0], 1});
    WEFT_CHECK(fits, kShape, attrs.op->name, ": expected input ", i, " of shape ", weight.shape().ToString(),
               " (the weight's), got ", inputs[i].shape().ToString());
  }
  NDArray out_dense;
  if (!outputs->empty() && !outputs->at(0).is_none()) {
    out_dense = DenseRows(outputs->at(0));
    if (out_dense.is_none() || out_dense.ctx().is_gpu()) return false;
  }
  WEFT_CHECK(grad.shape() == weight.shape(), kShape, attrs.op->name, ": expected a gradient of shape ",
             weight.shape().ToString(), " (the weight's), got ", grad.shape().ToString());
  WEFT_CHECK(weight.shape().ndim() >= 1, kShape, attrs.op->name, ": a row_sparse gradient needs a weight of at least 1 dimension");

  const NDArray& idx_arr = grad.aux(0);
  std::vector<int64_t> rows(static_cast<size_t>(idx_arr.Size()));
  idx_arr.SyncCopyToCPU(rows.data(), rows.size() * sizeof(int64_t));
  const int64_t k = static_cast<int64_t>(rows.size());
  Shape compact_shape = weight.shape();
  compact_shape[0] = k;

  // Gathers the stored rows of every dense input (the gradient's values are already compact).
  std::vector<NDArray> compact(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i == 1) {
      compact[i] = grad.sparse_values();
      continue;
    }
    const NDArray& full = dense[i];
    size_t row_bytes = static_cast<size_t>(full.shape().ProdRange(1, full.shape().ndim())) * DTypeSize(full.dtype());
    Shape rows_shape = full.shape();
    rows_shape[0] = k;
    compact[i] = NDArray(rows_shape, full.ctx(), full.dtype());
    const char* src = HostPtr(full);
    char* dst = HostPtr(compact[i]);
    for (int64_t j = 0; j < k; ++j) std::memcpy(dst + j * row_bytes, src + rows[j] * row_bytes, row_bytes);
  }
  NDArray new_rows(compact_shape, weight.ctx(), weight.dtype());
  std::vector<NDArray> compact_out{new_rows};
  Invoke(attrs, compact, &compact_out, nullptr, nullptr, is_train);

  // Writes the updated rows back: the weight into the output, mutated states in place.
  if (outputs->empty() || outputs->at(0).is_none()) {
    outputs->assign(1, weight.Copy(weight.ctx()));
    out_dense = outputs->at(0);
  } else {
    WEFT_CHECK(out_dense.shape() == weight.shape() && out_dense.dtype() == weight.dtype(), kShape,
               attrs.op->name, ": expected an output of shape ", weight.shape().ToString(), " ",
               DTypeName(weight.dtype()), ", got ", out_dense.shape().ToString(), " ",
               DTypeName(out_dense.dtype()));
  }
  auto scatter = [&](const NDArray& from, const NDArray& to) {
    size_t row_bytes = static_cast<size_t>(to.shape().ProdRange(1, to.shape().ndim())) * DTypeSize(to.dtype());
    const char* src = HostPtr(from);
    char* dst = HostPtr(to);
    for (int64_t j = 0; j < k; ++j) std::memcpy(dst + rows[j] * row_bytes, src + j * row_bytes, row_bytes);
  };
  scatter(compact_out[0], out_dense);
  static const auto& mutate = Op::GetAttr<FMutateInputs>("FMutateInputs");
  if (mutate.Contains(attrs.op))
    for (int i : mutate[attrs.op](attrs)) scatter(compact[i], dense[i]);
  return true;
}

}  // namespace imperative
}  // namespace weft
