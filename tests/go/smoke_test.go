// Smoke test of the Go binding: arrays round-trip, an operator runs through
// weft_imperative_invoke, and failures come back as errors carrying Weft's message.
package smoke

import (
	"strings"
	"testing"

	"weft"
)

func TestPlusScalar(t *testing.T) {
	a, err := weft.NewFloat32(weft.CPU, []int64{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()

	outs, err := weft.Invoke("_plus_scalar", []*weft.NDArray{a}, map[string]string{"scalar": "2.5"})
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 {
		t.Fatalf("_plus_scalar: expected 1 output, got %d", len(outs))
	}
	defer outs[0].Free()

	shape, err := outs[0].Shape()
	if err != nil {
		t.Fatal(err)
	}
	if len(shape) != 2 || shape[0] != 2 || shape[1] != 3 {
		t.Fatalf("expected shape [2 3], got %v", shape)
	}
	got, err := outs[0].Float32s()
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{3.5, 4.5, 5.5, 6.5, 7.5, 8.5}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("value %d: expected %v, got %v (all: %v)", i, want[i], got[i], got)
		}
	}
}

func TestErrorsCarryTheMessage(t *testing.T) {
	_, err := weft.Invoke("no_such_operator", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "no_such_operator") {
		t.Fatalf("expected an error naming the unknown operator, got %v", err)
	}

	a, err := weft.NewFloat32(weft.CPU, []int64{3}, []float32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Free()
	_, err = weft.Invoke("_plus_scalar", []*weft.NDArray{a}, map[string]string{"scalar": "not a number"})
	if err == nil || !strings.Contains(err.Error(), "scalar") {
		t.Fatalf("expected an error naming the parameter 'scalar', got %v", err)
	}
}

func TestShapeAndValueCountMustAgree(t *testing.T) {
	if _, err := weft.NewFloat32(weft.CPU, []int64{2, 2}, []float32{1, 2, 3}); err == nil {
		t.Fatal("expected an error for 3 values in a (2, 2) array")
	}
}
