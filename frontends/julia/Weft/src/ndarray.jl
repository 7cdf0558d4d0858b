# NDArray: a handle on a Weft array. Julia size = reverse(Weft shape), same bytes.

"""
    BFloat16

The bfloat16 element type (the upper half of a Float32), so that arrays of that dtype can
be read and written; convert with `Float32(x)` and `BFloat16(x::Float32)`.
"""
primitive type BFloat16 <: AbstractFloat 16 end

BFloat16(x::Float32) = reinterpret(BFloat16, _bf16_round(reinterpret(UInt32, x)))
BFloat16(x::Real) = BFloat16(Float32(x))
Base.Float32(x::BFloat16) = reinterpret(Float32, UInt32(reinterpret(UInt16, x)) << 16)
Base.Float64(x::BFloat16) = Float64(Float32(x))
Base.promote_rule(::Type{BFloat16}, ::Type{Float32}) = Float32
Base.show(io::IO, x::BFloat16) = print(io, "BFloat16(", Float32(x), ")")

# Round to nearest even, NaN kept a NaN (a quiet one).
function _bf16_round(bits::UInt32)
    if (bits & 0x7fffffff) > 0x7f800000
        return UInt16((bits >> 16) | 0x0040)
    end
    return UInt16((bits + 0x00007fff + ((bits >> 16) & 1)) >> 16)
end

const _DTYPE_CODES = Dict{DataType,Cint}(
    Float32 => WEFT_DTYPE_FLOAT32, Float64 => WEFT_DTYPE_FLOAT64, Float16 => WEFT_DTYPE_FLOAT16,
    UInt8 => WEFT_DTYPE_UINT8, Int32 => WEFT_DTYPE_INT32, Int8 => WEFT_DTYPE_INT8, Int64 => WEFT_DTYPE_INT64,
    Bool => WEFT_DTYPE_BOOL, BFloat16 => WEFT_DTYPE_BFLOAT16)
const _DTYPE_TYPES = Dict{Cint,DataType}(v => k for (k, v) in _DTYPE_CODES)

function dtype_code(::Type{T}) where {T}
    code = get(_DTYPE_CODES, T, nothing)
    code === nothing && throw(ArgumentError("Weft: no Weft dtype for $T; use one of $(join(keys(_DTYPE_CODES), ", "))"))
    return code
end

function dtype_type(code::Integer)
    T = get(_DTYPE_TYPES, Cint(code), nothing)
    T === nothing && throw(ArgumentError("Weft: unknown dtype code $code"))
    return T
end

"""
    dtype_name(T) -> String

Weft's name of a Julia element type (`Float32` -> "float32"), as operator parameters spell it.
"""
dtype_name(::Type{T}) where {T} = _string_out(o -> weft_dtype_name(dtype_code(T), o))

"""
    NDArray

An array held by Weft (on a `Context`), written and read asynchronously by the engine.
`NDArray(a::Array)` copies a Julia array in; `copy(x)` / `Array(x)` copy it out. Sizes are
Julia's: an `NDArray` of size `(784, 100)` is a Weft array of shape `(100, 784)`.

The handle is freed by a finalizer; `finalize(x)` frees it at once (using `x` afterwards
throws a `WeftError`).
"""
mutable struct NDArray
    handle::Ptr{weft_ndarray_t}
    function NDArray(handle::Ptr{weft_ndarray_t})
        handle == C_NULL && throw(ArgumentError("Weft: NDArray from a NULL handle"))
        a = new(handle)
        finalizer(_free_ndarray, a)
        return a
    end
end

function _free_ndarray(a::NDArray)
    h = a.handle
    a.handle = C_NULL
    # Freeing cannot fail for a live handle; a finalizer has nowhere to report an error.
    h == C_NULL || weft_ndarray_free(h)
    return nothing
end

# Passing an NDArray where the C API takes its handle keeps it rooted during the call, so
# its finalizer cannot free the handle while the library uses it.
Base.unsafe_convert(::Type{Ptr{weft_ndarray_t}}, a::NDArray) = a.handle

_handles(arrays) = Ptr{weft_ndarray_t}[a === nothing ? C_NULL : a.handle for a in arrays]

# Wraps handles that the C API returned as new, caller-owned references.
_wrap_ndarrays(ptr::Ptr{Ptr{weft_ndarray_t}}, n::Integer) =
    NDArray[NDArray(unsafe_load(ptr, i)) for i in 1:n]

"""
    empty(T, dims...; ctx=cpu()) / empty(dims...; ctx=cpu())

An NDArray of Julia size `dims` and element type `T` (default Float32), contents undefined.
"""
function empty(::Type{T}, dims::Tuple{Vararg{Integer}}; ctx::Context=cpu()) where {T}
    shape = Int64[d for d in reverse(dims)]
    any(<(0), shape) && throw(ArgumentError("Weft: negative dimension in $dims"))
    out = Ref{Ptr{weft_ndarray_t}}(C_NULL)
    check(weft_ndarray_create(shape, length(shape), dtype_code(T), convert(weft_context_t, ctx), out))
    return NDArray(out[])
end
empty(::Type{T}, dims::Integer...; ctx::Context=cpu()) where {T} = empty(T, dims; ctx=ctx)
empty(dims::Tuple{Vararg{Integer}}; ctx::Context=cpu()) = empty(Float32, dims; ctx=ctx)
empty(dims::Integer...; ctx::Context=cpu()) = empty(Float32, dims; ctx=ctx)

"""
    zeros(T, dims...; ctx=cpu()), ones(T, dims...; ctx=cpu())

NDArrays of Julia size `dims` filled with 0 or 1 (element type default Float32).
"""
zeros(::Type{T}, dims::Tuple{Vararg{Integer}}; ctx::Context=cpu()) where {T} = fill!(empty(T, dims; ctx=ctx), 0)
zeros(::Type{T}, dims::Integer...; ctx::Context=cpu()) where {T} = zeros(T, dims; ctx=ctx)
zeros(dims::Tuple{Vararg{Integer}}; ctx::Context=cpu()) = zeros(Float32, dims; ctx=ctx)
zeros(dims::Integer...; ctx::Context=cpu()) = zeros(Float32, dims; ctx=ctx)
ones(::Type{T}, dims::Tuple{Vararg{Integer}}; ctx::Context=cpu()) where {T} = fill!(empty(T, dims; ctx=ctx), 1)
ones(::Type{T}, dims::Integer...; ctx::Context=cpu()) where {T} = ones(T, dims; ctx=ctx)
ones(dims::Tuple{Vararg{Integer}}; ctx::Context=cpu()) = ones(Float32, dims; ctx=ctx)
ones(dims::Integer...; ctx::Context=cpu()) = ones(Float32, dims; ctx=ctx)

"""
    NDArray(a::AbstractArray; ctx=cpu())

A new NDArray holding a copy of `a`, of the same element type and Julia size.
"""
function NDArray(a::AbstractArray{T}; ctx::Context=cpu()) where {T}
    out = empty(T, size(a); ctx=ctx)
    copyto!(out, a)
    return out
end

"""
    array(a; ctx=cpu()) -> NDArray

MXNet.jl's name of `NDArray(a)`; a number gives a one-element array.
"""
array(a::AbstractArray; ctx::Context=cpu()) = NDArray(a; ctx=ctx)
array(x::Number; ctx::Context=cpu()) = NDArray([x]; ctx=ctx)

function _weft_shape(a::NDArray)
    ndim = Ref{Cint}(0)
    check(weft_ndarray_get_ndim(a, ndim))
    dims = Vector{Int64}(undef, ndim[])
    check(weft_ndarray_get_shape(a, dims, length(dims), ndim))
    return dims
end

Base.size(a::NDArray) = Tuple(Int(d) for d in reverse(_weft_shape(a)))
Base.size(a::NDArray, d::Integer) = d <= ndims(a) ? size(a)[d] : 1
Base.ndims(a::NDArray) = (n = Ref{Cint}(0); check(weft_ndarray_get_ndim(a, n)); Int(n[]))
Base.length(a::NDArray) = (n = Ref{Int64}(0); check(weft_ndarray_get_size(a, n)); Int(n[]))
Base.eltype(a::NDArray) = (c = Ref{Cint}(0); check(weft_ndarray_get_dtype(a, c)); dtype_type(c[]))

"""
    context(a::NDArray) -> Context
"""
function context(a::NDArray)
    c = Ref{weft_context_t}(weft_context_t(0, 0))
    check(weft_ndarray_get_context(a, c))
    return Context(c[])
end

function _check_copy(dst_len, dst_T, src_len, src_T)
    dst_T == src_T || throw(ArgumentError("Weft: element types differ: $src_T into $dst_T (convert first)"))
    dst_len == src_len || throw(DimensionMismatch("Weft: $src_len elements into $dst_len"))
end

"""
    copyto!(dst::NDArray, src::AbstractArray) / copyto!(dst::Array, src::NDArray) / copyto!(dst::NDArray, src::NDArray)

Copies between Julia memory and Weft arrays (same element type and length; the bytes are
copied as they lie, so Julia sizes correspond reversed). Reading a Weft array waits for
the work that writes it and reports its errors.
"""
function Base.copyto!(dst::NDArray, src::Array{T}) where {T}
    _check_copy(length(dst), eltype(dst), length(src), T)
    check(weft_ndarray_copy_from_host(dst, src, sizeof(src)))
    return dst
end
Base.copyto!(dst::NDArray, src::AbstractArray{T}) where {T} = copyto!(dst, convert(Array{T}, collect(src)))

function Base.copyto!(dst::Array{T}, src::NDArray) where {T}
    _check_copy(length(dst), T, length(src), eltype(src))
    check(weft_ndarray_copy_to_host(src, dst, sizeof(dst)))
    return dst
end

function Base.copyto!(dst::NDArray, src::NDArray)
    check(weft_ndarray_copy_to(src, dst))
    return dst
end

"""
    copy(a::NDArray) -> Array

A Julia `Array` with the contents of `a` (MXNet.jl's convention); `copy(a, ctx)` gives a new
NDArray on `ctx` instead.
"""
Base.copy(a::NDArray) = copyto!(Array{eltype(a)}(undef, size(a)), a)
Base.copy(a::NDArray, ctx::Context) = copyto!(empty(eltype(a), size(a); ctx=ctx), a)
Base.Array(a::NDArray) = copy(a)
Base.convert(::Type{Array}, a::NDArray) = copy(a)
Base.convert(::Type{Array{T}}, a::NDArray) where {T} = convert(Array{T}, copy(a))

"""
    fill!(a::NDArray, x) -> a
"""
function Base.fill!(a::NDArray, x::Number)
    T = eltype(a)
    v = T === BFloat16 ? BFloat16(Float32(x)) : convert(T, x)
    return copyto!(a, Base.fill(v, size(a)))
end

"""
    slice(a::NDArray, r::UnitRange) -> NDArray

A view of the samples `r` (1-based) along the last Julia dimension (Weft's first axis),
sharing memory with `a`. `a[:, :, r]` (colons for every other dimension) is the same.
"""
function slice(a::NDArray, r::UnitRange{<:Integer})
    out = Ref{Ptr{weft_ndarray_t}}(C_NULL)
    check(weft_ndarray_slice(a, first(r) - 1, last(r), out))
    return NDArray(out[])
end
slice(a::NDArray, i::Integer) = slice(a, i:i)

function Base.getindex(a::NDArray, idx::Union{Colon,UnitRange{<:Integer},Integer}...)
    n = ndims(a)
    length(idx) == n || throw(ArgumentError("Weft: indexing an NDArray of $n dimensions with $(length(idx)) indices"))
    all(i -> i isa Colon, idx[1:end-1]) ||
        throw(ArgumentError("Weft: NDArray indexing takes colons for every dimension but the last (Weft's first axis)"))
    last_idx = idx[end]
    if last_idx isa Colon
        return a
    elseif last_idx isa Integer
        out = Ref{Ptr{weft_ndarray_t}}(C_NULL)
        check(weft_ndarray_at(a, last_idx - 1, out))
        return NDArray(out[])
    end
    return slice(a, last_idx)
end

function Base.setindex!(a::NDArray, x::Number, ::Colon)
    fill!(a, x)
end
function Base.setindex!(a::NDArray, x::Union{NDArray,AbstractArray}, ::Colon)
    copyto!(a, x)
end
function Base.setindex!(a::NDArray, x, idx::Union{Colon,UnitRange{<:Integer},Integer}...)
    view_ = getindex(a, idx...)
    x isa Number ? fill!(view_, x) : copyto!(view_, x)
    return a
end

"""
    reshape(a::NDArray, dims) -> NDArray

A view of `a` with Julia size `dims` (one entry may be -1: inferred), sharing memory.
"""
function Base.reshape(a::NDArray, dims::Tuple{Vararg{Integer}})
    shape = Int64[d for d in reverse(dims)]
    out = Ref{Ptr{weft_ndarray_t}}(C_NULL)
    check(weft_ndarray_reshape(a, shape, length(shape), out))
    return NDArray(out[])
end
Base.reshape(a::NDArray, d1::Integer, dims::Integer...) = reshape(a, (d1, dims...))

"""
    shares_memory(a::NDArray, b::NDArray) -> Bool
"""
function shares_memory(a::NDArray, b::NDArray)
    r = Ref{Cint}(0)
    check(weft_ndarray_shares_memory(a, b, r))
    return r[] != 0
end

"""
    wait_to_read(a), wait_to_write(a), wait_all()

Block until the engine's work on `a` (or all work) is done; report its errors.
"""
wait_to_read(a::NDArray) = check(weft_ndarray_wait_to_read(a))
wait_to_write(a::NDArray) = check(weft_ndarray_wait_to_write(a))
wait_all() = check(weft_wait_all())

"""
    srand(seed)

Seeds Weft's random generators (every context), so random operators repeat.
"""
srand(seed::Integer) = check(weft_random_seed(Int64(seed)))

function Base.show(io::IO, a::NDArray)
    if a.handle == C_NULL
        print(io, "NDArray (freed)")
        return
    end
    print(io, "NDArray{", eltype(a), ",", ndims(a), "} ", join(size(a), "×"), " on ", context(a))
end

function Base.show(io::IO, ::MIME"text/plain", a::NDArray)
    show(io, a)
    a.handle == C_NULL && return
    println(io, ":")
    Base.print_array(io, copy(a))
end

# ---------------------------------------------------------------- .params files

"""
    save(filename, a::NDArray) / save(filename, arrays::Vector{NDArray}) / save(filename, d::Dict)

Writes arrays in MXNet's NDArray list format (`.params` files): a dict's keys (Symbols or
strings, e.g. `"arg:fc1_weight"`) are the arrays' names.
"""
save(filename::AbstractString, a::NDArray) = save(filename, [a])
function save(filename::AbstractString, arrays::AbstractVector{NDArray})
    handles = _handles(arrays)
    GC.@preserve arrays begin
        check(weft_ndarray_save(filename, length(handles), handles, C_NULL))
    end
    return nothing
end
function save(filename::AbstractString, d::AbstractDict{<:Union{Symbol,AbstractString},NDArray})
    names = String[string(k) for k in keys(d)]
    arrays = NDArray[d[k] for k in keys(d)]
    handles = _handles(arrays)
    GC.@preserve arrays begin
        _with_cstrings(names) do name_ptrs
            check(weft_ndarray_save(filename, length(handles), handles, name_ptrs))
        end
    end
    return nothing
end

"""
    load(filename, NDArray) -> Vector{NDArray} or Dict{Symbol,NDArray}

Reads an NDArray list file: a dict when the file names its arrays (as `.params` files do).
"""
function load(filename::AbstractString, ::Type{NDArray})
    lst = Ref{Ptr{weft_ndarray_list_t}}(C_NULL)
    check(weft_ndarray_load(filename, lst))
    try
        return _read_list(lst[])
    finally
        weft_ndarray_list_free(lst[])
    end
end

function _read_list(lst::Ptr{weft_ndarray_list_t})
    n, named = Ref{Cint}(0), Ref{Cint}(0)
    check(weft_ndarray_list_size(lst, n))
    check(weft_ndarray_list_has_names(lst, named))
    arrays = NDArray[]
    for i in 0:n[]-1
        h = Ref{Ptr{weft_ndarray_t}}(C_NULL)
        check(weft_ndarray_list_get(lst, i, h))
        push!(arrays, NDArray(h[]))
    end
    named[] == 0 && return arrays
    names = [Symbol(_string_out(o -> weft_ndarray_list_name(lst, i, o))) for i in 0:n[]-1]
    return Dict{Symbol,NDArray}(zip(names, arrays))
end
