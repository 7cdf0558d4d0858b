// Tests of the Go typemaps of frontends/swig/weft_go.i through the generated functions
// themselves: out-parameters of each kind, slices of handles and strings, []byte
// buffers, the status as *weft.Error, and counts larger than their slices.
package smoke

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"weft"
)

// newArray makes a float32 array of the given shape holding values, through the raw
// SWIG functions (the NDArray layer keeps its handle private).
func newArray(t *testing.T, shape []int64, values []float32) weft.SwigcptrStruct_SS_weft_ndarray {
	t.Helper()
	ctx := weft.NewWeft_context_t()
	defer weft.DeleteWeft_context_t(ctx)
	ctx.SetDevice_type(int(weft.WEFT_DEVICE_CPU))
	var h weft.SwigcptrStruct_SS_weft_ndarray
	if err := weft.Weft_ndarray_create(&shape[0], len(shape), int(weft.WEFT_DTYPE_FLOAT32), ctx, &h); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	if err := weft.Weft_ndarray_copy_from_host(h, b); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestOutParameters(t *testing.T) {
	major, minor, patch, abi := []int{-1}, []int{-1}, []int{-1}, []int{-1}
	if err := weft.Weft_get_version(major, minor, patch, abi); err != nil {
		t.Fatal(err)
	}
	if major[0] != weft.WEFT_VERSION_MAJOR || minor[0] != weft.WEFT_VERSION_MINOR ||
		patch[0] != weft.WEFT_VERSION_PATCH || abi[0] != weft.WEFT_ABI_VERSION {
		t.Fatalf("version: got %d.%d.%d abi %d", major[0], minor[0], patch[0], abi[0])
	}
	// A nil slice discards an out-value instead of passing NULL for it.
	if err := weft.Weft_get_version(nil, nil, nil, nil); err != nil {
		t.Fatal(err)
	}

	var name string
	if err := weft.Weft_dtype_name(int(weft.WEFT_DTYPE_FLOAT64), &name); err != nil || name != "float64" {
		t.Fatalf("dtype name: expected float64, got %q (%v)", name, err)
	}
	var size int64
	if err := weft.Weft_dtype_size(int(weft.WEFT_DTYPE_INT32), &size); err != nil || size != 4 {
		t.Fatalf("dtype size of int32: expected 4, got %d (%v)", size, err)
	}

	a := newArray(t, []int64{2, 3, 4}, make([]float32, 24))
	defer weft.Weft_ndarray_free(a)
	dims := make([]int64, 2)
	ndim := []int{0}
	if err := weft.Weft_ndarray_get_shape(a, &dims[0], 2, ndim); err != nil {
		t.Fatal(err)
	}
	if ndim[0] != 3 || dims[0] != 2 || dims[1] != 3 {
		t.Fatalf("shape with capacity 2: expected rank 3 and dims [2 3], got %d and %v", ndim[0], dims)
	}
	ctx := weft.NewWeft_context_t()
	defer weft.DeleteWeft_context_t(ctx)
	if err := weft.Weft_ndarray_get_context(a, ctx); err != nil {
		t.Fatal(err)
	}
	if ctx.GetDevice_type() != int(weft.WEFT_DEVICE_CPU) || ctx.GetDevice_id() != 0 {
		t.Fatalf("context: expected cpu(0), got (%d, %d)", ctx.GetDevice_type(), ctx.GetDevice_id())
	}
}

func TestStatusIsAnError(t *testing.T) {
	var op weft.SwigcptrStruct_SS_weft_op
	err := weft.Weft_op_get("no_such_operator", &op)
	var werr *weft.Error
	if !errors.As(err, &werr) {
		t.Fatalf("expected a *weft.Error, got %T (%v)", err, err)
	}
	if werr.Status != weft.WEFT_ERR_NOT_FOUND || !strings.Contains(werr.Message, "no_such_operator") {
		t.Fatalf("expected WEFT_ERR_NOT_FOUND naming the operator, got status %d: %q", werr.Status, werr.Message)
	}
}

func TestSaveAndLoadBytes(t *testing.T) {
	a := newArray(t, []int64{3}, []float32{1, 2, 3})
	defer weft.Weft_ndarray_free(a)
	var saved weft.SwigcptrStruct_SS_weft_bytes
	arrays := []weft.SwigcptrStruct_SS_weft_ndarray{a}
	if err := weft.Weft_ndarray_save_to_bytes(1, arrays, []string{"weight"}, &saved); err != nil {
		t.Fatal(err)
	}
	defer weft.Weft_bytes_free(saved)
	var data []byte
	if err := weft.Weft_bytes_get(saved, &data); err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 {
		t.Fatal("weft_bytes_get gave no bytes")
	}

	var list weft.SwigcptrStruct_SS_weft_ndarray_list
	if err := weft.Weft_ndarray_load_from_bytes(data, &list); err != nil {
		t.Fatal(err)
	}
	defer weft.Weft_ndarray_list_free(list)
	count, named := []int{0}, []int{0}
	var name string
	if err := weft.Weft_ndarray_list_size(list, count); err != nil {
		t.Fatal(err)
	}
	if err := weft.Weft_ndarray_list_has_names(list, named); err != nil {
		t.Fatal(err)
	}
	if err := weft.Weft_ndarray_list_name(list, 0, &name); err != nil {
		t.Fatal(err)
	}
	if count[0] != 1 || named[0] != 1 || name != "weight" {
		t.Fatalf("loaded list: expected 1 array named weight, got %d (named %d) %q", count[0], named[0], name)
	}
	var b weft.SwigcptrStruct_SS_weft_ndarray
	if err := weft.Weft_ndarray_list_get(list, 0, &b); err != nil {
		t.Fatal(err)
	}
	defer weft.Weft_ndarray_free(b)
	got := make([]byte, 12)
	if err := weft.Weft_ndarray_copy_to_host(b, got); err != nil {
		t.Fatal(err)
	}
	want := []float32{1, 2, 3}
	for i, w := range want {
		if v := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])); v != w {
			t.Fatalf("loaded value %d: expected %v, got %v", i, w, v)
		}
	}
	// A buffer of the wrong size is refused with the library's message, not overrun.
	if err := weft.Weft_ndarray_copy_to_host(b, make([]byte, 8)); err == nil {
		t.Fatal("expected an error copying 3 float32 values into 8 bytes")
	}
}

func TestCountLargerThanSlicePanics(t *testing.T) {
	var op weft.SwigcptrStruct_SS_weft_op
	if err := weft.Weft_op_get("_plus_scalar", &op); err != nil {
		t.Fatal(err)
	}
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "exceeds the 0 elements of inputs") {
			t.Fatalf("expected a panic about a count exceeding its slice, got %v", r)
		}
	}()
	count := []int{0}
	var outputs uintptr
	weft.Weft_imperative_invoke(op, 2, nil, 0, nil, nil, 0, nil, count, &outputs)
}
