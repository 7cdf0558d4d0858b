# Errors, the library's location and the conversions every wrapper needs.

"""
    WeftError(status, msg)

An error reported by libweft: `status` is the C API's status code (`WEFT_ERR_VALUE`,
`WEFT_ERR_SHAPE`, ...; `status_name(e.status)` spells it) and `msg` Weft's message.
"""
struct WeftError <: Exception
    status::Int
    msg::String
end

const _STATUS_NAMES = Dict(
    WEFT_OK => "ok", WEFT_ERR_VALUE => "value", WEFT_ERR_TYPE => "type", WEFT_ERR_INDEX => "index",
    WEFT_ERR_SHAPE => "shape", WEFT_ERR_IO => "io", WEFT_ERR_NOT_FOUND => "not found",
    WEFT_ERR_UNSUPPORTED => "unsupported", WEFT_ERR_RUNTIME => "runtime", WEFT_ERR_INTERNAL => "internal",
    WEFT_ERR_HANDLE => "handle")

"""
    status_name(status) -> String

The name of a C API status code ("shape" for `WEFT_ERR_SHAPE`).
"""
status_name(status::Integer) = get(_STATUS_NAMES, Cint(status), "status $status")

Base.showerror(io::IO, e::WeftError) = print(io, "WeftError (", status_name(e.status), "): ", e.msg)

"""
    check(status)

Throws the `WeftError` of a failed C call. Call it right after the C function, on the same
task: the message is the thread's last error, and nothing that could yield or call the
library runs in between.
"""
@inline function check(status::Cint)
    status == WEFT_OK && return nothing
    throw(WeftError(status, unsafe_string(weft_get_last_error())))
end

const _LIBRARY_PATH = Ref{String}("")

"""
    library_path() -> String

The path of the libweft this session loaded.
"""
library_path() = _LIBRARY_PATH[]

function _find_library()
    given = get(ENV, "WEFT_LIBRARY", "")
    if !isempty(given)
        isfile(given) || error("Weft: WEFT_LIBRARY is $(repr(given)), which is not a file")
        return given
    end
    found = Libdl.find_library(["libweft", "libweft.so.$WEFT_ABI_VERSION"])
    isempty(found) && error("Weft: libweft not found; set WEFT_LIBRARY to the library's path " *
                            "(e.g. <weft>/build/libweft.so) or add its folder to the loader's path")
    return Libdl.dlpath(found)
end

"""
    version() -> VersionNumber

The version of the libweft loaded.
"""
function version()
    major, minor, patch = Ref{Cint}(0), Ref{Cint}(0), Ref{Cint}(0)
    check(weft_get_version(major, minor, patch, C_NULL))
    return VersionNumber(major[], minor[], patch[])
end

# Pointers to the bytes of `strs` for a `const char* const*` argument. Julia's String data
# ends with a NUL, so the pointers are C strings; the caller keeps `strs` alive
# (GC.@preserve) while the pointers are used.
function _cstring_ptrs(strs::Vector{String})
    for s in strs
        occursin('\0', s) && throw(ArgumentError("Weft: string $(repr(s)) contains a NUL character"))
    end
    return Ptr{Cchar}[Ptr{Cchar}(pointer(s)) for s in strs]
end

# Calls f(pointers) with the C strings of `strs`, kept alive during the call.
function _with_cstrings(f, strs::Vector{String})
    ptrs = _cstring_ptrs(strs)
    return GC.@preserve strs ptrs f(ptrs)
end

# A library-owned `const char*` out-parameter read into a Julia String.
function _string_out(f)
    out = Ref{Ptr{Cchar}}(C_NULL)
    check(f(out))
    return out[] == C_NULL ? "" : unsafe_string(out[])
end

# ---------------------------------------------------------------- parameter values

const _JULIA_KEYWORDS = Set(["baremodule", "begin", "break", "catch", "const", "continue", "do", "else",
                             "elseif", "end", "export", "false", "finally", "for", "function", "global",
                             "if", "import", "let", "local", "macro", "module", "quote", "return",
                             "struct", "true", "try", "using", "while"])

# The core's name of a keyword argument: `end_` for the parameter `end`.
function _param_key(k::Symbol)
    s = String(k)
    if endswith(s, "_") && (s[1:end-1] in _JULIA_KEYWORDS)
        return s[1:end-1]
    end
    return s
end

"""
    param_str(value) -> String

The text the core parses for an operator or iterator parameter: numbers as decimal
numbers, booleans as `True`/`False`, tuples and vectors as `(a, b)`, Julia types as dtype
names (`Float32` -> "float32"), contexts as "cpu(0)". A tuple of integers is reversed,
Julia's order of dims to the engine's, as MXNet.jl passes it: `shape=(784, 10)` is the
engine's (10, 784), `data_shape=(28, 28, 3)` its (3, 28, 28); vectors and other tuples go
in the order written.
"""
param_str(v::AbstractString) = String(v)
param_str(v::Symbol) = String(v)
param_str(v::Bool) = v ? "True" : "False"
param_str(v::Integer) = string(Int64(v))
# Float64's shortest round-trip text ("0.1", "1.0e-5"): strtod reads it exactly; a Float32
# printed as itself would read "0.1f0".
param_str(v::AbstractFloat) = string(Float64(v))
param_str(v::Nothing) = "None"
param_str(v::Type) = dtype_name(v)
function param_str(v::Union{Tuple,AbstractVector})
    items = [param_str(x) for x in v]
    return "(" * join(items, ", ") * (length(items) == 1 ? ",)" : ")")
end
param_str(v::Tuple{Vararg{Integer}}) = invoke(param_str, Tuple{Union{Tuple,AbstractVector}}, reverse(v))
param_str(v) = throw(ArgumentError("Weft: cannot pass a $(typeof(v)) as an operator parameter"))
