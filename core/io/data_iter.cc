#include "core/io/data_iter.h"

#include <utility>

#include "core/base/logging.h"

namespace weft {
namespace io {

DataIter::~DataIter() = default;

void WarnUnknownParams(const std::string& iter, const KwArgs& rest) {
  if (rest.empty()) return;
  std::string known;
  if (const DataIterReg* reg = DataIterRegistry::Get()->Find(iter))
    for (const auto& p : reg->params) known += (known.empty() ? "" : ", ") + p.name;
  for (const auto& kv : rest)
    WEFT_LOG(Warning) << "Iterator '" << iter << "': ignoring unknown parameter '" << kv.first << "' (known: "
                      << (known.empty() ? std::string("no parameters") : known) << ")";
}

// ---------------------------------------------------------------- prefetcher

PrefetchIter::PrefetchIter(std::unique_ptr<DataIter> base, int capacity)
    : base_(std::move(base)), capacity_(static_cast<size_t>(capacity < 1 ? 1 : capacity)) {
  WEFT_CHECK(base_ != nullptr, kInternal, "PrefetchIter: no base iterator");
  data_desc_ = base_->ProvideData();
  label_desc_ = base_->ProvideLabel();
  worker_ = std::thread([this] { Worker(); });
}

PrefetchIter::~PrefetchIter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void PrefetchIter::Worker() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || reset_requested_ || (!epoch_done_ && queue_.size() < capacity_); });
    if (stop_) return;
    if (reset_requested_) {
      const bool rewind = rewind_requested_ || made_ > taken_;
      made_ = taken_ = 0;
      lock.unlock();
      std::exception_ptr err;
      try {
        if (rewind)
          base_->Rewind();
        else
          base_->Reset();
      } catch (...) {
        err = std::current_exception();
      }
      lock.lock();
      queue_.clear();
      error_ = err;
      epoch_done_ = err != nullptr;
      reset_requested_ = false;
      rewind_requested_ = false;
      cv_.notify_all();
      continue;
    }
    // The base runs outside the lock so the consumer can take ready batches meanwhile.
    lock.unlock();
    DataBatch batch;
    bool ok = false;
    std::exception_ptr err;
    try {
      ok = base_->Next();
      if (ok) batch = base_->Value();
    } catch (...) {
      err = std::current_exception();
    }
    lock.lock();
    if (ok) ++made_;
    // A batch of an epoch the consumer abandoned (Reset) or of a closing iterator is dropped.
    if (stop_ || reset_requested_) continue;
    if (err) {
      error_ = err;
      epoch_done_ = true;
    } else if (!ok) {
      epoch_done_ = true;
    } else {
      queue_.push_back(std::move(batch));
    }
    cv_.notify_all();
  }
}

bool PrefetchIter::Next() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !queue_.empty() || epoch_done_; });
  if (!queue_.empty()) {
    current_ = std::move(queue_.front());
    queue_.pop_front();
    ++taken_;
    cv_.notify_all();
    return true;
  }
  current_ = DataBatch();
  if (error_) {
    // Raised once; later calls report the end of the epoch until Reset().
    std::exception_ptr err = std::move(error_);
    error_ = nullptr;
    std::rethrow_exception(err);
  }
  return false;
}

void PrefetchIter::Reset() { Request(false); }

void PrefetchIter::Rewind() { Request(true); }

void PrefetchIter::Request(bool rewind) {
  std::unique_lock<std::mutex> lock(mu_);
  reset_requested_ = true;
  rewind_requested_ = rewind;
  queue_.clear();
  error_ = nullptr;
  current_ = DataBatch();
  cv_.notify_all();
  cv_.wait(lock, [&] { return !reset_requested_; });
  if (error_) {
    std::exception_ptr err = std::move(error_);
    error_ = nullptr;
    std::rethrow_exception(err);
  }
}

std::unique_ptr<DataIter> MakePrefetcher(std::unique_ptr<DataIter> base, const PrefetchParam& param) {
  // MXNet's enum is cpu/gpu; a context's name ("gpu(0)") names the same kind.
  const std::string kind = param.ctx.substr(0, param.ctx.find('('));
  WEFT_CHECK(kind == "cpu" || kind == "gpu", kValue, "data iterator: ctx must be 'cpu' or 'gpu', got '", param.ctx,
             "'");
  if (param.prefetch_buffer <= 0) return base;
  return std::make_unique<PrefetchIter>(std::move(base), param.prefetch_buffer);
}

// ---------------------------------------------------------------- registry

DataIterRegistry* DataIterRegistry::Get() {
  // Leaked on purpose: registrations run from static initialisers of other files.
  static DataIterRegistry* reg = new DataIterRegistry();
  return reg;
}

DataIterReg& DataIterRegistry::Register(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = regs_[name];
  WEFT_CHECK(slot == nullptr, kInternal, "data iterator '", name, "' is registered twice");
  slot = std::make_unique<DataIterReg>();
  slot->name = name;
  return *slot;
}

const DataIterReg* DataIterRegistry::Find(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = regs_.find(name);
  return it == regs_.end() ? nullptr : it->second.get();
}

std::vector<std::string> DataIterRegistry::ListNames() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& kv : regs_) names.push_back(kv.first);
  return names;
}

std::unique_ptr<DataIter> CreateDataIter(const std::string& name, const KwArgs& kwargs) {
  const DataIterReg* reg = DataIterRegistry::Get()->Find(name);
  if (reg == nullptr) {
    std::string all;
    for (const auto& n : DataIterRegistry::Get()->ListNames()) all += (all.empty() ? "" : ", ") + n;
    Throw(ErrorKind::kNotFound, "unknown data iterator '", name, "' (registered: ",
          all.empty() ? std::string("none") : all, ")");
  }
  WEFT_CHECK(static_cast<bool>(reg->factory), kInternal, "data iterator '", name, "' has no factory");
  std::unique_ptr<DataIter> it = reg->factory(kwargs);
  WEFT_CHECK(it != nullptr, kInternal, "data iterator '", name, "': factory returned nothing");
  return it;
}

}  // namespace io
}  // namespace weft
