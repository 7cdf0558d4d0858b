// Command fashion_mnist trains a 784-128-64-10 MLP on Fashion-MNIST with weft.Fit (SGD
// with momentum), reports its test accuracy and saves a checkpoint that Python's
// weft.model.load_checkpoint reads.
//
//	go run ./fashion_mnist -epochs 6 -prefix /tmp/mlp
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"weft.dev/weft"
	"weft.dev/weft/iter"
	"weft.dev/weft/op"
)

func main() {
	data := flag.String("data", "/usr/share/datasets/fashion-mnist", "folder of the Fashion-MNIST idx files (Debian: dataset-fashion-mnist)")
	epochs := flag.Int("epochs", 6, "passes over the training set")
	lr := flag.Float64("lr", 0.1, "learning rate")
	momentum := flag.Float64("momentum", 0.5, "momentum")
	prefix := flag.String("prefix", "", "write the checkpoint prefix-symbol.json and prefix-NNNN.params")
	require := flag.Float64("require", 0, "exit with status 1 when the test accuracy is below this")
	flag.Parse()
	acc, err := run(*data, *epochs, *lr, *momentum, *prefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fashion_mnist:", err)
		os.Exit(1)
	}
	if acc < *require {
		fmt.Fprintf(os.Stderr, "fashion_mnist: test accuracy %.4f is below %.4f\n", acc, *require)
		os.Exit(1)
	}
}

func mlp() (*weft.Symbol, error) {
	x, err := weft.Variable("data")
	if err != nil {
		return nil, err
	}
	for i, hidden := range []int{128, 64} {
		if x, err = op.SymFullyConnected(x, nil, nil, hidden, op.WithName(fmt.Sprintf("fc%d", i+1))); err != nil {
			return nil, err
		}
		if x, err = op.SymActivation(x, "relu", op.WithName(fmt.Sprintf("relu%d", i+1))); err != nil {
			return nil, err
		}
	}
	if x, err = op.SymFullyConnected(x, nil, nil, 10, op.WithName("fc3")); err != nil {
		return nil, err
	}
	return op.SymSoftmaxOutput(x, nil, op.WithName("softmax"))
}

func mnist(dir, split string, shuffle bool) (*weft.DataIter, error) {
	return iter.MNISTIter(
		iter.WithImage(filepath.Join(dir, split+"-images-idx3-ubyte.gz")),
		iter.WithLabel(filepath.Join(dir, split+"-labels-idx1-ubyte.gz")),
		iter.WithBatchSize(100), iter.WithFlat(true), iter.WithShuffle(shuffle))
}

func run(dir string, epochs int, lr, momentum float64, prefix string) (float64, error) {
	train, err := mnist(dir, "train", true)
	if err != nil {
		return 0, err
	}
	defer train.Close()
	test, err := mnist(dir, "t10k", false)
	if err != nil {
		return 0, err
	}
	defer test.Close()
	net, err := mlp()
	if err != nil {
		return 0, err
	}
	defer net.Close()
	if err := weft.RandomSeed(1); err != nil {
		return 0, err
	}
	start := time.Now()
	model, err := weft.Fit(net, train, weft.FitOptions{
		Epochs:    epochs,
		Optimizer: &weft.SGD{LearningRate: lr, Momentum: momentum},
		EvalData:  test,
		EpochEnd: func(epoch int, trainAcc, testAcc float64) error {
			fmt.Printf("epoch %d: train accuracy %.4f, test accuracy %.4f (%.1f s)\n",
				epoch, trainAcc, testAcc, time.Since(start).Seconds())
			return nil
		},
	})
	if err != nil {
		return 0, err
	}
	defer model.Close()
	acc, err := model.Score(test)
	if err != nil {
		return 0, err
	}
	fmt.Printf("test accuracy %.4f\n", acc)
	if prefix != "" {
		if err := model.SaveCheckpoint(prefix, epochs); err != nil {
			return 0, err
		}
		fmt.Printf("checkpoint %s-symbol.json, %s-%04d.params\n", prefix, prefix, epochs)
	}
	return acc, nil
}
