#include "core/imperative/transformation.h"

#include <array>
#include <atomic>

#include "core/base/error.h"
#include "core/imperative/autograd.h"

namespace weft {
namespace imperative {

// The built-in stages (imperative.cc).
Transformation* InferTransformation();
Transformation* DispatchTransformation();

namespace {

constexpr int kNumStages = static_cast<int>(Stage::kNumStages);

using Slots = std::array<std::atomic<Transformation*>, kNumStages>;

Slots& StackSlots() {
  static Slots* slots = [] {
    auto* s = new Slots();
    for (auto& slot : *s) slot.store(nullptr, std::memory_order_relaxed);
    (*s)[static_cast<int>(Stage::kInfer)].store(InferTransformation(), std::memory_order_relaxed);
    (*s)[static_cast<int>(Stage::kRecord)].store(autograd::RecordTransformation(), std::memory_order_relaxed);
    (*s)[static_cast<int>(Stage::kDispatch)].store(DispatchTransformation(), std::memory_order_relaxed);
    return s;
  }();
  return *slots;
}

bool IsBuiltIn(Stage stage) { return stage == Stage::kInfer || stage == Stage::kRecord || stage == Stage::kDispatch; }

}  // namespace

const char* StageName(Stage stage) {
  switch (stage) {
    case Stage::kProfile: return "profile";
    case Stage::kCast: return "cast";
    case Stage::kInfer: return "infer";
    case Stage::kRecord: return "record";
    case Stage::kTrace: return "trace";
    case Stage::kDispatch: return "dispatch";
    case Stage::kNumStages: break;
  }
  return "?";
}

void Next::operator()(Call& call) const {
  Slots& slots = StackSlots();
  for (int i = stage_ + 1; i < kNumStages; ++i) {
    Transformation* t = slots[i].load(std::memory_order_acquire);
    if (t != nullptr && t->Enabled(call)) {
      t->Apply(call, Next(i));
      return;
    }
  }
}

void RunStack(Call& call) { Next(-1)(call); }

Transformation* SetTransformation(Stage stage, Transformation* t) {
  int i = static_cast<int>(stage);
  WEFT_CHECK(i >= 0 && i < kNumStages, kValue, "imperative::SetTransformation: no stage ", i);
  WEFT_CHECK(!IsBuiltIn(stage), kValue, "imperative::SetTransformation: stage '", StageName(stage),
             "' is built in and cannot be replaced");
  return StackSlots()[i].exchange(t, std::memory_order_acq_rel);
}

std::vector<std::string> DescribeStack() {
  std::vector<std::string> lines;
  Slots& slots = StackSlots();
  for (int i = 0; i < kNumStages; ++i) {
    Transformation* t = slots[i].load(std::memory_order_acquire);
    lines.push_back(std::string(StageName(static_cast<Stage>(i))) + ": " + (t ? t->name() : "-"));
  }
  return lines;
}

}  // namespace imperative
}  // namespace weft
