# The C API returns lists and inference results as JSON text and takes shapes as JSON
# objects. Julia's standard library has no JSON module and the package depends on the
# standard library only, so this file reads and writes the small subset the API uses
# (objects, arrays, strings, numbers, true/false/null) exactly.

struct _JSONReader
    s::String
    pos::Base.RefValue{Int}
end

function _json_parse(text::AbstractString)
    r = _JSONReader(String(text), Ref(1))
    value = _json_value(r)
    _json_skip(r)
    r.pos[] <= ncodeunits(r.s) && _json_fail(r, "trailing text")
    return value
end

_json_fail(r::_JSONReader, what) = throw(ArgumentError("Weft: bad JSON from the library at byte $(r.pos[]): $what"))

function _json_skip(r::_JSONReader)
    s, n = r.s, ncodeunits(r.s)
    while r.pos[] <= n && codeunit(s, r.pos[]) in (0x20, 0x09, 0x0a, 0x0d)
        r.pos[] += 1
    end
end

function _json_peek(r::_JSONReader)
    _json_skip(r)
    r.pos[] > ncodeunits(r.s) && _json_fail(r, "unexpected end")
    return Char(codeunit(r.s, r.pos[]))
end

function _json_expect(r::_JSONReader, c::Char)
    _json_peek(r) == c || _json_fail(r, "expected '$c'")
    r.pos[] += 1
end

function _json_value(r::_JSONReader)
    c = _json_peek(r)
    if c == '{'
        r.pos[] += 1
        d = Dict{String,Any}()
        if _json_peek(r) == '}'
            r.pos[] += 1
            return d
        end
        while true
            key = _json_string(r)
            _json_expect(r, ':')
            d[key] = _json_value(r)
            c = _json_peek(r)
            r.pos[] += 1
            c == '}' && return d
            c == ',' || _json_fail(r, "expected ',' or '}'")
        end
    elseif c == '['
        r.pos[] += 1
        v = Any[]
        if _json_peek(r) == ']'
            r.pos[] += 1
            return v
        end
        while true
            push!(v, _json_value(r))
            c = _json_peek(r)
            r.pos[] += 1
            c == ']' && return v
            c == ',' || _json_fail(r, "expected ',' or ']'")
        end
    elseif c == '"'
        return _json_string(r)
    elseif startswith(SubString(r.s, r.pos[]), "true")
        r.pos[] += 4
        return true
    elseif startswith(SubString(r.s, r.pos[]), "false")
        r.pos[] += 5
        return false
    elseif startswith(SubString(r.s, r.pos[]), "null")
        r.pos[] += 4
        return nothing
    else
        return _json_number(r)
    end
end

function _json_number(r::_JSONReader)
    s, n, start = r.s, ncodeunits(r.s), r.pos[]
    while r.pos[] <= n && Char(codeunit(s, r.pos[])) in "+-0123456789.eE"
        r.pos[] += 1
    end
    text = s[start:r.pos[]-1]
    isempty(text) && _json_fail(r, "unexpected character")
    v = tryparse(Int64, text)
    v === nothing || return v
    f = tryparse(Float64, text)
    f === nothing && _json_fail(r, "bad number $(repr(text))")
    return f
end

function _json_string(r::_JSONReader)
    _json_expect(r, '"')
    out = IOBuffer()
    s, n = r.s, ncodeunits(r.s)
    while true
        r.pos[] > n && _json_fail(r, "unterminated string")
        b = codeunit(s, r.pos[])
        if b == UInt8('"')
            r.pos[] += 1
            return String(take!(out))
        elseif b == UInt8('\\')
            e = Char(codeunit(s, r.pos[] + 1))
            r.pos[] += 2
            if e == 'u'
                code = parse(UInt16, s[r.pos[]:r.pos[]+3]; base=16)
                r.pos[] += 4
                if 0xd800 <= code <= 0xdbff && r.pos[] + 5 <= n && s[r.pos[]:r.pos[]+1] == "\\u"
                    low = parse(UInt16, s[r.pos[]+2:r.pos[]+5]; base=16)
                    r.pos[] += 6
                    print(out, Char(0x10000 + ((UInt32(code) - 0xd800) << 10) + (UInt32(low) - 0xdc00)))
                else
                    print(out, Char(code))
                end
            else
                print(out, get(Dict('n' => '\n', 't' => '\t', 'r' => '\r', 'b' => '\b', 'f' => '\f'), e, e))
            end
        else
            write(out, b)
            r.pos[] += 1
        end
    end
end

# Writing: only what the package sends (string keys, strings, integers, lists, objects).
_json_write(io::IO, s::AbstractString) = (print(io, '"'); _json_escape(io, s); print(io, '"'))
_json_write(io::IO, v::Integer) = print(io, Int64(v))
function _json_write(io::IO, v::Union{Tuple,AbstractVector})
    print(io, '[')
    for (i, x) in enumerate(v)
        i > 1 && print(io, ", ")
        _json_write(io, x)
    end
    print(io, ']')
end
function _json_write(io::IO, d::AbstractDict)
    print(io, '{')
    for (i, (k, v)) in enumerate(d)
        i > 1 && print(io, ", ")
        _json_write(io, string(k))
        print(io, ": ")
        _json_write(io, v)
    end
    print(io, '}')
end

function _json_escape(io::IO, s::AbstractString)
    for c in s
        if c == '"' || c == '\\'
            print(io, '\\', c)
        elseif c < ' '
            @printf(io, "\\u%04x", UInt32(c))
        else
            print(io, c)
        end
    end
end

_json_text(v) = sprint(_json_write, v)
