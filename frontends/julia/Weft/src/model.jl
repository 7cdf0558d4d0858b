# FeedForward: train and run a network on one context (MXNet.jl's mx.FeedForward, mx.fit,
# mx.predict), and checkpoints in the Python front end's format.

abstract type AbstractModel end

"""
    FeedForward(arch::SymbolicNode; context=cpu())

A network to train with `fit` and run with `predict`. `arg_params` and `aux_params` hold
its parameters (Dicts of NDArrays by name) once trained or loaded.
"""
mutable struct FeedForward <: AbstractModel
    arch::SymbolicNode
    ctx::Context
    arg_params::Dict{Symbol,NDArray}
    aux_params::Dict{Symbol,NDArray}
end

function FeedForward(arch::SymbolicNode; context::Union{Context,AbstractVector{Context}}=cpu())
    if context isa AbstractVector
        length(context) == 1 ||
            throw(ArgumentError("Weft: FeedForward trains on one context; got $(length(context))"))
        context = context[1]
    end
    return FeedForward(arch, context, Dict{Symbol,NDArray}(), Dict{Symbol,NDArray}())
end

function _input_shapes(data::AbstractDataProvider)
    return Dict{Symbol,Tuple}(vcat(provide_data(data), provide_label(data)))
end

# Copies of the executor's parameters (not aliases: the executor keeps training).
_snapshot(d::Dict{Symbol,NDArray}, names) = Dict{Symbol,NDArray}(n => copy(d[n], context(d[n])) for n in names)

"""
    fit(model, optimizer, data; n_epoch=10, initializer=UniformInitializer(0.01),
        eval_data=nothing, eval_metric=Accuracy(), callbacks=AbstractCallback[], verbosity=1)

Trains `model` on the batches of `data` for `n_epoch` epochs with `optimizer` (its
`rescale_grad` is set to 1/batch_size), evaluating `eval_metric` on the training batches
and, if given, on `eval_data` after each epoch. Parameters already in `model.arg_params`
(e.g. from `load_checkpoint`) are kept; the others are initialised. Returns the model.
"""
function fit(self::FeedForward, optimizer::AbstractOptimizer, data::AbstractDataProvider;
             n_epoch::Integer=10, initializer::AbstractInitializer=UniformInitializer(0.01),
             eval_data::Union{Nothing,AbstractDataProvider}=nothing, eval_metric::AbstractEvalMetric=Accuracy(),
             callbacks::AbstractVector=AbstractCallback[], verbosity::Integer=1)
    shapes = _input_shapes(data)
    data_names = [n for (n, _) in provide_data(data)]
    label_names = [n for (n, _) in provide_label(data)]
    arg_names = list_arguments(self.arch)
    param_names = [n for n in arg_names if !(n in data_names) && !(n in label_names)]
    for n in vcat(data_names, label_names)
        n in arg_names || throw(ArgumentError("Weft: the network has no input $n (its arguments: $(join(arg_names, ", ")))"))
    end
    grad_req = Dict(n => :write for n in param_names)
    exec = simple_bind(self.arch, self.ctx; grad_req=grad_req, shapes...)
    for n in param_names
        if haskey(self.arg_params, n)
            copyto!(exec.arg_dict[n], self.arg_params[n])
        else
            init(initializer, n, exec.arg_dict[n])
        end
    end
    for (n, a) in exec.aux_dict
        haskey(self.aux_params, n) ? copyto!(a, self.aux_params[n]) : init(initializer, n, a)
    end

    batch_size = get_batch_size(data)
    optimizer.rescale_grad = 1.0 / batch_size
    states = Dict(n => create_state(optimizer, i, exec.arg_dict[n]) for (i, n) in enumerate(param_names))
    state = OptimizationState(batch_size, 0, 0, 0)
    for cb in callbacks
        _run(cb, self, state, eval_metric)
    end
    for epoch in 1:n_epoch
        state.curr_epoch = epoch
        state.curr_batch = 0
        reset!(eval_metric)
        for cb in callbacks
            _run(cb, state)
        end
        t0 = time()
        for batch in data
            for (n, a) in zip(data_names, batch.data)
                copyto!(exec.arg_dict[n], a)
            end
            for (n, a) in zip(label_names, batch.label)
                copyto!(exec.arg_dict[n], a)
            end
            forward(exec; is_train=true)
            backward(exec)
            for (i, n) in enumerate(param_names)
                update!(optimizer, i, exec.arg_dict[n], exec.grad_dict[n], states[n])
            end
            _update_metric!(eval_metric, batch, exec.outputs)
            state.curr_batch += 1
            state.curr_iter += 1
            for cb in callbacks
                _run(cb, state)
            end
        end
        if verbosity > 0
            for (name, value) in get(eval_metric)
                @printf("Epoch %d: train %s = %.4f (%.1f s)\n", epoch, name, value, time() - t0)
            end
        end
        self.arg_params = _snapshot(exec.arg_dict, param_names)
        self.aux_params = _snapshot(exec.aux_dict, collect(keys(exec.aux_dict)))
        if eval_data !== nothing
            metric = score(self, eval_data, typeof(eval_metric)())
            if verbosity > 0
                for (name, value) in get(metric)
                    @printf("Epoch %d: validation %s = %.4f\n", epoch, name, value)
                end
            end
        end
        for cb in callbacks
            _run(cb, self, state, eval_metric)
        end
    end
    return self
end

function _update_metric!(metric::AbstractEvalMetric, batch::DataBatch, outputs::Vector{NDArray})
    isempty(batch.label) && return
    out = copy(outputs[1])
    n = size(out)[end] - batch.pad
    update!(metric, copy(batch.label[1]), out; n=n)
end

# An executor for inference on `data`'s batch shapes, with the model's parameters.
function _inference_executor(self::FeedForward, data::AbstractDataProvider)
    isempty(self.arg_params) && throw(ArgumentError("Weft: the model has no parameters: fit or load it first"))
    shapes = Dict{Symbol,Tuple}(provide_data(data))
    exec = simple_bind(self.arch, self.ctx; grad_req=:null, shapes...)
    for (n, a) in exec.arg_dict
        if haskey(self.arg_params, n)
            copyto!(a, self.arg_params[n])
        elseif !haskey(shapes, n)
            # A label input of a loss layer: inference does not read it.
            fill!(a, 0)
        end
    end
    for (n, a) in exec.aux_dict
        haskey(self.aux_params, n) || throw(ArgumentError("Weft: the model has no auxiliary state $n"))
        copyto!(a, self.aux_params[n])
    end
    return exec
end

"""
    predict(model, data) -> Array

The network's first output for every sample of `data` (padding dropped), as a Julia array
with samples along the last dimension (classes × samples for a classifier).
"""
function predict(self::FeedForward, data::AbstractDataProvider)
    exec = _inference_executor(self, data)
    names = [n for (n, _) in provide_data(data)]
    parts = Array[]
    for batch in data
        for (n, a) in zip(names, batch.data)
            copyto!(exec.arg_dict[n], a)
        end
        forward(exec; is_train=false)
        out = copy(exec.outputs[1])
        keep = size(out)[end] - batch.pad
        push!(parts, copy(selectdim(out, ndims(out), 1:keep)))
    end
    isempty(parts) && throw(ArgumentError("Weft: predict: the data provider gave no batch"))
    return cat(parts...; dims=ndims(parts[1]))
end

"""
    score(model, data, metric=Accuracy()) -> metric

Evaluates `metric` over every batch of `data` with the model's parameters.
"""
function score(self::FeedForward, data::AbstractDataProvider, metric::AbstractEvalMetric=Accuracy())
    exec = _inference_executor(self, data)
    names = [n for (n, _) in provide_data(data)]
    reset!(metric)
    for batch in data
        for (n, a) in zip(names, batch.data)
            copyto!(exec.arg_dict[n], a)
        end
        forward(exec; is_train=false)
        _update_metric!(metric, batch, exec.outputs)
    end
    return metric
end

# ---------------------------------------------------------------- checkpoints

"""
    save_checkpoint(sym, arg_params, aux_params, prefix, epoch)
    save_checkpoint(model::FeedForward, prefix, epoch)

Writes `prefix-symbol.json` and `prefix-%04d.params` (epoch), the parameters named
`arg:<name>` and `aux:<name>`: the files Weft's Python `model.save_checkpoint` writes and
`load_checkpoint` reads.
"""
function save_checkpoint(sym::SymbolicNode, arg_params::AbstractDict, aux_params::AbstractDict,
                         prefix::AbstractString, epoch::Integer)
    save("$prefix-symbol.json", sym)
    params = Dict{String,NDArray}()
    for (k, v) in arg_params
        params["arg:$k"] = v
    end
    for (k, v) in aux_params
        params["aux:$k"] = v
    end
    save(@sprintf("%s-%04d.params", prefix, epoch), params)
    return nothing
end
save_checkpoint(model::FeedForward, prefix::AbstractString, epoch::Integer) =
    save_checkpoint(model.arch, model.arg_params, model.aux_params, prefix, epoch)
save_checkpoint(model::FeedForward, prefix::AbstractString, state::OptimizationState) =
    save_checkpoint(model, prefix, state.curr_epoch)

"""
    load_checkpoint(prefix, epoch) -> (sym, arg_params, aux_params)
    load_checkpoint(prefix, epoch, FeedForward; context=cpu()) -> FeedForward

Reads what `save_checkpoint` (in any of Weft's languages) wrote.
"""
function load_checkpoint(prefix::AbstractString, epoch::Integer)
    fname = "$prefix-symbol.json"
    isfile(fname) || throw(ArgumentError("Weft: symbol file $fname does not exist"))
    sym = load(fname, SymbolicNode)
    pname = @sprintf("%s-%04d.params", prefix, epoch)
    saved = load(pname, NDArray)
    saved isa AbstractDict ||
        throw(ArgumentError("Weft: $pname holds an unnamed list of arrays; a checkpoint names each 'arg:<name>' or 'aux:<name>'"))
    arg_params, aux_params = Dict{Symbol,NDArray}(), Dict{Symbol,NDArray}()
    for (k, v) in saved
        kind, _, name = _partition_colon(String(k))
        if kind == "arg" && !isempty(name)
            arg_params[Symbol(name)] = v
        elseif kind == "aux" && !isempty(name)
            aux_params[Symbol(name)] = v
        else
            throw(ArgumentError("Weft: $pname: the key $(repr(String(k))) is neither 'arg:<name>' nor 'aux:<name>'"))
        end
    end
    return sym, arg_params, aux_params
end

# ("arg", ":", "fc1_weight") for "arg:fc1_weight": split at the first colon.
function _partition_colon(s::String)
    i = findfirst(':', s)
    i === nothing && return ("", "", s)
    return (s[1:prevind(s, i)], ":", s[nextind(s, i):end])
end

function load_checkpoint(prefix::AbstractString, epoch::Integer, ::Type{FeedForward}; context::Context=cpu())
    sym, arg_params, aux_params = load_checkpoint(prefix, epoch)
    model = FeedForward(sym; context=context)
    model.arg_params = arg_params
    model.aux_params = aux_params
    return model
end
