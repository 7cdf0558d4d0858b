# SymbolicNode: a handle on a Weft symbol (a graph's outputs), MXNet.jl's name.

"""
    SymbolicNode

A symbolic graph: variables (`Variable(:data)`), operator nodes built by the generated
operator functions, groups of outputs (`Group`). Freed by a finalizer (`finalize(s)` frees
it at once).
"""
mutable struct SymbolicNode
    handle::Ptr{weft_symbol_t}
    function SymbolicNode(handle::Ptr{weft_symbol_t})
        handle == C_NULL && throw(ArgumentError("Weft: SymbolicNode from a NULL handle"))
        s = new(handle)
        finalizer(_free_symbol, s)
        return s
    end
end

function _free_symbol(s::SymbolicNode)
    h = s.handle
    s.handle = C_NULL
    h == C_NULL || weft_symbol_free(h)
    return nothing
end

Base.unsafe_convert(::Type{Ptr{weft_symbol_t}}, s::SymbolicNode) = s.handle

function _symbol_out(f)
    out = Ref{Ptr{weft_symbol_t}}(C_NULL)
    check(f(out))
    return SymbolicNode(out[])
end

"""
    Variable(name; attrs=nothing) -> SymbolicNode

A variable (an input or a parameter of the graph). `attrs` is a Dict of attributes
(e.g. `Dict(:__shape__ => "(1, 2)")`).
"""
function Variable(name::Union{Symbol,AbstractString}; attrs=nothing)
    s = _symbol_out(o -> weft_symbol_create_variable(string(name), o))
    attrs === nothing || set_attr(s, attrs)
    return s
end

"""
    Group(nodes::SymbolicNode...) -> SymbolicNode

The outputs of every node, as one symbol.
"""
function Group(nodes::SymbolicNode...)
    handles = Ptr{weft_symbol_t}[n.handle for n in nodes]
    return GC.@preserve nodes _symbol_out(o -> weft_symbol_group(length(handles), handles, o))
end

Base.copy(s::SymbolicNode) = _symbol_out(o -> weft_symbol_copy(s, o))

"""
    get_internals(s) -> SymbolicNode

Every output of every node of `s`, as a group; index it by name (`internals[:fc1_output]`).
"""
get_internals(s::SymbolicNode) = _symbol_out(o -> weft_symbol_get_internals(s, o))

"""
    get_children(s) -> SymbolicNode

The inputs of the output nodes of `s`.
"""
get_children(s::SymbolicNode) = _symbol_out(o -> weft_symbol_get_children(s, o))

"""
    s[i::Int] / s[name::Symbol]

Output `i` (1-based) of `s`, or the output called `name` (as `list_outputs` names it).
"""
Base.getindex(s::SymbolicNode, i::Integer) = _symbol_out(o -> weft_symbol_get_output(s, i - 1, o))
function Base.getindex(s::SymbolicNode, name::Union{Symbol,AbstractString})
    names = list_outputs(s)
    i = findfirst(==(Symbol(name)), names)
    i === nothing && throw(KeyError(Symbol(name)))
    return s[i]
end

Base.length(s::SymbolicNode) = length(list_outputs(s))

_list(s::SymbolicNode, kind) = Symbol[Symbol(x) for x in _json_parse(_string_out(o -> weft_symbol_list(s, kind, o)))]

"""
    list_arguments(s), list_outputs(s), list_auxiliary_states(s), list_inputs(s) -> Vector{Symbol}
"""
list_arguments(s::SymbolicNode) = _list(s, WEFT_SYMBOL_ARGUMENTS)
list_outputs(s::SymbolicNode) = _list(s, WEFT_SYMBOL_OUTPUTS)
list_auxiliary_states(s::SymbolicNode) = _list(s, WEFT_SYMBOL_AUXILIARY)
list_inputs(s::SymbolicNode) = _list(s, WEFT_SYMBOL_INPUTS)

"""
    get_name(s) -> Symbol

The name of a one-output symbol's node (`Symbol("")` for a group).
"""
get_name(s::SymbolicNode) = Symbol(_string_out(o -> weft_symbol_get_name(s, o)))

"""
    get_attr(s, key) -> Union{String,Nothing}
"""
function get_attr(s::SymbolicNode, key::Union{Symbol,AbstractString})
    out, found = Ref{Ptr{Cchar}}(C_NULL), Ref{Cint}(0)
    check(weft_symbol_get_attr(s, string(key), out, found))
    return found[] == 0 ? nothing : unsafe_string(out[])
end

"""
    set_attr(s, key, value) / set_attr(s, attrs::AbstractDict)
"""
set_attr(s::SymbolicNode, key::Union{Symbol,AbstractString}, value::AbstractString) =
    check(weft_symbol_set_attr(s, string(key), value))
function set_attr(s::SymbolicNode, attrs::AbstractDict)
    for (k, v) in attrs
        set_attr(s, k, string(v))
    end
end

"""
    list_all_attr(s) -> Dict{Symbol,Dict{Symbol,String}}

The attributes of every node of `s`, by node name.
"""
function list_all_attr(s::SymbolicNode)
    d = _json_parse(_string_out(o -> weft_symbol_attr_dict(s, o)))
    return Dict{Symbol,Dict{Symbol,String}}(Symbol(k) => Dict{Symbol,String}(Symbol(a) => string(b) for (a, b) in v)
                                            for (k, v) in d)
end

debug_str(s::SymbolicNode) = _string_out(o -> weft_symbol_debug_str(s, o))

"""
    to_json(s) -> String / from_json(text, SymbolicNode) -> SymbolicNode

MXNet's symbol JSON (what `prefix-symbol.json` holds).
"""
to_json(s::SymbolicNode) = _string_out(o -> weft_symbol_to_json(s, o))
from_json(text::AbstractString, ::Type{SymbolicNode}) = _symbol_out(o -> weft_symbol_from_json(text, o))

"""
    save(filename, s::SymbolicNode) / load(filename, SymbolicNode)

Writes or reads a symbol JSON file.
"""
save(filename::AbstractString, s::SymbolicNode) = check(weft_symbol_save_file(s, filename))
load(filename::AbstractString, ::Type{SymbolicNode}) = _symbol_out(o -> weft_symbol_load_file(filename, o))

"""
    (s::SymbolicNode)(args...; kwargs...) -> SymbolicNode

A copy of `s` with inputs replaced: positional SymbolicNodes replace its arguments in
`list_arguments` order, keywords replace the arguments they name.
"""
function (s::SymbolicNode)(args::SymbolicNode...; name=nothing, kwargs...)
    c = copy(s)
    _compose!(c, args, Dict{String,SymbolicNode}(string(k) => v for (k, v) in kwargs), name)
    return c
end

function _compose!(s::SymbolicNode, args, named::AbstractDict{String,SymbolicNode}, name)
    !isempty(args) && !isempty(named) &&
        throw(ArgumentError("Weft: compose takes inputs by position or by name, not both"))
    cname = name === nothing ? C_NULL : string(name)
    if isempty(named)
        handles = Ptr{weft_symbol_t}[a.handle for a in args]
        GC.@preserve args begin
            check(weft_symbol_compose(s, cname, length(handles), C_NULL, handles))
        end
    else
        keys_ = collect(keys(named))
        nodes = SymbolicNode[named[k] for k in keys_]
        handles = Ptr{weft_symbol_t}[n.handle for n in nodes]
        GC.@preserve nodes begin
            _with_cstrings(keys_) do key_ptrs
                check(weft_symbol_compose(s, cname, length(handles), key_ptrs, handles))
            end
        end
    end
    return s
end

_shape_json(shapes) = _json_text(Dict(string(k) => Int[d for d in reverse(v)] for (k, v) in shapes))
_julia_shape(dims) = dims === nothing ? nothing : Tuple(Int(d) for d in reverse(dims))

"""
    infer_shape(s; name=dims...) / infer_shape(s, shapes::AbstractDict)
        -> (arg_shapes, out_shapes, aux_shapes)

Shape inference from the Julia sizes of some inputs (`data=(784, 100)`): the Julia sizes of
every argument (list_arguments order), output and auxiliary state, or
`(nothing, nothing, nothing)` when the given sizes leave some shape unknown. Shapes that
conflict throw a WeftError naming the node.
"""
infer_shape(s::SymbolicNode; kwargs...) = infer_shape(s, Dict(kwargs))
function infer_shape(s::SymbolicNode, shapes::AbstractDict)
    r = _json_parse(_string_out(o -> weft_symbol_infer_shape(s, _shape_json(shapes), o)))
    r["complete"] || return (nothing, nothing, nothing)
    return ([_julia_shape(x) for x in r["arguments"]], [_julia_shape(x) for x in r["outputs"]],
            [_julia_shape(x) for x in r["auxiliary"]])
end

"""
    infer_type(s; name=T...) -> (arg_types, out_types, aux_types)

Type inference from the element types of some inputs (`data=Float32`); `nothing` when
some type stays unknown.
"""
function infer_type(s::SymbolicNode; kwargs...)
    known = _json_text(Dict(string(k) => Int(dtype_code(v)) for (k, v) in kwargs))
    r = _json_parse(_string_out(o -> weft_symbol_infer_type(s, known, o)))
    r["complete"] || return (nothing, nothing, nothing)
    conv(v) = [dtype_type(x) for x in v]
    return (conv(r["arguments"]), conv(r["outputs"]), conv(r["auxiliary"]))
end

function Base.show(io::IO, s::SymbolicNode)
    if s.handle == C_NULL
        print(io, "SymbolicNode (freed)")
        return
    end
    name = get_name(s)
    print(io, "SymbolicNode ", name == Symbol("") ? "group(" * join(list_outputs(s), ", ") * ")" : name)
end

"""
    @chain a => f(params...) => g(params...)

Composes layers left to right: each call gets the previous expression as its first
positional input, so the line above is `g(f(a; params...); params...)` (MXNet.jl's
`@mx.chain`).
"""
macro chain(layers)
    items = Any[]
    _flatten_chain!(items, layers)
    length(items) >= 2 || throw(ArgumentError("@chain needs at least two layers joined by =>"))
    result = items[1]
    for item in items[2:end]
        (item isa Expr && item.head === :call) ||
            throw(ArgumentError("@chain: every layer after the first must be a call, got $item"))
        args = copy(item.args)
        # After the function and a `;` parameters block, if any.
        at = length(args) >= 2 && args[2] isa Expr && args[2].head === :parameters ? 3 : 2
        insert!(args, at, result)
        result = Expr(:call, args...)
    end
    return esc(result)
end

# `a => b => c` parses as a => (b => c): the items in order.
function _flatten_chain!(items, ex)
    if ex isa Expr && ex.head === :call && length(ex.args) == 3 && ex.args[1] === :(=>)
        _flatten_chain!(items, ex.args[2])
        _flatten_chain!(items, ex.args[3])
    else
        push!(items, ex)
    end
    return items
end
