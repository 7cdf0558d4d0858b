// The imperative stack (core/imperative/transformation.h): its order, what a plugged-in
// transformation sees and may change, and that the built-in stages stay in place.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/imperative/autograd.h"
#include "core/imperative/transformation.h"
#include "op_test_util.h"

namespace weft {
namespace {

using imperative::Call;
using imperative::Next;
using imperative::Stage;
using imperative::Transformation;

// Puts a transformation into a stage for the scope of a test and empties the stage after.
class Plugged {
 public:
  Plugged(Stage stage, Transformation* t) : stage_(stage) {
    EXPECT_EQ(imperative::SetTransformation(stage, t), nullptr) << "the stage was not empty";
  }
  ~Plugged() { imperative::SetTransformation(stage_, nullptr); }

 private:
  Stage stage_;
};

// Logs the calls it sees, before and after the stages below it ran.
class Logger final : public Transformation {
 public:
  Logger(std::string tag, std::vector<std::string>* log) : tag_(std::move(tag)), log_(log) {}
  const char* name() const override { return "logger"; }
  void Apply(Call& call, const Next& next) override {
    log_->push_back(tag_ + " enter " + call.attrs->op->name + (call.outputs->empty() ? " (no outputs yet)" : ""));
    next(call);
    log_->push_back(tag_ + " leave " + call.attrs->op->name + " outputs " + std::to_string(call.outputs->size()));
  }

 private:
  std::string tag_;
  std::vector<std::string>* log_;
};

// Casts every float64 input to float32 before inference sees it, as an AMP cast would; the
// cast itself is an operator call that goes through the whole stack.
class CastToFloat32 final : public Transformation {
 public:
  const char* name() const override { return "cast-to-float32"; }
  // Its own casts pass through untouched, or they would be cast again without end.
  bool Enabled(const Call& call) const override { return call.attrs->op->name != "Cast"; }
  void Apply(Call& call, const Next& next) override {
    std::vector<NDArray> cast;
    bool changed = false;
    for (const NDArray& in : *call.inputs) {
      if (in.dtype() == DType::kFloat64) {
        cast.push_back(test::Run1("Cast", {in}, {{"dtype", "float32"}}));
        changed = true;
      } else {
        cast.push_back(in);
      }
    }
    if (!changed) return next(call);
    const std::vector<NDArray>* original = call.inputs;
    call.inputs = &cast;
    next(call);
    call.inputs = original;
  }
};

// Answers every call of one operator itself, without running it.
class Consume final : public Transformation {
 public:
  const char* name() const override { return "consume"; }
  bool Enabled(const Call& call) const override { return call.attrs->op->name == "negative"; }
  void Apply(Call& call, const Next&) override {
    call.outputs->assign(1, test::MakeArray((*call.inputs)[0].shape(), std::vector<double>((*call.inputs)[0].Size(), 7.0)));
  }
};

TEST(ImperativeStack, StagesRunInTheDocumentedOrder) {
  std::vector<std::string> expected = {"profile: -", "cast: -", "infer: infer", "record: autograd", "trace: -",
                                       "dispatch: dispatch"};
  EXPECT_EQ(imperative::DescribeStack(), expected);
}

TEST(ImperativeStack, BuiltInStagesCannotBeReplaced) {
  std::vector<std::string> log;
  Logger logger("x", &log);
  for (Stage s : {Stage::kInfer, Stage::kRecord, Stage::kDispatch})
    test::ExpectError([&] { imperative::SetTransformation(s, &logger); }, ErrorKind::kValue,
                      {"built in and cannot be replaced"});
  EXPECT_EQ(imperative::DescribeStack()[2], "infer: infer");
}

TEST(ImperativeStack, ProfileSeesEveryCallAroundInferenceAndCastSeesItBefore) {
  std::vector<std::string> log;
  Logger outer("profile", &log), inner("cast", &log);
  Plugged a(Stage::kProfile, &outer), b(Stage::kCast, &inner);
  NDArray x = test::MakeArray(Shape({3}), {1, 2, 3}, DType::kFloat32);
  NDArray y = test::Run1("relu", {x});
  std::vector<std::string> expected = {"profile enter relu (no outputs yet)", "cast enter relu (no outputs yet)",
                                       "cast leave relu outputs 1", "profile leave relu outputs 1"};
  EXPECT_EQ(log, expected);
  EXPECT_EQ(imperative::DescribeStack()[0], "profile: logger");
  test::ExpectAllNear(test::ToVector(y), {1, 2, 3});
}

TEST(ImperativeStack, EmptiedStageSeesNothing) {
  std::vector<std::string> log;
  Logger logger("profile", &log);
  {
    Plugged p(Stage::kProfile, &logger);
    test::Run1("relu", {test::MakeArray(Shape({2}), {1, -1})});
  }
  size_t seen = log.size();
  test::Run1("relu", {test::MakeArray(Shape({2}), {1, -1})});
  EXPECT_EQ(seen, 2u);
  EXPECT_EQ(log.size(), seen);
  EXPECT_EQ(imperative::DescribeStack()[0], "profile: -");
}

TEST(ImperativeStack, CastStageChangesWhatInferenceSees) {
  CastToFloat32 cast;
  Plugged p(Stage::kCast, &cast);
  NDArray a = test::MakeArray(Shape({2, 2}), {1, 2, 3, 4}, DType::kFloat64);
  NDArray b = test::MakeArray(Shape({2, 2}), {0.5, 0.5, 0.5, 0.5}, DType::kFloat64);
  NDArray c = test::Run1("elemwise_add", {a, b});
  EXPECT_EQ(c.dtype(), DType::kFloat32);
  test::ExpectAllNear(test::ToVector(c), {1.5, 2.5, 3.5, 4.5});
}

TEST(ImperativeStack, ATransformationMayAnswerACallItself) {
  Consume consume;
  Plugged p(Stage::kTrace, &consume);
  NDArray x = test::MakeArray(Shape({2}), {1, 2});
  test::ExpectAllNear(test::ToVector(test::Run1("negative", {x})), {7, 7});
  test::ExpectAllNear(test::ToVector(test::Run1("relu", {x})), {1, 2});
}

TEST(ImperativeStack, RecordingIsTheStackStageAfterInference) {
  // A cast stage above recording: the recorded node reads the float32 cast, and the
  // gradient flows back through Cast to the float64 variable.
  // The backward runs without the cast stage: it would cast the float64 gradients too.
  NDArray x = test::MakeArray(Shape({3}), {1, -2, 3}, DType::kFloat64);
  NDArray g(Shape({3}), Context::CPU(), DType::kFloat64);
  autograd::MarkVariables({&x}, {g}, {OpReq::kWriteTo});
  NDArray y;
  {
    CastToFloat32 cast;
    Plugged p(Stage::kCast, &cast);
    bool prev = autograd::SetIsRecording(true);
    y = test::Run1("square", {x});
    autograd::SetIsRecording(prev);
  }
  EXPECT_EQ(y.dtype(), DType::kFloat32);
  autograd::Backward({y}, {}, {}, false, false, true);
  test::ExpectAllNear(test::ToVector(g), {2, -4, 6});
}

}  // namespace
}  // namespace weft
