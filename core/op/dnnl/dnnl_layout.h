// The blocked activation layout oneDNN's convolution kernels run on with this CPU, which
// the oneDNN regions (dnnl_region.cc, dnnl_train_region.cc) keep values in between
// primitives, and what else both regions build their primitives with. Include only where
// WEFT_USE_ONEDNN is defined.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>
#include <string>

#include "core/base/shape.h"

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

// The CPU engine the regions' primitives are created on and run with.
inline dnnl::engine& RegionEngine() {
  static dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

// Whether oneDNN chose its reference implementation ("ref:any"): a loop nest dozens to
// thousands of times slower than its jit kernels. It gets it when a layout the regions force
// is one no optimised kernel takes for that problem (a 3x3 convolution of dilation 6 on
// blocked data: the jit kernels refuse dilations beyond their padding rules), so a region
// that sees it retries with the layouts left to oneDNN (which then picks its gemm kernel).
inline bool DnnlIsReference(const dnnl::primitive_desc_base& pd) {
  const char* name = pd.impl_info_str();
  return name != nullptr && std::string(name).rfind("ref", 0) == 0;
}

// A float32 NCHW array of shape s (4-D), as the graph holds its values.
inline dnnl::memory::desc PlainNchw(const Shape& s) {
  return dnnl::memory::desc({s[0], s[1], s[2], s[3]}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::nchw);
}

}  // namespace op
}  // namespace weft
