// The blocked activation layout oneDNN's convolution kernels run on with this CPU, which
// the oneDNN regions (dnnl_region.cc, dnnl_train_region.cc) keep values in between
// primitives. Include only where WEFT_USE_ONEDNN is defined.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace weft {
namespace op {

// Channels per block: 16 (nChw16c) where oneDNN has its AVX-512 kernels, 8 (nChw8c) on
// AVX2 and older CPUs. Forcing the other block makes oneDNN fall back to its reference
// convolution (ref:any), dozens of times slower: on an AVX2 machine ResNet-50's inference
// regions ran 49 of their 53 convolutions that way while nChw16c was forced everywhere.
// Follows DNNL_MAX_CPU_ISA, as oneDNN's own choice does.
inline int DnnlChannelBlock() {
  static const int block = [] {
    auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    auto core = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
    return (isa & core) == core ? 16 : 8;
  }();
  return block;
}

inline dnnl::memory::format_tag DnnlBlockedTag() {
  return DnnlChannelBlock() == 16 ? dnnl::memory::format_tag::nChw16c : dnnl::memory::format_tag::nChw8c;
}

}  // namespace op
}  // namespace weft
