# What the generated operator functions (ops_gen.jl) call: imperative invocation on
# NDArrays and node creation on SymbolicNodes, with parameters turned into strings.

"""
    OpDef(name, inputs, variadic, key_var_num_args)

A registered operator as the generated functions see it: its name (or alias), its input
names, whether it takes any number of inputs and the parameter that counts them. The
operator's handle is looked up on first use (never during precompilation).
"""
struct OpDef
    name::String
    inputs::Vector{String}
    variadic::Bool
    key_var_num_args::String
    handle::Base.RefValue{Ptr{weft_op_t}}
end
OpDef(name, inputs, variadic, key) = OpDef(name, inputs, variadic, key, Ref{Ptr{weft_op_t}}(C_NULL))

function _op_handle(op::OpDef)
    h = op.handle[]
    if h == C_NULL
        out = Ref{Ptr{weft_op_t}}(C_NULL)
        check(weft_op_get(op.name, out))
        h = op.handle[] = out[]
    end
    return h
end

"""
    operator_names() -> Vector{String}

The names (and aliases) of every generated operator function.
"""
operator_names() = copy(_OPERATOR_NAMES)

# (keys, values) of the parameters among `kwargs`; `nothing` values leave the default.
function _param_strings(op::OpDef, kwargs, ninputs::Integer)
    keys_, vals = String[], String[]
    for (k, v) in kwargs
        v === nothing && continue
        push!(keys_, _param_key(k))
        push!(vals, param_str(v))
    end
    if !isempty(op.key_var_num_args) && !(op.key_var_num_args in keys_)
        push!(keys_, op.key_var_num_args)
        push!(vals, string(ninputs))
    end
    return keys_, vals
end

"""
    _invoke_op(op, inputs; out=nothing, params...)

Runs `op` on NDArrays at once. Returns the output NDArray (a Vector for several outputs);
with `out` (an NDArray or a vector of them) writes the results there and returns `out`.
"""
function _invoke_op(op::OpDef, inputs::Tuple; out=nothing, name=nothing, kwargs...)
    # `name` names symbolic nodes; an imperative call has none, as in MXNet.jl.
    keys_, vals = _param_strings(op, kwargs, length(inputs))
    given = out === nothing ? NDArray[] : out isa NDArray ? NDArray[out] : collect(NDArray, out)
    in_h, given_h = _handles(inputs), _handles(given)
    nout = Ref{Cint}(0)
    outs = Ref{Ptr{Ptr{weft_ndarray_t}}}(C_NULL)
    GC.@preserve inputs given keys_ vals begin
        key_ptrs, val_ptrs = _cstring_ptrs(keys_), _cstring_ptrs(vals)
        GC.@preserve key_ptrs val_ptrs begin
            check(weft_imperative_invoke(_op_handle(op), length(in_h), in_h, length(keys_), key_ptrs, val_ptrs,
                                         length(given_h), given_h, nout, outs))
        end
    end
    out === nothing || return out
    # The library's array of handles is only valid until this thread's next invoke: wrap
    # the handles now.
    results = _wrap_ndarrays(outs[], nout[])
    return length(results) == 1 ? results[1] : results
end

"""
    _compose_op(op, inputs; name=nothing, attrs=nothing, params...)

A new node of `op` whose inputs are the SymbolicNodes `inputs` (by position) and the
SymbolicNode keywords (by input name); other keywords are parameters. Inputs not given
become variables named `<name>_<input>`.
"""
function _compose_op(op::OpDef, inputs::Tuple; name=nothing, attrs=nothing, kwargs...)
    named = Dict{String,SymbolicNode}()
    params = Pair{Symbol,Any}[]
    for (k, v) in kwargs
        if v isa SymbolicNode
            named[string(k)] = v
        else
            push!(params, k => v)
        end
    end
    keys_, vals = _param_strings(op, params, length(inputs))
    node = GC.@preserve keys_ vals begin
        key_ptrs, val_ptrs = _cstring_ptrs(keys_), _cstring_ptrs(vals)
        GC.@preserve key_ptrs val_ptrs _symbol_out(
            o -> weft_symbol_create_atomic(_op_handle(op), length(keys_), key_ptrs, val_ptrs, o))
    end
    attrs === nothing || set_attr(node, attrs)
    if !isempty(inputs) && !isempty(named)
        # Positional inputs take the first input names, so that one compose by name
        # gives them all.
        op.variadic && throw(ArgumentError("Weft: $(op.name) takes its inputs by position only"))
        length(inputs) > length(op.inputs) &&
            throw(ArgumentError("Weft: $(op.name) takes at most $(length(op.inputs)) inputs " *
                                "($(join(op.inputs, ", "))), got $(length(inputs))"))
        for (n, a) in zip(op.inputs, inputs)
            haskey(named, n) && throw(ArgumentError("Weft: $(op.name): input $n given by position and by name"))
            named[n] = a
        end
        inputs = ()
    end
    return _compose!(node, inputs, named, name)
end

"""
    _call_op(op; kwargs...)

A generated operator called with keywords only: symbolic when an input is a SymbolicNode
or the operator has inputs and none is given as an NDArray; imperative when an input is an
NDArray (in the operator's input order); an operator without inputs runs at once unless
`name` is given.
"""
function _call_op(op::OpDef; kwargs...)
    values_ = collect(values(kwargs))
    if any(v -> v isa SymbolicNode, values_)
        return _compose_op(op, (); kwargs...)
    elseif any(v -> v isa NDArray, values_)
        inputs = Tuple(kwargs[Symbol(n)] for n in op.inputs if haskey(kwargs, Symbol(n)))
        rest = [k => v for (k, v) in kwargs if !(String(k) in op.inputs)]
        return _invoke_op(op, inputs; rest...)
    elseif isempty(op.inputs) && !op.variadic && !haskey(kwargs, :name)
        return _invoke_op(op, (); kwargs...)
    end
    return _compose_op(op, (); kwargs...)
end
