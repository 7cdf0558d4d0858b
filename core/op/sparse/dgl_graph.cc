// MXNet's graph operators for DGL on csr adjacency matrices whose values are int64 edge ids:
// _contrib_dgl_adjacency, _contrib_dgl_subgraph, _contrib_dgl_csr_neighbor_uniform_sample,
// _contrib_dgl_csr_neighbor_non_uniform_sample and _contrib_dgl_graph_compact. They take csr
// graphs only (the sparse kernel, asked on every call, refuses anything else by name) and
// every vertex id they read is bounds-checked.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <unordered_map>
#include <unordered_set>

#include "core/base/error.h"
#include "core/engine/engine.h"
#include "core/ndarray/sparse.h"
#include "core/op/op_util.h"
#include "core/op/sparse/sparse_compute.h"
#include "core/resource/resource.h"

namespace weft {
namespace op {

struct DGLSubgraphParam {
  int num_args = 2;
  bool return_mapping = false;
};

WEFT_PARAM_SCHEMA(DGLSubgraphParam, s) {
  s.Field("num_args", &DGLSubgraphParam::num_args).Min(2).Describe("Number of inputs: the graph and the vertex "
                                                                    "arrays.");
  s.Field("return_mapping", &DGLSubgraphParam::return_mapping)
      .Describe("Also return, per subgraph, a csr matrix of the same edges holding the parent graph's edge ids.");
}

struct DGLCompactParam {
  int num_args = 2;
  bool return_mapping = false;
  Shape graph_sizes = Shape::Scalar();
};

WEFT_PARAM_SCHEMA(DGLCompactParam, s) {
  s.Field("num_args", &DGLCompactParam::num_args).Min(2).Describe("Number of inputs: the graphs, then as many "
                                                                   "vertex arrays.");
  s.Field("return_mapping", &DGLCompactParam::return_mapping)
      .Describe("Also return, per graph, a csr matrix of the same edges holding the input's edge ids.");
  s.Field("graph_sizes", &DGLCompactParam::graph_sizes).Describe("The number of vertices of each graph.");
}

struct NeighborSampleParam {
  int num_args = 2;
  int64_t num_hops = 1;
  int64_t num_neighbor = 2;
  int64_t max_num_vertices = 100;
};

WEFT_PARAM_SCHEMA(NeighborSampleParam, s) {
  s.Field("num_args", &NeighborSampleParam::num_args).Min(2).Describe("Number of input NDArrays.");
  s.Field("num_hops", &NeighborSampleParam::num_hops).Default(1).Min(0).Describe("Number of hops.");
  s.Field("num_neighbor", &NeighborSampleParam::num_neighbor).Default(2).Min(0).Describe(
      "Number of neighbors sampled per vertex.");
  s.Field("max_num_vertices", &NeighborSampleParam::max_num_vertices).Default(100).Min(1).Describe(
      "Most vertices in a sampled subgraph.");
}

namespace {

using sparse::HostInt64;

// The parts of a csr graph with int64 edge ids, read once.
struct Graph {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> indptr, idx, eid;
};

Graph ReadGraph(const NodeAttrs& attrs, const NDArray& g, size_t i) {
  WEFT_CHECK(g.stype() == StorageType::kCSR, kType, "Operator '", attrs.op->name, "': input ", i,
             " must be a csr graph, got storage type ", StorageTypeName(g.stype()));
  WEFT_CHECK(g.dtype() == DType::kInt64, kType, "Operator '", attrs.op->name, "': the graph's values are edge ids "
             "and must be int64, got ", DTypeName(g.dtype()));
  Graph r;
  r.rows = g.shape()[0];
  r.cols = g.shape()[1];
  r.indptr = HostInt64(g.aux(0));
  r.idx = HostInt64(g.aux(1));
  r.eid = HostInt64(g.sparse_values());
  return r;
}

std::vector<int64_t> ReadIds(const NodeAttrs& attrs, const NDArray& a, size_t i) {
  WEFT_CHECK(!a.is_sparse() && a.dtype() == DType::kInt64, kType, "Operator '", attrs.op->name, "': input ", i,
             " (vertex ids) must be a dense int64 array, got ", StorageTypeName(a.stype()), " ", DTypeName(a.dtype()));
  return HostInt64(a);
}

void CheckVertex(const NodeAttrs& attrs, int64_t v, int64_t n, size_t input, size_t at) {
  WEFT_CHECK(v >= 0 && v < n, kIndex, "Operator '", attrs.op->name, "': vertex id ", v, " at position ", at,
             " of input ", input, " is out of range [0, ", n, ")");
}

NDArray Int64Values(const std::vector<int64_t>& v) { return sparse::Int64Array(v, Context::CPU()); }

// Dense kernels: these operators have none (MXNet's neither); a graph bound to dense
// arrays reaches this.
void NeedsCsr(const NodeAttrs& attrs, const OpContext&, const std::vector<TBlob>&, const std::vector<OpReq>&,
              const std::vector<TBlob>&) {
  Throw(ErrorKind::kUnsupported, "Operator '", attrs.op->name, "' works on csr graphs only (imperatively), not on "
        "dense arrays");
}

void Need(const NodeAttrs& attrs, const std::vector<Shape>& in, size_t i, int ndim, const char* what) {
  if (in[i].known_ndim() && in[i].ndim() != ndim)
    Throw(ErrorKind::kShape, "Operator '", attrs.op->name, "': expected ", what, " (input ", i, ") of ", ndim,
          " dimension", ndim == 1 ? "" : "s", ", got shape ", in[i].ToString());
}

// ---------------------------------------------------------------- adjacency

bool AdjacencyShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Need(attrs, *in, 0, 2, "a graph");
  return SameShape(attrs, in, out);
}

bool AdjacencyType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  AssignType(attrs, in, 0, DType::kInt64, "input");
  AssignType(attrs, out, 0, DType::kFloat32, "output");
  return true;
}

bool AdjacencySparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                     std::vector<NDArray>* out) {
  Graph g = ReadGraph(attrs, in[0], 0);
  std::vector<float> ones(g.idx.size(), 1.0f);
  NDArray vals(Shape{static_cast<int64_t>(ones.size())}, Context::CPU(), DType::kFloat32);
  if (!ones.empty()) vals.SyncCopyFromCPU(ones.data(), ones.size() * sizeof(float));
  *out = {sparse::Csr(in[0].shape(), vals, g.indptr, g.idx)};
  return true;
}

// ---------------------------------------------------------------- subgraph

int SubgraphCount(const NodeAttrs& attrs) { return attrs.Params<DGLSubgraphParam>().num_args - 1; }

bool SubgraphShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  Need(attrs, *in, 0, 2, "a graph");
  const int n = SubgraphCount(attrs);
  for (int i = 0; i < n; ++i) {
    Need(attrs, *in, i + 1, 1, "vertex ids");
    if (!(*in)[i + 1].is_known()) return false;
    Shape s{(*in)[i + 1][0], (*in)[i + 1][0]};
    AssignShape(attrs, out, i, s, "output");
    if (attrs.Params<DGLSubgraphParam>().return_mapping) AssignShape(attrs, out, i + n, s, "output");
  }
  return (*in)[0].is_known();
}

bool SubgraphType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  for (size_t i = 0; i < in->size(); ++i) AssignType(attrs, in, i, DType::kInt64, "input");
  for (size_t i = 0; i < out->size(); ++i) AssignType(attrs, out, i, DType::kInt64, "output");
  return true;
}

bool SubgraphSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                    std::vector<NDArray>* out) {
  Graph g = ReadGraph(attrs, in[0], 0);
  const int n = SubgraphCount(attrs);
  const bool mapping = attrs.Params<DGLSubgraphParam>().return_mapping;
  out->assign(mapping ? 2 * n : n, NDArray());
  for (int s = 0; s < n; ++s) {
    std::vector<int64_t> v = ReadIds(attrs, in[s + 1], s + 1);
    for (size_t k = 0; k < v.size(); ++k) {
      CheckVertex(attrs, v[k], g.rows, s + 1, k);
      WEFT_CHECK(v[k] < g.cols, kIndex, "Operator '", attrs.op->name, "': vertex id ", v[k], " is not a column of "
                 "the ", g.rows, " x ", g.cols, " graph");
      WEFT_CHECK(k == 0 || v[k] > v[k - 1], kValue, "Operator '", attrs.op->name, "': the vertex ids of input ",
                 s + 1, " must be sorted and distinct, got ", v[k - 1], " then ", v[k]);
    }
    std::unordered_map<int64_t, int64_t> new_id;
    for (size_t k = 0; k < v.size(); ++k) new_id[v[k]] = static_cast<int64_t>(k);
    std::vector<int64_t> indptr{0}, idx, parent_eid;
    for (int64_t old : v) {
      for (int64_t j = g.indptr[old]; j < g.indptr[old + 1]; ++j) {
        auto it = new_id.find(g.idx[j]);
        if (it == new_id.end()) continue;
        idx.push_back(it->second);
        parent_eid.push_back(g.eid[j]);
      }
      indptr.push_back(static_cast<int64_t>(idx.size()));
    }
    std::vector<int64_t> eid(idx.size());
    for (size_t k = 0; k < eid.size(); ++k) eid[k] = static_cast<int64_t>(k);
    const int64_t m = static_cast<int64_t>(v.size());
    (*out)[s] = sparse::Csr(Shape{m, m}, Int64Values(eid), indptr, idx);
    if (mapping) (*out)[s + n] = sparse::Csr(Shape{m, m}, Int64Values(parent_eid), indptr, idx);
  }
  return true;
}

// ---------------------------------------------------------------- neighbor sampling

// A CPU random stream: the seed and a fresh counter position of the context's generator
// (mx.random.seed makes the samples reproducible).
std::mt19937_64 SamplerFor() {
  Resource r = ResourceManager::Get()->Request(Context::CPU(), ResourceRequest{ResourceType::kRandom});
  uint64_t seed = 0, offset = 0;
  engine::Engine* e = engine::Engine::Get();
  e->PushSync([&](engine::RunContext) {
    seed = r.random->seed;
    offset = r.random->Reserve(1);
  }, Context::CPU(), {}, {r.var});
  e->WaitForVar(r.var);
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(offset),
                    static_cast<uint32_t>(offset >> 32)};
  return std::mt19937_64(seq);
}

// Picks at most k of the positions [0, n) of a row, without replacement: uniformly, or with
// the weights given (non-negative; positions of weight 0 only when nothing else is left).
std::vector<int64_t> PickNeighbors(int64_t n, int64_t k, const std::vector<double>* weights, std::mt19937_64* rng) {
  std::vector<int64_t> pos(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) pos[i] = i;
  if (n <= k) return pos;
  if (weights == nullptr) {
    for (int64_t i = 0; i < k; ++i) {
      std::uniform_int_distribution<int64_t> d(i, n - 1);
      std::swap(pos[i], pos[d(*rng)]);
    }
  } else {
    // Weighted sampling without replacement by exponential keys: keep the k largest
    // u^(1/w) (Efraimidis-Spirakis), with zero weights last.
    std::uniform_real_distribution<double> u(0.0, 1.0);
    std::vector<std::pair<double, int64_t>> keys;
    for (int64_t i = 0; i < n; ++i) {
      double w = (*weights)[i];
      double key = w > 0 ? std::log(std::max(u(*rng), 1e-300)) / w : -INFINITY;
      keys.emplace_back(key, i);
    }
    std::partial_sort(keys.begin(), keys.begin() + k, keys.end(), [](const auto& a, const auto& b) {
      return a.first > b.first;
    });
    for (int64_t i = 0; i < k; ++i) pos[i] = keys[i].second;
  }
  pos.resize(static_cast<size_t>(k));
  std::sort(pos.begin(), pos.end());
  return pos;
}

int SampleCount(const NodeAttrs& attrs, bool weighted) {
  return attrs.Params<NeighborSampleParam>().num_args - (weighted ? 2 : 1);
}

template <bool kWeighted>
bool SampleShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<NeighborSampleParam>();
  const int n = SampleCount(attrs, kWeighted);
  WEFT_CHECK(n >= 1, kValue, "Operator '", attrs.op->name, "': expected at least one seed array (num_args = ",
             p.num_args, ")");
  Need(attrs, *in, 0, 2, "a graph");
  const Shape& g = (*in)[0];
  if (g.is_known())
    WEFT_CHECK(g[0] == g[1], kShape, "Operator '", attrs.op->name, "': the graph must be square, got ",
               g.ToString());
  const int first_seed = kWeighted ? 2 : 1;
  if (kWeighted) {
    Need(attrs, *in, 1, 1, "the probabilities");
    if (g.is_known()) AssignShape(attrs, in, 1, Shape{g[0]}, "input");
  }
  for (int i = 0; i < n; ++i) Need(attrs, *in, first_seed + i, 1, "seed vertex ids");
  const int64_t m = p.max_num_vertices;
  for (int i = 0; i < n; ++i) {
    AssignShape(attrs, out, i, Shape{m + 1}, "output");
    if (g.is_known()) AssignShape(attrs, out, i + n, Shape{m, g[1]}, "output");
    AssignShape(attrs, out, i + 2 * n, Shape{m}, "output");
    if (kWeighted) AssignShape(attrs, out, i + 3 * n, Shape{m}, "output");
  }
  return g.is_known();
}

template <bool kWeighted>
bool SampleType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  const int n = SampleCount(attrs, kWeighted);
  AssignType(attrs, in, 0, DType::kInt64, "input");
  if (kWeighted) AssignType(attrs, in, 1, DType::kFloat32, "input");
  for (size_t i = kWeighted ? 2 : 1; i < in->size(); ++i) AssignType(attrs, in, i, DType::kInt64, "input");
  for (int i = 0; i < n; ++i) {
    AssignType(attrs, out, i, DType::kInt64, "output");
    AssignType(attrs, out, i + n, DType::kInt64, "output");
    // Non-uniform: the third set is the sampled vertices' probabilities, the fourth the layers.
    AssignType(attrs, out, i + 2 * n, kWeighted ? DType::kFloat32 : DType::kInt64, "output");
    if (kWeighted) AssignType(attrs, out, i + 3 * n, DType::kInt64, "output");
  }
  return true;
}

// Breadth-first from the seeds, num_hops deep, each vertex keeping at most num_neighbor of
// its row's neighbors, until max_num_vertices vertices are reached. Outputs per seed array:
// the vertices (sorted; then -1; the count last), the sampled edges as a csr matrix whose
// row i belongs to vertex i (columns: the neighbors' ids, values: the edge ids), and each
// vertex's hop (-1 where unused); non-uniform: also each vertex's probability.
template <bool kWeighted>
bool SampleSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                  std::vector<NDArray>* out) {
  const auto& p = attrs.Params<NeighborSampleParam>();
  Graph g = ReadGraph(attrs, in[0], 0);
  const int n = SampleCount(attrs, kWeighted);
  const int64_t m = p.max_num_vertices;
  std::vector<float> prob;
  if (kWeighted) {
    WEFT_CHECK(!in[1].is_sparse(), kType, "Operator '", attrs.op->name, "': the probabilities must be dense");
    prob.resize(static_cast<size_t>(in[1].Size()));
    in[1].SyncCopyToCPU(prob.data(), prob.size() * sizeof(float));
    for (size_t i = 0; i < prob.size(); ++i)
      WEFT_CHECK(prob[i] >= 0 && std::isfinite(prob[i]), kValue, "Operator '", attrs.op->name,
                 "': probability ", prob[i], " of vertex ", i, " is not a finite non-negative number");
  }
  std::mt19937_64 rng = SamplerFor();
  out->assign(kWeighted ? 4 * n : 3 * n, NDArray());
  for (int s = 0; s < n; ++s) {
    const size_t input = (kWeighted ? 2 : 1) + s;
    std::vector<int64_t> seeds = ReadIds(attrs, in[input], input);
    WEFT_CHECK(static_cast<int64_t>(seeds.size()) <= m, kValue, "Operator '", attrs.op->name, "': ", seeds.size(),
               " seeds in input ", input, " are more than max_num_vertices = ", m);
    std::unordered_map<int64_t, int64_t> hop;  // vertex -> hop it was reached at
    std::vector<int64_t> queue;
    for (size_t k = 0; k < seeds.size(); ++k) {
      CheckVertex(attrs, seeds[k], g.rows, input, k);
      if (hop.emplace(seeds[k], 0).second) queue.push_back(seeds[k]);
    }
    std::unordered_map<int64_t, std::pair<std::vector<int64_t>, std::vector<int64_t>>> edges;  // cols, eids
    for (size_t q = 0; q < queue.size() && static_cast<int64_t>(hop.size()) < m; ++q) {
      const int64_t v = queue[q];
      if (hop[v] >= p.num_hops) continue;
      const int64_t b = g.indptr[v], len = g.indptr[v + 1] - b;
      std::vector<double> w;
      if (kWeighted)
        for (int64_t j = 0; j < len; ++j) w.push_back(prob[g.idx[b + j]]);
      auto& e = edges[v];
      for (int64_t j : PickNeighbors(len, p.num_neighbor, kWeighted ? &w : nullptr, &rng)) {
        e.first.push_back(g.idx[b + j]);
        e.second.push_back(g.eid[b + j]);
      }
      for (int64_t u : e.first) {
        if (static_cast<int64_t>(hop.size()) >= m) break;
        if (hop.emplace(u, hop[v] + 1).second) queue.push_back(u);
      }
    }
    std::vector<int64_t> verts;
    for (const auto& [v, h] : hop) verts.push_back(v);
    std::sort(verts.begin(), verts.end());
    std::vector<int64_t> ids(static_cast<size_t>(m + 1), -1), layer(static_cast<size_t>(m), -1);
    std::vector<float> vprob(static_cast<size_t>(m), 0.0f);
    std::vector<int64_t> indptr{0}, idx, eid;
    for (size_t i = 0; i < verts.size(); ++i) {
      ids[i] = verts[i];
      layer[i] = hop[verts[i]];
      if (kWeighted) vprob[i] = prob[verts[i]];
      auto it = edges.find(verts[i]);
      if (it != edges.end()) {
        idx.insert(idx.end(), it->second.first.begin(), it->second.first.end());
        eid.insert(eid.end(), it->second.second.begin(), it->second.second.end());
      }
      indptr.push_back(static_cast<int64_t>(idx.size()));
    }
    while (static_cast<int64_t>(indptr.size()) < m + 1) indptr.push_back(static_cast<int64_t>(idx.size()));
    ids[m] = static_cast<int64_t>(verts.size());
    (*out)[s] = Int64Values(ids);
    (*out)[s + n] = sparse::Csr(Shape{m, g.cols}, Int64Values(eid), indptr, idx);
    if (kWeighted) {
      NDArray pv(Shape{m}, Context::CPU(), DType::kFloat32);
      pv.SyncCopyFromCPU(vprob.data(), vprob.size() * sizeof(float));
      (*out)[s + 2 * n] = pv;
      (*out)[s + 3 * n] = Int64Values(layer);
    } else {
      (*out)[s + 2 * n] = Int64Values(layer);
    }
  }
  return true;
}

// ---------------------------------------------------------------- graph compact

int CompactCount(const NodeAttrs& attrs) { return attrs.Params<DGLCompactParam>().num_args / 2; }

bool CompactShape(const NodeAttrs& attrs, std::vector<Shape>* in, std::vector<Shape>* out) {
  const auto& p = attrs.Params<DGLCompactParam>();
  const int n = CompactCount(attrs);
  WEFT_CHECK(p.num_args % 2 == 0, kValue, "Operator '", attrs.op->name, "': num_args must be even (graphs, then as "
             "many vertex arrays), got ", p.num_args);
  WEFT_CHECK(p.graph_sizes.ndim() == n, kValue, "Operator '", attrs.op->name, "': expected ", n,
             " graph_sizes, got ", p.graph_sizes.ToString());
  for (int i = 0; i < n; ++i) {
    const int64_t size = p.graph_sizes[i];
    WEFT_CHECK(size >= 0, kValue, "Operator '", attrs.op->name, "': graph size ", size, " is negative");
    Need(attrs, *in, i, 2, "a graph");
    Need(attrs, *in, i + n, 1, "vertex ids");
    const Shape& g = (*in)[i];
    if (g.is_known())
      WEFT_CHECK(g[0] >= size && g[1] >= size, kShape, "Operator '", attrs.op->name, "': graph ", i, " of shape ",
                 g.ToString(), " is smaller than its size ", size);
    AssignShape(attrs, out, i, Shape{size, size}, "output");
    if (p.return_mapping) AssignShape(attrs, out, i + n, Shape{size, size}, "output");
  }
  for (const auto& s : *in)
    if (!s.is_known()) return false;
  return true;
}

bool CompactType(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  for (size_t i = 0; i < in->size(); ++i) AssignType(attrs, in, i, DType::kInt64, "input");
  for (size_t i = 0; i < out->size(); ++i) AssignType(attrs, out, i, DType::kInt64, "output");
  return true;
}

bool CompactSparse(const NodeAttrs& attrs, const std::vector<NDArray>& in, const std::vector<OpReq>&,
                   std::vector<NDArray>* out) {
  const auto& p = attrs.Params<DGLCompactParam>();
  const int n = CompactCount(attrs);
  out->assign(p.return_mapping ? 2 * n : n, NDArray());
  for (int s = 0; s < n; ++s) {
    Graph g = ReadGraph(attrs, in[s], s);
    std::vector<int64_t> v = ReadIds(attrs, in[s + n], s + n);
    const int64_t size = p.graph_sizes[s];
    WEFT_CHECK(static_cast<int64_t>(v.size()) == g.rows + 1 && v.back() == size, kValue, "Operator '",
               attrs.op->name, "': vertex array ", s, " must be a sampler's output for graph ", s, " (", g.rows + 1,
               " entries ending with the vertex count ", size, ")");
    WEFT_CHECK(g.indptr[size] == static_cast<int64_t>(g.idx.size()), kValue, "Operator '", attrs.op->name,
               "': graph ", s, " has edges in rows at or after its size ", size);
    std::unordered_map<int64_t, int64_t> new_id;
    for (int64_t i = 0; i < size; ++i) {
      WEFT_CHECK(v[i] >= 0, kValue, "Operator '", attrs.op->name, "': vertex ", i, " of graph ", s, " is unset (",
                 v[i], ")");
      new_id[v[i]] = i;
    }
    std::vector<int64_t> indptr(g.indptr.begin(), g.indptr.begin() + size + 1), idx, eid;
    for (size_t j = 0; j < g.idx.size(); ++j) {
      auto it = new_id.find(g.idx[j]);
      WEFT_CHECK(it != new_id.end(), kValue, "Operator '", attrs.op->name, "': edge ", j, " of graph ", s,
                 " reaches vertex ", g.idx[j], ", which is not among its vertices");
      idx.push_back(it->second);
      eid.push_back(static_cast<int64_t>(j));
    }
    // Each row's columns, renumbered, in increasing order (csr's rule), with their values.
    std::vector<int64_t> orig(g.eid);
    for (int64_t r = 0; r < size; ++r) {
      std::vector<std::pair<int64_t, int64_t>> row;
      for (int64_t j = indptr[r]; j < indptr[r + 1]; ++j) row.emplace_back(idx[j], j);
      std::sort(row.begin(), row.end());
      for (size_t k = 0; k + 1 < row.size(); ++k)
        WEFT_CHECK(row[k].first != row[k + 1].first, kValue, "Operator '", attrs.op->name, "': row ", r,
                   " of graph ", s, " holds vertex ", v[row[k].first], " twice");
      std::vector<int64_t> e2, o2;
      for (const auto& [c, j] : row) {
        e2.push_back(eid[j]);
        o2.push_back(g.eid[j]);
      }
      for (size_t k = 0; k < row.size(); ++k) {
        idx[indptr[r] + k] = row[k].first;
        eid[indptr[r] + k] = e2[k];
        orig[indptr[r] + k] = o2[k];
      }
    }
    (*out)[s] = sparse::Csr(Shape{size, size}, Int64Values(eid), indptr, idx);
    if (p.return_mapping) (*out)[s + n] = sparse::Csr(Shape{size, size}, Int64Values(orig), indptr, idx);
  }
  return true;
}

int TwiceIf(bool twice, int n) { return twice ? 2 * n : n; }

}  // namespace

WEFT_REGISTER_OP(_contrib_dgl_adjacency)
    .Describe("The adjacency matrix of a csr graph whose values are edge ids: the same csr structure with float32 "
              "ones as values.")
    .SetNumInputs(1)
    .AddArgument("data", "NDArray-or-Symbol", "Input ndarray")
    .SetAttr<FInferShape>("FInferShape", AdjacencyShape)
    .SetAttr<FInferType>("FInferType", AdjacencyType)
    .SetAttr<FCompute>("FCompute<cpu>", NeedsCsr)
    .SetAttr<FComputeSparse>("FComputeSparse", AdjacencySparse)
    .SetAttr<bool>("TSparseOnDense", true);

WEFT_REGISTER_OP(_contrib_dgl_subgraph)
    .Describe("The subgraphs of a csr graph induced by each array of sorted, distinct vertex ids: csr matrices whose "
              "row and column i are the array's vertex i and whose values are new edge ids 0, 1, ... in row order; "
              "with return_mapping, also the same edges with the parent graph's edge ids.")
    .SetNumInputs([](const NodeAttrs& a) { return a.Params<DGLSubgraphParam>().num_args; })
    .SetNumOutputs([](const NodeAttrs& a) {
      return TwiceIf(a.Params<DGLSubgraphParam>().return_mapping, SubgraphCount(a));
    })
    .SetKeyVarNumArgs("num_args")
    .AddArgument("graph", "NDArray-or-Symbol", "Input graph where we sample vertices.")
    .AddArgument("data", "NDArray-or-Symbol[]", "The vertex id arrays, one per subgraph.")
    .SetParams<DGLSubgraphParam>()
    .SetAttr<FInferShape>("FInferShape", SubgraphShape)
    .SetAttr<FInferType>("FInferType", SubgraphType)
    .SetAttr<FCompute>("FCompute<cpu>", NeedsCsr)
    .SetAttr<FComputeSparse>("FComputeSparse", SubgraphSparse)
    .SetAttr<bool>("TSparseOnDense", true);

WEFT_REGISTER_OP(_contrib_dgl_csr_neighbor_uniform_sample)
    .Describe("Samples subgraphs of a square csr graph (values: edge ids) around each seed array, breadth-first for "
              "num_hops hops, at most num_neighbor neighbors per vertex drawn uniformly, at most max_num_vertices "
              "vertices. Per seed array: the vertices (max_num_vertices + 1, sorted, -1 where unused, the count "
              "last), the sampled edges (csr, row i for vertex i, original column ids and edge ids), and each "
              "vertex's hop (-1 where unused).")
    .SetNumInputs([](const NodeAttrs& a) { return a.Params<NeighborSampleParam>().num_args; })
    .SetNumOutputs([](const NodeAttrs& a) { return 3 * SampleCount(a, false); })
    .SetKeyVarNumArgs("num_args")
    .AddArgument("csr_matrix", "NDArray-or-Symbol", "csr matrix")
    .AddArgument("seed_arrays", "NDArray-or-Symbol[]", "seed vertices")
    .SetParams<NeighborSampleParam>()
    .SetAttr<FInferShape>("FInferShape", SampleShape<false>)
    .SetAttr<FInferType>("FInferType", SampleType<false>)
    .SetAttr<FCompute>("FCompute<cpu>", NeedsCsr)
    .SetAttr<FComputeSparse>("FComputeSparse", SampleSparse<false>)
    .SetAttr<bool>("TSparseOnDense", true);

WEFT_REGISTER_OP(_contrib_dgl_csr_neighbor_non_uniform_sample)
    .Describe("As _contrib_dgl_csr_neighbor_uniform_sample, with neighbors drawn without replacement in proportion "
              "to the probability of each vertex (a float32 vector, one per vertex); the outputs add each sampled "
              "vertex's probability, before the hops.")
    .SetNumInputs([](const NodeAttrs& a) { return a.Params<NeighborSampleParam>().num_args; })
    .SetNumOutputs([](const NodeAttrs& a) { return 4 * SampleCount(a, true); })
    .SetKeyVarNumArgs("num_args")
    .AddArgument("csr_matrix", "NDArray-or-Symbol", "csr matrix")
    .AddArgument("probability", "NDArray-or-Symbol", "probability vector")
    .AddArgument("seed_arrays", "NDArray-or-Symbol[]", "seed vertices")
    .SetParams<NeighborSampleParam>()
    .SetAttr<FInferShape>("FInferShape", SampleShape<true>)
    .SetAttr<FInferType>("FInferType", SampleType<true>)
    .SetAttr<FCompute>("FCompute<cpu>", NeedsCsr)
    .SetAttr<FComputeSparse>("FComputeSparse", SampleSparse<true>)
    .SetAttr<bool>("TSparseOnDense", true);

WEFT_REGISTER_OP(_contrib_dgl_graph_compact)
    .Describe("Compacts the csr graphs a neighbor sampler made: graph i keeps its first graph_sizes[i] rows and its "
              "columns are renumbered by the position of their vertex id in vertex array i (the sampler's vertex "
              "output); values are new edge ids. With return_mapping, also the same edges with the input's edge "
              "ids.")
    .SetNumInputs([](const NodeAttrs& a) { return a.Params<DGLCompactParam>().num_args; })
    .SetNumOutputs([](const NodeAttrs& a) {
      return TwiceIf(a.Params<DGLCompactParam>().return_mapping, CompactCount(a));
    })
    .SetKeyVarNumArgs("num_args")
    .AddArgument("graph_data", "NDArray-or-Symbol[]", "Input graphs and input vertex Ids.")
    .SetParams<DGLCompactParam>()
    .SetAttr<FInferShape>("FInferShape", CompactShape)
    .SetAttr<FInferType>("FInferType", CompactType)
    .SetAttr<FCompute>("FCompute<cpu>", NeedsCsr)
    .SetAttr<FComputeSparse>("FComputeSparse", CompactSparse)
    .SetAttr<bool>("TSparseOnDense", true);

}  // namespace op
}  // namespace weft
