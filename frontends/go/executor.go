package weft

/*
#cgo pkg-config: weft
#include <weft/c_api.h>
*/
import "C"

import (
	"encoding/json"
	"runtime"
)

// Executor is a symbol bound to arrays (MXNet's Executor): Forward, Backward, Outputs.
// The arrays it gives (Outputs, Args, Grads, Aux and the dicts) belong to the executor:
// they are valid until Close, which closes them; do not close them yourself.
type Executor struct {
	h                         *C.weft_executor_t
	argNames, auxNames        []string
	outputs, args, grads, aux []*NDArray
}

func newExecutor(h *C.weft_executor_t, sym *Symbol) (*Executor, error) {
	e := &Executor{h: h}
	runtime.SetFinalizer(e, (*Executor).finalize)
	var err error
	if e.argNames, err = sym.ListArguments(); err != nil {
		e.Close()
		return nil, err
	}
	if e.auxNames, err = sym.ListAuxiliaryStates(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Executor) finalize() { C.weft_executor_free(e.h) }

func (e *Executor) handle() *C.weft_executor_t {
	if e == nil {
		return nil
	}
	return e.h
}

// Close frees the executor and the arrays it gave out.
func (e *Executor) Close() error {
	if e == nil || e.h == nil {
		return nil
	}
	for _, l := range [][]*NDArray{e.outputs, e.args, e.grads, e.aux} {
		closeAll(l)
	}
	e.outputs, e.args, e.grads, e.aux = nil, nil, nil, nil
	runtime.SetFinalizer(e, nil)
	err := weft_executor_free(e.h)
	e.h = nil
	return err
}

// BindOptions are SimpleBind's optional settings.
type BindOptions struct {
	// DTypes gives input dtypes (default float32).
	DTypes map[string]DType
	// GradReq is one request for every argument: "write" (the default), "add" or "null".
	GradReq string
	// GradReqs gives a request per argument (the others get "null"); it overrides GradReq.
	GradReqs map[string]string
}

// SimpleBind infers every shape from the input shapes given, allocates zeroed arguments,
// gradients and auxiliary states on ctx, and binds them.
func SimpleBind(sym *Symbol, ctx Context, shapes map[string][]int, opts *BindOptions) (*Executor, error) {
	if opts == nil {
		opts = &BindOptions{}
	}
	jshapes, _ := json.Marshal(shapes)
	texts := []string{string(jshapes), "", opts.GradReq}
	if opts.DTypes != nil {
		j, _ := json.Marshal(opts.DTypes)
		texts[1] = string(j)
	}
	if opts.GradReqs != nil {
		j, _ := json.Marshal(opts.GradReqs)
		texts[2] = string(j)
	}
	t := newCStrings(texts)
	defer t.free()
	var dtypes *C.char
	if texts[1] != "" {
		dtypes = t.ptrs[1]
	}
	var h *C.weft_executor_t
	err := weft_executor_simple_bind(sym.handle(), cContext(ctx), nil, t.ptrs[0], dtypes, t.ptrs[2], &h)
	runtime.KeepAlive(sym)
	if err != nil {
		return nil, err
	}
	return newExecutor(h, sym)
}

// Bind binds sym to the arrays given: args in ListArguments order, argGrads (nil: no
// gradients; nil entries: none for that argument), gradReqs (nil: "write" where a gradient
// array is given), aux in ListAuxiliaryStates order. The executor keeps its own references.
func Bind(sym *Symbol, ctx Context, args, argGrads []*NDArray, gradReqs []string, aux []*NDArray) (*Executor, error) {
	if argGrads != nil && len(argGrads) != len(args) {
		return nil, errorf(StatusValue, "Bind", "%d gradient arrays for %d arguments", len(argGrads), len(args))
	}
	if gradReqs != nil && len(gradReqs) != len(args) {
		return nil, errorf(StatusValue, "Bind", "%d gradient requests for %d arguments", len(gradReqs), len(args))
	}
	a, g, x := handles(args), handles(argGrads), handles(aux)
	r := newCStrings(gradReqs)
	defer r.free()
	var h *C.weft_executor_t
	err := weft_executor_bind(sym.handle(), cContext(ctx), C.int(len(a)), handlePtr(a), handlePtr(g), r.ptr(),
		C.int(len(x)), handlePtr(x), &h)
	keepAlive(sym, args, argGrads, aux)
	if err != nil {
		return nil, err
	}
	return newExecutor(h, sym)
}

// Forward pushes the forward pass (isTrain: operators in training mode).
func (e *Executor) Forward(isTrain bool) error {
	err := weft_executor_forward(e.handle(), cBool(isTrain))
	runtime.KeepAlive(e)
	return err
}

// Backward pushes the backward pass, with one head gradient per output, or none for ones
// (the gradient of loss outputs).
func (e *Executor) Backward(headGrads ...*NDArray) error {
	h := handles(headGrads)
	err := weft_executor_backward(e.handle(), C.int(len(h)), handlePtr(h))
	keepAlive(e, headGrads)
	return err
}

// Outputs is the output arrays (rewritten by each Forward).
func (e *Executor) Outputs() ([]*NDArray, error) {
	if e == nil {
		return nil, errorf(StatusHandle, "Executor.Outputs", "nil executor")
	}
	if e.outputs == nil {
		var n C.int
		var outs []*C.weft_ndarray_t
		err := weft_executor_outputs(e.handle(), &n, &outs)
		runtime.KeepAlive(e)
		if err != nil {
			return nil, err
		}
		e.outputs = wrapAll(outs)
	}
	return e.outputs, nil
}

func wrapAll(h []*C.weft_ndarray_t) []*NDArray {
	out := make([]*NDArray, len(h))
	for i, x := range h {
		out[i] = newNDArray(x)
	}
	return out
}

func (e *Executor) arrays(kind C.int, cache *[]*NDArray) ([]*NDArray, error) {
	if e == nil {
		return nil, errorf(StatusHandle, "Executor.arrays", "nil executor")
	}
	if *cache == nil {
		var n C.int
		var outs []*C.weft_ndarray_t
		err := weft_executor_arrays(e.handle(), kind, &n, &outs)
		runtime.KeepAlive(e)
		if err != nil {
			return nil, err
		}
		*cache = wrapAll(outs)
	}
	return *cache, nil
}

// Args is the argument arrays, in ListArguments order.
func (e *Executor) Args() ([]*NDArray, error) {
	if e == nil {
		return e.arrays(C.WEFT_EXECUTOR_ARGUMENTS, nil)
	}
	return e.arrays(C.WEFT_EXECUTOR_ARGUMENTS, &e.args)
}

// Grads is the gradient arrays, one per argument (nil where none was asked for).
func (e *Executor) Grads() ([]*NDArray, error) {
	if e == nil {
		return e.arrays(C.WEFT_EXECUTOR_GRADIENTS, nil)
	}
	return e.arrays(C.WEFT_EXECUTOR_GRADIENTS, &e.grads)
}

// Aux is the auxiliary state arrays, in ListAuxiliaryStates order.
func (e *Executor) Aux() ([]*NDArray, error) {
	if e == nil {
		return e.arrays(C.WEFT_EXECUTOR_AUXILIARY, nil)
	}
	return e.arrays(C.WEFT_EXECUTOR_AUXILIARY, &e.aux)
}

func dict(names []string, arrays []*NDArray, err error) (map[string]*NDArray, error) {
	if err != nil {
		return nil, err
	}
	out := make(map[string]*NDArray, len(names))
	for i, n := range names {
		if i < len(arrays) && arrays[i] != nil {
			out[n] = arrays[i]
		}
	}
	return out, nil
}

// ArgDict is the argument arrays by name.
func (e *Executor) ArgDict() (map[string]*NDArray, error) {
	a, err := e.Args()
	if err != nil {
		return nil, err
	}
	return dict(e.argNames, a, nil)
}

// GradDict is the gradient arrays by argument name (arguments without one left out).
func (e *Executor) GradDict() (map[string]*NDArray, error) {
	g, err := e.Grads()
	if err != nil {
		return nil, err
	}
	return dict(e.argNames, g, nil)
}

// AuxDict is the auxiliary state arrays by name.
func (e *Executor) AuxDict() (map[string]*NDArray, error) {
	a, err := e.Aux()
	if err != nil {
		return nil, err
	}
	return dict(e.auxNames, a, nil)
}

// ArgNames is the symbol's ListArguments at bind time.
func (e *Executor) ArgNames() []string {
	if e == nil {
		return nil
	}
	return append([]string(nil), e.argNames...)
}

// AuxNames is the symbol's ListAuxiliaryStates at bind time.
func (e *Executor) AuxNames() []string {
	if e == nil {
		return nil
	}
	return append([]string(nil), e.auxNames...)
}

// DebugStr is the bound graph and its planned memory.
func (e *Executor) DebugStr() (string, error) {
	var s string
	err := weft_executor_debug_str(e.handle(), &s)
	runtime.KeepAlive(e)
	return s, err
}
