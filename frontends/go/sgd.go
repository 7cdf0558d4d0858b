package weft

/*
#cgo pkg-config: weft
#include <weft/c_api.h>
*/
import "C"

import (
	"sync"
)

// SGD is stochastic gradient descent with momentum, run by the sgd_update and
// sgd_mom_update operators (as Python's weft.optimizer.SGD). Use it as a KVStore updater
// (KVStore.SetOptimizer) or through Fit. Close releases its momentum states.
type SGD struct {
	LearningRate float64
	Momentum     float64
	WD           float64
	// RescaleGrad multiplies gradients first (Fit sets it to 1/batch size when zero).
	RescaleGrad float64
	// ClipGradient clips rescaled gradients to [-c, c] when positive.
	ClipGradient float64

	mu     sync.Mutex
	states map[string]*NDArray
	params sgdParams
}

// sgdParams is the operator call for one setting of the fields, kept as C strings: an
// update runs once per parameter per step, and the settings rarely change.
type sgdParams struct {
	config     [5]float64
	op         *Operator
	keys, vals cStrings
	n          int
}

var (
	opSGD    = NewOperator("sgd_update")
	opSGDMom = NewOperator("sgd_mom_update")
)

// prepared is the operator and C parameters for the current fields (o.mu held).
func (o *SGD) prepared() *sgdParams {
	config := [5]float64{o.LearningRate, o.Momentum, o.WD, o.RescaleGrad, o.ClipGradient}
	if o.params.op != nil && o.params.config == config {
		return &o.params
	}
	o.params.keys.free()
	o.params.vals.free()
	keys, vals := []string{"lr"}, []string{FormatParam(o.LearningRate)}
	// Parameters at the operator's default stay out, as Python leaves them.
	if o.Momentum != 0 {
		keys, vals = append(keys, "momentum"), append(vals, FormatParam(o.Momentum))
	}
	if o.WD != 0 {
		keys, vals = append(keys, "wd"), append(vals, FormatParam(o.WD))
	}
	if o.RescaleGrad != 0 && o.RescaleGrad != 1 {
		keys, vals = append(keys, "rescale_grad"), append(vals, FormatParam(o.RescaleGrad))
	}
	if o.ClipGradient > 0 {
		keys, vals = append(keys, "clip_gradient"), append(vals, FormatParam(o.ClipGradient))
	}
	o.params = sgdParams{config: config, op: opSGD, keys: newCStrings(keys), vals: newCStrings(vals), n: len(keys)}
	if o.Momentum != 0 {
		o.params.op = opSGDMom
	}
	return &o.params
}

// Update applies one step to weight given grad, in place; key names the parameter, whose
// momentum the optimizer keeps.
func (o *SGD) Update(key string, grad, weight *NDArray) error {
	if o == nil {
		return errorf(StatusValue, "SGD.Update", "nil optimizer")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	p := o.prepared()
	h, err := p.op.handle()
	if err != nil {
		return err
	}
	in := [3]*C.weft_ndarray_t{weight.handle(), grad.handle()}
	nIn := 2
	if o.Momentum != 0 {
		mom, err := o.state(key, weight)
		if err != nil {
			return err
		}
		in[2] = mom.handle()
		nIn = 3
	}
	out := [1]*C.weft_ndarray_t{weight.handle()}
	var n C.int
	var outs []*C.weft_ndarray_t
	err = weft_imperative_invoke(h, C.int(nIn), &in[0], C.int(p.n), p.keys.ptr(), p.vals.ptr(), 1, &out[0], &n, &outs)
	keepAlive(grad, weight)
	return err
}

// state is the momentum of key, made (zeros like weight) at its first use; o.mu held.
func (o *SGD) state(key string, weight *NDArray) (*NDArray, error) {
	if m, ok := o.states[key]; ok {
		return m, nil
	}
	shape, err := weight.Shape()
	if err != nil {
		return nil, err
	}
	dt, err := weight.DType()
	if err != nil {
		return nil, err
	}
	ctx, err := weight.Context()
	if err != nil {
		return nil, err
	}
	m, err := Full(0, dt, ctx, shape...)
	if err != nil {
		return nil, err
	}
	if o.states == nil {
		o.states = map[string]*NDArray{}
	}
	o.states[key] = m
	return m, nil
}

// Close releases the momentum states.
func (o *SGD) Close() {
	if o == nil {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	CloseAll(o.states)
	o.states = nil
	o.params.keys.free()
	o.params.vals.free()
	o.params = sgdParams{}
}
