# Autograd on NDArrays (MXNet.jl's mx.attach_grad!, mx.record, mx.backward!, mx.getgrad).

"""
    attach_grad!(x::NDArray; grad_req=:write) -> x

Marks `x` as a variable of recorded computations and gives it a zero gradient array
(`grad_req` `:write` or `:add`).
"""
function attach_grad!(x::NDArray; grad_req::Symbol=:write)
    g = zeros(eltype(x), size(x); ctx=context(x))
    vars, grads = [x], [g]
    GC.@preserve vars grads begin
        _with_cstrings([String(grad_req)]) do reqs
            check(weft_autograd_mark_variables(1, _handles(vars), reqs, _handles(grads)))
        end
    end
    return x
end

"""
    getgrad(x::NDArray) -> Union{NDArray,Nothing}

The gradient array of a variable (`nothing` when `x` is not one).
"""
function getgrad(x::NDArray)
    out = Ref{Ptr{weft_ndarray_t}}(C_NULL)
    check(weft_ndarray_get_grad(x, out))
    return out[] == C_NULL ? nothing : NDArray(out[])
end

"""
    record(f; train_mode=true)

Runs `f()` with recording on (and training mode as `train_mode` says), restoring both
states afterwards; returns what `f` returns. Use as `y = mx.record() do ... end`.
"""
function record(f; train_mode::Bool=true)
    prev_rec, prev_train = Ref{Cint}(0), Ref{Cint}(0)
    check(weft_autograd_set_is_recording(1, prev_rec))
    check(weft_set_is_training(train_mode, prev_train))
    try
        return f()
    finally
        check(weft_set_is_training(prev_train[], C_NULL))
        check(weft_autograd_set_is_recording(prev_rec[], C_NULL))
    end
end

"""
    is_recording() -> Bool, is_training() -> Bool
"""
is_recording() = (r = Ref{Cint}(0); check(weft_autograd_is_recording(r)); r[] != 0)
is_training() = (r = Ref{Cint}(0); check(weft_is_training(r)); r[] != 0)

"""
    backward!(head::NDArray, head_grad=nothing; retain_graph=false, train_mode=true)

Runs backward from a recorded result; gradients land in the arrays of `attach_grad!`.
"""
function backward!(head::NDArray, head_grad::Union{NDArray,Nothing}=nothing;
                   retain_graph::Bool=false, train_mode::Bool=true)
    heads = [head]
    hgrads = head_grad === nothing ? nothing : [head_grad]
    nout = Ref{Cint}(0)
    outs = Ref{Ptr{Ptr{weft_ndarray_t}}}(C_NULL)
    GC.@preserve heads hgrads begin
        check(weft_autograd_backward(1, _handles(heads), hgrads === nothing ? C_NULL : _handles(hgrads),
                                     0, C_NULL, retain_graph, false, train_mode, nout, outs))
    end
    return nothing
end
