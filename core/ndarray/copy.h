// Moving and converting element data between blobs, on any pair of devices.
#pragma once

#include "core/engine/engine.h"
#include "core/base/tblob.h"

namespace weft {

// Host-to-host copy with dtype conversion (elementwise cast when the dtypes differ).
void CopyBlobHost(const TBlob& from, const TBlob& to);

#ifdef WEFT_USE_CUDA
// Any copy with a GPU side, on the run context's stream; defined in copy_cuda.cu.
void CopyBlobCUDA(const TBlob& from, const TBlob& to, engine::RunContext rctx);
#endif

}  // namespace weft
