// Profiling of custom (front-end) operators, as MXNet's profiler shows them: the time the
// front end's forward or backward takes ("<op_type>::pure_python", "_backward_<op_type>::
// pure_python"), and the operators it calls meanwhile ("<op_type>::<operator>"), all in the
// "Custom Operator" category. Separate from profiler.h, which nearly every file includes.
#pragma once

#include <string>

#include "core/base/context.h"

namespace weft {
namespace profiler {

// Marks the calling thread as running custom operator `op_type`'s callback for the scope's
// lifetime: the operators it pushes are named "<op_type>::<operator>" in the "Custom
// Operator" category.
class CustomOpScope {
 public:
  explicit CustomOpScope(const std::string& op_type);
  ~CustomOpScope();
  CustomOpScope(const CustomOpScope&) = delete;
  CustomOpScope& operator=(const CustomOpScope&) = delete;

 private:
  std::string prev_;
};

// Records the callback named `name` ("MySigmoid::pure_python") that ran from start_ns to
// end_ns, in the "Custom Operator" category, while operators are being profiled.
void RecordCustomOperator(const std::string& name, Context ctx, int64_t start_ns, int64_t end_ns);

}  // namespace profiler
}  // namespace weft
