#include "core/op/registry.h"

#include <algorithm>

namespace weft {

OpRegistry* OpRegistry::Get() {
  static OpRegistry* inst = new OpRegistry();
  return inst;
}

Op& OpRegistry::Register(const std::string& name) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto it = by_name_.find(name);
  if (it != by_name_.end()) return *it->second;
  ops_.emplace_back(new Op());
  Op* op = ops_.back().get();
  op->name = name;
  op->index = static_cast<uint32_t>(ops_.size() - 1);
  by_name_[name] = op;
  return *op;
}

OpGroup& OpRegistry::RegisterGroup(const std::string& name) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto& g = groups_[name];
  if (!g) {
    g.reset(new OpGroup());
    g->name = name;
  }
  return *g;
}

void OpRegistry::AddAlias(Op* op, const std::string& alias) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto it = by_name_.find(alias);
  if (it != by_name_.end() && it->second != op)
    Throw(ErrorKind::kInternal, "alias '", alias, "' of operator '", op->name, "' is already taken by '", it->second->name, "'");
  by_name_[alias] = op;
  op->aliases.push_back(alias);
}

Op& Op::AddAlias(const std::string& alias) {
  OpRegistry::Get()->AddAlias(this, alias);
  return *this;
}

Op& Op::Include(const std::string& group) {
  groups_.push_back(group);
  return *this;
}

void OpRegistry::Finalize() {
  // Groups may be registered after the operators that include them (static
  // initialisation order across files is unspecified), so they are applied on first use.
  std::lock_guard<std::recursive_mutex> lock(mu_);
  if (finalized_) return;
  for (auto& op : ops_) {
    for (const auto& g : op->groups_) {
      auto it = groups_.find(g);
      if (it == groups_.end()) Throw(ErrorKind::kInternal, "Operator '", op->name, "' includes unknown group '", g, "'");
      it->second->ApplyTo(*op);
    }
  }
  finalized_ = true;
}

const Op* OpRegistry::Find(const std::string& name) {
  if (!finalized_) Finalize();
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> OpRegistry::ListNames() {
  if (!finalized_) Finalize();
  std::vector<std::string> names;
  for (const auto& op : ops_) names.push_back(op->name);
  std::sort(names.begin(), names.end());
  return names;
}

uint32_t OpRegistry::NumOps() {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  return static_cast<uint32_t>(ops_.size());
}

OpMapBase* OpRegistry::GetOrCreateMap(const std::string& attr, std::type_index type,
                                      const std::function<OpMapBase*()>& make) {
  std::lock_guard<std::recursive_mutex> lock(mu_);
  auto it = maps_.find(attr);
  if (it == maps_.end()) {
    it = maps_.emplace(attr, std::make_pair(type, std::unique_ptr<OpMapBase>(make()))).first;
  } else if (it->second.first != type) {
    Throw(ErrorKind::kInternal, "operator attribute '", attr, "' is used with two different types");
  }
  return it->second.second.get();
}

const Op* Op::Find(const std::string& name) { return OpRegistry::Get()->Find(name); }

const Op* Op::Get(const std::string& name) {
  const Op* op = OpRegistry::Get()->Find(name);
  if (op == nullptr) Throw(ErrorKind::kNotFound, "unknown operator '", name, "'");
  return op;
}

std::vector<std::string> Op::ListNames() { return OpRegistry::Get()->ListNames(); }

NodeAttrs MakeAttrs(const Op* op, KwArgs kwargs) {
  NodeAttrs attrs;
  attrs.op = op;
  attrs.dict = std::move(kwargs);
  // An operator without parameters keeps any attributes it is given, unread, as MXNet 1.9
  // does (scripts pass e.g. axis=1 to broadcast_maximum and expect it to run).
  if (op->attr_parser) op->attr_parser(&attrs);
  return attrs;
}

bool SameTypeEverywhere(const NodeAttrs& attrs, std::vector<DType>* in, std::vector<DType>* out) {
  DType t = DType::kUnknown;
  for (DType d : *in) if (d != DType::kUnknown) { t = d; break; }
  if (t == DType::kUnknown) for (DType d : *out) if (d != DType::kUnknown) { t = d; break; }
  if (t == DType::kUnknown) return false;
  for (size_t i = 0; i < in->size(); ++i) {
    if ((*in)[i] != DType::kUnknown && (*in)[i] != t)
      Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': Incompatible attr in node ", attrs.name, " at ", i,
            "-th input: expected ", DTypeName(t), ", got ", DTypeName((*in)[i]), ": input ", i, " has dtype ",
            DTypeName((*in)[i]), " but expected ", DTypeName(t), " like the other inputs");
    (*in)[i] = t;
  }
  for (auto& d : *out) {
    if (d != DType::kUnknown && d != t)
      Throw(ErrorKind::kType, "Operator '", attrs.op->name, "': Incompatible attr in node ", attrs.name,
            " at 0-th output: expected ", DTypeName(t), ", got ", DTypeName(d), ": output has dtype ", DTypeName(d),
            " but expected ", DTypeName(t));
    d = t;
  }
  return true;
}

}  // namespace weft
