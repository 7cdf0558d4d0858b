// The executor: a symbol bound to arrays, run forward and backward by pushing each node to
// the engine with outputs allocated once at bind time.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/graph/node.h"
#include "core/graph/symbol.h"
#include "core/ndarray/ndarray.h"

namespace weft {
namespace executor {

class Executor {
 public:
  // `args` in list_arguments order, `aux` in list_auxiliary_states order, all on `ctx`.
  // `arg_grads` has one array per argument (none where no gradient is wanted) and
  // `grad_req` one request per argument: kNullOp (no gradient), kWriteTo, or kAddTo
  // (accumulate into arg_grads). Shapes and dtypes come from the bound arrays; a
  // mismatch with the graph is an error naming the node.
  Executor(const graph::Symbol& sym, Context ctx, std::vector<NDArray> args, std::vector<NDArray> arg_grads,
           std::vector<OpReq> grad_req, std::vector<NDArray> aux);

  // Pushes the forward nodes; `is_train` reaches the operators (Dropout, BatchNorm).
  void Forward(bool is_train);
  // Pushes the backward nodes after a Forward(true). `head_grads` has one array per output,
  // or is empty, meaning ones (the gradient of a loss output).
  void Backward(const std::vector<NDArray>& head_grads);

  const std::vector<NDArray>& outputs() const { return outputs_; }
  const std::vector<NDArray>& arg_arrays() const { return args_; }
  const std::vector<NDArray>& grad_arrays() const { return arg_grads_; }
  const std::vector<NDArray>& aux_arrays() const { return aux_; }
  // Bytes of the internal values: as planned (shared blocks), and with one buffer each.
  size_t planned_bytes() const { return planned_bytes_; }
  size_t naive_bytes() const { return naive_bytes_; }
  // Nodes run each forward, and nodes folded at bind (they depend on no variable).
  size_t num_forward_nodes() const { return forward_.size(); }
  size_t num_folded_nodes() const { return num_folded_; }
  // Chains of pointwise nodes each run as one fused node.
  size_t num_fused_chains() const { return fused_.size(); }
  // The graph, one line per node, then "Total N MB allocated" as MXNet's debug_str.
  std::string DebugString() const;

  // Called, on the pushing thread, right after each node is pushed, forward and backward,
  // with the name of each output ("fc1_output") and the array that will hold it (read it
  // through the engine, as any array: the value is ready when the node has run). With
  // monitor_all the node's inputs come first, named by the values they are. A fused chain
  // reports its last node. An empty callback removes it.
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
  };
  void Run(std::vector<Step>& steps, bool is_train);
  // A chain of pointwise nodes run as one "_fused_pointwise" node: its attributes (holding
  // the program) and the entries it reads.
  struct FusedChain {
    NodeAttrs attrs;
    std::vector<uint32_t> inputs;
  };
  static FusedChain FuseChain(const graph::IndexedGraph& g, const std::vector<uint32_t>& chain);
  void PlanMemory(const graph::IndexedGraph& g, const std::vector<uint32_t>& order, const std::vector<Shape>& shapes,
                  const std::vector<DType>& types, const std::vector<bool>& persistent,
                  const std::vector<bool>& computed_once, std::vector<NDArray>* entry);

  MonitorCallback monitor_;
  bool monitor_all_ = false;
  graph::Symbol sym_;  // a private copy: the steps point into its nodes, which nobody else can change
  std::vector<graph::NodeEntry> grad_entries_;
  Context ctx_;
  std::vector<NDArray> args_, arg_grads_, aux_, outputs_, head_grads_;
  std::vector<OpReq> grad_req_;
  std::vector<Step> forward_, backward_;
  std::vector<std::unique_ptr<FusedChain>> fused_;
  bool is_train_ = false;
  size_t planned_bytes_ = 0, naive_bytes_ = 0, num_folded_ = 0;
};

}  // namespace executor
}  // namespace weft
