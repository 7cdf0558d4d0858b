/* The SWIG interface of Weft's C API for the Python front end (the R, Go and Julia
 * packages have their raw layers generated from c_api.h by tools/codegen, which serves
 * those languages better than SWIG's output: R's registered .Call routines, Go's cgo shims
 * that copy thread-bound results inside the call, Julia's ccall table).
 *
 * The functions are the C API's, one for one, with the same names and argument order;
 * counts stay explicit arguments. How arguments and results cross is in weft_python.i:
 *  - A failing status raises, through an error factory the package installs; the message
 *    is read on the calling thread, right after the failing call, inside the wrapper.
 *  - Out-parameters become results appended to the return value.
 *  - Handles are carried as ints (the C API's handles are encoded integers).
 */
%module(package="weft") weft_swig

%{
#include <stdlib.h>
#include <string.h>
#include "weft/c_api.h"
#include "weft/dlpack.h"
%}

%include <stdint.i>
%include <typemaps.i>

#define WEFT_API

#ifdef SWIGPYTHON
%include "weft_python.i"
#endif

%include "weft/c_api.h"
