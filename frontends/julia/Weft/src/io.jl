# Data providers (MXNet.jl's names): Weft's registry iterators and a Julia array provider.
# Iterating a provider starts a new epoch: `for batch in provider ... end`.

"""
    AbstractDataProvider

Gives batches: `provide_data(p)` and `provide_label(p)` list `(name, Julia size)` of the
batch arrays, `get_batch_size(p)` the batch size, and iteration yields `DataBatch`es.
"""
abstract type AbstractDataProvider end

"""
    DataBatch(data, label, pad)

One batch: `data` and `label` are NDArrays (one per `provide_data` / `provide_label`
entry); the last `pad` samples are filler that metrics and predictions skip.
"""
struct DataBatch
    data::Vector{NDArray}
    label::Vector{NDArray}
    pad::Int
end

get_data(::AbstractDataProvider, b::DataBatch) = b.data
get_label(::AbstractDataProvider, b::DataBatch) = b.label
count_samples(p::AbstractDataProvider, b::DataBatch) = get_batch_size(p) - b.pad

Base.IteratorSize(::Type{<:AbstractDataProvider}) = Base.SizeUnknown()
Base.eltype(::Type{<:AbstractDataProvider}) = DataBatch

# ---------------------------------------------------------------- registry iterators

"""
    MXDataProvider(name; params...)

An iterator of Weft's registry (`"MNISTIter"`, `"CSVIter"`, `"ImageRecordIter"`, ...)
created with keyword parameters (converted as operator parameters are). The generated
constructors `MNISTIter(...)` / `MNISTProvider(...)` call this. `data_name` and
`label_name` rename the batch arrays when the iterator has no parameters of those names.
"""
mutable struct MXDataProvider <: AbstractDataProvider
    handle::Ptr{weft_dataiter_t}
    name::String
    data_names::Vector{Symbol}
    label_names::Vector{Symbol}
    data_shapes::Vector{Tuple}
    label_shapes::Vector{Tuple}
    batch_size::Int
end

function _free_dataiter(p::MXDataProvider)
    h = p.handle
    p.handle = C_NULL
    h == C_NULL || weft_dataiter_free(h)
    return nothing
end

Base.unsafe_convert(::Type{Ptr{weft_dataiter_t}}, p::MXDataProvider) = p.handle

function _iterator_param_names(name::String)
    n = Ref{Cint}(0)
    check(weft_dataiter_type_num_params(name, n))
    return [_string_out(o -> weft_dataiter_type_param(name, i, o, C_NULL, C_NULL, C_NULL, C_NULL)) for i in 0:n[]-1]
end

function _descs(h::Ptr{weft_dataiter_t}, is_label::Bool)
    n = Ref{Cint}(0)
    check(weft_dataiter_get_num_descs(h, is_label, n))
    names, shapes = Symbol[], Tuple[]
    for i in 0:n[]-1
        name = Ref{Ptr{Cchar}}(C_NULL)
        dims = Vector{Int64}(undef, 8)
        ndim, dtype = Ref{Cint}(0), Ref{Cint}(0)
        check(weft_dataiter_get_desc(h, is_label, i, name, dims, length(dims), ndim, dtype))
        ndim[] <= length(dims) || throw(ArgumentError("Weft: iterator array of rank $(ndim[]) (at most 8 read)"))
        push!(names, Symbol(unsafe_string(name[])))
        push!(shapes, Tuple(Int(d) for d in reverse(dims[1:ndim[]])))
    end
    return names, shapes
end

function MXDataProvider(name::AbstractString; data_name=nothing, label_name=nothing, kwargs...)
    name = String(name)
    declared = _iterator_param_names(name)
    params = Pair{Symbol,Any}[k => v for (k, v) in kwargs]
    data_name !== nothing && "data_name" in declared && push!(params, :data_name => data_name)
    label_name !== nothing && "label_name" in declared && push!(params, :label_name => label_name)
    keys_ = String[_param_key(k) for (k, v) in params if v !== nothing]
    vals = String[param_str(v) for (k, v) in params if v !== nothing]
    out = Ref{Ptr{weft_dataiter_t}}(C_NULL)
    GC.@preserve keys_ vals begin
        kp, vp = _cstring_ptrs(keys_), _cstring_ptrs(vals)
        GC.@preserve kp vp begin
            check(weft_dataiter_create(name, length(keys_), kp, vp, out))
        end
    end
    # Owned (and freed) by the struct from here on, also if reading the descriptions fails.
    p = MXDataProvider(out[], name, Symbol[], Symbol[], Tuple[], Tuple[], 0)
    finalizer(_free_dataiter, p)
    p.data_names, p.data_shapes = _descs(p.handle, false)
    p.label_names, p.label_shapes = _descs(p.handle, true)
    if data_name !== nothing && !("data_name" in declared) && !isempty(p.data_names)
        p.data_names[1] = Symbol(data_name)
    end
    if label_name !== nothing && !("label_name" in declared) && !isempty(p.label_names)
        p.label_names[1] = Symbol(label_name)
    end
    p.batch_size = isempty(p.data_shapes) ? 0 : p.data_shapes[1][end]
    return p
end

provide_data(p::MXDataProvider) = collect(zip(p.data_names, p.data_shapes))
provide_label(p::MXDataProvider) = collect(zip(p.label_names, p.label_shapes))
get_batch_size(p::MXDataProvider) = p.batch_size

"""
    reset!(p)

Starts a new epoch (iteration does this itself).
"""
reset!(p::MXDataProvider) = check(weft_dataiter_reset(p))

function _arrays(p::MXDataProvider, count_f, get_f)
    n = Ref{Cint}(0)
    check(count_f(p, n))
    out = NDArray[]
    for i in 0:n[]-1
        h = Ref{Ptr{weft_ndarray_t}}(C_NULL)
        check(get_f(p, i, h))
        push!(out, NDArray(h[]))
    end
    return out
end

function _next_batch(p::MXDataProvider)
    more = Ref{Cint}(0)
    check(weft_dataiter_next(p, more))
    more[] == 0 && return nothing
    pad = Ref{Cint}(0)
    check(weft_dataiter_get_pad(p, pad))
    return DataBatch(_arrays(p, weft_dataiter_get_num_data, weft_dataiter_get_data),
                     _arrays(p, weft_dataiter_get_num_label, weft_dataiter_get_label), Int(pad[]))
end

function Base.iterate(p::MXDataProvider, state=nothing)
    state === nothing && reset!(p)
    b = _next_batch(p)
    return b === nothing ? nothing : (b, true)
end

Base.show(io::IO, p::MXDataProvider) = print(io, p.name, "(batch_size=", p.batch_size, ")")

# ---------------------------------------------------------------- Julia arrays

"""
    ArrayDataProvider(data, label=nothing; batch_size=0, shuffle=false,
                      data_name=:data, label_name=:softmax_label, data_padding=0, label_padding=0)

Batches of Julia arrays, samples along the last dimension (a 784×60000 matrix is 60000
samples of 784 values). `data` and `label` may also be `name => array` pairs or vectors of
them. `batch_size=0` makes one batch of everything. The last batch is completed with
`data_padding` / `label_padding` values and reports how many samples are filler.
"""
mutable struct ArrayDataProvider <: AbstractDataProvider
    data_names::Vector{Symbol}
    data_arrays::Vector{Array}
    label_names::Vector{Symbol}
    label_arrays::Vector{Array}
    batch_size::Int
    sample_count::Int
    shuffle::Bool
    data_padding::Float64
    label_padding::Float64
    order::Vector{Int}
end

_named_arrays(x::Nothing, default) = (Symbol[], Array[])
_named_arrays(x::AbstractArray{<:Number}, default) = ([default], Array[x])
_named_arrays(x::Pair, default) = ([Symbol(x.first)], Array[x.second])
_named_arrays(x::AbstractVector{<:Pair}, default) = (Symbol[Symbol(p.first) for p in x], Array[p.second for p in x])

function ArrayDataProvider(data, label=nothing; batch_size::Integer=0, shuffle::Bool=false,
                           data_name::Symbol=:data, label_name::Symbol=:softmax_label,
                           data_padding::Real=0, label_padding::Real=0)
    dnames, darrays = _named_arrays(data, data_name)
    lnames, larrays = _named_arrays(label, label_name)
    isempty(darrays) && throw(ArgumentError("Weft: ArrayDataProvider needs data"))
    n = size(darrays[1], ndims(darrays[1]))
    for a in vcat(darrays, larrays)
        size(a, ndims(a)) == n ||
            throw(ArgumentError("Weft: every array needs $n samples along its last dimension; got size $(size(a))"))
    end
    bs = batch_size == 0 ? n : Int(batch_size)
    bs > 0 || throw(ArgumentError("Weft: batch_size must be > 0"))
    return ArrayDataProvider(dnames, darrays, lnames, larrays, bs, n, shuffle, data_padding, label_padding,
                             collect(1:n))
end

_batch_shape(a::Array, bs) = (size(a)[1:end-1]..., bs)
provide_data(p::ArrayDataProvider) = [(n, _batch_shape(a, p.batch_size)) for (n, a) in zip(p.data_names, p.data_arrays)]
provide_label(p::ArrayDataProvider) = [(n, _batch_shape(a, p.batch_size)) for (n, a) in zip(p.label_names, p.label_arrays)]
get_batch_size(p::ArrayDataProvider) = p.batch_size

function reset!(p::ArrayDataProvider)
    p.order = p.shuffle ? randperm(p.sample_count) : collect(1:p.sample_count)
    return nothing
end

# Copies samples `idx` of `src` (padded to the batch size) into the batch NDArray `dst`.
function _fill_batch!(dst::NDArray, src::Array{T,N}, idx::AbstractVector{Int}, bs::Int, padding) where {T,N}
    host = Array{T,N}(undef, (size(src)[1:end-1]..., bs))
    fill!(host, convert(T, padding))
    for (j, i) in enumerate(idx)
        selectdim(host, N, j) .= selectdim(src, N, i)
    end
    copyto!(dst, host)
end

function Base.iterate(p::ArrayDataProvider, start::Int=0)
    start == 0 && reset!(p)
    first_ = start + 1
    first_ > p.sample_count && return nothing
    last_ = min(start + p.batch_size, p.sample_count)
    idx = p.order[first_:last_]
    # Every batch gets its own arrays: a batch kept by the caller is not overwritten.
    data = NDArray[empty(eltype(a), _batch_shape(a, p.batch_size)) for a in p.data_arrays]
    label = NDArray[empty(eltype(a), _batch_shape(a, p.batch_size)) for a in p.label_arrays]
    for (dst, src) in zip(data, p.data_arrays)
        _fill_batch!(dst, src, idx, p.batch_size, p.data_padding)
    end
    for (dst, src) in zip(label, p.label_arrays)
        _fill_batch!(dst, src, idx, p.batch_size, p.label_padding)
    end
    return DataBatch(data, label, p.batch_size - length(idx)), last_
end

Base.show(io::IO, p::ArrayDataProvider) =
    print(io, "ArrayDataProvider(", p.sample_count, " samples, batch_size=", p.batch_size, ")")
