#include "core/ndarray/copy.h"

#include <cstring>

#include "core/base/convert.h"
#include "core/base/error.h"
#include "core/ndarray/ndarray.h"

namespace weft {

namespace {
template <typename SrcT, typename DstT>
void CastLoop(const SrcT* s, DstT* d, int64_t n) {
#pragma omp parallel for if (n > 65536)
  for (int64_t i = 0; i < n; ++i) d[i] = ConvertValue<DstT>(s[i]);
}
}  // namespace

void CopyBlobHost(const TBlob& from, const TBlob& to) {
  int64_t n = from.Size();
  if (from.dtype == to.dtype) {
    std::memcpy(to.dptr, from.dptr, static_cast<size_t>(n) * DTypeSize(from.dtype));
    return;
  }
  WEFT_TYPE_SWITCH(from.dtype, SrcT, {
    WEFT_TYPE_SWITCH(to.dtype, DstT, {
      CastLoop(from.ptr<SrcT>(), to.ptr<DstT>(), n);
    });
  });
}

void CopyBlob(const TBlob& from, const TBlob& to, engine::RunContext rctx) {
  WEFT_CHECK(from.Size() == to.Size(), kShape, "CopyBlob: expected equal sizes, got ", from.shape.ToString(), " and ",
             to.shape.ToString());
  if (from.Size() == 0) return;
  if (from.ctx.is_host() && to.ctx.is_host()) {
    CopyBlobHost(from, to);
    return;
  }
#ifdef WEFT_USE_CUDA
  CopyBlobCUDA(from, to, rctx);
#else
  Throw(ErrorKind::kUnsupported, "cannot copy from ", from.ctx.ToString(), " to ", to.ctx.ToString(),
        ": this build of Weft has no CUDA support");
#endif
}

}  // namespace weft
