package tests

import (
	"errors"
	"testing"

	"weft.dev/weft"
	"weft.dev/weft/op"
)

func TestOpFullyConnectedWithPositionalAndOptionalParameters(t *testing.T) {
	x := ok(weft.NewFrom([]float32{1, 2, 3, 4, 5, 6}, 2, 3))
	w := ok(weft.NewFrom([]float32{1, 0, -1, 2, 1, 0}, 2, 3))
	b := ok(weft.NewFrom([]float32{0.5, -0.5}))
	// x . w^T + b, by hand: row 0: (1-3, 2+2) + b = (-1.5, 3.5); row 1: (4-6, 8+5) + b = (-1.5, 12.5).
	y := ok(op.FullyConnected(x, w, b, 2))
	near(t, "fc", f32(t, y), []float32{-1.5, 3.5, -1.5, 12.5}, 1e-6)
	nb := ok(op.FullyConnected(x, w, nil, 2, op.WithNoBias(true)))
	near(t, "fc without bias", f32(t, nb), []float32{-2, 4, -2, 13}, 1e-6)
	out := ok(weft.Zeros(2, 2))
	res := ok(op.FullyConnected(x, w, b, 2, op.WithOut(out)))
	if res != out {
		t.Fatal("WithOut must return the array written into")
	}
	near(t, "fc into out", f32(t, out), []float32{-1.5, 3.5, -1.5, 12.5}, 1e-6)
}

func TestOpVariadicGenericOptionsAndInternalOperators(t *testing.T) {
	a := ok(weft.NewFrom([]float32{1, 2}, 1, 2))
	b := ok(weft.NewFrom([]float32{3, 4}, 1, 2))
	c := ok(op.Concat([]*weft.NDArray{a, b, a}, op.WithDim(0)))
	shapeIs(t, c, 3, 2)
	near(t, "concat", f32(t, c), []float32{1, 2, 3, 4, 1, 2}, 0)
	// WithAxis is generic: an int for sum, a tuple for others.
	s := ok(op.Sum(c, op.WithAxis([]int{0})))
	near(t, "sum over axis 0", f32(t, s), []float32{5, 8}, 0)
	s1 := ok(op.Sum(c, op.WithAxis([]int{1}), op.WithKeepdims(true)))
	shapeIs(t, s1, 3, 1)
	near(t, "sum over axis 1", f32(t, s1), []float32{3, 7, 3}, 0)
	p := ok(op.InternalPlusScalar(a, op.WithScalar(0.25)))
	near(t, "_plus_scalar", f32(t, p), []float32{1.25, 2.25}, 0)
	f := ok(op.InternalFull(2.5, op.WithShape([]int{2, 2}), op.WithDtype(weft.DTypeFloat64)))
	if ok(f.DType()) != weft.DTypeFloat64 {
		t.Fatal("_full ignored dtype")
	}
	near(t, "_full", f32(t, f), []float32{2.5, 2.5, 2.5, 2.5}, 0)
	r := ok(op.Relu(ok(weft.NewFrom([]float32{-1, 0, 2}))))
	near(t, "relu", f32(t, r), []float32{0, 0, 2}, 0)
	// An alias is the same operator.
	u := ok(op.Uniform(op.WithLow(2), op.WithHigh(3), op.WithShape([]int{1000})))
	for _, v := range f32(t, u) {
		if v < 2 || v > 3 {
			t.Fatalf("uniform(2,3) drew %g", v)
		}
	}
	// Every output of a multi-output operator through Invoke.
	parts := ok(op.Invoke("split", []*weft.NDArray{c}, op.WithParam("num_outputs", 3), op.WithAxis(0)))
	if len(parts) != 3 {
		t.Fatalf("split gave %d outputs", len(parts))
	}
	near(t, "split part 1", f32(t, parts[1]), []float32{3, 4}, 0)
}

func TestOpRandomIsReproducibleWithASeed(t *testing.T) {
	draw := func() []float32 {
		check(t, weft.RandomSeed(42))
		return f32(t, ok(op.RandomNormal(op.WithShape([]int{5}))))
	}
	a, b := draw(), draw()
	near(t, "same seed, same draws", a, b, 0)
}

func TestOpBadInputIsAnErrorWithWeftsMessage(t *testing.T) {
	x := ok(weft.NewFrom([]float32{1, 2, 3, 4}, 2, 2))
	_, err := op.Activation(x, "nope")
	var werr *weft.Error
	if !errors.As(err, &werr) || werr.Status != weft.StatusValue || werr.Message == "" {
		t.Fatalf("bad act_type: want a value error with a message, got %#v", err)
	}
	if _, err := op.Invoke("no_such_operator", []*weft.NDArray{x}); !errors.Is(err, weft.ErrNotFound) {
		t.Fatalf("unknown operator: want ErrNotFound, got %v", err)
	}
	// An operator with parameters refuses a key it does not have (one without parameters
	// leaves extra keys unread, as MXNet does).
	if _, err := op.Activation(x, "relu", op.WithParam("no_such_param", 1)); err == nil {
		t.Fatal("an unknown parameter was accepted")
	}
}
