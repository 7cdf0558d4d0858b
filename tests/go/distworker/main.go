// Command distworker is one process of the Go dist_sync test (dist_test.go), started by
// tools/launch.py as scheduler, server or worker. A worker writes what it pulled to
// <out>/worker-<rank>.json.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"weft.dev/weft"
	"weft.dev/weft/op"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "distworker:", err)
		os.Exit(1)
	}
}

func run() error {
	isWorker, err := weft.RunDistRole()
	if err != nil || !isWorker {
		return err
	}
	kv, err := weft.CreateKVStore("dist_sync")
	if err != nil {
		return err
	}
	defer kv.Close()
	rank, err := kv.Rank()
	if err != nil {
		return err
	}
	n, err := kv.NumWorkers()
	if err != nil {
		return err
	}
	result := map[string]interface{}{"rank": rank, "workers": n}

	// Without an optimizer the servers store the sum of every worker's push.
	start, _ := weft.NewFrom([]float32{float32(10 * (rank + 1)), 0, 0})
	if err := kv.Init("sum", start); err != nil {
		return err
	}
	out, _ := weft.Zeros(3)
	if err := kv.Pull("sum", out); err != nil {
		return err
	}
	result["init"], _ = out.Float32s()
	mine, _ := weft.NewFrom([]float32{float32(rank + 1), 1, float32(rank)})
	if err := kv.Push("sum", mine); err != nil {
		return err
	}
	if err := kv.Pull("sum", out); err != nil {
		return err
	}
	result["sum"], _ = out.Float32s()

	// With an SGD step on the servers, once on the sum of the workers' gradients.
	if err := weft.SetServerOptimizer(kv, &weft.SGD{LearningRate: 0.1}); err != nil {
		return err
	}
	w, _ := weft.Ones(4)
	if err := kv.Init("7", w); err != nil {
		return err
	}
	grad, _ := weft.Full(float64(rank+1), weft.DTypeFloat32, weft.CPU(), 4)
	if err := kv.PushPull("7", []*weft.NDArray{grad}, []*weft.NDArray{w}); err != nil {
		return err
	}
	result["sgd"], _ = w.Float32s()

	// Fit on this worker's own data through the store: the servers apply every worker's
	// gradients, so all end with the same weights.
	sum, acc, err := fit(kv, int64(rank))
	if err != nil {
		return err
	}
	result["fit_sum"], result["fit_acc"] = sum, acc
	if err := kv.Barrier(); err != nil {
		return err
	}
	text, _ := json.Marshal(result)
	return os.WriteFile(filepath.Join(os.Args[1], fmt.Sprintf("worker-%d.json", rank)), text, 0o644)
}

// separable is n samples of 4 features whose class (of 3) is the largest of the first three.
func separable(n int, seed int64) (*weft.NDArray, *weft.NDArray, error) {
	x := make([]float32, 4*n)
	y := make([]float32, n)
	s := uint64(seed)*2654435761 + 1
	for i := 0; i < n; i++ {
		best := 0
		for j := 0; j < 4; j++ {
			s = s*6364136223846793005 + 1442695040888963407
			x[4*i+j] = float32(s>>40) / float32(1<<24)
			if j < 3 && x[4*i+j] > x[4*i+best] {
				best = j
			}
		}
		y[i] = float32(best)
	}
	xa, err := weft.NewFrom(x, n, 4)
	if err != nil {
		return nil, nil, err
	}
	ya, err := weft.NewFrom(y)
	return xa, ya, err
}

func fit(kv *weft.KVStore, seed int64) (float64, float64, error) {
	data, err := weft.Variable("data")
	if err != nil {
		return 0, 0, err
	}
	fc1, err := op.SymFullyConnected(data, nil, nil, 16, op.WithName("fc1"))
	if err != nil {
		return 0, 0, err
	}
	act, err := op.SymActivation(fc1, "relu", op.WithName("relu1"))
	if err != nil {
		return 0, 0, err
	}
	fc2, err := op.SymFullyConnected(act, nil, nil, 3, op.WithName("fc2"))
	if err != nil {
		return 0, 0, err
	}
	net, err := op.SymSoftmaxOutput(fc2, nil, op.WithName("softmax"))
	if err != nil {
		return 0, 0, err
	}
	x, y, err := separable(600, seed)
	if err != nil {
		return 0, 0, err
	}
	it, err := weft.NewArrayIter(x, y, 50, false)
	if err != nil {
		return 0, 0, err
	}
	if err := weft.RandomSeed(seed); err != nil {
		return 0, 0, err
	}
	model, err := weft.Fit(net, it, weft.FitOptions{Epochs: 20, KVStore: kv,
		Optimizer: &weft.SGD{LearningRate: 0.25, Momentum: 0.5}})
	if err != nil {
		return 0, 0, err
	}
	defer model.Close()
	sum := 0.0
	for _, a := range model.ArgParams {
		v, err := a.Float32s()
		if err != nil {
			return 0, 0, err
		}
		for _, f := range v {
			sum += float64(f)
		}
	}
	acc, err := model.Score(it)
	return sum, acc, err
}
