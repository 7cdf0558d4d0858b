// cuDNN convolutions called directly on a GPU (core/op/cuda/cudnn_conv.h): a problem builds
// its plan once per thread and later calls reuse it, another dtype or tuning mode builds
// another, and the result matches the CPU operator. Skips without a GPU; compiled only
// with cuDNN.
#ifdef WEFT_USE_CUDNN

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/op/cuda/cudnn_conv.h"
#include "core/resource/resource.h"
#include "op_test_util.h"

namespace weft {
namespace {

using test::ExpectAllNear;
using test::RandomArray;
using test::ToVector;

#define REQUIRE_GPU() \
  if (NumGPUs() == 0) GTEST_SKIP() << "no GPU is visible"

// WEFT_CUDNN_ALLOW_TF32=0 for the scope, so float32 compares tightly.
struct NoTf32 {
  NoTf32() { setenv("WEFT_CUDNN_ALLOW_TF32", "0", 1); }
  ~NoTf32() { unsetenv("WEFT_CUDNN_ALLOW_TF32"); }
};

TEST(CudaConv, PlansAreBuiltOncePerProblemAndMatchTheCpu) {
  REQUIRE_GPU();
  NoTf32 no_tf32;
  Context gpu = Context::GPU(0);
  // An odd geometry (3 -> 5 channels, 7x7, pad 1) that no other test of this thread uses.
  op::ConvGeom g;
  g.nd = 2;
  g.n = 2;
  g.c = 3;
  g.f = 5;
  g.in[1] = g.in[2] = g.out[1] = g.out[2] = 7;
  g.k[1] = g.k[2] = 3;
  g.pl[1] = g.pl[2] = 1;
  NDArray x = RandomArray(Shape({2, 3, 7, 7}), DType::kFloat32, -1, 1, 11);
  NDArray w = RandomArray(Shape({5, 3, 3, 3}), DType::kFloat32, -1, 1, 12);
  KwArgs params = {{"kernel", "(3, 3)"}, {"pad", "(1, 1)"}, {"num_filter", "5"}, {"no_bias", "True"}};
  std::vector<double> want = ToVector(test::Run1("Convolution", {x, w}, params));

  NDArray xg = x.Copy(gpu), wg = w.Copy(gpu), yg(Shape({2, 5, 7, 7}), gpu, DType::kFloat32);
  xg.WaitToRead();
  wg.WaitToRead();
  yg.WaitToWrite();
  OpContext ctx;
  ctx.run_ctx.ctx = gpu;
  ctx.requested.push_back(ResourceManager::Get()->Request(gpu, ResourceRequest{ResourceType::kTempSpace}));
  auto run = [&](cuda::ConvTune tune) {
    return cuda::CudnnConvolution("Convolution", ctx, cuda::ConvPass::kForward, g, DType::kFloat32, xg.data().dptr,
                                  wg.data().dptr, yg.data().dptr, OpReq::kWriteTo, tune, int64_t(1) << 30);
  };
  size_t before = cuda::CudnnConvPlanCount();
  ASSERT_TRUE(run(cuda::ConvTune::kHeuristic));
  EXPECT_EQ(cuda::CudnnConvPlanCount(), before + 1);
  ASSERT_TRUE(run(cuda::ConvTune::kHeuristic));
  EXPECT_EQ(cuda::CudnnConvPlanCount(), before + 1) << "the same problem built a second plan";
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ExpectAllNear(ToVector(yg.Copy(Context::CPU())), want, 1e-4, 1e-4, "heuristic plan");

  ASSERT_TRUE(run(cuda::ConvTune::kFastest));
  EXPECT_EQ(cuda::CudnnConvPlanCount(), before + 2);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ExpectAllNear(ToVector(yg.Copy(Context::CPU())), want, 1e-4, 1e-4, "timed plan");
}

}  // namespace
}  // namespace weft

#endif  // WEFT_USE_CUDNN
