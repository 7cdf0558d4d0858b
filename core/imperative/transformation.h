// The imperative path as one ordered stack of transformations (DESIGN.md idea 5).
//
// Every eager operator call (imperative::Invoke, hence every front end's operator call, the
// executor's steps and the eager gradients) travels down one list of stages, each a small
// transformation that knows nothing of the others. The order is fixed here, once:
//
//   kProfile   sees the call first and its end last (a profiler times everything below)
//   kCast      may change the call's inputs before anything reads their dtypes (AMP casts)
//   kInfer     built in: checks the call, infers shapes and dtypes, allocates the outputs
//   kRecord    built in: autograd records the call (it needs the outputs, and refuses a
//              call before anything runs, so a refused in-place update changes nothing)
//   kTrace     may record the call into a graph (tracing for hybridize)
//   kDispatch  built in, last: picks the device's compute function, requests resources and
//              pushes the work to the engine (or runs small ready work on the caller)
//
// The built-in stages are always there; the others are empty until a feature plugs a
// transformation into them (SetTransformation). Python's hybridize traces a block
// symbolically (hybrid_forward with F = weft.sym), which makes no eager call, so kTrace is
// empty today; AMP of the tools issue and the custom operators of the MXNet API issue are
// meant to plug in here rather than into Invoke's body. The profiler does not need kProfile:
// it times operations in the engine, where they run, and kDispatch names them.
//
// Cost: a call walks a fixed array of NumStages slots; an empty slot or a transformation
// whose Enabled() is false costs a load and a branch.
#pragma once

#include <string>
#include <vector>

#include "core/ndarray/ndarray.h"
#include "core/op/registry.h"

namespace weft {
namespace imperative {

enum class Stage : int { kProfile = 0, kCast, kInfer, kRecord, kTrace, kDispatch, kNumStages };

const char* StageName(Stage stage);

struct InvokeScratch;

// One call on its way down the stack. A transformation may repoint `inputs` (at arrays it
// keeps alive until its Apply returns) or change `is_train` before passing the call on.
struct Call {
  const NodeAttrs* attrs;
  const std::vector<NDArray>* inputs;
  // Preallocated outputs (an `out=` argument), or empty: kInfer fills it.
  std::vector<NDArray>* outputs;
  // The context of a call without inputs (creation and sampling operators), or null.
  const Context* ctx_hint;
  // One request per output, or null for kWriteTo everywhere.
  const std::vector<OpReq>* req;
  bool is_train;
  // Set by kInfer for the stages after it: the context the call runs on.
  Context ctx;
  // kInfer's results (shapes, blobs, engine variables) for kDispatch; the thread's scratch.
  InvokeScratch* scratch = nullptr;
};

class Next;

class Transformation {
 public:
  virtual ~Transformation() = default;
  virtual const char* name() const = 0;
  // Whether this call goes through Apply; when false the call passes straight on. Called
  // for every operator call, so it should be a flag test.
  virtual bool Enabled(const Call& call) const { return true; }
  // Handles the call. next(call) passes it to the stages below; returning without calling
  // it ends the call there (the transformation then made the outputs itself).
  virtual void Apply(Call& call, const Next& next) = 0;
};

// The rest of the stack below a stage.
class Next {
 public:
  explicit Next(int stage) : stage_(stage) {}
  void operator()(Call& call) const;

 private:
  int stage_;
};

// Runs `call` through every stage, from kProfile down.
void RunStack(Call& call);

// Puts `t` into `stage` (nullptr empties it) and returns what was there. The built-in stages
// (kInfer, kRecord, kDispatch) cannot be replaced: that is an error. `t` must stay alive
// while any call may still be passing through it; transformations are meant to be set up
// once, before the calls they should see.
Transformation* SetTransformation(Stage stage, Transformation* t);

// The stack as it is now, in order: one "stage: transformation" line per stage ("-" for an
// empty one). For debugging and documentation tests.
std::vector<std::string> DescribeStack();

}  // namespace imperative
}  // namespace weft
