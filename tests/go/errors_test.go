package tests

import (
	"errors"
	"strings"
	"testing"

	"weft.dev/weft"
	"weft.dev/weft/iter"
	"weft.dev/weft/op"
)

// wantErr checks that err is a *weft.Error matching the sentinel, whose message holds
// every fragment (Weft's own words).
func wantErr(t *testing.T, what string, err error, sentinel error, fragments ...string) {
	t.Helper()
	var werr *weft.Error
	if !errors.As(err, &werr) {
		t.Fatalf("%s: want a *weft.Error, got %T %v", what, err, err)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: want %v, got status %d: %v", what, sentinel, werr.Status, err)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Fatalf("%s: message %q lacks %q", what, err.Error(), f)
		}
	}
}

func TestErrorsClosedHandlesOfEveryKind(t *testing.T) {
	a := ok(weft.Zeros(2))
	check(t, a.Close())
	check(t, a.Close()) // twice is harmless
	_, err := a.Shape()
	wantErr(t, "closed array", err, weft.ErrHandle, "weft_ndarray_get_shape")
	_, err = op.Relu(a)
	wantErr(t, "operator on a closed array", err, weft.ErrHandle)

	s := ok(weft.Variable("x"))
	check(t, s.Close())
	_, err = s.ListArguments()
	wantErr(t, "closed symbol", err, weft.ErrHandle)

	e := ok(weft.SimpleBind(ok(op.SymRelu(ok(weft.Variable("x")))), weft.CPU(), map[string][]int{"x": {2}}, nil))
	check(t, e.Close())
	wantErr(t, "closed executor", e.Forward(false), weft.ErrHandle)

	kv := ok(weft.CreateKVStore("local"))
	check(t, kv.Close())
	wantErr(t, "closed store", kv.Init("k", ok(weft.Zeros(1))), weft.ErrHandle)

	it := ok(weft.NewDataIter("CSVIter", []string{"data_csv", "data_shape", "batch_size"},
		[]string{writeCSV(t), "(2,)", "1"}))
	check(t, it.Close())
	_, err = it.Next()
	wantErr(t, "closed iterator", err, weft.ErrHandle)

	var nilArray *weft.NDArray
	_, err = nilArray.Size()
	wantErr(t, "nil array", err, weft.ErrHandle)
	var nilExec *weft.Executor
	_, err = nilExec.Outputs()
	wantErr(t, "nil executor", err, weft.ErrHandle)
	_, err = nilExec.ArgDict()
	wantErr(t, "nil executor's arguments", err, weft.ErrHandle)
	var nilStore *weft.KVStore
	wantErr(t, "nil store", nilStore.Push("k", ok(weft.Zeros(1))), weft.ErrHandle)
	var nilModel *weft.Model
	_, err = nilModel.Score(ok(weft.NewArrayIter(ok(weft.Zeros(2, 2)), nil, 1, false)))
	wantErr(t, "nil model", err, weft.ErrHandle)
	var nilSGD *weft.SGD
	wantErr(t, "nil optimizer", nilSGD.Update("w", ok(weft.Zeros(1)), ok(weft.Zeros(1))), weft.ErrValue)
	wantErr(t, "Record(nil)", weft.Record(nil), weft.ErrValue)
}

func writeCSV(t *testing.T) string {
	path := t.TempDir() + "/x.csv"
	check(t, osWrite(path, "1,2\n3,4\n"))
	return path
}

func TestErrorsWrongShapesUnknownOperatorsBadParameters(t *testing.T) {
	x := ok(weft.NewFrom([]float32{1, 2, 3, 4, 5, 6}, 2, 3))
	w := ok(weft.Zeros(4, 4))
	_, err := op.FullyConnected(x, w, nil, 4, op.WithNoBias(true))
	wantErr(t, "fc with a weight of the wrong shape", err, weft.ErrShape, "FullyConnected", "weight")
	_, err = weft.NewFrom([]float32{1, 2, 3}, 2, 2)
	wantErr(t, "3 values for a 2x2 array", err, weft.ErrShape, "holds 4 elements")
	_, err = op.Invoke("NoSuchOp", nil)
	wantErr(t, "unknown operator", err, weft.ErrNotFound, "NoSuchOp")
	_, err = op.SymInvoke("NoSuchOp", nil)
	wantErr(t, "unknown symbolic operator", err, weft.ErrNotFound, "NoSuchOp")
	_, err = op.FullyConnected(x, w, nil, -3, op.WithNoBias(true))
	wantErr(t, "negative num_hidden", err, weft.ErrValue, "num_hidden")
	_, err = op.SymActivation(ok(weft.Variable("d")), "nope")
	wantErr(t, "bad act_type in a symbol", err, weft.ErrValue, "act_type")
	_, err = iter.CSVIter("/nonexistent.csv", []int{2}, 1)
	wantErr(t, "missing CSV", err, weft.ErrNotFound, "/nonexistent.csv")
	_, err = iter.MNISTIter(iter.WithBatchSize(0))
	wantErr(t, "batch size 0", err, weft.ErrValue, "batch_size")

	net := mlp(t, 4, 3)
	_, err = weft.SimpleBind(net, weft.CPU(), map[string][]int{"data": {5, 6}, "fc1_weight": {3, 3}}, nil)
	wantErr(t, "bind with conflicting shapes", err, weft.ErrShape, "fc1")
	_, err = weft.Bind(net, weft.CPU(), []*weft.NDArray{x}, nil, nil, nil)
	if err == nil {
		t.Fatal("binding 1 array for 6 arguments succeeded")
	}
	_, err = weft.SymbolFromJSON("{not json")
	if !errors.Is(err, weft.ErrValue) && !errors.Is(err, weft.ErrIO) {
		t.Fatalf("malformed JSON: %v", err)
	}
	_, _, err = weft.Load("/nonexistent.params")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent.params") {
		t.Fatalf("missing params file: %v", err)
	}
}
