// Idiomatic Go on top of the functions SWIG generates from frontends/swig/weft.i: arrays
// are values with methods, failures are errors, host data are []float32.
package weft

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
)

// NDArray is a Weft array. Its memory lives in the library until Free is called.
type NDArray struct {
	handle SwigcptrStruct_SS_weft_ndarray
}

// Context names a device.
type Context struct {
	DeviceType int // WEFT_DEVICE_CPU, WEFT_DEVICE_GPU, ...
	DeviceID   int
}

// CPU is the host context.
var CPU = Context{DeviceType: int(WEFT_DEVICE_CPU)}

func (c Context) swig() Weft_context_t {
	ctx := NewWeft_context_t()
	ctx.SetDevice_type(c.DeviceType)
	ctx.SetDevice_id(c.DeviceID)
	return ctx
}

// NewFloat32 makes a float32 array of the given shape on ctx holding values, which are
// in row-major order and must number the product of the shape's dims.
func NewFloat32(ctx Context, shape []int64, values []float32) (*NDArray, error) {
	size := int64(1)
	for _, d := range shape {
		size *= d
	}
	if int64(len(values)) != size {
		return nil, fmt.Errorf("weft.NewFloat32: shape %v holds %d values, got %d", shape, size, len(values))
	}
	swigCtx := ctx.swig()
	defer DeleteWeft_context_t(swigCtx)
	var dims *int64
	if len(shape) > 0 {
		dims = &shape[0]
	}
	a := &NDArray{}
	if err := Weft_ndarray_create(dims, len(shape), int(WEFT_DTYPE_FLOAT32), swigCtx, &a.handle); err != nil {
		return nil, err
	}
	if err := Weft_ndarray_copy_from_host(a.handle, float32Bytes(values)); err != nil {
		a.Free()
		return nil, err
	}
	return a, nil
}

// Shape returns the array's dims.
func (a *NDArray) Shape() ([]int64, error) {
	ndim := []int{0}
	if err := Weft_ndarray_get_ndim(a.handle, ndim); err != nil {
		return nil, err
	}
	dims := make([]int64, ndim[0]+1) // never empty, so &dims[0] is valid for 0-d arrays
	if err := Weft_ndarray_get_shape(a.handle, &dims[0], ndim[0], ndim); err != nil {
		return nil, err
	}
	return dims[:ndim[0]], nil
}

// Float32s waits for pending writes and returns the values of a float32 array in
// row-major order.
func (a *NDArray) Float32s() ([]float32, error) {
	var size int64
	if err := Weft_ndarray_get_size(a.handle, &size); err != nil {
		return nil, err
	}
	b := make([]byte, 4*size)
	if err := Weft_ndarray_copy_to_host(a.handle, b); err != nil {
		return nil, err
	}
	values := make([]float32, size)
	for i := range values {
		values[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return values, nil
}

// Free releases the array; using it afterwards is an error reported by the library.
func (a *NDArray) Free() error {
	return Weft_ndarray_free(a.handle)
}

// Invoke runs the registered operator `op` on inputs with string parameters and returns
// its outputs, which the caller frees.
func Invoke(op string, inputs []*NDArray, params map[string]string) ([]*NDArray, error) {
	var opHandle SwigcptrStruct_SS_weft_op
	if err := Weft_op_get(op, &opHandle); err != nil {
		return nil, err
	}
	handles := make([]SwigcptrStruct_SS_weft_ndarray, len(inputs))
	for i, in := range inputs {
		handles[i] = in.handle
	}
	keys, vals := sortedParams(params)
	count := []int{0}
	var outputs uintptr
	if err := Weft_imperative_invoke(opHandle, len(handles), handles, len(keys), keys, vals, 0, nil, count, &outputs); err != nil {
		return nil, err
	}
	result := make([]*NDArray, count[0])
	for i := range result {
		result[i] = &NDArray{handle: SwigcptrStruct_SS_weft_ndarray(Weft_go_handle_at(outputs, i).Swigcptr())}
	}
	return result, nil
}

// sortedParams splits string parameters into parallel key and value slices, keys sorted so
// that calls are reproducible.
func sortedParams(params map[string]string) ([]string, []string) {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = params[k]
	}
	return keys, vals
}

// float32Bytes is the little-endian byte image of values, the layout the C API copies.
func float32Bytes(values []float32) []byte {
	b := make([]byte, 4*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}
