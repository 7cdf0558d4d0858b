# Parameter initialisers (MXNet.jl's names). Values are drawn with Julia's global RNG
# (seed it with Random.seed!) and copied in. As in MXNet, biases and betas start at 0,
# gammas at 1, moving means at 0 and moving variances at 1, whatever the initialiser.

abstract type AbstractInitializer end

"""
    init(initializer, name::Symbol, array::NDArray)

Fills the parameter `name` according to its role (by the suffix of its name) and the
initialiser's rule for weights.
"""
function init(self::AbstractInitializer, name::Symbol, array::NDArray)
    s = String(name)
    if endswith(s, "bias") || endswith(s, "beta") || endswith(s, "moving_mean") || endswith(s, "running_mean")
        fill!(array, 0)
    elseif endswith(s, "gamma") || endswith(s, "moving_var") || endswith(s, "running_var")
        fill!(array, 1)
    else
        init_weight(self, name, array)
    end
    return array
end

"""
    UniformInitializer(scale=0.07)

Weights uniform in [-scale, scale].
"""
struct UniformInitializer <: AbstractInitializer
    scale::Float64
end
UniformInitializer() = UniformInitializer(0.07)
init_weight(self::UniformInitializer, ::Symbol, a::NDArray) =
    copyto!(a, convert(Array{eltype(a)}, (rand(size(a)...) .* 2 .- 1) .* self.scale))

"""
    NormalInitializer(mu=0, sigma=0.01)

Weights normal with mean `mu` and standard deviation `sigma`.
"""
struct NormalInitializer <: AbstractInitializer
    mu::Float64
    sigma::Float64
end
NormalInitializer(; mu::Real=0, sigma::Real=0.01) = NormalInitializer(mu, sigma)
init_weight(self::NormalInitializer, ::Symbol, a::NDArray) =
    copyto!(a, convert(Array{eltype(a)}, randn(size(a)...) .* self.sigma .+ self.mu))

"""
    XavierInitializer(; distribution=:uniform, regularization=:avg, magnitude=3)

Glorot's scaling: with fan_in the size of one output unit's inputs and fan_out that of
one input's outputs, the scale is sqrt(magnitude / factor), factor being fan_in (`:in`),
fan_out (`:out`) or their mean (`:avg`); weights uniform in [-scale, scale] or normal
with that standard deviation.
"""
struct XavierInitializer <: AbstractInitializer
    distribution::Symbol
    regularization::Symbol
    magnitude::Float64
end
XavierInitializer(; distribution::Symbol=:uniform, regularization::Symbol=:avg, magnitude::Real=3) =
    XavierInitializer(distribution, regularization, magnitude)

function init_weight(self::XavierInitializer, name::Symbol, a::NDArray)
    dims = size(a)  # Julia order: (inputs per unit..., outputs)
    length(dims) >= 2 || throw(ArgumentError("Weft: Xavier needs a weight of 2 or more dims; $name has size $dims"))
    receptive = prod(dims[1:end-2]; init=1)
    fan_in = dims[end-1] * receptive
    fan_out = dims[end] * receptive
    factor = self.regularization === :in ? fan_in : self.regularization === :out ? fan_out : (fan_in + fan_out) / 2
    scale = sqrt(self.magnitude / factor)
    values = self.distribution === :uniform ? (rand(dims...) .* 2 .- 1) .* scale : randn(dims...) .* scale
    copyto!(a, convert(Array{eltype(a)}, values))
end
