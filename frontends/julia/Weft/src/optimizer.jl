# Optimizers: each update is one fused registry operator writing the weight (and its
# state) in place, as Weft's Python optimizers do.

abstract type AbstractOptimizer end

"""
    SGD(; lr=0.01, momentum=0.0, weight_decay=0.0001, grad_clip=0, rescale_grad=1.0)

Stochastic gradient descent with momentum: mom = momentum*mom - lr*(rescale_grad*grad +
weight_decay*weight); weight += mom (`sgd_mom_update`; `sgd_update` without momentum).
`grad_clip > 0` clips the rescaled gradient to [-grad_clip, grad_clip]. `fit` sets
`rescale_grad` to 1/batch_size.
"""
mutable struct SGD <: AbstractOptimizer
    lr::Float64
    momentum::Float64
    weight_decay::Float64
    grad_clip::Float64
    rescale_grad::Float64
end
function SGD(; lr::Real=0.01, momentum::Real=0.0, weight_decay::Real=0.0001, grad_clip::Real=0, rescale_grad::Real=1.0)
    lr > 0 || throw(ArgumentError("Weft: SGD needs lr > 0, got $lr"))
    0 <= momentum < 1 || throw(ArgumentError("Weft: SGD needs 0 <= momentum < 1, got $momentum"))
    return SGD(lr, momentum, weight_decay, grad_clip, rescale_grad)
end

"""
    create_state(opt, index, weight) -> state

The optimizer's state for one parameter (SGD: the momentum, or `nothing`).
"""
create_state(opt::SGD, index, weight::NDArray) =
    opt.momentum == 0 ? nothing : zeros(eltype(weight), size(weight); ctx=context(weight))

"""
    update!(opt, index, weight, grad, state)

Applies one step to `weight` (in place).
"""
function update!(opt::SGD, index, weight::NDArray, grad::NDArray, state)
    clip = opt.grad_clip > 0 ? opt.grad_clip : -1.0
    if state === nothing
        _invoke_op(_op_sgd_update, (weight, grad); out=weight, lr=opt.lr, wd=opt.weight_decay,
                   rescale_grad=opt.rescale_grad, clip_gradient=clip)
    else
        _invoke_op(_op_sgd_mom_update, (weight, grad, state); out=weight, lr=opt.lr, momentum=opt.momentum,
                   wd=opt.weight_decay, rescale_grad=opt.rescale_grad, clip_gradient=clip)
    end
    return weight
end
