package tests

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"weft.dev/weft"
	"weft.dev/weft/iter"
	"weft.dev/weft/op"
)

func fashionIter(t *testing.T, split string, shuffle bool) *weft.DataIter {
	t.Helper()
	return ok(iter.MNISTIter(
		iter.WithImage(filepath.Join(fashion, split+"-images-idx3-ubyte.gz")),
		iter.WithLabel(filepath.Join(fashion, split+"-labels-idx1-ubyte.gz")),
		iter.WithBatchSize(100), iter.WithFlat(true), iter.WithShuffle(shuffle), iter.WithSeed(3)))
}

// mlp3 is the 784-128-64-10 network of the examples.
func mlp3(t *testing.T) *weft.Symbol {
	t.Helper()
	x := ok(weft.Variable("data"))
	for i, hidden := range []int{128, 64} {
		name := fmt.Sprintf("fc%d", i+1)
		x = ok(op.SymFullyConnected(x, nil, nil, hidden, op.WithName(name)))
		x = ok(op.SymActivation(x, "relu", op.WithName(fmt.Sprintf("relu%d", i+1))))
	}
	x = ok(op.SymFullyConnected(x, nil, nil, 10, op.WithName("fc3")))
	return ok(op.SymSoftmaxOutput(x, nil, op.WithName("softmax")))
}

// TestTrainFashionMNISTMLPAndCheckpointsAcrossPython trains the MLP with Fit (SGD with
// momentum) to at least 85 % test accuracy, then checks its checkpoint in Go and Python.
func TestTrainFashionMNISTMLPAndCheckpointsAcrossPython(t *testing.T) {
	check(t, weft.RandomSeed(7))
	train, test := fashionIter(t, "train", true), fashionIter(t, "t10k", false)
	defer train.Close()
	defer test.Close()
	net := mlp3(t)
	start := time.Now()
	model := ok(weft.Fit(net, train, weft.FitOptions{
		Epochs:    5,
		Optimizer: &weft.SGD{LearningRate: 0.1, Momentum: 0.5},
		EpochEnd: func(epoch int, trainAcc, _ float64) error {
			t.Logf("epoch %d: train accuracy %.4f (%.1f s)", epoch, trainAcc, time.Since(start).Seconds())
			return nil
		},
	}))
	defer model.Close()
	acc := ok(model.Score(test))
	t.Logf("test accuracy %.4f after %.1f s", acc, time.Since(start).Seconds())
	if acc < 0.85 {
		t.Fatalf("test accuracy %.4f < 0.85", acc)
	}

	// The checkpoint, read back in Go: same predictions.
	dir := t.TempDir()
	prefix := filepath.Join(dir, "mlp")
	check(t, model.SaveCheckpoint(prefix, 5))
	back := ok(weft.LoadCheckpoint(prefix, 5))
	defer back.Close()
	if len(back.ArgParams) != 6 || len(back.AuxParams) != 0 {
		t.Fatalf("checkpoint holds %d arg and %d aux params", len(back.ArgParams), len(back.AuxParams))
	}
	if acc2 := ok(back.Score(test)); acc2 != acc {
		t.Fatalf("the reloaded model scores %.4f, the trained one %.4f", acc2, acc)
	}
	check(t, test.Reset())
	b := ok(test.Next())
	defer b.Close()
	images := b.Data[0]
	check(t, weft.Save(prefix+"-images.params", []*weft.NDArray{images}))
	one := ok(weft.NewArrayIter(images, nil, 100, false))
	goPred := ok(back.Predict(one))
	flat := make([]float32, 0, 1000)
	for _, row := range goPred {
		flat = append(flat, row...)
	}
	check(t, weft.Save(prefix+"-pred.params", []*weft.NDArray{ok(weft.NewFrom(flat, 100, 10))}))

	// Python loads the checkpoint, predicts the same batch, and writes a checkpoint of its
	// own (the weights halved) that Go reads.
	out := python(t, `
import sys, numpy as np, weft as mx
prefix = sys.argv[1]
sym, arg, aux = mx.model.load_checkpoint(prefix, 5)
images = mx.nd.load(prefix + "-images.params")[0]
gopred = mx.nd.load(prefix + "-pred.params")[0].asnumpy()
exe = sym.simple_bind(mx.cpu(), grad_req="null", data=images.shape)
exe.copy_params_from(arg, aux, allow_extra_params=True)
pred = exe.forward(is_train=False, data=images)[0].asnumpy()
print("maxdiff %.3g" % np.abs(pred - gopred).max())
mx.model.save_checkpoint(prefix + "-py", 1, sym, {k: v * 0.5 for k, v in arg.items()}, aux)
`, prefix)
	if !strings.HasPrefix(out, "maxdiff ") {
		t.Fatalf("Python said %q", out)
	}
	var diff float64
	fmt.Sscanf(strings.TrimPrefix(out, "maxdiff "), "%g", &diff)
	if diff > 1e-5 || math.IsNaN(diff) {
		t.Fatalf("Python's predictions differ from Go's by %g", diff)
	}
	py := ok(weft.LoadCheckpoint(prefix+"-py", 1))
	defer py.Close()
	for name, a := range back.ArgParams {
		want := f32(t, a)
		for i := range want {
			want[i] *= 0.5
		}
		near(t, "Python's halved "+name, f32(t, py.ArgParams[name]), want, 1e-7)
	}
	if args := ok(py.Symbol.ListArguments()); fmt.Sprint(args) != fmt.Sprint(ok(net.ListArguments())) {
		t.Fatalf("Python's symbol has arguments %v", args)
	}
}

// separable is n samples of 4 features whose class (of 3) is the largest of the first
// three features.
func separable(n int, seed int64) (*weft.NDArray, *weft.NDArray) {
	x := make([]float32, 4*n)
	y := make([]float32, n)
	s := uint64(seed)
	next := func() float32 {
		s = s*6364136223846793005 + 1442695040888963407
		return float32(s>>40) / float32(1<<24)
	}
	for i := 0; i < n; i++ {
		best := 0
		for j := 0; j < 4; j++ {
			x[4*i+j] = next()
			if j < 3 && x[4*i+j] > x[4*i+best] {
				best = j
			}
		}
		y[i] = float32(best)
	}
	xa, _ := weft.NewFrom(x, n, 4)
	ya, _ := weft.NewFrom(y)
	return xa, ya
}

// fixedInit gives every parameter the same small deterministic values, so that two fits
// start alike.
func fixedInit(name string, arr *weft.NDArray) error {
	n, err := arr.Size()
	if err != nil {
		return err
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((i*7+len(name))%11-5) / 50
	}
	return weft.CopyFrom(arr, v)
}

func TestTrainFitThroughALocalKVStoreMatchesFitWithout(t *testing.T) {
	x, y := separable(600, 1)
	net := mlp(t, 16, 3)
	fit := func(kv *weft.KVStore) *weft.Model {
		it := ok(weft.NewArrayIter(x, y, 50, false))
		return ok(weft.Fit(net, it, weft.FitOptions{Epochs: 30, Init: fixedInit, KVStore: kv,
			Optimizer: &weft.SGD{LearningRate: 0.5, Momentum: 0.5}}))
	}
	direct := fit(nil)
	defer direct.Close()
	kv := ok(weft.CreateKVStore("local"))
	defer kv.Close()
	viaStore := fit(kv)
	defer viaStore.Close()
	for name, a := range direct.ArgParams {
		near(t, name+" through the store", f32(t, viaStore.ArgParams[name]), f32(t, a), 1e-5)
	}
	acc := ok(direct.Score(ok(weft.NewArrayIter(x, y, 50, false))))
	if acc < 0.9 {
		t.Fatalf("training accuracy %.3f on separable data", acc)
	}
}
