// Memory planning: every internal value gets a view of a shared storage block.
#include <algorithm>
#include <climits>
#include <unordered_map>

#include "core/base/error.h"
#include "core/executor/executor.h"
#include "core/executor/passes.h"

namespace weft {
namespace executor {

using graph::IndexedGraph;

// Gives every operator output that has no array yet a view of a storage block. Walking
// the run order, an output takes over an input's block when the operator allows it in
// place and that input is dead after this step; otherwise the smallest free block that
// fits (or the largest free one, grown); a block goes back to the free list after the
// last step that reads its value. Persistent values (outputs, gradients copied at the
// end) are never freed. With planning off every value gets its own block.
void Executor::PlanMemory(const IndexedGraph& g, const std::vector<uint32_t>& order, const std::vector<Shape>& shapes,
                          const std::vector<DType>& types, const std::vector<bool>& persistent,
                          const std::vector<bool>& computed_once, std::vector<NDArray>* entry) {
  static const auto& inplace_fns = Op::GetAttr<FInplaceOption>("FInplaceOption");
  constexpr int kForever = INT32_MAX;
  std::vector<int> last_use(g.num_entries(), -1);
  for (size_t k = 0; k < order.size(); ++k)
    for (const auto& in : g[order[k]].inputs) last_use[g.entry_id(in.node_id, in.index)] = static_cast<int>(k);
  for (size_t e = 0; e < persistent.size(); ++e)
    if (persistent[e]) last_use[e] = kForever;

  bool plan = Enabled("WEFT_EXEC_PLAN_MEMORY");
  std::vector<size_t> block_bytes;
  std::vector<int> block_of(g.num_entries(), -1);  // the block of each live value
  std::vector<int> home(g.num_entries(), -1);      // the block each value was given
  std::vector<int> free_blocks;
  auto bytes_of = [&](uint32_t e) { return static_cast<size_t>(shapes[e].Size()) * DTypeSize(types[e]); };
  naive_bytes_ = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    uint32_t id = order[k];
    const graph::Node* n = g[id].source;
    std::vector<std::pair<int, int>> inplace;
    if (plan && inplace_fns.Contains(n->op())) inplace = inplace_fns[n->op()](n->attrs);
    std::vector<bool> taken(g[id].inputs.size(), false);
    for (int i = 0; i < n->num_outputs(); ++i) {
      uint32_t e = g.entry_id(id, i);
      if (!(*entry)[e].is_none()) continue;
      naive_bytes_ += bytes_of(e);
      int block = -1;
      for (const auto& io : inplace) {
        if (computed_once[e]) break;
        if (io.second != i || io.first < 0 || static_cast<size_t>(io.first) >= g[id].inputs.size() || taken[io.first])
          continue;
        const auto& in = g[id].inputs[io.first];
        uint32_t ie = g.entry_id(in.node_id, in.index);
        int uses_here = 0;
        for (const auto& other : g[id].inputs) uses_here += g.entry_id(other.node_id, other.index) == ie;
        if (block_of[ie] >= 0 && last_use[ie] == static_cast<int>(k) && uses_here == 1 && bytes_of(ie) == bytes_of(e)) {
          block = block_of[ie];
          block_of[ie] = -1;  // handed over: not freed after this step
          taken[io.first] = true;
          break;
        }
      }
      // A value computed once at bind (a folded constant) must own its memory: a block freed
      // earlier in the order is rewritten by its first owner at every run.
      if (block < 0 && plan && !free_blocks.empty() && !computed_once[e]) {
        auto best = free_blocks.end();
        for (auto it = free_blocks.begin(); it != free_blocks.end(); ++it) {
          bool fits = block_bytes[*it] >= bytes_of(e);
          if (best == free_blocks.end()) {
            best = it;
            continue;
          }
          bool best_fits = block_bytes[*best] >= bytes_of(e);
          if (fits ? (!best_fits || block_bytes[*it] < block_bytes[*best]) : (!best_fits && block_bytes[*it] > block_bytes[*best]))
            best = it;
        }
        block = *best;
        free_blocks.erase(best);
      }
      if (block < 0) {
        block = static_cast<int>(block_bytes.size());
        block_bytes.push_back(0);
      }
      block_bytes[block] = std::max(block_bytes[block], bytes_of(e));
      block_of[e] = block;
      home[e] = block;
    }
    if (!plan) continue;
    // Values read for the last time here, and outputs nobody reads, free their blocks.
    for (const auto& in : g[id].inputs) {
      uint32_t ie = g.entry_id(in.node_id, in.index);
      if (block_of[ie] >= 0 && last_use[ie] == static_cast<int>(k)) {
        free_blocks.push_back(block_of[ie]);
        block_of[ie] = -1;
      }
    }
    for (int i = 0; i < n->num_outputs(); ++i) {
      uint32_t e = g.entry_id(id, i);
      if (block_of[e] >= 0 && last_use[e] < 0) free_blocks.push_back(block_of[e]);
    }
  }

  std::vector<NDArray> blocks;
  planned_bytes_ = 0;
  for (size_t b : block_bytes) {
    blocks.emplace_back(Shape{static_cast<int64_t>(std::max<size_t>(b, 1))}, ctx_, DType::kUint8);
    planned_bytes_ += b;
  }
  for (size_t e = 0; e < home.size(); ++e)
    if (home[e] >= 0) (*entry)[e] = blocks[home[e]].View(shapes[e], types[e]);
}

}  // namespace executor
}  // namespace weft
