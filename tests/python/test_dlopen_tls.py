"""libweft must load with dlopen where little static TLS is left.

A single initial-exec thread_local in libweft marks the library's whole TLS block as static
(DF_STATIC_TLS); glibc then carves it out of the small surplus it reserves for dlopen, and
Python 3.12 on glibc 2.39 had too little left: `import weft` failed with "cannot allocate
memory in static TLS block". Setting glibc's optional surplus to zero leaves only the
fixed part, too small for such a block, so this catches the mistake on any glibc here.
"""
import os
import subprocess
import sys

import pytest


def _readelf_flags(path):
    try:
        out = subprocess.run(["readelf", "-dW", path], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip("readelf unavailable: %s" % e)
    return out


def _libweft_path():
    import weft.base
    path = weft.base._LIB._name
    assert os.path.exists(path), path
    return path


def test_libweft_has_no_static_tls_flag():
    flags = _readelf_flags(_libweft_path())
    assert "STATIC_TLS" not in flags, "libweft uses initial-exec TLS:\n" + flags


def test_import_with_no_optional_static_tls_surplus():
    env = dict(os.environ, GLIBC_TUNABLES="glibc.rtld.optional_static_tls=0")
    code = "import weft; print(weft.nd.array([1, 2, 3]).asnumpy().sum())"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "6.0"
