# Arithmetic on NDArrays and SymbolicNodes through the generated operators: `+ -` and
# `.+ .- .* ./ .^` elementwise (NDArrays of different sizes broadcast), scalars on either
# side, `*` and `/` by a scalar. Broadcast calls run one operator each (no fusion).

const _Operand = Union{NDArray,SymbolicNode}

# Same-size NDArrays take the elementwise operator; others the broadcasting one.
# SymbolicNodes have no shapes before binding: they always take the elementwise one.
_pick(elem::OpDef, bcast::OpDef, a::NDArray, b::NDArray) = size(a) == size(b) ? elem : bcast

_apply(op::OpDef, a::NDArray, b::NDArray) = _invoke_op(op, (a, b))
_apply(op::OpDef, a::SymbolicNode, b::SymbolicNode) = _compose_op(op, (a, b))
_apply_scalar(op::OpDef, a::NDArray, s::Real) = _invoke_op(op, (a,); scalar=s)
_apply_scalar(op::OpDef, a::SymbolicNode, s::Real) = _compose_op(op, (a,); scalar=s)

for (f, elem, bcast, scalar, rscalar) in (
        (:+, :_op_elemwise_add, :_op_broadcast_add, :_op__plus_scalar, :_op__plus_scalar),
        (:-, :_op_elemwise_sub, :_op_broadcast_sub, :_op__minus_scalar, :_op__rminus_scalar),
        (:*, :_op_elemwise_mul, :_op_broadcast_mul, :_op__mul_scalar, :_op__mul_scalar),
        (:/, :_op_elemwise_div, :_op_broadcast_div, :_op__div_scalar, :_op__rdiv_scalar))
    @eval begin
        Base.Broadcast.broadcasted(::typeof($f), a::NDArray, b::NDArray) = _apply(_pick($elem, $bcast, a, b), a, b)
        Base.Broadcast.broadcasted(::typeof($f), a::SymbolicNode, b::SymbolicNode) = _apply($elem, a, b)
        Base.Broadcast.broadcasted(::typeof($f), a::_Operand, s::Real) = _apply_scalar($scalar, a, s)
        Base.Broadcast.broadcasted(::typeof($f), s::Real, a::_Operand) = _apply_scalar($rscalar, a, s)
    end
end

Base.:+(a::NDArray, b::NDArray) = _apply(_pick(_op_elemwise_add, _op_broadcast_add, a, b), a, b)
Base.:+(a::SymbolicNode, b::SymbolicNode) = _apply(_op_elemwise_add, a, b)
Base.:+(a::_Operand, s::Real) = _apply_scalar(_op__plus_scalar, a, s)
Base.:+(s::Real, a::_Operand) = _apply_scalar(_op__plus_scalar, a, s)
Base.:-(a::NDArray, b::NDArray) = _apply(_pick(_op_elemwise_sub, _op_broadcast_sub, a, b), a, b)
Base.:-(a::SymbolicNode, b::SymbolicNode) = _apply(_op_elemwise_sub, a, b)
Base.:-(a::_Operand, s::Real) = _apply_scalar(_op__minus_scalar, a, s)
Base.:-(s::Real, a::_Operand) = _apply_scalar(_op__rminus_scalar, a, s)
Base.:-(a::NDArray) = _invoke_op(_op_negative, (a,))
Base.:-(a::SymbolicNode) = _compose_op(_op_negative, (a,))
Base.:*(a::_Operand, s::Real) = _apply_scalar(_op__mul_scalar, a, s)
Base.:*(s::Real, a::_Operand) = _apply_scalar(_op__mul_scalar, a, s)
Base.:/(a::_Operand, s::Real) = _apply_scalar(_op__div_scalar, a, s)

Base.Broadcast.broadcasted(::typeof(^), a::_Operand, s::Real) = _apply_scalar(_op__power_scalar, a, s)
Base.Broadcast.broadcasted(::typeof(Base.literal_pow), ::typeof(^), a::_Operand, ::Val{p}) where {p} =
    _apply_scalar(_op__power_scalar, a, p)

"""
    dot(a::NDArray, b::NDArray; transpose_a=false, transpose_b=false)

The matrix product in Julia's orientation: for Julia matrices `A` (m×k) and `B` (k×n)
held as NDArrays, `dot(A, B)` is the NDArray of `A * B` (m×n), and `transpose_a` means
`transpose(A) * B`. Weft holds each matrix transposed (dims reversed), and
transpose(A * B) = transpose(B) * transpose(A), so this runs the registry's `dot` on
(b, a) with the two transpose flags swapped.
"""
dot(a::NDArray, b::NDArray; transpose_a::Bool=false, transpose_b::Bool=false) =
    _invoke_op(_op_dot, (b, a); transpose_a=transpose_b, transpose_b=transpose_a)
