package tests

import (
	"fmt"
	"testing"

	"weft.dev/weft"
	"weft.dev/weft/op"
)

func TestExecutorBindForwardBackward(t *testing.T) {
	x := ok(weft.Variable("x"))
	fc := ok(op.SymFullyConnected(x, nil, nil, 2, op.WithName("fc")))
	data := ok(weft.NewFrom([]float32{1, 2, 3, 4, 5, 6}, 2, 3))
	w := ok(weft.NewFrom([]float32{1, 0, -1, 2, 1, 0}, 2, 3))
	b := ok(weft.NewFrom([]float32{0.5, -0.5}))
	gw, gb := ok(weft.Zeros(2, 3)), ok(weft.Zeros(2))
	exec := ok(weft.Bind(fc, weft.CPU(), []*weft.NDArray{data, w, b}, []*weft.NDArray{nil, gw, gb},
		[]string{"null", "write", "write"}, nil))
	defer exec.Close()
	check(t, exec.Forward(true))
	outs := ok(exec.Outputs())
	near(t, "forward", f32(t, outs[0]), []float32{-1.5, 3.5, -1.5, 12.5}, 1e-6)
	head := ok(weft.NewFrom([]float32{1, 0, 2, 1}, 2, 2))
	check(t, exec.Backward(head))
	// dW = head^T . data: row 0 = 1*(1,2,3) + 2*(4,5,6), row 1 = 0*(1,2,3) + 1*(4,5,6).
	near(t, "dW", f32(t, gw), []float32{9, 12, 15, 4, 5, 6}, 1e-6)
	near(t, "db", f32(t, gb), []float32{3, 1}, 1e-6)
	grads := ok(exec.GradDict())
	if _, has := grads["x"]; has || grads["fc_weight"] == nil {
		t.Fatalf("gradient dict %v", grads)
	}
	args := ok(exec.ArgDict())
	near(t, "bound weight", f32(t, args["fc_weight"]), []float32{1, 0, -1, 2, 1, 0}, 0)
}

func TestExecutorSimpleBindAllocatesEverything(t *testing.T) {
	net := mlp(t, 4, 3)
	exec := ok(weft.SimpleBind(net, weft.CPU(), map[string][]int{"data": {5, 6}},
		&weft.BindOptions{GradReqs: map[string]string{"fc1_weight": "write", "fc2_weight": "add"}}))
	defer exec.Close()
	args := ok(exec.ArgDict())
	shapeIs(t, args["fc1_weight"], 4, 6)
	shapeIs(t, args["softmax_label"], 5)
	grads := ok(exec.GradDict())
	if len(grads) != 2 || grads["fc1_weight"] == nil || grads["fc2_weight"] == nil {
		t.Fatalf("gradients for %v", grads)
	}
	if fmt.Sprint(exec.ArgNames()) != fmt.Sprint(ok(net.ListArguments())) {
		t.Fatal("ArgNames differs from ListArguments")
	}
	check(t, exec.Forward(false))
	// Zeroed weights: every class gets 1/3.
	near(t, "softmax of zeros", f32(t, ok(exec.Outputs())[0]), []float32{
		1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3, 1. / 3}, 1e-6)
	if s := ok(exec.DebugStr()); len(s) == 0 {
		t.Fatal("empty debug string")
	}
}
