// Helpers shared by the operator tests: arrays from and to vectors, running an operator by
// name, and the numeric gradient check every differentiable operator goes through.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/imperative/imperative.h"
#include "core/ndarray/ndarray.h"

namespace weft {
namespace test {

// An array on the CPU holding `values` converted to `dtype` (values.size() == shape size).
inline NDArray MakeArray(const Shape& shape, const std::vector<double>& values, DType dtype = DType::kFloat64) {
  NDArray a(shape, Context::CPU(), dtype);
  EXPECT_EQ(static_cast<int64_t>(values.size()), shape.Size()) << "MakeArray: value count does not match the shape";
  NDArray src(shape, Context::CPU(), DType::kFloat64);
  src.SyncCopyFromCPU(values.data(), values.size() * sizeof(double));
  CopyFromTo(src, a);
  return a;
}

// Uniform random values in [lo, hi), reproducible from `seed`.
inline std::vector<double> RandomValues(int64_t n, double lo, double hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

inline NDArray RandomArray(const Shape& shape, DType dtype = DType::kFloat64, double lo = -1.0, double hi = 1.0,
                           uint32_t seed = 42) {
  return MakeArray(shape, RandomValues(shape.Size(), lo, hi, seed), dtype);
}

// The array's values as doubles (waits for pending writes).
inline std::vector<double> ToVector(const NDArray& a) {
  NDArray d(a.shape(), Context::CPU(), DType::kFloat64);
  CopyFromTo(a, d);
  std::vector<double> v(a.Size());
  d.SyncCopyToCPU(v.data(), v.size() * sizeof(double));
  return v;
}

// Runs operator `op` (name or alias) and returns all of its outputs.
inline std::vector<NDArray> Run(const std::string& op, const std::vector<NDArray>& inputs, const KwArgs& params = {},
                                bool is_train = false) {
  NodeAttrs attrs = MakeAttrs(Op::Get(op), params);
  std::vector<NDArray> outs;
  Context cpu = Context::CPU();
  imperative::Invoke(attrs, inputs, &outs, &cpu, nullptr, is_train);
  return outs;
}

inline NDArray Run1(const std::string& op, const std::vector<NDArray>& inputs, const KwArgs& params = {}) {
  return Run(op, inputs, params)[0];
}

// |a - b| <= atol + rtol * |b| elementwise, with NaNs equal to NaNs.
inline void ExpectAllNear(const std::vector<double>& actual, const std::vector<double>& expected, double rtol = 1e-5,
                          double atol = 1e-8, const std::string& what = "") {
  ASSERT_EQ(actual.size(), expected.size()) << what << ": sizes differ";
  for (size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected[i]) && std::isnan(actual[i])) continue;
    EXPECT_NEAR(actual[i], expected[i], atol + rtol * std::fabs(expected[i])) << what << ": element " << i;
  }
}

struct GradCheckOptions {
  double eps = 1e-5;
  double rtol = 1e-4;
  double atol = 1e-6;
  // Inputs to check; empty means all. Integer inputs (indices, labels) should be excluded.
  std::vector<int> check_inputs;
  bool is_train = false;
};

// Compares the registered gradient of `op` with central finite differences of
// f(x) = sum_k <head_k, out_k(x)>, for random heads. Inputs should be float64 so that the
// differences are accurate.
inline void CheckNumericGradient(const std::string& op, const KwArgs& params, const std::vector<NDArray>& inputs,
                                 const GradCheckOptions& opt = GradCheckOptions()) {
  NodeAttrs attrs = MakeAttrs(Op::Get(op), params);
  Context cpu = Context::CPU();
  auto forward = [&](const std::vector<NDArray>& in) {
    std::vector<NDArray> outs;
    imperative::Invoke(attrs, in, &outs, &cpu, nullptr, opt.is_train);
    return outs;
  };
  std::vector<NDArray> outputs = forward(inputs);
  std::vector<NDArray> heads;
  std::vector<std::vector<double>> head_values;
  for (size_t k = 0; k < outputs.size(); ++k) {
    head_values.push_back(RandomValues(outputs[k].Size(), -1.0, 1.0, 1000 + static_cast<uint32_t>(k)));
    heads.push_back(MakeArray(outputs[k].shape(), head_values.back(), outputs[k].dtype()));
  }
  auto objective = [&](const std::vector<NDArray>& in) {
    std::vector<NDArray> outs = forward(in);
    double f = 0;
    for (size_t k = 0; k < outs.size(); ++k) {
      std::vector<double> v = ToVector(outs[k]);
      for (size_t j = 0; j < v.size(); ++j) f += v[j] * head_values[k][j];
    }
    return f;
  };
  std::vector<NDArray> grads = imperative::Gradient(attrs, inputs, outputs, heads);
  ASSERT_EQ(grads.size(), inputs.size()) << op << ": one gradient per input expected";

  std::vector<int> which = opt.check_inputs;
  if (which.empty())
    for (size_t i = 0; i < inputs.size(); ++i) which.push_back(static_cast<int>(i));
  for (int i : which) {
    ASSERT_FALSE(grads[i].is_none()) << op << ": no gradient for input " << i;
    ASSERT_EQ(grads[i].shape(), inputs[i].shape()) << op << ": gradient of input " << i << " has the wrong shape";
    std::vector<double> analytic = ToVector(grads[i]);
    std::vector<double> x = ToVector(inputs[i]);
    std::vector<double> numeric(x.size());
    for (size_t j = 0; j < x.size(); ++j) {
      std::vector<NDArray> in = inputs;
      std::vector<double> xp = x, xm = x;
      xp[j] += opt.eps;
      xm[j] -= opt.eps;
      in[i] = MakeArray(inputs[i].shape(), xp, inputs[i].dtype());
      double fp = objective(in);
      in[i] = MakeArray(inputs[i].shape(), xm, inputs[i].dtype());
      double fm = objective(in);
      numeric[j] = (fp - fm) / (2 * opt.eps);
    }
    ExpectAllNear(analytic, numeric, opt.rtol, opt.atol, op + ": gradient of input " + std::to_string(i));
  }
}

// Expects `fn` to throw weft::Error of `kind` whose message contains every fragment.
template <typename Fn>
void ExpectError(Fn fn, ErrorKind kind, const std::vector<std::string>& fragments) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing '" << (fragments.empty() ? "" : fragments[0]) << "'";
  } catch (const Error& e) {
    EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(kind)) << "message: " << e.what();
    for (const auto& f : fragments)
      EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << "'" << f << "' not in: " << e.what();
  }
}

}  // namespace test
}  // namespace weft
