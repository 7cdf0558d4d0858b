#include "core/op/input_versions.h"

namespace weft {
namespace op {

namespace {
thread_local const std::vector<InputVersion>* current = nullptr;
}  // namespace

const std::vector<InputVersion>& CallInputVersions() {
  static const std::vector<InputVersion> none;
  return current ? *current : none;
}

InputVersionScope::InputVersionScope(const std::vector<InputVersion>* versions) : saved_(current) {
  current = versions;
}

InputVersionScope::~InputVersionScope() { current = saved_; }

}  // namespace op
}  // namespace weft
