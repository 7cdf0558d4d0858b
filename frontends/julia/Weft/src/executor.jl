# Executor: a SymbolicNode bound to arrays (MXNet.jl's mx.bind / mx.simple_bind).

"""
    Executor

A symbol bound to arrays on a context. Fields: `arg_arrays`, `grad_arrays` (`nothing`
where no gradient is kept), `aux_arrays`, `outputs`, and the same by name in `arg_dict`,
`grad_dict`, `aux_dict`. `forward(exec)` and `backward(exec)` run it.
"""
mutable struct Executor
    handle::Ptr{weft_executor_t}
    symbol::SymbolicNode
    arg_arrays::Vector{NDArray}
    grad_arrays::Vector{Union{Nothing,NDArray}}
    aux_arrays::Vector{NDArray}
    outputs::Vector{NDArray}
    arg_dict::Dict{Symbol,NDArray}
    grad_dict::Dict{Symbol,NDArray}
    aux_dict::Dict{Symbol,NDArray}
end

function _free_executor(e::Executor)
    h = e.handle
    e.handle = C_NULL
    h == C_NULL || weft_executor_free(h)
    return nothing
end

Base.unsafe_convert(::Type{Ptr{weft_executor_t}}, e::Executor) = e.handle

# The executor's arrays of one kind, as new handles (NULL entries: no gradient).
function _executor_arrays(h::Ptr{weft_executor_t}, kind::Cint)
    n = Ref{Cint}(0)
    outs = Ref{Ptr{Ptr{weft_ndarray_t}}}(C_NULL)
    check(weft_executor_arrays(h, kind, n, outs))
    return Union{Nothing,NDArray}[(p = unsafe_load(outs[], i); p == C_NULL ? nothing : NDArray(p)) for i in 1:n[]]
end

function Executor(handle::Ptr{weft_executor_t}, sym::SymbolicNode)
    # Freed with the struct below if reading the arrays fails.
    args = try
        (_executor_arrays(handle, WEFT_EXECUTOR_ARGUMENTS), _executor_arrays(handle, WEFT_EXECUTOR_GRADIENTS),
         _executor_arrays(handle, WEFT_EXECUTOR_AUXILIARY))
    catch
        weft_executor_free(handle)
        rethrow()
    end
    n = Ref{Cint}(0)
    outs = Ref{Ptr{Ptr{weft_ndarray_t}}}(C_NULL)
    status = weft_executor_outputs(handle, n, outs)
    if status != WEFT_OK
        err = WeftError(status, unsafe_string(weft_get_last_error()))
        weft_executor_free(handle)
        throw(err)
    end
    outputs = _wrap_ndarrays(outs[], n[])
    arg_names, aux_names = list_arguments(sym), list_auxiliary_states(sym)
    arg_arrays = NDArray[a for a in args[1]]
    aux_arrays = NDArray[a for a in args[3]]
    grad_dict = Dict{Symbol,NDArray}(k => g for (k, g) in zip(arg_names, args[2]) if g !== nothing)
    e = Executor(handle, sym, arg_arrays, args[2], aux_arrays, outputs,
                 Dict(zip(arg_names, arg_arrays)), grad_dict, Dict(zip(aux_names, aux_arrays)))
    finalizer(_free_executor, e)
    return e
end

_grad_req_text(r::Symbol) = (r in (:null, :write, :add) ? String(r) :
                             throw(ArgumentError("Weft: grad_req must be :null, :write or :add, got :$r")))

"""
    simple_bind(sym, ctx; grad_req=:write, type_dict=nothing, shapes...) -> Executor

Infers every shape from the Julia sizes of some inputs (`data=(784, 100)`), allocates
zeroed arguments, gradients and auxiliary states on `ctx`, and binds them. `grad_req` is
`:write`, `:add`, `:null`, or a Dict from argument name to one of those (the arguments it
leaves out get none). `type_dict` maps input names to element types (default Float32).
"""
function simple_bind(sym::SymbolicNode, ctx::Context; grad_req=:write, type_dict=nothing, kwargs...)
    shapes = _shape_json(Dict(kwargs))
    dtypes = type_dict === nothing ? C_NULL :
             _json_text(Dict(string(k) => Int(dtype_code(v)) for (k, v) in type_dict))
    req = grad_req isa Symbol ? _grad_req_text(grad_req) :
          _json_text(Dict(string(k) => _grad_req_text(v) for (k, v) in grad_req))
    out = Ref{Ptr{weft_executor_t}}(C_NULL)
    check(weft_executor_simple_bind(sym, convert(weft_context_t, ctx), C_NULL, shapes, dtypes, req, out))
    return Executor(out[], sym)
end

function _ordered(names::Vector{Symbol}, arrays, what::String)
    arrays === nothing && return nothing
    if arrays isa AbstractDict
        missing_ = [n for n in names if !haskey(arrays, n)]
        extra = [k for k in keys(arrays) if !(Symbol(k) in names)]
        isempty(extra) || throw(ArgumentError("Weft: $what names $(join(extra, ", ")), not among $(join(names, ", "))"))
        return Union{Nothing,NDArray}[get(arrays, n, nothing) for n in names]
    end
    length(arrays) == length(names) ||
        throw(ArgumentError("Weft: $what has $(length(arrays)) arrays for $(length(names)) names ($(join(names, ", ")))"))
    return Union{Nothing,NDArray}[a for a in arrays]
end

"""
    bind(sym, ctx, args; args_grad=nothing, aux_states=nothing, grad_req=:write) -> Executor

Binds `sym` to the given arrays: `args` (a Vector in `list_arguments` order or a Dict by
name), `args_grad` likewise (missing entries: no gradient), `aux_states` (auxiliary states,
Vector or Dict). `grad_req` is one Symbol for all, or a Vector/Dict of Symbols.
"""
function Base.bind(sym::SymbolicNode, ctx::Context, args; args_grad=nothing, aux_states=nothing, grad_req=:write)
    arg_names, aux_names = list_arguments(sym), list_auxiliary_states(sym)
    arg_list = _ordered(arg_names, args, "args")
    any(a -> a === nothing, arg_list) &&
        throw(ArgumentError("Weft: bind needs an array for every argument ($(join(arg_names, ", ")))"))
    grad_list = _ordered(arg_names, args_grad, "args_grad")
    aux_list = aux_states === nothing ? Union{Nothing,NDArray}[] : _ordered(aux_names, aux_states, "aux_states")
    reqs = if grad_req isa Symbol
        fill(_grad_req_text(grad_req), length(arg_names))
    elseif grad_req isa AbstractDict
        String[_grad_req_text(get(grad_req, n, :null)) for n in arg_names]
    else
        length(grad_req) == length(arg_names) ||
            throw(ArgumentError("Weft: grad_req has $(length(grad_req)) entries for $(length(arg_names)) arguments"))
        String[_grad_req_text(r) for r in grad_req]
    end
    if grad_list !== nothing
        for (i, n) in enumerate(arg_names)
            grad_list[i] === nothing && (reqs[i] = "null")
        end
    end
    out = Ref{Ptr{weft_executor_t}}(C_NULL)
    arg_h = _handles(arg_list)
    grad_h = grad_list === nothing ? C_NULL : _handles(grad_list)
    aux_h = _handles(aux_list)
    GC.@preserve arg_list grad_list aux_list grad_h begin
        _with_cstrings(reqs) do req_ptrs
            check(weft_executor_bind(sym, convert(weft_context_t, ctx), length(arg_h), arg_h, grad_h,
                                     grad_list === nothing ? C_NULL : req_ptrs, length(aux_h), aux_h, out))
        end
    end
    return Executor(out[], sym)
end

"""
    forward(exec; is_train=false, inputs...) -> Vector{NDArray}

Copies the NDArrays or Julia arrays given by name into the bound arguments, runs the
forward pass and returns the outputs (read them with `copy`).
"""
function forward(exec::Executor; is_train::Bool=false, kwargs...)
    for (k, v) in kwargs
        haskey(exec.arg_dict, k) || throw(ArgumentError("Weft: forward: no argument named $k"))
        copyto!(exec.arg_dict[k], v)
    end
    check(weft_executor_forward(exec, is_train))
    return exec.outputs
end

"""
    backward(exec, out_grads=NDArray[])

Runs the backward pass: one gradient per output, or none for loss outputs.
"""
function backward(exec::Executor, out_grads::Union{NDArray,AbstractVector{NDArray}}=NDArray[])
    grads = out_grads isa NDArray ? NDArray[out_grads] : collect(NDArray, out_grads)
    h = _handles(grads)
    GC.@preserve grads begin
        check(weft_executor_backward(exec, length(h), h))
    end
    return nothing
end

debug_str(e::Executor) = _string_out(o -> weft_executor_debug_str(e, o))

Base.show(io::IO, e::Executor) =
    print(io, "Executor(", e.symbol, "; ", length(e.arg_arrays), " arguments, ", length(e.outputs), " outputs)")
