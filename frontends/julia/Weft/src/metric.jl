# Evaluation metrics (MXNet.jl's names): update! with a batch's labels and outputs (Julia
# arrays read from NDArrays), get for (name, value) pairs, reset!.

abstract type AbstractEvalMetric end

"""
    Accuracy()

The fraction of samples whose largest output is at the label's index (labels are class
numbers from 0).
"""
mutable struct Accuracy <: AbstractEvalMetric
    correct::Int
    total::Int
end
Accuracy() = Accuracy(0, 0)

"""
    update!(metric, labels::Array, outputs::Array; n=size(outputs)[end])

Adds the first `n` samples of a batch: `outputs` of Julia size (classes, batch) and
`labels` (batch).
"""
function update!(m::Accuracy, labels::AbstractArray, outputs::AbstractMatrix; n::Integer=size(outputs, 2))
    for j in 1:n
        predicted = argmax(view(outputs, :, j)) - 1
        m.correct += predicted == round(Int, labels[j])
        m.total += 1
    end
    return m
end
Base.get(m::Accuracy) = [(:accuracy, m.total == 0 ? NaN : m.correct / m.total)]
reset!(m::Accuracy) = (m.correct = 0; m.total = 0; m)

"""
    MSE()

The mean squared error between outputs and labels of the same length per sample.
"""
mutable struct MSE <: AbstractEvalMetric
    sum::Float64
    total::Int
end
MSE() = MSE(0.0, 0)
function update!(m::MSE, labels::AbstractArray, outputs::AbstractArray; n::Integer=size(outputs)[end])
    o = reshape(outputs, :, size(outputs)[end])
    l = reshape(labels, :, size(labels)[end])
    size(o, 1) == size(l, 1) || throw(DimensionMismatch("Weft: MSE of outputs $(size(outputs)) and labels $(size(labels))"))
    for j in 1:n
        m.sum += Base.sum(abs2, view(o, :, j) .- view(l, :, j)) / size(o, 1)
        m.total += 1
    end
    return m
end
Base.get(m::MSE) = [(:mse, m.total == 0 ? NaN : m.sum / m.total)]
reset!(m::MSE) = (m.sum = 0.0; m.total = 0; m)
