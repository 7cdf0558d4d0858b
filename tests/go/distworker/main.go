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
	if err := kv.Barrier(); err != nil {
		return err
	}
	text, _ := json.Marshal(result)
	return os.WriteFile(filepath.Join(os.Args[1], fmt.Sprintf("worker-%d.json", rank)), text, 0o644)
}
