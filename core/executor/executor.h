// The executor: a symbol bound to arrays, run forward and backward by pushing each node to
// the engine with outputs allocated once at bind time.
#pragma once

#include <functional>
#include <map>
#include <unordered_map>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/node.h"
#include "core/graph/symbol.h"
#include "core/ndarray/ndarray.h"

namespace weft {
namespace executor {

struct InferRegion;

class Executor {
 public:
  // `args` in list_arguments order, `aux` in list_auxiliary_states order (on `ctx`, or see below).
  // `arg_grads` has one array per argument (none where no gradient is wanted) and
  // `grad_req` one request per argument: kNullOp (no gradient), kWriteTo, or kAddTo
  // (accumulate into arg_grads). Shapes and dtypes come from the bound arrays; a
  // mismatch with the graph is an error naming the node.
  //
  // `group2ctx` places parts of the graph on other contexts (MXNet's group2ctx): a node
  // whose "__ctx_group__" attribute names a group runs on that group's context (a group
  // missing from a non-empty group2ctx is an error); the arrays may then be on several
  // contexts, and each variable is where its array is. Nodes without a group run where
  // their first input was made, gradient nodes where their forward node runs; a value
  // read on another context is copied there by an inserted "_CrossDeviceCopy" node, and a
  // gradient lands on its gradient array's context. Memory is planned per context.
  Executor(const graph::Symbol& sym, Context ctx, std::vector<NDArray> args, std::vector<NDArray> arg_grads,
           std::vector<OpReq> grad_req, std::vector<NDArray> aux, std::map<std::string, Context> group2ctx = {},
           std::vector<NDArray> shared_pool = {});

  // MXNet's simple_bind: allocates zeroed arguments, gradients (where grad_req is not
  // kNullOp) and auxiliary states from `shapes` and `dtypes` by input name (dtypes not
  // given are float32 unless a variable declares its own), each on its variable's group
  // context (group2ctx) or `ctx`, and binds them. `grad_req` has one request per argument,
  // or one for all. Unknown names, and shapes that leave some shape of the graph unknown,
  // are errors naming them.
  static std::unique_ptr<Executor> SimpleBind(const graph::Symbol& sym, Context ctx,
                                              std::map<std::string, Context> group2ctx,
                                              const std::unordered_map<std::string, Shape>& shapes,
                                              const std::unordered_map<std::string, DType>& dtypes,
                                              const std::vector<OpReq>& grad_req);
  // MXNet's Executor.reshape: a new executor of the same symbol, contexts and requests for
  // new input shapes (by name). An array whose shape stays is shared; one that shrinks is a
  // view of the old memory; one that grows is new memory only with allow_up_sizing. With
  // share_memory the internal values (outputs included) reuse this executor's memory chunks
  // where they fit, as MXNet's shared_exec pool does: the two executors then share that
  // memory, and a run of one overwrites the other's outputs. Arrays
  // other than the named inputs may change shape only with partial_shaping.
  std::unique_ptr<Executor> Reshape(const std::unordered_map<std::string, Shape>& shapes, bool partial_shaping,
                                    bool allow_up_sizing, bool share_memory = true) const;

  // Pushes the forward nodes; `is_train` reaches the operators (Dropout, BatchNorm).
  void Forward(bool is_train);
  // True when some bound array (argument, gradient or auxiliary state) is csr or
  // row_sparse, or the graph has an operator that makes sparse arrays out of dense ones
  // (cast_storage to csr or row_sparse, the DGL graph operators). Such an executor plans
  // nothing: Forward runs each node through
  // imperative::Invoke (the sparse kernels, or the dense fallback), recording for autograd
  // when a gradient is asked for, and Backward runs autograd from the outputs. The outputs
  // are new arrays at every forward (their storage types are the kernels'), and a sparse
  // gradient array is replaced by the gradient in its own storage type (sparse arrays are
  // immutable), so front ends read outputs() after Forward and grad_arrays() after Backward.
  bool is_sparse() const { return sparse_; }
  // Sparse executors only: replaces bound array `index` of `kind` (0 arguments, 1 gradients,
  // 2 auxiliary states) with `array` of the same shape and dtype, for front ends whose
  // handles were given new sparse contents (a sparse array cannot be written in place).
  void SetArray(int kind, size_t index, const NDArray& array);
  // Pushes the backward nodes after a Forward(true). `head_grads` has one array per output,
  // or is empty, meaning ones (the gradient of a loss output). As in MXNet, only the head
  // gradients the backward pass reads must be given and fit: those of outputs whose gradient
  // reaches no argument (shape_array, argsort's indices) and any past the last output are ignored.
  void Backward(const std::vector<NDArray>& head_grads);

  const std::vector<NDArray>& outputs() const { return outputs_; }
  // Forward calls so far: a gradient taken for one forward is stale after the next.
  uint64_t num_forwards() const { return num_forwards_; }
  const std::vector<NDArray>& arg_arrays() const { return args_; }
  const std::vector<NDArray>& grad_arrays() const { return arg_grads_; }
  const std::vector<NDArray>& aux_arrays() const { return aux_; }
  const std::vector<OpReq>& grad_req() const { return grad_req_; }
  Context context() const { return ctx_; }
  const std::map<std::string, Context>& group2ctx() const { return group2ctx_; }
  // Bytes of the internal values: as planned (shared blocks), and with one buffer each.
  size_t planned_bytes() const { return planned_bytes_; }
  size_t naive_bytes() const { return naive_bytes_; }
  // Nodes run each forward, and nodes folded at bind (they depend on no variable).
  size_t num_forward_nodes() const { return forward_.size(); }
  size_t num_folded_nodes() const { return num_folded_; }
  // Chains of pointwise nodes each run as one fused node.
  size_t num_fused_chains() const { return fused_.size(); }
  // Regions of oneDNN operators each run as one node by Forward(is_train=false) (formed
  // when no gradient is asked for; WEFT_EXEC_DNNL_FUSE=0 turns them off).
  size_t num_dnnl_regions() const { return regions_.size(); }
  // The graph, one line per node, then "Total N MB allocated" as MXNet's debug_str.
  std::string DebugString() const;
  // The forward graph as the executor runs it, after the graph passes that change it
  // (common subexpressions merged, oneDNN subgraph nodes inlined): MXNet's
  // get_optimized_symbol.
  const graph::Symbol& optimized_symbol() const { return optimized_; }
  // The symbol as bound.
  const graph::Symbol& source_symbol() const { return source_; }

  // Called, on the pushing thread, right after each node is pushed, forward and backward,
  // with the name of each output ("fc1_output") and the array that will hold it (read it
  // through the engine, as any array: the value is ready when the node has run). With
  // monitor_all the node's inputs come first, named as MXNet names them. While a monitor is
  // set, fused chains and oneDNN inference regions run node by node, so that every node
  // reports, as in MXNet. An empty callback removes it.
  using MonitorCallback = std::function<void(const std::string& name, const NDArray& value)>;
  void SetMonitorCallback(MonitorCallback callback, bool monitor_all);

 private:
  // One node to run: its attributes, its input and output arrays and output requests,
  // built once at bind time.
  struct Step {
    const NodeAttrs* attrs;
    std::vector<NDArray> inputs, outputs;
    std::vector<OpReq> req;
    std::vector<std::string> input_names, output_names;  // for the monitor
    Context ctx;              // where it runs
    bool cross_copy = false;  // a "_CrossDeviceCopy": run as a copy between contexts
    // What monitor_all reports of an operator's inputs, as MXNet: a variable input by its
    // own name, then every input as "<node>_<input name>" (the index into inputs). Empty
    // for steps that are not one node (input_names then).
    std::vector<std::pair<std::string, size_t>> monitor_inputs;
    // A fused chain's nodes, each its own step: what runs instead while a monitor is set, so
    // that every node reports its values, as MXNet's (which fuses nothing on the host) do.
    std::vector<Step> members;
    // The node's own attributes where attrs are its channels-last ones (Int8Layouts): what
    // runs instead while a monitor is set, so that it reports values in their plain layout.
    const NodeAttrs* plain_attrs = nullptr;
  };
  void Run(std::vector<Step>& steps, bool is_train);
  void RunStep(Step& s, bool is_train);
  void BindSparse(const std::vector<std::string>& arg_names);
  void ForwardSparse(bool is_train);
  void BackwardSparse(const std::vector<NDArray>& head_grads);
  // A chain of pointwise nodes run as one "_fused_pointwise" node: its attributes (holding
  // the program) and the entries it reads.
  struct FusedChain {
    NodeAttrs attrs;
    std::vector<uint32_t> inputs;
  };
  static FusedChain FuseChain(const graph::IndexedGraph& g, const std::vector<uint32_t>& chain);
  // infer_: the steps of forward_ (run on `order`'s nodes with a forward step, in order)
  // with each region's members replaced by the region node (infer_fuse.cc).
  void BuildInferSteps(const std::vector<uint32_t>& forward_nodes, const std::vector<NDArray>& entry,
                       const std::vector<OpReq>& entry_req);
  void PlanMemory(const graph::IndexedGraph& g, const std::vector<uint32_t>& order, const std::vector<Shape>& shapes,
                  const std::vector<DType>& types, const std::vector<bool>& persistent,
                  const std::vector<bool>& computed_once, const std::vector<Context>& ctx_of,
                  std::vector<NDArray>* entry);

  MonitorCallback monitor_;
  bool monitor_all_ = false;
  graph::Symbol sym_;  // a private copy: the steps point into its nodes, which nobody else can change
  graph::Symbol source_;  // the symbol as bound (sym_ gets the copies placement inserts): for Reshape
  graph::Symbol optimized_;  // a copy of sym_ after the passes that rewrite the forward graph
  std::map<std::string, Context> group2ctx_;
  std::string placement_;  // debug_str's placement part (empty on one context)
  std::vector<graph::NodeEntry> grad_entries_;
  Context ctx_;
  std::vector<NDArray> args_, arg_grads_, aux_, outputs_, head_grads_;
  std::vector<bool> head_read_;  // whether the backward pass reads head_grads_[i]
  std::vector<OpReq> grad_req_;
  std::vector<Step> forward_, backward_;
  std::vector<Step> infer_;  // Forward(false) when regions were formed
  std::vector<std::shared_ptr<InferRegion>> regions_;
  std::vector<std::unique_ptr<FusedChain>> fused_;
  std::vector<std::unique_ptr<NodeAttrs>> channels_last_attrs_;  // the steps' channels-last int8 convolutions
  std::string int8_layouts_;  // debug_str's lines on them
  bool is_train_ = false;
  // Sparse executors: the argument copies marked as autograd variables by the last forward
  // (with their arguments' indices) and whether it recorded.
  bool sparse_ = false, recorded_ = false;
  std::vector<NDArray> marked_;
  std::vector<size_t> marked_args_;
  uint64_t num_forwards_ = 0;
  size_t planned_bytes_ = 0, naive_bytes_ = 0, num_folded_ = 0;
  // The memory chunks of the planned values that hold no folded constant (those a Reshape
  // may share), and (during planning only) another executor's such chunks, which planning
  // takes before allocating new ones.
  std::vector<NDArray> lendable_chunks_, shared_pool_;
};

}  // namespace executor
}  // namespace weft
