"""The environment the peer (PyTorch, and the OpenBLAS under it) runs at its best with,
computed without importing numpy or torch, so that a parent process can hand it to worker
processes before their first import (peer.py applies it to its own process).

Debian's OpenBLAS 0.3.21 picks its kernels from the CPU it recognises; on a CPU newer than
it knows it silently falls back to generic ones (Prescott on an Emerald Rapids Xeon) that
run a GEMM several times slower. So the core is chosen from the CPU's flags (SkylakeX, or
Cooperlake with AVX512-BF16, on AVX-512; Haswell on AVX2) whenever OpenBLAS's own choice
is weaker, and an SGEMM through it is checked against a reference computed without BLAS
before it is used. The machine's own OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (set here for
the tests' safety) are replaced.

With WEFT_BENCH_ISA=avx2 (report.py --isa avx2) the peer runs as on an AVX2 machine:
OpenBLAS's Haswell core even where it would choose an AVX-512 one, and the oneDNN inside
PyTorch and ATen's own kernels capped at AVX2 (ONEDNN_MAX_CPU_ISA, ATEN_CPU_CAPABILITY).
"""
import os
import subprocess
import sys

# Cores ordered by the kernels they bring; OpenBLAS's generic fallbacks rank lowest.
_RANK = {"Prescott": 0, "Core2": 0, "Penryn": 0, "Dunnington": 0, "Nehalem": 1, "Atom": 0, "Sandybridge": 2,
         "Bulldozer": 2, "Piledriver": 2, "Steamroller": 2, "Excavator": 2, "Haswell": 3, "Zen": 3,
         "SkylakeX": 4, "Cooperlake": 5, "SapphireRapids": 5}

# Runs in a child process with a candidate environment: the core OpenBLAS loads with, and
# whether its SGEMM agrees with a reference computed without BLAS.
_PROBE = r"""
import ctypes, sys
import numpy as np
lib = ctypes.CDLL("libblas.so.3")
if not hasattr(lib, "openblas_get_corename"):
    print("none reference-BLAS ok"); sys.exit()
lib.openblas_get_corename.restype = ctypes.c_char_p
lib.openblas_get_config.restype = ctypes.c_char_p
rng = np.random.RandomState(0)
a, b = rng.rand(67, 129).astype(np.float32), rng.rand(129, 71).astype(np.float32)
ref = np.einsum("ij,jk->ik", a.astype(np.float64), b.astype(np.float64), optimize=False)
ok = np.abs(a @ b - ref).max() <= 1e-4 * np.abs(ref).max()
print(lib.openblas_get_corename().decode(), lib.openblas_get_config().decode().split()[1], "ok" if ok else "wrong")
"""


# The instruction set the benchmarks are capped at ("avx2"), or "" for the CPU's own.
ISA_CAP = os.environ.get("WEFT_BENCH_ISA", "").lower()
if ISA_CAP not in ("", "avx2"):
    sys.exit("peer_env: WEFT_BENCH_ISA must be avx2 or unset, got %r" % ISA_CAP)


def _cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return {f for f in flags if not f.startswith("avx512")} if ISA_CAP else flags
    except OSError:
        pass
    return set()


def core_from_flags(flags):
    """The strongest OpenBLAS core the CPU's instruction sets allow, or None."""
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return "Cooperlake" if "avx512_bf16" in flags else "SkylakeX"
    if {"avx2", "fma"} <= flags:
        return "Haswell"
    return None


def _probe(coretype):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True)
    words = out.stdout.split()
    if out.returncode != 0 or len(words) != 3:
        return None, None, False
    return words[0], words[1], words[2] == "ok"


def _choose():
    """(OPENBLAS_CORETYPE to set or None, a line saying what was chosen and why)."""
    auto, version, ok = _probe(None)
    if auto is None:
        return None, "BLAS: could not load libblas.so.3 to inspect it"
    if auto == "none":
        return None, "BLAS: the reference BLAS (no OpenBLAS installed: bash tools/setup_deps.sh --bench)"
    wanted = core_from_flags(_cpu_flags())
    # Under a cap OpenBLAS's own (wider) choice would break it: the capped core is taken.
    stronger = ISA_CAP and wanted and _RANK.get(auto, 0) > _RANK.get(wanted, 0)
    if ok and not stronger and (wanted is None or _RANK.get(auto, 0) >= _RANK.get(wanted, 0)):
        return None, "BLAS: OpenBLAS %s, core %s (its own choice for this CPU)" % (version, auto)
    core, _, good = _probe(wanted)
    if core == wanted and good:
        return wanted, ("BLAS: OpenBLAS %s, core %s (chosen from the CPU's flags%s; by itself it took %s%s)"
                        % (version, wanted, ", capped at " + ISA_CAP.upper() if ISA_CAP else "", auto,
                           "" if ok else ", which computed wrong results"))
    return None, ("BLAS: OpenBLAS %s, core %s (its own choice; %s from the CPU's flags %s)"
                  % (version, auto, wanted, "did not load" if core != wanted else "computed wrong results"))


CORETYPE, BLAS_LINE = _choose()


def environment():
    """The environment variables the peer runs with, for worker processes."""
    env = {"OMP_WAIT_POLICY": "PASSIVE"}
    if CORETYPE:
        env["OPENBLAS_CORETYPE"] = CORETYPE
    if ISA_CAP:
        env.update(capped_environment())
    return env


def capped_environment():
    """What caps oneDNN (Weft's and PyTorch's) and ATen at WEFT_BENCH_ISA: {} without a cap."""
    if not ISA_CAP:
        return {}
    return {"WEFT_BENCH_ISA": ISA_CAP, "ONEDNN_MAX_CPU_ISA": ISA_CAP.upper(), "DNNL_MAX_CPU_ISA": ISA_CAP.upper(),
            "ATEN_CPU_CAPABILITY": ISA_CAP}
