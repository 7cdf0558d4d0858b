# Training callbacks (MXNet.jl's names): batch callbacks run after every `frequency`
# batches with the OptimizationState; epoch callbacks after every `frequency` epochs with
# (model, state, metric).

"""
    OptimizationState

Where `fit` is: `curr_epoch` (from 1), `curr_batch` (from 1 in each epoch), `curr_iter`
(batches since the start) and `batch_size`.
"""
mutable struct OptimizationState
    batch_size::Int
    curr_epoch::Int
    curr_batch::Int
    curr_iter::Int
end

abstract type AbstractCallback end

struct BatchCallback <: AbstractCallback
    frequency::Int
    call_on_0::Bool
    callback::Function
end

struct EpochCallback <: AbstractCallback
    frequency::Int
    call_on_0::Bool
    callback::Function
end

"""
    every_n_batch(callback, n; call_on_0=false)

A batch callback calling `callback(state)` every `n` batches.
"""
every_n_batch(callback::Function, n::Integer; call_on_0::Bool=false) = BatchCallback(n, call_on_0, callback)

"""
    every_n_epoch(callback, n; call_on_0=false)

An epoch callback calling `callback(model, state, metric)` every `n` epochs (also before
training when `call_on_0`).
"""
every_n_epoch(callback::Function, n::Integer; call_on_0::Bool=false) = EpochCallback(n, call_on_0, callback)

function _run(cb::BatchCallback, state::OptimizationState)
    if (state.curr_batch == 0 && cb.call_on_0) || (state.curr_batch > 0 && state.curr_batch % cb.frequency == 0)
        cb.callback(state)
    end
end
_run(::EpochCallback, ::OptimizationState) = nothing

function _run(cb::EpochCallback, model, state::OptimizationState, metric)
    if (state.curr_epoch == 0 && cb.call_on_0) || (state.curr_epoch > 0 && state.curr_epoch % cb.frequency == 0)
        cb.callback(model, state, metric)
    end
end
_run(::BatchCallback, model, ::OptimizationState, metric) = nothing

"""
    speedometer(; frequency=50)

Prints the training speed (samples per second) every `frequency` batches.
"""
function speedometer(; frequency::Integer=50)
    start = Ref(0.0)
    every_n_batch(frequency; call_on_0=true) do state
        if state.curr_batch == 0
            start[] = time()
        else
            elapsed = time() - start[]
            @printf("Speed: %.2f samples/sec\n", frequency * state.batch_size / elapsed)
            start[] = time()
        end
    end
end

"""
    do_checkpoint(prefix; frequency=1, save_epoch_0=false)

Saves the model every `frequency` epochs as `prefix-symbol.json` and
`prefix-%04d.params` (see `save_checkpoint`).
"""
function do_checkpoint(prefix::AbstractString; frequency::Integer=1, save_epoch_0::Bool=false)
    every_n_epoch(frequency; call_on_0=save_epoch_0) do model, state, metric
        save_checkpoint(model, prefix, state)
    end
end
