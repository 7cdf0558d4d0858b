package weft

import (
	"fmt"
	"math"
)

// Float16 is an IEEE half-precision value, as its 16 bits (Go has no float16 type).
type Float16 uint16

// BFloat16 is a bfloat16 value, as its 16 bits (the top half of a float32).
type BFloat16 uint16

// Element is every Go type that holds one element of a Weft dtype.
type Element interface {
	float32 | float64 | Float16 | BFloat16 | uint8 | int8 | int32 | int64 | bool
}

var dtypeNames = map[DType]string{
	DTypeFloat32: "float32", DTypeFloat64: "float64", DTypeFloat16: "float16", DTypeBFloat16: "bfloat16",
	DTypeUint8: "uint8", DTypeInt8: "int8", DTypeInt32: "int32", DTypeInt64: "int64", DTypeBool: "bool",
}

var dtypeSizes = map[DType]int{
	DTypeFloat32: 4, DTypeFloat64: 8, DTypeFloat16: 2, DTypeBFloat16: 2,
	DTypeUint8: 1, DTypeInt8: 1, DTypeInt32: 4, DTypeInt64: 8, DTypeBool: 1,
}

// String is the dtype's name as operators' parameters and MXNet write it ("float32").
func (d DType) String() string {
	if n, ok := dtypeNames[d]; ok {
		return n
	}
	return fmt.Sprintf("dtype(%d)", int(d))
}

// Size is the size of one element in bytes (0 for an unknown dtype).
func (d DType) Size() int { return dtypeSizes[d] }

// DTypeOf is the dtype whose elements the Go type T holds.
func DTypeOf[T Element]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return DTypeFloat32
	case float64:
		return DTypeFloat64
	case Float16:
		return DTypeFloat16
	case BFloat16:
		return DTypeBFloat16
	case uint8:
		return DTypeUint8
	case int8:
		return DTypeInt8
	case int32:
		return DTypeInt32
	case int64:
		return DTypeInt64
	default:
		return DTypeBool
	}
}

// Float16FromFloat32 rounds f to the nearest half-precision value (ties to even).
func Float16FromFloat32(f float32) Float16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b >> 23) & 0xff)
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // inf or NaN
		if mant != 0 {
			return Float16(sign | 0x7e00)
		}
		return Float16(sign | 0x7c00)
	case exp-127+15 >= 0x1f: // too large: inf
		return Float16(sign | 0x7c00)
	case exp-127+15 <= 0: // a subnormal half (or zero): m * 2^(exp-150) in units of 2^-24
		shift := uint(14 - (exp - 127 + 15))
		if shift > 24 {
			return Float16(sign)
		}
		m := mant | 0x800000
		half := m >> shift
		rest := m & ((1 << shift) - 1)
		mid := uint32(1) << (shift - 1)
		if rest > mid || (rest == mid && half&1 == 1) {
			half++ // may become the smallest normal, which is the right rounding
		}
		return Float16(sign | uint16(half))
	}
	e := uint16(exp - 127 + 15)
	half := uint32(e)<<10 | mant>>13
	rest := mant & 0x1fff
	if rest > 0x1000 || (rest == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, which is the right rounding
	}
	return Float16(sign | uint16(half))
}

// Float32 is the value of h as a float32 (exact).
func (h Float16) Float32() float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		f := float32(mant) / 1024 / 16384 // mant * 2^-24
		if sign != 0 {
			return -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// BFloat16FromFloat32 rounds f to the nearest bfloat16 value (ties to even).
func BFloat16FromFloat32(f float32) BFloat16 {
	b := math.Float32bits(f)
	if b&0x7f800000 == 0x7f800000 && b&0x7fffff != 0 {
		return BFloat16(b>>16 | 0x40) // keep NaN a NaN
	}
	b += 0x7fff + (b>>16)&1
	return BFloat16(b >> 16)
}

// Float32 is the value of h as a float32 (exact).
func (h BFloat16) Float32() float32 { return math.Float32frombits(uint32(h) << 16) }

// Context names a device: CPU(), GPU(i), CPUPinned(), CPUShared(i).
type Context struct {
	DeviceType DeviceType
	DeviceID   int
}

// CPU is the host.
func CPU() Context { return Context{DeviceType: DeviceTypeCPU} }

// GPU is the i-th CUDA device.
func GPU(i int) Context { return Context{DeviceType: DeviceTypeGPU, DeviceID: i} }

// CPUPinned is page-locked host memory.
func CPUPinned() Context { return Context{DeviceType: DeviceTypeCPUPinned} }

// CPUShared is host memory that other processes can map (MXNet's cpu_shared, device type
// 5): each array made there is a shared-memory segment (see weft_ndarray_get_shared_mem).
// Operators use it as CPU memory, and its arrays mix with CPU arrays in one call.
func CPUShared(i int) Context { return Context{DeviceType: DeviceTypeCPUShared, DeviceID: i} }

// String is the context as operators' "ctx" parameter and MXNet write it ("cpu(0)").
func (c Context) String() string {
	switch c.DeviceType {
	case DeviceTypeGPU:
		return fmt.Sprintf("gpu(%d)", c.DeviceID)
	case DeviceTypeCPUPinned:
		return fmt.Sprintf("cpu_pinned(%d)", c.DeviceID)
	case DeviceTypeCPUShared:
		return fmt.Sprintf("cpu_shared(%d)", c.DeviceID)
	}
	return fmt.Sprintf("cpu(%d)", c.DeviceID)
}
