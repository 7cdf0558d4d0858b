# RecordIO files (MXNet's .rec), image records and image coding: enough to write the
# records ImageRecordIter reads and to read any .rec back. Images are Weft's (H, W, C) uint8
# arrays, so Julia sees them as (C, W, H): channels first, then columns, then rows.

"""
    MXRecordIO(path, mode)

A RecordIO file opened for writing (`:w`, created or truncated) or reading (`:r`).
`write(rec, bytes)` appends a record, `read(rec)` gives the next one (`nothing` at the
end), `position(rec)` / `seek(rec, pos)` use record offsets (what `.idx` files hold),
`close(rec)` flushes and closes (a failed flush throws).
"""
mutable struct MXRecordIO
    handle::Ptr{weft_recordio_t}
    path::String
end

function MXRecordIO(path::AbstractString, mode::Symbol)
    mode in (:r, :w) || throw(ArgumentError("Weft: MXRecordIO mode must be :r or :w, got :$mode"))
    out = Ref{Ptr{weft_recordio_t}}(C_NULL)
    check(mode === :w ? weft_recordio_writer_create(path, out) : weft_recordio_reader_create(path, out))
    rec = MXRecordIO(out[], String(path))
    finalizer(_free_recordio, rec)
    return rec
end

function _free_recordio(rec::MXRecordIO)
    h = rec.handle
    rec.handle = C_NULL
    h == C_NULL || weft_recordio_free(h)
    return nothing
end

Base.unsafe_convert(::Type{Ptr{weft_recordio_t}}, rec::MXRecordIO) = rec.handle
Base.show(io::IO, rec::MXRecordIO) = print(io, "MXRecordIO(", repr(rec.path), rec.handle == C_NULL ? ", closed)" : ")")

function Base.close(rec::MXRecordIO)
    h = rec.handle
    rec.handle = C_NULL
    check(weft_recordio_free(h))
    return nothing
end

function Base.write(rec::MXRecordIO, data::AbstractVector{UInt8})
    bytes = Vector{UInt8}(data)
    check(weft_recordio_write(rec, bytes, length(bytes)))
    return length(bytes)
end

# Copies library-owned bytes into a Vector and frees them.
function _take_bytes(b::Ptr{weft_bytes_t})
    data, size = Ref{Ptr{Cvoid}}(C_NULL), Ref{Csize_t}(0)
    try
        check(weft_bytes_get(b, data, size))
        out = Vector{UInt8}(undef, size[])
        size[] > 0 && unsafe_copyto!(pointer(out), Ptr{UInt8}(data[]), size[])
        return out
    finally
        weft_bytes_free(b)
    end
end

function Base.read(rec::MXRecordIO)
    out = Ref{Ptr{weft_bytes_t}}(C_NULL)
    check(weft_recordio_read(rec, out))
    return out[] == C_NULL ? nothing : _take_bytes(out[])
end

Base.position(rec::MXRecordIO) = (r = Ref{Int64}(0); check(weft_recordio_tell(rec, r)); Int(r[]))
Base.seek(rec::MXRecordIO, pos::Integer) = (check(weft_recordio_seek(rec, pos)); rec)

"""
    pack(label, id, payload; id2=0) -> Vector{UInt8}

An image record as MXNet's `recordio.pack` writes it: the 24-byte header (flag, label as
Float32, id, id2; little-endian), then the payload. A vector label is stored after the
header (flag = its length, the header's label 0).
"""
function pack(label::Union{Real,AbstractVector{<:Real}}, id::Integer, payload::AbstractVector{UInt8}; id2::Integer=0)
    io = IOBuffer()
    multi = label isa AbstractVector
    write(io, htol(UInt32(multi ? length(label) : 0)), htol(Float32(multi ? 0 : label)), htol(UInt64(id)),
          htol(UInt64(id2)))
    if multi
        for l in label
            write(io, htol(Float32(l)))
        end
    end
    write(io, payload)
    return take!(io)
end

"""
    unpack(record) -> (label, id, id2, payload)

The parts of an image record (`label` a Float32, or a Vector{Float32} for several labels).
"""
function unpack(record::AbstractVector{UInt8})
    length(record) >= 24 ||
        throw(ArgumentError("Weft: an image record of $(length(record)) bytes is shorter than its 24-byte header"))
    io = IOBuffer(record)
    flag = ltoh(read(io, UInt32))
    label = ltoh(read(io, Float32))
    id, id2 = ltoh(read(io, UInt64)), ltoh(read(io, UInt64))
    if flag > 0
        length(record) >= 24 + 4flag ||
            throw(ArgumentError("Weft: an image record announces $flag labels but holds $(length(record) - 24) bytes after its header"))
        labels = Float32[ltoh(read(io, Float32)) for _ in 1:flag]
        return (label=labels, id=id, id2=id2, payload=read(io))
    end
    return (label=label, id=id, id2=id2, payload=read(io))
end

"""
    imencode(img::NDArray, format=".png"; quality=95, is_bgr=false) -> Vector{UInt8}

Encodes a UInt8 image (Julia size (C, W, H) or (W, H); C 1, 3 or 4) as ".png" or ".jpg"
(quality 0..100 for JPEG, the zlib level for PNG); `is_bgr` says the channels are in
OpenCV's order.
"""
function imencode(img::NDArray, format::AbstractString=".png"; quality::Integer=95, is_bgr::Bool=false)
    out = Ref{Ptr{weft_bytes_t}}(C_NULL)
    check(weft_image_encode(img, format, quality, is_bgr, out))
    return _take_bytes(out[])
end

"""
    imdecode(bytes; flag=1, to_rgb=true) -> NDArray

Decodes a JPEG or PNG into a UInt8 NDArray of Julia size (C, W, H): `flag` 1 colour (C = 3),
0 grey (C = 1), -1 as stored; colour channels RGB, or BGR with `to_rgb=false`.
"""
function imdecode(bytes::AbstractVector{UInt8}; flag::Integer=1, to_rgb::Bool=true)
    data = Vector{UInt8}(bytes)
    out = Ref{Ptr{weft_ndarray_t}}(C_NULL)
    check(weft_image_decode(data, length(data), flag, to_rgb, out))
    return NDArray(out[])
end

"""
    imresize(img::NDArray, width, height; interp=1) -> NDArray

Resizes a UInt8 image; `interp` as OpenCV: 0 nearest, 1 bilinear, 2 bicubic, 3 area.
"""
function imresize(img::NDArray, width::Integer, height::Integer; interp::Integer=1)
    out = Ref{Ptr{weft_ndarray_t}}(C_NULL)
    check(weft_image_resize(img, width, height, interp, out))
    return NDArray(out[])
end
