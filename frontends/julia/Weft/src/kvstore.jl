# KVStore: parameter synchronisation (MXNet.jl's mx.KVStore).

"""
    KVStore(kv_type=:local)

A key-value store (`:local`, `:device`; the dist types need a launcher's DMLC_*
environment). Keys are integers or strings/Symbols. `init!`, `push!`, `pull!`,
`pushpull!` move NDArrays; `set_updater` / `set_optimizer` decide how a push changes the
stored value (default: it replaces it with the sum of the pushed values).
"""
mutable struct KVStore
    handle::Ptr{weft_kvstore_t}
    updater::Any
    # The updater's failure, rethrown by the push it failed in (the C API only reports
    # that it failed, naming the key).
    updater_error::Any
    function KVStore(kv_type::Union{Symbol,AbstractString}=:local)
        out = Ref{Ptr{weft_kvstore_t}}(C_NULL)
        check(weft_kvstore_create(string(kv_type), out))
        kv = new(out[], nothing, nothing)
        finalizer(_free_kvstore, kv)
        return kv
    end
end

function _free_kvstore(kv::KVStore)
    h = kv.handle
    kv.handle = C_NULL
    h == C_NULL || weft_kvstore_free(h)
    return nothing
end

Base.unsafe_convert(::Type{Ptr{weft_kvstore_t}}, kv::KVStore) = kv.handle

_kv_key(k::Integer) = (k >= 0 || throw(ArgumentError("Weft: integer keys must be >= 0, got $k")); string(k))
_kv_key(k::Union{Symbol,AbstractString}) = string(k)
# The key as the updater receives it: an Int for integer keys.
_kv_key_value(s::AbstractString) = (v = tryparse(Int, s); v !== nothing && v >= 0 && string(v) == s ? v : s)

# One key per value: a key with several values (one per device) is repeated.
function _kv_pairs(keys_, values)
    ks, vs = String[], NDArray[]
    if keys_ isa AbstractVector
        length(keys_) == length(values) ||
            throw(ArgumentError("Weft: $(length(keys_)) keys for $(length(values)) values"))
        for (k, v) in zip(keys_, values)
            a, b = _kv_pairs(k, v)
            append!(ks, a)
            append!(vs, b)
        end
    elseif values isa NDArray
        push!(ks, _kv_key(keys_))
        push!(vs, values)
    else
        for v in values
            push!(ks, _kv_key(keys_))
            push!(vs, v)
        end
    end
    return ks, vs
end

function _kv_call(f, kv::KVStore, keys_::Vector{String}, arrays::Vector{NDArray})
    h = _handles(arrays)
    GC.@preserve arrays begin
        _with_cstrings(keys_) do key_ptrs
            f(key_ptrs, h)
        end
    end
end

"""
    init!(kv, key, value) / init!(kv, keys::Vector, values::Vector)

Initialises keys (each once) with copies of the values.
"""
function init!(kv::KVStore, key, value)
    ks, vs = _kv_pairs(key, value)
    _kv_call(kv, ks, vs) do kp, vh
        check(weft_kvstore_init(kv, length(ks), kp, vh))
    end
    return kv
end

"""
    push!(kv, key, value; priority=0)

Pushes a value (or a vector of values, one per device, which are summed) for a key, or
vectors of keys and values. The updater, if any, applies the sum to the stored value.
"""
function Base.push!(kv::KVStore, key, value; priority::Integer=0)
    ks, vs = _kv_pairs(key, value)
    kv.updater_error = nothing
    status = _kv_call(kv, ks, vs) do kp, vh
        weft_kvstore_push(kv, length(ks), kp, vh, priority)
    end
    _raise_updater_error(kv)
    check(status)
    return kv
end

function _raise_updater_error(kv::KVStore)
    err = kv.updater_error
    err === nothing && return
    kv.updater_error = nothing
    throw(err)
end

"""
    pull!(kv, key, out; priority=0)

Copies the stored value of `key` into `out` (an NDArray, or a vector of them: each gets it).
"""
function pull!(kv::KVStore, key, out; priority::Integer=0)
    ks, vs = _kv_pairs(key, out)
    _kv_call(kv, ks, vs) do kp, vh
        check(weft_kvstore_pull(kv, length(ks), kp, vh, priority))
    end
    return out
end

"""
    pushpull!(kv, key, value, out; priority=0)

`push!` then `pull!` in one call.
"""
function pushpull!(kv::KVStore, key, value, out; priority::Integer=0)
    ks, vs = _kv_pairs(key, value)
    pks, pvs = _kv_pairs(key, out)
    kv.updater_error = nothing
    ph = _handles(pvs)
    status = GC.@preserve pvs begin
        _with_cstrings(pks) do pkp
            _kv_call(kv, ks, vs) do kp, vh
                weft_kvstore_pushpull(kv, length(ks), kp, vh, length(pks), pkp, ph, priority)
            end
        end
    end
    _raise_updater_error(kv)
    check(status)
    return out
end

# Called by the library during a push, on the pushing thread, as the C typedef
# weft_kvstore_updater_t says. It must not throw into C: a failure is kept for the push
# to rethrow, and reported to the library as non-zero.
function _kv_updater_callback(key::Cstring, merged::Ptr{weft_ndarray_t}, stored::Ptr{weft_ndarray_t},
                              user::Ptr{Cvoid})::Cint
    kv = unsafe_pointer_to_objref(user)::KVStore
    try
        # Both handles are new references owned by the callee: the NDArrays' finalizers free them.
        kv.updater(_kv_key_value(unsafe_string(key)), NDArray(merged), NDArray(stored))
        return Cint(0)
    catch err
        kv.updater_error = err
        return Cint(1)
    end
end

"""
    set_updater(kv, f)

Makes every push call `f(key, merged, stored)` (key an Int or String; `merged` the sum of
the pushed values; `stored` the stored NDArray, which `f` changes in place, e.g.
`stored[:] = stored - 0.1 * merged` or an optimizer's update). `nothing` removes it.
"""
function set_updater(kv::KVStore, f)
    if f === nothing
        check(weft_kvstore_set_updater(kv, C_NULL, C_NULL))
        kv.updater = nothing
        return kv
    end
    kv.updater = f
    cb = @cfunction(_kv_updater_callback, Cint, (Cstring, Ptr{weft_ndarray_t}, Ptr{weft_ndarray_t}, Ptr{Cvoid}))
    # The store owns the handle this struct frees, so `kv` outlives every call of the
    # updater: its address is the `user` pointer.
    check(weft_kvstore_set_updater(kv, cb, pointer_from_objref(kv)))
    return kv
end

"""
    set_optimizer(kv, opt::AbstractOptimizer)

Pushes update the stored values with `opt` (one optimizer state per key).
"""
function set_optimizer(kv::KVStore, opt)
    states = Dict{Any,Any}()
    set_updater(kv, (key, grad, weight) -> begin
        state = get!(() -> create_state(opt, key, weight), states, key)
        update!(opt, key, weight, grad, state)
    end)
    return kv
end

get_type(kv::KVStore) = Symbol(_string_out(o -> weft_kvstore_get_type(kv, o)))
get_rank(kv::KVStore) = (r = Ref{Cint}(0); check(weft_kvstore_get_rank(kv, r)); Int(r[]))
get_num_workers(kv::KVStore) = (r = Ref{Cint}(0); check(weft_kvstore_get_num_workers(kv, r)); Int(r[]))
barrier(kv::KVStore) = check(weft_kvstore_barrier(kv))

Base.show(io::IO, kv::KVStore) = print(io, "KVStore(:", kv.handle == C_NULL ? "freed" : get_type(kv), ")")
