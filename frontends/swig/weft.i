/* The SWIG interface of Weft's C API, shared by every SWIG front end (Python, R, Go).
 *
 * The functions are the C API's, one for one, with the same names and argument order;
 * counts stay explicit arguments in every language. What differs per language is only
 * how arguments and results cross: each language has its typemap block below.
 *  - The status: Python raises (through an error factory the package installs), R raises
 *    an R error, Go returns an `error`. The message is read on the calling thread, right
 *    after the failing call, inside the wrapper.
 *  - Out-parameters become results (Python: appended to the return value; R: elements of
 *    the returned list after the status; Go: slices or pointers, as the Go code passes).
 *  - Handles: Python carries them as ints (the C API's handles are encoded integers), R
 *    and Go as SWIG pointer objects.
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
#ifdef SWIGR
%include "weft_r.i"
#endif
#ifdef SWIGGO
%include "weft_go.i"
#endif

%include "weft/c_api.h"
