package weft

/*
#cgo pkg-config: weft
#include <weft/c_api.h>
*/
import "C"

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Operator is a registered operator, looked up by name at its first use. Package op holds
// one per operator; NewOperator makes one for any name (or alias).
type Operator struct {
	name string
	once sync.Once
	h    *C.weft_op_t
	err  error
}

// NewOperator refers to the operator `name`; an unknown name is reported by its first use.
func NewOperator(name string) *Operator { return &Operator{name: name} }

// Name is the name the operator was looked up by.
func (o *Operator) Name() string { return o.name }

func (o *Operator) handle() (*C.weft_op_t, error) {
	o.once.Do(func() {
		n := newCStrings([]string{o.name})
		defer n.free()
		// A local, not &o.h: cgo refuses a pointer into a struct that holds Go pointers.
		var h *C.weft_op_t
		o.err = weft_op_get(n.ptrs[0], &h)
		o.h = h
	})
	return o.h, o.err
}

var operators sync.Map // name -> *Operator

// LookupOperator is the operator `name` (or alias), shared by every caller.
func LookupOperator(name string) *Operator {
	if o, ok := operators.Load(name); ok {
		return o.(*Operator)
	}
	o, _ := operators.LoadOrStore(name, NewOperator(name))
	return o.(*Operator)
}

// Invoke runs the operator on inputs with string parameters keys[i] = vals[i] (parsed and
// checked by the operator). With out empty it returns new arrays (every visible output);
// otherwise it writes the outputs into out and returns out.
func (o *Operator) Invoke(inputs []*NDArray, keys, vals []string, out []*NDArray) ([]*NDArray, error) {
	h, err := o.handle()
	if err != nil {
		return nil, err
	}
	if len(keys) != len(vals) {
		return nil, errorf(StatusValue, "Invoke", "%s: %d parameter keys but %d values", o.name, len(keys), len(vals))
	}
	in, given := handles(inputs), handles(out)
	ck, cv := newCStrings(keys), newCStrings(vals)
	defer ck.free()
	defer cv.free()
	var n C.int
	var outs []*C.weft_ndarray_t
	err = weft_imperative_invoke(h, C.int(len(in)), handlePtr(in), C.int(len(keys)), ck.ptr(), cv.ptr(),
		C.int(len(given)), handlePtr(given), &n, &outs)
	keepAlive(inputs, out)
	if err != nil {
		return nil, err
	}
	if len(out) > 0 {
		return out, nil
	}
	res := make([]*NDArray, len(outs))
	for i, x := range outs {
		res[i] = newNDArray(x)
	}
	return res, nil
}

// Invoke runs the operator `name` (see Operator.Invoke).
func Invoke(name string, inputs []*NDArray, keys, vals []string, out []*NDArray) ([]*NDArray, error) {
	return LookupOperator(name).Invoke(inputs, keys, vals, out)
}

// invoke1 runs an operator and keeps its first output.
func invoke1(name string, inputs []*NDArray, keys, vals []string) (*NDArray, error) {
	outs, err := Invoke(name, inputs, keys, vals, nil)
	return First(outs, err)
}

// First keeps the first of outs and closes the others; outs empty is an error.
func First(outs []*NDArray, err error) (*NDArray, error) {
	if err != nil {
		return nil, err
	}
	if len(outs) == 0 {
		return nil, errorf(StatusInternal, "First", "the operator returned no output")
	}
	for _, x := range outs[1:] {
		x.Close()
	}
	return outs[0], nil
}

// AtomicSymbol is a symbol of one node of the operator with parameters keys[i] = vals[i]
// and no inputs yet (Symbol.Compose gives them).
func (o *Operator) AtomicSymbol(keys, vals []string) (*Symbol, error) {
	h, err := o.handle()
	if err != nil {
		return nil, err
	}
	if len(keys) != len(vals) {
		return nil, errorf(StatusValue, "AtomicSymbol", "%s: %d parameter keys but %d values", o.name, len(keys), len(vals))
	}
	ck, cv := newCStrings(keys), newCStrings(vals)
	defer ck.free()
	defer cv.free()
	var s *C.weft_symbol_t
	if err := weft_symbol_create_atomic(h, C.int(len(keys)), ck.ptr(), cv.ptr(), &s); err != nil {
		return nil, err
	}
	return newSymbol(s), nil
}

// FormatParam is v as the text operators parse: numbers as Go prints them, booleans
// "True"/"False", slices as tuples "(2, 3)", a DType by name, a Context as "cpu(0)".
func FormatParam(v interface{}) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case []int:
		parts := make([]string, len(x))
		for i, d := range x {
			parts[i] = strconv.Itoa(d)
		}
		return tuple(parts)
	case []float64:
		parts := make([]string, len(x))
		for i, d := range x {
			parts[i] = strconv.FormatFloat(d, 'g', -1, 64)
		}
		return tuple(parts)
	case DType:
		return x.String()
	case Context:
		return x.String()
	}
	return fmt.Sprint(v)
}

func tuple(parts []string) string {
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// SetTraining sets the training mode of the calling OS thread (Dropout drops, BatchNorm
// uses batch statistics) and returns the previous one. Goroutines move between threads:
// use it under runtime.LockOSThread, or through Record.
func SetTraining(on bool) (bool, error) {
	var prev C.int
	err := weft_set_is_training(cBool(on), &prev)
	return prev != 0, err
}

// RandomSeed seeds every context's random generators.
func RandomSeed(seed int64) error { return weft_random_seed(C.int64_t(seed)) }
