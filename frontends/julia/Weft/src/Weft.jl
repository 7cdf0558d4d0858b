"""
    Weft

Julia front end of the Weft deep-learning engine, over its C API (libweft), with
MXNet.jl's names:

    using Weft
    data = mx.Variable(:data)
    net  = mx.FullyConnected(data; num_hidden=128, name=:fc1)

`mx` is this module (`const mx = Weft`, exported), so scripts written for MXNet.jl's
`mx.` prefix read the same.

Arrays: an `NDArray` of Julia size `(a, b, c)` is a Weft array of shape `(c, b, a)` over the
same bytes (dims reversed, memory not transposed), as in MXNet.jl. Operator parameters
that are tuples of integers (`shape`, `kernel`, `data_shape`, ...) are reversed for the
core, as MXNet.jl reverses them; single numbers (`axis=0`: Weft's first axis, Julia's
last dimension), vectors and other tuples go as written.

Generated operators: every registered operator is a function of this module. With
NDArrays it runs at once (`out=` writes into given arrays); with SymbolicNodes it builds a
node (`name=`, `attrs=`); with keywords only, inputs are given by name. An operator without
inputs (`_zeros`, `_random_uniform`) runs at once unless `name` is given. Operators named
like one of Base's functions (`sum`, `exp`, `reshape`, ...) extend Base's function for
Weft's types and take their inputs by position. A parameter named like a Julia keyword
takes a trailing underscore (`slice(x; begin_=(0,), end_=(2,))`).

Errors from the library are `WeftError`s carrying the status and Weft's message.
"""
module Weft

using Libdl
using Printf
using Random

# These names are also Base's; Weft's are different functions (mx.zeros(dims...) makes an
# NDArray), declared before any code could bind the names to Base's.
function zeros end
function ones end
function empty end

include("capi_gen.jl")
include("base.jl")
include("json.jl")
include("context.jl")
include("ndarray.jl")
include("symbolic_node.jl")
include("operators.jl")
include("ops_gen.jl")
include("ndarray_math.jl")
include("autograd.jl")
include("executor.jl")
include("kvstore.jl")
include("io.jl")
include("io_gen.jl")
include("recordio.jl")
include("initializer.jl")
include("optimizer.jl")
include("metric.jl")
include("callback.jl")
include("model.jl")

const mx = Weft

export mx
export WeftError
export Context, cpu, gpu
export NDArray, SymbolicNode, Executor, KVStore
export AbstractDataProvider, ArrayDataProvider, MXDataProvider, DataBatch
export FeedForward, SGD, Accuracy, MSE

function __init__()
    path = _find_library()
    lib = Libdl.dlopen(path)
    # The version is checked before any other symbol is bound: a library of another ABI
    # may lack symbols, and its version says why better than a missing symbol would.
    _fp_weft_get_version[] = Libdl.dlsym(lib, :weft_get_version)
    _fp_weft_get_last_error[] = Libdl.dlsym(lib, :weft_get_last_error)
    major, minor, patch, abi = Ref{Cint}(0), Ref{Cint}(0), Ref{Cint}(0), Ref{Cint}(0)
    check(weft_get_version(major, minor, patch, abi))
    if abi[] != WEFT_ABI_VERSION
        error("Weft: $path has ABI version $(abi[]) (library $(major[]).$(minor[]).$(patch[])), " *
              "but this package was generated for ABI version $WEFT_ABI_VERSION " *
              "(header $WEFT_HEADER_VERSION); regenerate the package or point WEFT_LIBRARY at a matching build")
    end
    _bind_symbols!(lib)
    _LIBRARY_PATH[] = path
    return nothing
end

end # module
