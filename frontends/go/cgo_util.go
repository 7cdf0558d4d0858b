package weft

/*
#cgo pkg-config: weft
#include <stdlib.h>
#include <weft/c_api.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// cStrings is a C copy of ss for the length of one call; free releases it.
type cStrings struct {
	ptrs []*C.char
}

func newCStrings(ss []string) cStrings {
	if len(ss) == 0 {
		return cStrings{}
	}
	p := make([]*C.char, len(ss))
	for i, s := range ss {
		p[i] = C.CString(s)
	}
	return cStrings{ptrs: p}
}

// ptr is the C array (NULL when empty). The slice holds C pointers only, which cgo allows
// to pass.
func (c cStrings) ptr() **C.char {
	if len(c.ptrs) == 0 {
		return nil
	}
	return &c.ptrs[0]
}

func (c cStrings) free() {
	for _, p := range c.ptrs {
		C.free(unsafe.Pointer(p))
	}
}

// handles lists the C handles of arrays (NULL for a nil or closed array, which the library
// reports as WEFT_ERR_HANDLE where a handle is required). The caller keeps arrays alive
// (runtime.KeepAlive) until the C call that uses the handles has returned.
func handles(arrays []*NDArray) []*C.weft_ndarray_t {
	if len(arrays) == 0 {
		return nil
	}
	h := make([]*C.weft_ndarray_t, len(arrays))
	for i, a := range arrays {
		h[i] = a.handle()
	}
	return h
}

func handlePtr(h []*C.weft_ndarray_t) **C.weft_ndarray_t {
	if len(h) == 0 {
		return nil
	}
	return &h[0]
}

func int64s(v []int) []C.int64_t {
	out := make([]C.int64_t, len(v))
	for i, x := range v {
		out[i] = C.int64_t(x)
	}
	return out
}

func int64Ptr(v []C.int64_t) *C.int64_t {
	if len(v) == 0 {
		return nil
	}
	return &v[0]
}

func cContext(ctx Context) C.weft_context_t {
	return C.weft_context_t{device_type: C.int32_t(ctx.DeviceType), device_id: C.int32_t(ctx.DeviceID)}
}

func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// keepAlive is runtime.KeepAlive for several values.
func keepAlive(vs ...interface{}) {
	for _, v := range vs {
		runtime.KeepAlive(v)
	}
}

// dataPtr is the address of s's first element, or nil when s is empty. Element types hold
// no Go pointers, so the memory may be handed to C for the length of a call.
func dataPtr[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}
