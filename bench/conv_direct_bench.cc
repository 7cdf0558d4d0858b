// oneDNN convolution called directly, the yardstick for Weft's Convolution
// (bench/conv_direct_bench.py runs this program and Weft on the same shapes).
//
// For each shape the primitives are created once, with every tensor in the layout oneDNN
// picks (format_tag::any: nChw16c and blocked weights on this machine), their inputs
// reordered once before timing; only execute() is timed. Four figures per shape:
//   fwd       forward_inference, blocked src/weights/dst (the best oneDNN can do);
//   fwd_plain forward_inference on plain NCHW src/dst: the reorders in and out are timed
//             (weights pre-reordered), i.e. what an operator on plain arrays costs at best;
//   bwd_data  backward data, blocked diff_dst/weights/diff_src;
//   bwd_wei   backward weights, blocked src/diff_dst/diff_weights.
//
// Usage: weft_conv_direct_bench [-t seconds] [-c threads] SPEC...
//   SPEC = N,C,H,W,F,K,S,P: batch, input channels, height, width, output channels,
//   square kernel, stride, padding. Prints one line per SPEC:
//   SPEC fwd_ms fwd_plain_ms bwd_data_ms bwd_wei_ms (milliseconds per call).
// Threads come from OpenMP (OMP_NUM_THREADS), as in Weft's use of the library. With
// -c THREADS the clock is the process's CPU time divided by THREADS instead of the wall
// clock: on a machine shared with other jobs that estimates the unloaded time (it leaves
// out the time the threads were descheduled) where the wall clock only measures the load.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

namespace {

using dnnl::memory;
using Clock = std::chrono::steady_clock;
using tag = memory::format_tag;
using dt = memory::data_type;

struct Spec {
  int64_t n, c, h, w, f, k, s, p;
  int64_t Out(int64_t in) const { return (in + 2 * p - k) / s + 1; }
};

bool ParseSpec(const char* text, Spec* sp) {
  long long v[8];
  if (std::sscanf(text, "%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                  &v[7]) != 8)
    return false;
  *sp = Spec{v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]};
  return sp->n > 0 && sp->c > 0 && sp->h > 0 && sp->w > 0 && sp->f > 0 && sp->k > 0 && sp->s > 0 && sp->p >= 0 &&
         sp->Out(sp->h) > 0 && sp->Out(sp->w) > 0;
}

int g_cpu_threads = 0;  // -c: CPU time divided by this many threads; 0: wall clock

double Now() {
  if (g_cpu_threads <= 0) return std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec)) / g_cpu_threads;
}

// Seconds per call of fn: one warm-up call, then calls until min_s has passed (3 at least).
double Time(const std::function<void()>& fn, double min_s) {
  fn();
  int count = 0;
  double start = Now(), elapsed = 0;
  while (count < 3 || elapsed < min_s) {
    fn();
    ++count;
    elapsed = Now() - start;
  }
  return elapsed / count;
}

// A memory of `md` filled with small values (the timing does not depend on them, but
// denormals or NaNs could).
memory Filled(const memory::desc& md, const dnnl::engine& eng) {
  memory m(md, eng);
  float* p = static_cast<float*>(m.get_data_handle());
  size_t count = md.get_size() / sizeof(float);
  for (size_t i = 0; i < count; ++i) p[i] = 0.01f * static_cast<float>(static_cast<int>(i % 17) - 8);
  return m;
}

struct Result {
  double fwd = 0, fwd_plain = 0, bwd_data = 0, bwd_wei = 0;
};

Result Run(const Spec& sp, double min_s) {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  memory::dims src_d{sp.n, sp.c, sp.h, sp.w}, wei_d{sp.f, sp.c, sp.k, sp.k},
      dst_d{sp.n, sp.f, sp.Out(sp.h), sp.Out(sp.w)};
  memory::dims strides{sp.s, sp.s}, pad{sp.p, sp.p};
  // oneDNN wants dst = (src + pad_l + pad_r - k) / s + 1 exactly; a last window that stops
  // short of the input end is a smaller right padding.
  memory::dims pad_r{(dst_d[2] - 1) * sp.s + sp.k - sp.h - sp.p, (dst_d[3] - 1) * sp.s + sp.k - sp.w - sp.p};
  for (auto& v : pad_r) v = v < 0 ? 0 : v;
  memory::desc any_src(src_d, dt::f32, tag::any), any_wei(wei_d, dt::f32, tag::any), any_dst(dst_d, dt::f32, tag::any);
  memory::desc plain_src(src_d, dt::f32, tag::nchw), plain_wei(wei_d, dt::f32, tag::oihw),
      plain_dst(dst_d, dt::f32, tag::nchw);
  Result r;

  // Forward inference, blocked everything.
  dnnl::convolution_forward::desc fdesc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                        any_src, any_wei, memory::desc(), any_dst, strides, pad, pad_r);
  dnnl::convolution_forward::primitive_desc fpd(fdesc, eng);
  dnnl::convolution_forward fwd(fpd);
  memory src = Filled(fpd.src_desc(), eng), wei = Filled(fpd.weights_desc(), eng), dst(fpd.dst_desc(), eng);
  memory scratch(fpd.scratchpad_desc(), eng);
  r.fwd = Time([&] {
    fwd.execute(strm, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratch}});
    strm.wait();
  }, min_s);

  // The same primitive fed from and written to plain NCHW arrays.
  memory psrc = Filled(plain_src, eng), pdst(plain_dst, eng);
  dnnl::reorder in_re(psrc, src), out_re(dst, pdst);
  bool re_in = fpd.src_desc() != plain_src, re_out = fpd.dst_desc() != plain_dst;
  r.fwd_plain = Time([&] {
    if (re_in) in_re.execute(strm, psrc, src);
    fwd.execute(strm, {{DNNL_ARG_SRC, re_in ? src : psrc}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, re_out ? dst : pdst},
                       {DNNL_ARG_SCRATCHPAD, scratch}});
    if (re_out) out_re.execute(strm, dst, pdst);
    strm.wait();
  }, min_s);

  // Training passes, with the forward_training descriptor as their hint.
  dnnl::convolution_forward::desc tdesc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, any_src,
                                        any_wei, memory::desc(), any_dst, strides, pad, pad_r);
  dnnl::convolution_forward::primitive_desc tpd(tdesc, eng);
  dnnl::convolution_backward_data::desc bddesc(dnnl::algorithm::convolution_direct, any_src, any_wei, any_dst, strides,
                                               pad, pad_r);
  dnnl::convolution_backward_data::primitive_desc bdpd(bddesc, eng, tpd);
  dnnl::convolution_backward_data bd(bdpd);
  memory ddst = Filled(bdpd.diff_dst_desc(), eng), bwei = Filled(bdpd.weights_desc(), eng),
         dsrc(bdpd.diff_src_desc(), eng), bdscratch(bdpd.scratchpad_desc(), eng);
  r.bwd_data = Time([&] {
    bd.execute(strm, {{DNNL_ARG_DIFF_DST, ddst}, {DNNL_ARG_WEIGHTS, bwei}, {DNNL_ARG_DIFF_SRC, dsrc},
                      {DNNL_ARG_SCRATCHPAD, bdscratch}});
    strm.wait();
  }, min_s);

  dnnl::convolution_backward_weights::desc bwdesc(dnnl::algorithm::convolution_direct, any_src, any_wei,
                                                  memory::desc(), any_dst, strides, pad, pad_r);
  dnnl::convolution_backward_weights::primitive_desc bwpd(bwdesc, eng, tpd);
  dnnl::convolution_backward_weights bw(bwpd);
  memory wsrc = Filled(bwpd.src_desc(), eng), wddst = Filled(bwpd.diff_dst_desc(), eng),
         dwei(bwpd.diff_weights_desc(), eng), bwscratch(bwpd.scratchpad_desc(), eng);
  r.bwd_wei = Time([&] {
    bw.execute(strm, {{DNNL_ARG_SRC, wsrc}, {DNNL_ARG_DIFF_DST, wddst}, {DNNL_ARG_DIFF_WEIGHTS, dwei},
                      {DNNL_ARG_SCRATCHPAD, bwscratch}});
    strm.wait();
  }, min_s);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  double min_s = 0.5;
  std::vector<std::pair<std::string, Spec>> specs;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-t") == 0 && i + 1 < argc) {
      min_s = std::atof(argv[++i]);
      continue;
    }
    if (std::strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
      g_cpu_threads = std::atoi(argv[++i]);
      continue;
    }
    Spec sp;
    if (!ParseSpec(argv[i], &sp)) {
      std::fprintf(stderr, "weft_conv_direct_bench: bad shape '%s'; expected N,C,H,W,F,K,S,P (positive, P >= 0)\n",
                   argv[i]);
      return 2;
    }
    specs.emplace_back(argv[i], sp);
  }
  if (specs.empty()) {
    std::fprintf(stderr, "usage: weft_conv_direct_bench [-t seconds] [-c threads] N,C,H,W,F,K,S,P ...\n");
    return 2;
  }
  for (const auto& [text, sp] : specs) {
    try {
      Result r = Run(sp, min_s);
      std::printf("%s %.4f %.4f %.4f %.4f\n", text.c_str(), r.fwd * 1e3, r.fwd_plain * 1e3, r.bwd_data * 1e3,
                  r.bwd_wei * 1e3);
      std::fflush(stdout);
    } catch (const dnnl::error& e) {
      std::fprintf(stderr, "weft_conv_direct_bench: oneDNN refused %s: %s\n", text.c_str(), e.what());
      return 1;
    }
  }
  return 0;
}
