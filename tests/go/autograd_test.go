package tests

import (
	"testing"

	"weft.dev/weft"
)

func TestAutogradRecordsAndDifferentiates(t *testing.T) {
	x := ok(weft.NewFrom([]float32{1, 2, 3}))
	check(t, x.AttachGrad("write"))
	var y *weft.NDArray
	check(t, weft.Record(func() error {
		sq, err := x.Mul(x)
		if err != nil {
			return err
		}
		twice, err := x.MulScalar(2)
		if err != nil {
			return err
		}
		y, err = sq.Add(twice)
		return err
	}))
	check(t, weft.Backward(y))
	// d(x^2 + 2x)/dx = 2x + 2
	near(t, "gradient", f32(t, ok(x.Grad())), []float32{4, 6, 8}, 1e-6)
	d := ok(y.Detach())
	near(t, "detached value", f32(t, d), []float32{3, 8, 15}, 1e-6)
	if g := ok(d.Grad()); g != nil {
		t.Fatal("a detached array has no gradient")
	}
}
