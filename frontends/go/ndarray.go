package weft

/*
#cgo pkg-config: weft
#include <weft/c_api.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// NDArray is an n-dimensional array held by Weft. Work on it is asynchronous: functions
// that create or change arrays return at once, and reading values (Values, Float32s,
// WaitToRead) waits for it.
//
// Close releases the array; a finalizer does it for arrays that become unreachable, but
// memory held by the library is invisible to Go's garbage collector, so close arrays in
// loops. Using a closed array is an error (ErrHandle), never a crash.
type NDArray struct {
	h *C.weft_ndarray_t
}

func newNDArray(h *C.weft_ndarray_t) *NDArray {
	if h == nil {
		return nil
	}
	a := &NDArray{h: h}
	runtime.SetFinalizer(a, (*NDArray).finalize)
	return a
}

func (a *NDArray) finalize() {
	C.weft_ndarray_free(a.h)
}

func (a *NDArray) handle() *C.weft_ndarray_t {
	if a == nil {
		return nil
	}
	return a.h
}

// Close releases the array's handle (views and pending work keep the memory as long as
// they need it). Closing twice, or a nil array, does nothing.
func (a *NDArray) Close() error {
	if a == nil || a.h == nil {
		return nil
	}
	runtime.SetFinalizer(a, nil)
	err := weft_ndarray_free(a.h)
	a.h = nil
	return err
}

// Empty is an array of the given shape, dtype and context with unset contents.
func Empty(shape []int, dtype DType, ctx Context) (*NDArray, error) {
	dims := int64s(shape)
	var h *C.weft_ndarray_t
	if err := weft_ndarray_create(int64Ptr(dims), C.int(len(dims)), C.int(dtype), cContext(ctx), &h); err != nil {
		return nil, err
	}
	return newNDArray(h), nil
}

// Zeros is a float32 CPU array of zeros.
func Zeros(shape ...int) (*NDArray, error) {
	return Full(0, DTypeFloat32, CPU(), shape...)
}

// Ones is a float32 CPU array of ones.
func Ones(shape ...int) (*NDArray, error) {
	return Full(1, DTypeFloat32, CPU(), shape...)
}

// Full is an array of the given dtype and context with every element value.
func Full(value float64, dtype DType, ctx Context, shape ...int) (*NDArray, error) {
	return invoke1("_full", nil, []string{"shape", "value", "dtype", "ctx"},
		[]string{FormatParam(shape), FormatParam(value), dtype.String(), ctx.String()})
}

// NewFrom is a CPU array holding a copy of data, in row-major order, of the given shape
// (default: one dimension of len(data)). Its dtype is the one of T (float32 -> float32,
// Float16 -> float16, bool -> bool, ...).
func NewFrom[T Element](data []T, shape ...int) (*NDArray, error) {
	if len(shape) == 0 {
		shape = []int{len(data)}
	}
	size := 1
	for _, d := range shape {
		if d < 0 {
			return nil, errorf(StatusShape, "NewFrom", "negative dimension in shape %v", shape)
		}
		size *= d
	}
	if size != len(data) {
		return nil, errorf(StatusShape, "NewFrom", "shape %v holds %d elements, but %d values were given",
			shape, size, len(data))
	}
	a, err := Empty(shape, DTypeOf[T](), CPU())
	if err != nil {
		return nil, err
	}
	if err := a.copyFrom(dataPtr(data), len(data)*DTypeOf[T]().Size()); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

func (a *NDArray) copyFrom(p unsafe.Pointer, nbytes int) error {
	err := weft_ndarray_copy_from_host(a.handle(), p, C.size_t(nbytes))
	runtime.KeepAlive(a)
	return err
}

// CopyFrom overwrites the array with data (len(data) = its size, T of its dtype).
func CopyFrom[T Element](a *NDArray, data []T) error {
	dt, err := a.DType()
	if err != nil {
		return err
	}
	if dt != DTypeOf[T]() {
		return errorf(StatusType, "CopyFrom", "the array is %s but the values are %s", dt, DTypeOf[T]())
	}
	n, err := a.Size()
	if err != nil {
		return err
	}
	if n != len(data) {
		return errorf(StatusShape, "CopyFrom", "the array has %d elements but %d values were given", n, len(data))
	}
	return a.copyFrom(dataPtr(data), len(data)*dt.Size())
}

// Values waits for the array and copies its elements out, in row-major order; T must be
// the Go type of its dtype (see Float32s for any dtype).
func Values[T Element](a *NDArray) ([]T, error) {
	dt, err := a.DType()
	if err != nil {
		return nil, err
	}
	if dt != DTypeOf[T]() {
		return nil, errorf(StatusType, "Values", "the array is %s, not %s", dt, DTypeOf[T]())
	}
	n, err := a.Size()
	if err != nil {
		return nil, err
	}
	out := make([]T, n)
	err = weft_ndarray_copy_to_host(a.handle(), dataPtr(out), C.size_t(n*dt.Size()))
	runtime.KeepAlive(a)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Float32s is the array's elements as float32, whatever its dtype.
func (a *NDArray) Float32s() ([]float32, error) {
	dt, err := a.DType()
	if err != nil {
		return nil, err
	}
	if dt == DTypeFloat32 {
		return Values[float32](a)
	}
	b, err := a.AsType(DTypeFloat32)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	return Values[float32](b)
}

// Shape is the array's shape.
func (a *NDArray) Shape() ([]int, error) {
	var dims [8]C.int64_t
	var ndim C.int
	err := weft_ndarray_get_shape(a.handle(), &dims[0], C.int(len(dims)), &ndim)
	if err == nil && int(ndim) > len(dims) {
		big := make([]C.int64_t, int(ndim))
		err = weft_ndarray_get_shape(a.handle(), &big[0], ndim, &ndim)
		runtime.KeepAlive(a)
		return intsOf(big, err)
	}
	runtime.KeepAlive(a)
	return intsOf(dims[:ndim], err)
}

func intsOf(v []C.int64_t, err error) ([]int, error) {
	if err != nil {
		return nil, err
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out, nil
}

// Size is the number of elements.
func (a *NDArray) Size() (int, error) {
	var n C.int64_t
	err := weft_ndarray_get_size(a.handle(), &n)
	runtime.KeepAlive(a)
	return int(n), err
}

// DType is the element type.
func (a *NDArray) DType() (DType, error) {
	var d C.int
	err := weft_ndarray_get_dtype(a.handle(), &d)
	runtime.KeepAlive(a)
	return DType(d), err
}

// Context is the device the array lives on.
func (a *NDArray) Context() (Context, error) {
	var c C.weft_context_t
	err := weft_ndarray_get_context(a.handle(), &c)
	runtime.KeepAlive(a)
	return Context{DeviceType: DeviceType(c.device_type), DeviceID: int(c.device_id)}, err
}

// WaitToRead blocks until pending writes are done and reports their failure.
func (a *NDArray) WaitToRead() error {
	err := weft_ndarray_wait_to_read(a.handle())
	runtime.KeepAlive(a)
	return err
}

// WaitAll blocks until every pushed operation has finished.
func WaitAll() error { return weft_wait_all() }

// Slice is a view of rows [begin, end) along the first axis, sharing memory.
func (a *NDArray) Slice(begin, end int) (*NDArray, error) {
	var h *C.weft_ndarray_t
	err := weft_ndarray_slice(a.handle(), C.int64_t(begin), C.int64_t(end), &h)
	runtime.KeepAlive(a)
	if err != nil {
		return nil, err
	}
	return newNDArray(h), nil
}

// At is a view of row i (negative counts from the end) without the first axis.
func (a *NDArray) At(i int) (*NDArray, error) {
	var h *C.weft_ndarray_t
	err := weft_ndarray_at(a.handle(), C.int64_t(i), &h)
	runtime.KeepAlive(a)
	if err != nil {
		return nil, err
	}
	return newNDArray(h), nil
}

// Reshape is a view with another shape of the same size; one dim may be -1.
func (a *NDArray) Reshape(shape ...int) (*NDArray, error) {
	dims := int64s(shape)
	var h *C.weft_ndarray_t
	err := weft_ndarray_reshape(a.handle(), int64Ptr(dims), C.int(len(dims)), &h)
	runtime.KeepAlive(a)
	if err != nil {
		return nil, err
	}
	return newNDArray(h), nil
}

// CopyTo pushes a copy of a into dst (same size; any dtype and context).
func (a *NDArray) CopyTo(dst *NDArray) error {
	err := weft_ndarray_copy_to(a.handle(), dst.handle())
	keepAlive(a, dst)
	return err
}

// Copy is a new array with a's shape, dtype, context and values.
func (a *NDArray) Copy() (*NDArray, error) {
	return a.copyAs(nil, nil)
}

// AsType is a copy of a converted to dtype.
func (a *NDArray) AsType(dtype DType) (*NDArray, error) {
	return a.copyAs(&dtype, nil)
}

// CopyToContext is a copy of a on ctx.
func (a *NDArray) CopyToContext(ctx Context) (*NDArray, error) {
	return a.copyAs(nil, &ctx)
}

func (a *NDArray) copyAs(dtype *DType, ctx *Context) (*NDArray, error) {
	shape, err := a.Shape()
	if err != nil {
		return nil, err
	}
	dt, err := a.DType()
	if err != nil {
		return nil, err
	}
	c, err := a.Context()
	if err != nil {
		return nil, err
	}
	if dtype != nil {
		dt = *dtype
	}
	if ctx != nil {
		c = *ctx
	}
	b, err := Empty(shape, dt, c)
	if err != nil {
		return nil, err
	}
	if err := a.CopyTo(b); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// SharesMemory says whether a and b view the same memory.
func (a *NDArray) SharesMemory(b *NDArray) (bool, error) {
	var out C.int
	err := weft_ndarray_shares_memory(a.handle(), b.handle(), &out)
	keepAlive(a, b)
	return out != 0, err
}

// String describes the array: its shape, dtype, context and first values.
func (a *NDArray) String() string {
	if a == nil || a.h == nil {
		return "NDArray(closed)"
	}
	shape, err := a.Shape()
	if err != nil {
		return "NDArray(" + err.Error() + ")"
	}
	dt, _ := a.DType()
	ctx, _ := a.Context()
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = fmt.Sprint(d)
	}
	vals, err := a.Float32s()
	head := ""
	if err != nil {
		head = err.Error()
	} else {
		const most = 8
		parts := []string{}
		for i, v := range vals {
			if i == most {
				parts = append(parts, "...")
				break
			}
			parts = append(parts, fmt.Sprint(v))
		}
		head = "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprintf("NDArray(%s %s @%s %s)", strings.Join(dims, "x"), dt, ctx, head)
}

// binary runs elem for equal shapes, else the broadcasting operator.
func (a *NDArray) binary(b *NDArray, elem, bcast string) (*NDArray, error) {
	sa, err := a.Shape()
	if err != nil {
		return nil, err
	}
	sb, err := b.Shape()
	if err != nil {
		return nil, err
	}
	op := bcast
	if fmt.Sprint(sa) == fmt.Sprint(sb) {
		op = elem
	}
	return invoke1(op, []*NDArray{a, b}, nil, nil)
}

// Add is a + b, elementwise, broadcasting shapes that differ.
func (a *NDArray) Add(b *NDArray) (*NDArray, error) {
	return a.binary(b, "elemwise_add", "broadcast_add")
}

// Sub is a - b.
func (a *NDArray) Sub(b *NDArray) (*NDArray, error) {
	return a.binary(b, "elemwise_sub", "broadcast_sub")
}

// Mul is a * b (elementwise).
func (a *NDArray) Mul(b *NDArray) (*NDArray, error) {
	return a.binary(b, "elemwise_mul", "broadcast_mul")
}

// Div is a / b (elementwise).
func (a *NDArray) Div(b *NDArray) (*NDArray, error) {
	return a.binary(b, "elemwise_div", "broadcast_div")
}

func (a *NDArray) scalar(op string, v float64) (*NDArray, error) {
	return invoke1(op, []*NDArray{a}, []string{"scalar"}, []string{FormatParam(v)})
}

// AddScalar is a + v.
func (a *NDArray) AddScalar(v float64) (*NDArray, error) { return a.scalar("_plus_scalar", v) }

// SubScalar is a - v.
func (a *NDArray) SubScalar(v float64) (*NDArray, error) { return a.scalar("_minus_scalar", v) }

// RSubScalar is v - a.
func (a *NDArray) RSubScalar(v float64) (*NDArray, error) { return a.scalar("_rminus_scalar", v) }

// MulScalar is a * v.
func (a *NDArray) MulScalar(v float64) (*NDArray, error) { return a.scalar("_mul_scalar", v) }

// DivScalar is a / v.
func (a *NDArray) DivScalar(v float64) (*NDArray, error) { return a.scalar("_div_scalar", v) }

// RDivScalar is v / a.
func (a *NDArray) RDivScalar(v float64) (*NDArray, error) { return a.scalar("_rdiv_scalar", v) }

// Dot is the matrix product of a and b.
func (a *NDArray) Dot(b *NDArray) (*NDArray, error) {
	return invoke1("dot", []*NDArray{a, b}, nil, nil)
}
