// Memory planning: every internal value gets a view of a shared storage chunk.
#include <algorithm>
#include <climits>
#include <unordered_map>

#include "core/base/error.h"
#include "core/base/place_by_size.h"
#include "core/executor/executor.h"
#include "core/executor/passes.h"

namespace weft {
namespace executor {

using graph::IndexedGraph;

namespace {

// Offsets are kept at cache-line (and AVX-512 vector) boundaries.
constexpr size_t kAlign = 64;

// Memory that one value, or a chain of values computed in place one from the other,
// occupies from the step that writes it first to the step that reads it last.
struct Storage {
  size_t bytes;
  int start, end;  // steps of the run order, inclusive
  Context ctx;
  size_t offset = 0;  // in the context's arena
  bool once = false;  // holds a constant folded at bind (must outlive any executor sharing it)
};

bool HoldsConstant(const std::vector<Storage>& st, const std::vector<int>& members) {
  return std::any_of(members.begin(), members.end(), [&](int m) { return st[m].once; });
}

}  // namespace

// Gives every operator output that has no array yet a view of a storage chunk. Walking the
// run order, an output takes over an input's storage when the operator allows it in place
// and that input is dead after this step. Each storage then lives from its first write to
// its last read (persistent values, the outputs and gradients copied at the end, to the
// end; a constant folded at bind from the start, as it is written once and read at every
// run), and gets an offset in its context's arena such that storages live at the same
// time do not overlap (PlaceBest). The arena is allocated as chunks, its maximal address
// ranges covered by overlapping storages: values that share memory share a chunk, hence an
// engine variable, so the engine orders them; values in different chunks may still run in
// parallel. With planning off every value gets its own chunk.
void Executor::PlanMemory(const IndexedGraph& g, const std::vector<uint32_t>& order, const std::vector<Shape>& shapes,
                          const std::vector<DType>& types, const std::vector<bool>& persistent,
                          const std::vector<bool>& computed_once, const std::vector<Context>& ctx_of,
                          std::vector<NDArray>* entry) {
  static const auto& inplace_fns = Op::GetAttr<FInplaceOption>("FInplaceOption");
  constexpr int kForever = INT32_MAX;
  std::vector<int> last_use(g.num_entries(), -1);
  for (size_t k = 0; k < order.size(); ++k)
    for (const auto& in : g[order[k]].inputs) last_use[g.entry_id(in.node_id, in.index)] = static_cast<int>(k);
  for (size_t e = 0; e < persistent.size(); ++e)
    if (persistent[e]) last_use[e] = kForever;

  bool plan = Enabled("WEFT_EXEC_PLAN_MEMORY");
  auto bytes_of = [&](uint32_t e) { return static_cast<size_t>(shapes[e].Size()) * DTypeSize(types[e]); };
  std::vector<Storage> st;
  std::vector<int> storage_of(g.num_entries(), -1);
  std::vector<bool> handed(g.num_entries(), false);  // a value whose storage an in-place output took over
  naive_bytes_ = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const int step = static_cast<int>(k);
    uint32_t id = order[k];
    const graph::Node* n = g[id].source;
    std::vector<std::pair<int, int>> inplace;
    if (plan && inplace_fns.Contains(n->op())) inplace = inplace_fns[n->op()](n->attrs);
    std::vector<bool> taken(g[id].inputs.size(), false);
    for (int i = 0; i < n->num_outputs(); ++i) {
      uint32_t e = g.entry_id(id, i);
      if (!(*entry)[e].is_none()) continue;
      naive_bytes_ += bytes_of(e);
      int s = -1;
      for (const auto& io : inplace) {
        if (computed_once[e]) break;
        if (io.second != i || io.first < 0 || static_cast<size_t>(io.first) >= g[id].inputs.size() || taken[io.first])
          continue;
        const auto& in = g[id].inputs[io.first];
        uint32_t ie = g.entry_id(in.node_id, in.index);
        int uses_here = 0;
        for (const auto& other : g[id].inputs) uses_here += g.entry_id(other.node_id, other.index) == ie;
        if (storage_of[ie] >= 0 && !handed[ie] && last_use[ie] == step && uses_here == 1 &&
            bytes_of(ie) == bytes_of(e) && st[storage_of[ie]].ctx == ctx_of[e]) {
          s = storage_of[ie];
          handed[ie] = true;
          taken[io.first] = true;
          break;
        }
      }
      if (s < 0) {
        s = static_cast<int>(st.size());
        // Unplanned, a value's chunk is its own size, so that both counts agree.
        size_t bytes = plan ? (bytes_of(e) + kAlign - 1) / kAlign * kAlign : bytes_of(e);
        st.push_back(Storage{bytes, computed_once[e] ? 0 : step, step, ctx_of[e], 0, computed_once[e]});
      }
      st[s].end = std::max(st[s].end, last_use[e] < 0 ? step : last_use[e]);
      storage_of[e] = s;
    }
  }

  // Chunks: per context, the arena's address ranges covered by overlapping storages.
  std::vector<int> chunk_of(st.size(), -1);
  std::vector<size_t> chunk_start;
  std::vector<NDArray> chunks;
  planned_bytes_ = 0;
  std::vector<bool> borrowed(shared_pool_.size(), false);
  std::vector<NDArray> lendable;
  auto add_chunk = [&](size_t start, size_t end, Context ctx, bool holds_constant) {
    chunk_start.push_back(start);
    auto size = static_cast<int64_t>(std::max<size_t>(end - start, 1));
    // The smallest free chunk of the shared pool that holds this one, if any. A chunk with
    // a folded constant is written once at bind: it neither borrows nor lends memory.
    int best = -1;
    for (size_t p = 0; p < shared_pool_.size() && !holds_constant; ++p) {
      const NDArray& c = shared_pool_[p];
      if (borrowed[p] || c.ctx() != ctx || c.shape().Size() < size) continue;
      if (best < 0 || c.shape().Size() < shared_pool_[best].shape().Size()) best = static_cast<int>(p);
    }
    if (best >= 0) {
      borrowed[best] = true;
      chunks.push_back(shared_pool_[best].Slice(0, size));
    } else {
      chunks.emplace_back(Shape{size}, ctx, DType::kUint8);
    }
    if (!holds_constant) lendable.push_back(chunks.back());
    planned_bytes_ += end - start;
  };
  if (!plan) {
    for (size_t s = 0; s < st.size(); ++s) {
      chunk_of[s] = static_cast<int>(chunks.size());
      add_chunk(0, st[s].bytes, st[s].ctx, st[s].once);
    }
  } else {
    std::vector<Context> contexts;
    for (const Storage& s : st)
      if (std::find(contexts.begin(), contexts.end(), s.ctx) == contexts.end()) contexts.push_back(s.ctx);
    for (const Context& ctx : contexts) {
      std::vector<int> ids;
      for (size_t s = 0; s < st.size(); ++s)
        if (st[s].ctx == ctx) ids.push_back(static_cast<int>(s));
      PlaceBest(&st, ids);
      std::sort(ids.begin(), ids.end(), [&](int a, int b) { return st[a].offset < st[b].offset; });
      size_t start = 0, end = 0;
      bool open = false;
      std::vector<int> members;
      for (int s : ids) {
        if (open && st[s].offset >= end) {
          add_chunk(start, end, ctx, HoldsConstant(st, members));
          for (int m : members) chunk_of[m] = static_cast<int>(chunks.size()) - 1;
          members.clear();
          open = false;
        }
        if (!open) start = end = st[s].offset;
        open = true;
        end = std::max(end, st[s].offset + st[s].bytes);
        members.push_back(s);
      }
      if (open) {
        add_chunk(start, end, ctx, HoldsConstant(st, members));
        for (int m : members) chunk_of[m] = static_cast<int>(chunks.size()) - 1;
      }
    }
  }
  for (size_t e = 0; e < storage_of.size(); ++e) {
    int s = storage_of[e];
    if (s < 0) continue;
    int c = chunk_of[s];
    auto begin = static_cast<int64_t>(st[s].offset - chunk_start[c]);
    (*entry)[e] = chunks[c].Slice(begin, begin + static_cast<int64_t>(bytes_of(e))).View(shapes[e], types[e]);
  }
  lendable_chunks_ = std::move(lendable);
  shared_pool_.clear();
}

}  // namespace executor
}  // namespace weft
