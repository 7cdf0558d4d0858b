package weft

/*
#cgo pkg-config: weft
#include <weft/c_api.h>
*/
import "C"

import (
	"runtime"
)

// Record runs fn with autograd recording (and training mode) on: operators fn calls on
// arrays with a history (see AttachGrad) are recorded, so that Backward can differentiate
// them. Recording is a property of the OS thread in Weft, so Record locks the goroutine to
// its thread while fn runs; fn must not hand the work to other goroutines.
func Record(fn func() error) error {
	if fn == nil {
		return errorf(StatusValue, "Record", "nil function")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var prevRec, prevTrain C.int
	if err := weft_autograd_set_is_recording(1, &prevRec); err != nil {
		return err
	}
	if err := weft_set_is_training(1, &prevTrain); err != nil {
		weft_autograd_set_is_recording(prevRec, nil)
		return err
	}
	err := fn()
	err2 := weft_set_is_training(prevTrain, nil)
	err3 := weft_autograd_set_is_recording(prevRec, nil)
	for _, e := range []error{err, err2, err3} {
		if e != nil {
			return e
		}
	}
	return nil
}

// AttachGrad marks a as a variable of recorded graphs with a new zeroed gradient array
// (gradReq "write" overwrites it on each Backward, "add" accumulates).
func (a *NDArray) AttachGrad(gradReq string) error {
	shape, err := a.Shape()
	if err != nil {
		return err
	}
	dt, err := a.DType()
	if err != nil {
		return err
	}
	ctx, err := a.Context()
	if err != nil {
		return err
	}
	g, err := Full(0, dt, ctx, shape...)
	if err != nil {
		return err
	}
	defer g.Close() // the library keeps its own reference
	return MarkVariables([]*NDArray{a}, []*NDArray{g}, []string{gradReq})
}

// MarkVariables marks vars as variables with gradient arrays grads and requests reqs
// ("write", "add", "null").
func MarkVariables(vars, grads []*NDArray, reqs []string) error {
	if len(grads) != len(vars) || len(reqs) != len(vars) {
		return errorf(StatusValue, "MarkVariables", "%d variables, %d gradients and %d requests",
			len(vars), len(grads), len(reqs))
	}
	v, g := handles(vars), handles(grads)
	r := newCStrings(reqs)
	defer r.free()
	err := weft_autograd_mark_variables(C.int(len(v)), handlePtr(v), r.ptr(), handlePtr(g))
	keepAlive(vars, grads)
	return err
}

// Backward differentiates the recorded heads (with gradients of ones) into the gradient
// arrays of the variables reached.
func Backward(heads ...*NDArray) error {
	h := handles(heads)
	var n C.int
	var outs []*C.weft_ndarray_t
	err := weft_autograd_backward(C.int(len(h)), handlePtr(h), nil, 0, nil, 0, 0, 1, &n, &outs)
	keepAlive(heads)
	return err
}

// Grad is the gradient array of a variable (marked by AttachGrad), or nil.
func (a *NDArray) Grad() (*NDArray, error) {
	var h *C.weft_ndarray_t
	err := weft_ndarray_get_grad(a.handle(), &h)
	runtime.KeepAlive(a)
	if err != nil {
		return nil, err
	}
	return newNDArray(h), nil
}

// Detach is a view of a's memory without history: gradients stop there.
func (a *NDArray) Detach() (*NDArray, error) {
	var h *C.weft_ndarray_t
	err := weft_ndarray_detach(a.handle(), &h)
	runtime.KeepAlive(a)
	if err != nil {
		return nil, err
	}
	return newNDArray(h), nil
}
