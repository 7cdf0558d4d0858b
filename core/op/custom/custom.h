// Custom operators: operators whose shape rules and computation live outside the core (a
// front end's CustomOp class, a loaded library of operators). One registry operator,
// `Custom`, stands for all of them: its `op_type` parameter names an implementation
// registered here, which the core calls back for the arguments' names, shape and type
// inference, and the forward and backward computations.
//
// The callbacks of a forward or backward run on a thread of a pool of their own (never an
// engine worker, never the thread that pushed the call), so they may take a lock the
// pushing thread holds (Python's GIL), push more work and wait for it. They see the arrays
// of the call through aliases with engine variables of their own; the engine operation of
// the call finishes only once everything the callback pushed on those aliases is done.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/ndarray/ndarray.h"
#include "core/op/compute_async.h"
#include "core/op/registry.h"

namespace weft {
namespace custom {

// MXNet's tags for the arrays a forward or backward callback receives.
enum class Tag : int { kInData = 0, kOutData = 1, kInGrad = 2, kOutGrad = 3, kAux = 4 };

// One array handed to a callback, with what it is and, for what the callback writes, how.
struct TaggedArray {
  NDArray array;  // none for an array the backward did not declare it needs
  Tag tag;
  OpReq req;
};

// An operator instance (MXNet's CustomOp), made for one context, set of shapes and dtypes.
// Errors are thrown (weft::Error); they fail the call's outputs.
class Operator {
 public:
  virtual ~Operator() = default;
  virtual void Forward(bool is_train, const std::vector<TaggedArray>& arrays) = 0;
  virtual void Backward(bool is_train, const std::vector<TaggedArray>& arrays) = 0;
};

// What one op_type says for one set of parameters (MXNet's CustomOpProp).
class Prop {
 public:
  virtual ~Prop() = default;
  virtual std::vector<std::string> ListArguments() = 0;
  virtual std::vector<std::string> ListOutputs() = 0;
  virtual std::vector<std::string> ListAuxiliaryStates() = 0;
  // `shapes` holds the arguments', outputs' and auxiliary states' shapes, in that order; on
  // entry only the arguments' may be known. Fills every entry; false when it cannot yet.
  virtual bool InferShape(std::vector<Shape>* shapes) = 0;
  // The same for dtypes (kUnknown where not known).
  virtual bool InferType(std::vector<DType>* types) = 0;
  // Which of out_grad (one per output), in_data (one per argument) and out_data (one per
  // output) the backward reads: the flags come in zero and the callee sets those it needs.
  virtual void DeclareBackwardDependency(std::vector<bool>* out_grad, std::vector<bool>* in_data,
                                         std::vector<bool>* out_data) = 0;
  virtual bool NeedTopGrad() = 0;
  // `shapes` and `types` as InferShape fills them.
  virtual std::unique_ptr<Operator> CreateOperator(Context ctx, const std::vector<Shape>& shapes,
                                                   const std::vector<DType>& types) = 0;
};

// Makes the Prop of `op_type` for one call's parameters (op_type excepted).
using PropCreator = std::function<std::shared_ptr<Prop>(const std::string& op_type, const KwArgs& kwargs)>;

// Registers (or replaces) the implementation of `op_type`.
void Register(const std::string& op_type, PropCreator creator);
bool IsRegistered(const std::string& op_type);

// Runs `task` on the pool of callback threads. The pool grows when every thread is busy:
// a callback may wait for work that another callback, queued behind it, must do first.
void RunOnCallbackThread(std::function<void()> task);
// Stops the pool's threads once they are idle (before a fork: a child has no threads) and
// lets them start again with the next task. Returns the number of threads stopped.
int StopCallbackThreads();

}  // namespace custom
}  // namespace weft
