// Command go_step times one training step of the benchmark MLP from Go, for
// bench/frontend_overhead.py; the step is the one python_step.py describes.
//
//	go_step --batch 128 --steps 200 --warmup 20
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"time"

	"weft.dev/weft"
	"weft.dev/weft/op"
)

var hidden = []int{512, 512}

func mlp() (*weft.Symbol, error) {
	x, err := weft.Variable("data")
	if err != nil {
		return nil, err
	}
	for i, h := range hidden {
		if x, err = op.SymFullyConnected(x, nil, nil, h, op.WithName(fmt.Sprintf("fc%d", i+1))); err != nil {
			return nil, err
		}
		if x, err = op.SymActivation(x, "relu", op.WithName(fmt.Sprintf("relu%d", i+1))); err != nil {
			return nil, err
		}
	}
	if x, err = op.SymFullyConnected(x, nil, nil, 10, op.WithName(fmt.Sprintf("fc%d", len(hidden)+1))); err != nil {
		return nil, err
	}
	return op.SymSoftmaxOutput(x, nil, op.WithName("softmax"))
}

func fillUniform(rng *rand.Rand, a *weft.NDArray, lo, hi float32) error {
	n, err := a.Size()
	if err != nil {
		return err
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = lo + (hi-lo)*rng.Float32()
	}
	return weft.CopyFrom(a, v)
}

func run(batch, steps, warmup int) (float64, error) {
	net, err := mlp()
	if err != nil {
		return 0, err
	}
	names, err := net.ListArguments()
	if err != nil {
		return 0, err
	}
	reqs := map[string]string{}
	var params []string
	for _, n := range names {
		if n != "data" && n != "softmax_label" {
			reqs[n] = "write"
			params = append(params, n)
		}
	}
	exec, err := weft.SimpleBind(net, weft.CPU(), map[string][]int{"data": {batch, 784}, "softmax_label": {batch}},
		&weft.BindOptions{GradReqs: reqs})
	if err != nil {
		return 0, err
	}
	defer exec.Close()
	args, err := exec.ArgDict()
	if err != nil {
		return 0, err
	}
	grads, err := exec.GradDict()
	if err != nil {
		return 0, err
	}
	rng := rand.New(rand.NewSource(0))
	if err := fillUniform(rng, args["data"], 0, 1); err != nil {
		return 0, err
	}
	labels := make([]float32, batch)
	for i := range labels {
		labels[i] = float32(i % 10)
	}
	if err := weft.CopyFrom(args["softmax_label"], labels); err != nil {
		return 0, err
	}
	for _, p := range params {
		if err := fillUniform(rng, args[p], -0.05, 0.05); err != nil {
			return 0, err
		}
	}
	opt := &weft.SGD{LearningRate: 0.1, Momentum: 0.9, RescaleGrad: 1 / float64(batch)}
	defer opt.Close()
	step := func() error {
		if err := exec.Forward(true); err != nil {
			return err
		}
		if err := exec.Backward(); err != nil {
			return err
		}
		for _, p := range params {
			if err := opt.Update(p, grads[p], args[p]); err != nil {
				return err
			}
		}
		return nil
	}
	for i := 0; i < warmup; i++ {
		if err := step(); err != nil {
			return 0, err
		}
	}
	if err := weft.WaitAll(); err != nil {
		return 0, err
	}
	start := time.Now()
	for i := 0; i < steps; i++ {
		if err := step(); err != nil {
			return 0, err
		}
	}
	if err := weft.WaitAll(); err != nil {
		return 0, err
	}
	return float64(time.Since(start).Microseconds()) / 1000 / float64(steps), nil
}

func main() {
	batch := flag.Int("batch", 128, "batch size")
	steps := flag.Int("steps", 200, "timed steps")
	warmup := flag.Int("warmup", 20, "untimed steps first")
	flag.Parse()
	ms, err := run(*batch, *steps, *warmup)
	if err != nil {
		fmt.Fprintln(os.Stderr, "go_step:", err)
		os.Exit(1)
	}
	line, _ := json.Marshal(map[string]interface{}{"lang": "go", "ms_per_step": ms, "batch": *batch, "steps": *steps})
	fmt.Println(string(line))
}
