# Devices: where arrays live and operators run.

"""
    Context(device_type, device_id=0)

A device: `cpu()`, `gpu(i)`, `Context(:cpu_pinned)` or `Context(:cpu_shared, i)`.
`device_type` is `:cpu`, `:gpu`, `:cpu_pinned` (page-locked host memory) or `:cpu_shared`
(host memory that other processes can map, MXNet's device type 5: each array made there is
a shared-memory segment; operators use it as CPU memory, and its arrays mix with CPU arrays
in one call).
"""
struct Context
    device_type::Symbol
    device_id::Int
    function Context(device_type::Symbol, device_id::Integer=0)
        device_type in (:cpu, :gpu, :cpu_pinned, :cpu_shared) ||
            throw(ArgumentError("Weft: device type must be :cpu, :gpu, :cpu_pinned or :cpu_shared, got :$device_type"))
        device_id >= 0 || throw(ArgumentError("Weft: device id must be >= 0, got $device_id"))
        return new(device_type, device_id)
    end
end

cpu(dev_id::Integer=0) = Context(:cpu, dev_id)
gpu(dev_id::Integer=0) = Context(:gpu, dev_id)

const _DEVICE_CODES = Dict(:cpu => WEFT_DEVICE_CPU, :gpu => WEFT_DEVICE_GPU, :cpu_pinned => WEFT_DEVICE_CPU_PINNED,
                           :cpu_shared => WEFT_DEVICE_CPU_SHARED)

Base.convert(::Type{weft_context_t}, c::Context) = weft_context_t(Int32(_DEVICE_CODES[c.device_type]), Int32(c.device_id))

function Context(c::weft_context_t)
    for (k, v) in _DEVICE_CODES
        v == c.device_type && return Context(k, c.device_id)
    end
    throw(ArgumentError("Weft: unknown device type code $(c.device_type)"))
end

Base.show(io::IO, c::Context) = print(io, c.device_type, "(", c.device_id, ")")
param_str(c::Context) = sprint(show, c)

"""
    num_gpus() -> Int

The number of GPUs Weft can use (0 in a build without CUDA).
"""
function num_gpus()
    n = Ref{Cint}(0)
    check(weft_get_gpu_count(n))
    return Int(n[])
end
