package weft

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Initializer sets the initial value of parameter name in place.
type Initializer func(name string, arr *NDArray) error

// Xavier is MXNet's Xavier initializer (uniform, "avg", magnitude 3) for weights; biases
// and betas and moving means get 0, gammas and moving variances 1.
func Xavier(name string, arr *NDArray) error {
	shape, err := arr.Shape()
	if err != nil {
		return err
	}
	switch {
	case strings.HasSuffix(name, "gamma") || strings.HasSuffix(name, "moving_var"):
		return fill(arr, 1)
	case !strings.HasSuffix(name, "weight") || len(shape) < 2:
		return fill(arr, 0)
	}
	receptive := 1
	for _, d := range shape[2:] {
		receptive *= d
	}
	fanIn, fanOut := float64(shape[1]*receptive), float64(shape[0]*receptive)
	scale := math.Sqrt(3 / ((fanIn + fanOut) / 2))
	_, err = Invoke("_random_uniform", nil, []string{"low", "high", "shape"},
		[]string{FormatParam(-scale), FormatParam(scale), FormatParam(shape)}, []*NDArray{arr})
	return err
}

func fill(arr *NDArray, v float64) error {
	shape, err := arr.Shape()
	if err != nil {
		return err
	}
	dt, err := arr.DType()
	if err != nil {
		return err
	}
	_, err = Invoke("_full", nil, []string{"shape", "value", "dtype"},
		[]string{FormatParam(shape), FormatParam(v), dt.String()}, []*NDArray{arr})
	return err
}

// Model is a symbol with its trained parameters (MXNet's FeedForward): Fit makes one,
// LoadCheckpoint reads one, Predict and Score run it.
type Model struct {
	Symbol    *Symbol
	Ctx       Context
	ArgParams map[string]*NDArray
	AuxParams map[string]*NDArray
}

// Close closes the symbol and the parameters.
func (m *Model) Close() {
	if m == nil {
		return
	}
	m.Symbol.Close()
	CloseAll(m.ArgParams)
	CloseAll(m.AuxParams)
}

// FitOptions are Fit's settings.
type FitOptions struct {
	Epochs    int
	Optimizer *SGD        // default: SGD with learning rate 0.1, momentum 0.5
	Init      Initializer // default: Xavier
	// Begin starts from these parameters (a checkpoint) instead of Init.
	Begin *Model
	// EvalData, when set, is scored after each epoch.
	EvalData Iterator
	// KVStore, when set, synchronises gradients: in a "local" or "device" store the
	// optimizer runs on the store; in a dist store on the servers (see RunDistRole).
	KVStore *KVStore
	// EpochEnd is called after each epoch with the training and evaluation accuracy (NaN
	// without EvalData); an error stops training.
	EpochEnd func(epoch int, trainAcc, evalAcc float64) error
	Ctx      Context
}

func inputShapes(it Iterator) (map[string][]int, []string, error) {
	shapes := map[string][]int{}
	var names []string
	for _, f := range []func() ([]DataDesc, error){it.ProvideData, it.ProvideLabel} {
		descs, err := f()
		if err != nil {
			return nil, nil, err
		}
		for _, d := range descs {
			shapes[d.Name] = d.Shape
			names = append(names, d.Name)
		}
	}
	return shapes, names, nil
}

// Fit trains sym (a network ending in a loss such as SoftmaxOutput) on train, in batches
// as the iterator gives them, and returns the model.
func Fit(sym *Symbol, train Iterator, opts FitOptions) (*Model, error) {
	if opts.Ctx == (Context{}) {
		opts.Ctx = CPU()
	}
	shapes, inputs, err := inputShapes(train)
	if err != nil {
		return nil, err
	}
	if len(inputs) == 0 {
		return nil, errorf(StatusValue, "Fit", "the iterator describes no data")
	}
	if len(shapes[inputs[0]]) == 0 {
		return nil, errorf(StatusShape, "Fit", "the iterator's %s has no batch axis", inputs[0])
	}
	batch := shapes[inputs[0]][0]
	argNames, err := sym.ListArguments()
	if err != nil {
		return nil, err
	}
	isInput := map[string]bool{}
	for _, n := range inputs {
		isInput[n] = true
	}
	reqs := map[string]string{}
	var params []string
	for _, n := range argNames {
		if !isInput[n] {
			reqs[n] = "write"
			params = append(params, n)
		}
	}
	exec, err := SimpleBind(sym, opts.Ctx, shapes, &BindOptions{GradReqs: reqs})
	if err != nil {
		return nil, err
	}
	defer exec.Close()
	args, err := exec.ArgDict()
	if err != nil {
		return nil, err
	}
	grads, err := exec.GradDict()
	if err != nil {
		return nil, err
	}
	aux, err := exec.AuxDict()
	if err != nil {
		return nil, err
	}
	init := opts.Init
	if init == nil {
		init = Xavier
	}
	for _, group := range []map[string]*NDArray{args, aux} {
		for name, arr := range group {
			if isInput[name] {
				continue
			}
			if err := initParam(name, arr, opts.Begin, init); err != nil {
				return nil, err
			}
		}
	}
	opt := opts.Optimizer
	if opt == nil {
		opt = &SGD{LearningRate: 0.1, Momentum: 0.5}
	}
	if opt.RescaleGrad == 0 {
		opt.RescaleGrad = 1 / float64(batch)
	}
	kv := opts.KVStore
	dist := false
	if kv != nil {
		if dist, err = setupStore(kv, opt, params, args); err != nil {
			return nil, err
		}
	}
	for epoch := 0; epoch < opts.Epochs; epoch++ {
		if err := train.Reset(); err != nil {
			return nil, err
		}
		var correct, total int
		for {
			b, err := train.Next()
			if err != nil {
				return nil, err
			}
			if b == nil {
				break
			}
			err = trainBatch(exec, b, inputs, args, grads, params, opt, kv, dist)
			if err == nil {
				var c, t int
				c, t, err = batchAccuracy(exec, b)
				correct, total = correct+c, total+t
			}
			b.Close()
			if err != nil {
				return nil, err
			}
		}
		evalAcc := math.NaN()
		if opts.EvalData != nil {
			current := map[string]*NDArray{}
			for _, n := range params {
				current[n] = args[n]
			}
			m := &Model{Symbol: sym, Ctx: opts.Ctx, ArgParams: current, AuxParams: aux}
			if evalAcc, err = m.Score(opts.EvalData); err != nil {
				return nil, err
			}
		}
		if opts.EpochEnd != nil {
			if err := opts.EpochEnd(epoch, float64(correct)/math.Max(1, float64(total)), evalAcc); err != nil {
				return nil, err
			}
		}
	}
	model := &Model{Ctx: opts.Ctx, ArgParams: map[string]*NDArray{}, AuxParams: map[string]*NDArray{}}
	if model.Symbol, err = sym.Copy(); err != nil {
		return nil, err
	}
	for _, n := range params {
		if model.ArgParams[n], err = args[n].Copy(); err != nil {
			model.Close()
			return nil, err
		}
	}
	for n, a := range aux {
		if model.AuxParams[n], err = a.Copy(); err != nil {
			model.Close()
			return nil, err
		}
	}
	return model, nil
}

func initParam(name string, arr *NDArray, begin *Model, init Initializer) error {
	if begin != nil {
		src, ok := begin.ArgParams[name]
		if !ok {
			src, ok = begin.AuxParams[name]
		}
		if ok {
			return src.CopyTo(arr)
		}
	}
	return init(name, arr)
}

// setupStore initialises the store's keys with the parameters and says whether it is a
// dist store (whose servers run the optimizer).
func setupStore(kv *KVStore, opt *SGD, params []string, args map[string]*NDArray) (bool, error) {
	kind, err := kv.Type()
	if err != nil {
		return false, err
	}
	values := make([]*NDArray, len(params))
	for i, n := range params {
		values[i] = args[n]
	}
	if err := kv.InitAll(params, values); err != nil {
		return false, err
	}
	dist := strings.HasPrefix(kind, "dist")
	if dist {
		if err := SetServerOptimizer(kv, opt); err != nil {
			return false, err
		}
		// Every worker starts from the servers' copy (rank 0's initial values).
		return true, kv.PullAll(params, values, 0)
	}
	return false, kv.SetOptimizer(opt)
}

func trainBatch(exec *Executor, b *Batch, inputs []string, args, grads map[string]*NDArray, params []string,
	opt *SGD, kv *KVStore, dist bool) error {
	src := append(append([]*NDArray{}, b.Data...), b.Label...)
	if len(src) != len(inputs) {
		return errorf(StatusValue, "Fit", "a batch has %d arrays but the iterator describes %d", len(src), len(inputs))
	}
	for i, n := range inputs {
		if err := src[i].CopyTo(args[n]); err != nil {
			return err
		}
	}
	if err := exec.Forward(true); err != nil {
		return err
	}
	if err := exec.Backward(); err != nil {
		return err
	}
	for i, n := range params {
		switch {
		case kv == nil:
			if err := opt.Update(n, grads[n], args[n]); err != nil {
				return err
			}
		default:
			// Earlier layers' gradients come last out of the backward pass and their
			// weights are needed first by the next forward: they get the higher priority.
			if err := kv.PushAll([]string{n}, []*NDArray{grads[n]}, len(params)-i); err != nil {
				return err
			}
			if err := kv.PullAll([]string{n}, []*NDArray{args[n]}, len(params)-i); err != nil {
				return err
			}
		}
	}
	return nil
}

func argmax(row []float32) int {
	best := 0
	for j, v := range row {
		if v > row[best] {
			best = j
		}
	}
	return best
}

// batchAccuracy counts the samples (padding left out) whose highest output is the label.
func batchAccuracy(exec *Executor, b *Batch) (int, int, error) {
	if len(b.Label) == 0 {
		return 0, 0, nil
	}
	outs, err := exec.Outputs()
	if err != nil {
		return 0, 0, err
	}
	if len(outs) == 0 {
		return 0, 0, errorf(StatusValue, "Fit", "the network has no output")
	}
	rows, err := rowsOf(outs[0])
	if err != nil {
		return 0, 0, err
	}
	labels, err := b.Label[0].Float32s()
	if err != nil {
		return 0, 0, err
	}
	n := len(rows) - b.Pad
	correct := 0
	for i := 0; i < n && i < len(labels); i++ {
		if argmax(rows[i]) == int(labels[i]) {
			correct++
		}
	}
	return correct, n, nil
}

func rowsOf(a *NDArray) ([][]float32, error) {
	shape, err := a.Shape()
	if err != nil {
		return nil, err
	}
	vals, err := a.Float32s()
	if err != nil {
		return nil, err
	}
	if len(shape) == 0 || shape[0] == 0 {
		return nil, nil
	}
	width := len(vals) / shape[0]
	rows := make([][]float32, shape[0])
	for i := range rows {
		rows[i] = vals[i*width : (i+1)*width]
	}
	return rows, nil
}

// bindFor binds the model for inference on the iterator's batches.
func (m *Model) bindFor(it Iterator) (*Executor, []string, error) {
	if m == nil {
		return nil, nil, errorf(StatusHandle, "Model", "nil model")
	}
	shapes, inputs, err := inputShapes(it)
	if err != nil {
		return nil, nil, err
	}
	exec, err := SimpleBind(m.Symbol, m.Ctx, shapes, &BindOptions{GradReq: "null"})
	if err != nil {
		return nil, nil, err
	}
	args, err := exec.ArgDict()
	if err == nil {
		err = copyParams(args, m.ArgParams)
	}
	if err == nil {
		var aux map[string]*NDArray
		if aux, err = exec.AuxDict(); err == nil {
			err = copyParams(aux, m.AuxParams)
		}
	}
	if err != nil {
		exec.Close()
		return nil, nil, err
	}
	return exec, inputs, nil
}

func copyParams(dst, src map[string]*NDArray) error {
	names := make([]string, 0, len(src))
	for n := range src {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d, ok := dst[n]
		if !ok {
			continue
		}
		if err := src[n].CopyTo(d); err != nil {
			return fmt.Errorf("parameter %s: %w", n, err)
		}
	}
	return nil
}

func (m *Model) run(it Iterator, each func(exec *Executor, b *Batch) error) error {
	exec, inputs, err := m.bindFor(it)
	if err != nil {
		return err
	}
	defer exec.Close()
	args, err := exec.ArgDict()
	if err != nil {
		return err
	}
	if err := it.Reset(); err != nil {
		return err
	}
	for {
		b, err := it.Next()
		if err != nil || b == nil {
			return err
		}
		src := append(append([]*NDArray{}, b.Data...), b.Label...)
		for i, n := range inputs {
			if i < len(src) {
				if err = src[i].CopyTo(args[n]); err != nil {
					break
				}
			}
		}
		if err == nil {
			err = exec.Forward(false)
		}
		if err == nil {
			err = each(exec, b)
		}
		b.Close()
		if err != nil {
			return err
		}
	}
}

// Score is the accuracy of the model on every batch of it.
func (m *Model) Score(it Iterator) (float64, error) {
	var correct, total int
	err := m.run(it, func(exec *Executor, b *Batch) error {
		c, t, err := batchAccuracy(exec, b)
		correct, total = correct+c, total+t
		return err
	})
	if err != nil {
		return 0, err
	}
	if total == 0 {
		return 0, errorf(StatusValue, "Score", "the iterator gave no labelled sample")
	}
	return float64(correct) / float64(total), nil
}

// Predict is the model's first output for every sample of it (padding left out), one row
// per sample.
func (m *Model) Predict(it Iterator) ([][]float32, error) {
	var out [][]float32
	err := m.run(it, func(exec *Executor, b *Batch) error {
		outs, err := exec.Outputs()
		if err != nil {
			return err
		}
		if len(outs) == 0 {
			return errorf(StatusValue, "Predict", "the network has no output")
		}
		rows, err := rowsOf(outs[0])
		if err != nil {
			return err
		}
		keep := len(rows) - b.Pad
		if keep < 0 {
			keep = 0
		}
		out = append(out, rows[:keep]...)
		return nil
	})
	return out, err
}

// SaveCheckpoint writes prefix-symbol.json and prefix-%04d.params (epoch) with the
// parameters under "arg:" and "aux:" names, as Python's weft.model.save_checkpoint.
func (m *Model) SaveCheckpoint(prefix string, epoch int) error {
	if err := m.Symbol.Save(prefix + "-symbol.json"); err != nil {
		return err
	}
	all := map[string]*NDArray{}
	for n, a := range m.ArgParams {
		all["arg:"+n] = a
	}
	for n, a := range m.AuxParams {
		all["aux:"+n] = a
	}
	return SaveNamed(fmt.Sprintf("%s-%04d.params", prefix, epoch), all)
}

// LoadCheckpoint reads what SaveCheckpoint (or Python's save_checkpoint) wrote.
func LoadCheckpoint(prefix string, epoch int) (*Model, error) {
	sym, err := LoadSymbol(prefix + "-symbol.json")
	if err != nil {
		return nil, err
	}
	fname := fmt.Sprintf("%s-%04d.params", prefix, epoch)
	params, err := LoadNamed(fname)
	if err != nil {
		sym.Close()
		return nil, err
	}
	m := &Model{Symbol: sym, Ctx: CPU(), ArgParams: map[string]*NDArray{}, AuxParams: map[string]*NDArray{}}
	for key, a := range params {
		kind, name, _ := strings.Cut(key, ":")
		switch {
		case kind == "arg" && name != "":
			m.ArgParams[name] = a
		case kind == "aux" && name != "":
			m.AuxParams[name] = a
		default:
			CloseAll(params)
			sym.Close()
			return nil, errorf(StatusValue, "LoadCheckpoint", "%s: the key %q is neither 'arg:<name>' nor 'aux:<name>'",
				fname, key)
		}
	}
	return m, nil
}
