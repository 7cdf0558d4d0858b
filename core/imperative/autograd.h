// Autograd: the recording layer of the imperative path (DESIGN.md point 5).
//
// While the calling thread records, every operator call that reads an array with a history
// (a variable marked for gradients, or the output of an earlier recorded call) leaves a
// Node: the operator, the arrays it read and the arrays it made. Each output array points to
// its Node (NDArray::ag_node). Backward walks the Nodes from the heads in reverse order and
// runs each operator's registered gradient (the same FGradient the symbolic gradient pass
// uses) eagerly, so imperative and symbolic gradients agree by construction.
//
// A Node keeps the arrays it read and made alive until a backward without retain_graph frees
// them; Nodes keep their inputs' Nodes alive, and outputs hold their Node, so a graph lives as
// long as some array that came out of it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/symbol.h"
#include "core/imperative/transformation.h"
#include "core/ndarray/ndarray.h"
#include "core/op/registry.h"

namespace weft {
namespace autograd {

// A custom gradient (autograd.Function): given one gradient per output, returns one per
// input (a none array for "no gradient").
using CustomBackward = std::function<std::vector<NDArray>(const std::vector<NDArray>& out_grads)>;

struct Node {
  // The operator that ran; nullptr for a variable (an array marked for gradients) and for a
  // custom function.
  NodeAttrs attrs;
  bool is_train = false;
  // The arrays the call read, with their own histories (the edges of the graph).
  std::vector<NDArray> inputs;
  // The arrays the call made, with no history: an output pointing to its own Node would keep
  // it alive forever.
  std::vector<NDArray> outputs;
  CustomBackward custom;
  std::string custom_name;
  // A custom function that stands for one operator call (a hybridized block's graph, as
  // MXNet's _CachedOp node): that call's attributes, made when get_symbol asks; its inputs
  // are this node's, in order. Empty for a custom function without a symbol form.
  std::function<NodeAttrs()> symbol_form;
  // Set by a backward without retain_graph: the saved arrays are gone.
  bool freed = false;

  // Variables only: where gradients go and how (kWriteTo, kAddTo or kNullOp).
  NDArray grad;
  OpReq grad_req = OpReq::kNullOp;
  // Variables only: set when a backward writes `grad`, cleared by the caller (MXNet's "grad
  // state", which Gluon's Trainer reads to find parameters a step did not reach). Atomic: the
  // Trainer may read it on another thread than the backward's.
  std::atomic<bool> fresh_grad{false};

  bool is_variable() const { return attrs.op == nullptr && !custom; }

  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Releases the recorded history only this node keeps alive without recursing into it, so
  // that freeing the result of a million recorded calls does not exhaust the stack.
  ~Node();
};

// The calling thread's recording state (off at start). SetIsRecording returns the previous one.
bool IsRecording();
bool SetIsRecording(bool on);

// Marks `vars` as variables: gradients computed by Backward go to grads[i] per reqs[i].
// Replaces any history the arrays had (they become leaves).
void MarkVariables(const std::vector<NDArray*>& vars, const std::vector<NDArray>& grads,
                   const std::vector<OpReq>& reqs);

// The recording stage of the imperative stack (Stage::kRecord): enabled while the thread
// records, it passes each call to RecordOp before the call runs.
imperative::Transformation* RecordTransformation();

// Records one operator call when the thread records and some input has a history; sets the
// outputs' history. Refuses (before anything runs) a call that would overwrite a value the
// recorded graph needs.
void RecordOp(const NodeAttrs& attrs, const std::vector<NDArray>& inputs, std::vector<NDArray>* outputs,
              bool is_train);

// Records that `view` (sharing memory with `src`) is op_name(src, params), for the views
// NDArray makes without an operator (reshape, slice along axis 0): `view`'s gradient flows
// back through that operator's gradient. Does nothing unless recording and src has a history.
void RecordView(const std::string& op_name, const KwArgs& params, const NDArray& src, NDArray* view);

// Records a call with a caller-defined gradient (autograd.Function); `name` appears in errors.
// `symbol_form`, when given, is the operator call the node stands for in get_symbol.
void RecordCustom(const std::string& name, const std::vector<NDArray>& inputs, std::vector<NDArray>* outputs,
                  CustomBackward backward, std::function<NodeAttrs()> symbol_form = nullptr);

// Called by a custom gradient that wrote a variable's `grad` buffer itself, as it was asked
// (a hybridized block's executor writes its parameters' gradients): the gradients the rest
// of the running backward brings to that variable are then added to what it wrote instead
// of replacing it (the block called twice in one record(), or a parameter it shares with
// imperative code). Does nothing outside a backward.
void NoteGradientWritten(Node* variable);

// Propagates gradients from `heads` (head_grads[i] none, or the array of ones when empty:
// the gradient of a loss). With `variables` empty, every variable reached receives its
// gradient per its grad_req and the result is empty; otherwise the result holds the gradient
// of each array in `variables` (which must have a history) and no .grad is touched.
// create_graph records the backward computation itself, for higher-order gradients.
// Without retain_graph the Nodes walked release their saved arrays.
std::vector<NDArray> Backward(const std::vector<NDArray>& heads, const std::vector<NDArray>& head_grads,
                              const std::vector<NDArray>& variables, bool retain_graph, bool create_graph,
                              bool is_train);

// The recorded history of `head` as a graph, MXNet's autograd.get_symbol: one node per
// recorded call (named after its operator in lower case and its place in the walk), one
// variable per marked array ("var0", "var1", ... in the order the walk meets them) and per
// array a call read without a history (an array of constants). A custom function with a
// symbol form (a hybridized block's call) is the node of that form; one without
// (autograd.Function), or a head without a history, is an error.
graph::Symbol GetSymbol(const NDArray& head);

}  // namespace autograd
}  // namespace weft
