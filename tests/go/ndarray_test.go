package tests

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"weft.dev/weft"
)

func roundTrip[T weft.Element](t *testing.T, want weft.DType, data []T) {
	t.Helper()
	a := ok(weft.NewFrom(data, 2, len(data)/2))
	defer a.Close()
	if dt := ok(a.DType()); dt != want {
		t.Fatalf("%T: dtype %s, want %s", data, dt, want)
	}
	shapeIs(t, a, 2, len(data)/2)
	got := ok(weft.Values[T](a))
	if fmt.Sprint(got) != fmt.Sprint(data) {
		t.Fatalf("%s: read back %v, want %v", want, got, data)
	}
}

func TestNDArrayEveryDTypeRoundTrips(t *testing.T) {
	roundTrip(t, weft.DTypeFloat32, []float32{1.5, -2, 3e-8, 4e9})
	roundTrip(t, weft.DTypeFloat64, []float64{1.5, -2, 1e-300, 4e300})
	roundTrip(t, weft.DTypeFloat16, []weft.Float16{0x3c00, 0xc000, 0x3800, 0x7bff})
	roundTrip(t, weft.DTypeBFloat16, []weft.BFloat16{0x3f80, 0xc000, 0x3f00, 0x4780})
	roundTrip(t, weft.DTypeUint8, []uint8{0, 1, 200, 255})
	roundTrip(t, weft.DTypeInt8, []int8{-128, -1, 0, 127})
	roundTrip(t, weft.DTypeInt32, []int32{-1 << 31, -1, 0, 1<<31 - 1})
	roundTrip(t, weft.DTypeInt64, []int64{-1 << 62, -1, 0, 1 << 62})
	roundTrip(t, weft.DTypeBool, []bool{true, false, false, true})
}

func TestNDArrayConversionsBetweenDTypes(t *testing.T) {
	a := ok(weft.NewFrom([]float32{1, 0.5, -2, 65504}))
	h := ok(a.AsType(weft.DTypeFloat16))
	if bits := ok(weft.Values[weft.Float16](h)); fmt.Sprint(bits) != fmt.Sprint([]weft.Float16{0x3c00, 0x3800, 0xc000, 0x7bff}) {
		t.Fatalf("float16 bits %x", bits)
	}
	near(t, "float16 back to float32", f32(t, h), []float32{1, 0.5, -2, 65504}, 0)
	i := ok(ok(weft.NewFrom([]float64{1.9, -1.9, 7})).AsType(weft.DTypeInt32))
	if got := ok(weft.Values[int32](i)); fmt.Sprint(got) != "[1 -1 7]" {
		t.Fatalf("float64 -> int32 truncates toward zero: got %v", got)
	}
	if _, err := weft.Values[float64](a); !errors.Is(err, weft.ErrType) {
		t.Fatalf("reading float32 as float64: want ErrType, got %v", err)
	}
}

func TestNDArrayArithmetic(t *testing.T) {
	a := ok(weft.NewFrom([]float32{1, 2, 3, 4}, 2, 2))
	b := ok(weft.NewFrom([]float32{10, 20, 30, 40}, 2, 2))
	row := ok(weft.NewFrom([]float32{100, 200}, 1, 2))
	near(t, "a+b", f32(t, ok(a.Add(b))), []float32{11, 22, 33, 44}, 0)
	near(t, "a-b", f32(t, ok(a.Sub(b))), []float32{-9, -18, -27, -36}, 0)
	near(t, "a*b", f32(t, ok(a.Mul(b))), []float32{10, 40, 90, 160}, 0)
	near(t, "b/a", f32(t, ok(b.Div(a))), []float32{10, 10, 10, 10}, 1e-7)
	near(t, "a+row (broadcast)", f32(t, ok(a.Add(row))), []float32{101, 202, 103, 204}, 0)
	near(t, "a+1.5", f32(t, ok(a.AddScalar(1.5))), []float32{2.5, 3.5, 4.5, 5.5}, 0)
	near(t, "a-1", f32(t, ok(a.SubScalar(1))), []float32{0, 1, 2, 3}, 0)
	near(t, "10-a", f32(t, ok(a.RSubScalar(10))), []float32{9, 8, 7, 6}, 0)
	near(t, "a*3", f32(t, ok(a.MulScalar(3))), []float32{3, 6, 9, 12}, 0)
	near(t, "a/4", f32(t, ok(a.DivScalar(4))), []float32{0.25, 0.5, 0.75, 1}, 0)
	near(t, "12/a", f32(t, ok(a.RDivScalar(12))), []float32{12, 6, 4, 3}, 1e-7)
	// [[1,2],[3,4]] . [[10,20],[30,40]] = [[70,100],[150,220]]
	near(t, "a.b", f32(t, ok(a.Dot(b))), []float32{70, 100, 150, 220}, 0)
	z := ok(weft.Zeros(3))
	o := ok(weft.Ones(3))
	near(t, "zeros", f32(t, z), []float32{0, 0, 0}, 0)
	near(t, "ones", f32(t, o), []float32{1, 1, 1}, 0)
	if _, err := a.Add(ok(weft.Zeros(3))); !errors.Is(err, weft.ErrShape) {
		t.Fatalf("(2,2)+(3,): want ErrShape, got %v", err)
	}
}

func TestNDArraySlicingAndViews(t *testing.T) {
	vals := make([]float32, 12)
	for i := range vals {
		vals[i] = float32(i)
	}
	a := ok(weft.NewFrom(vals, 3, 4))
	s := ok(a.Slice(1, 3))
	shapeIs(t, s, 2, 4)
	near(t, "rows 1..3", f32(t, s), vals[4:], 0)
	last := ok(a.At(-1))
	shapeIs(t, last, 4)
	near(t, "row -1", f32(t, last), vals[8:], 0)
	r := ok(a.Reshape(-1, 6))
	shapeIs(t, r, 2, 6)
	if !ok(a.SharesMemory(r)) || !ok(a.SharesMemory(s)) {
		t.Fatal("views must share the array's memory")
	}
	// Writing through a view changes the array.
	check(t, weft.CopyFrom(last, []float32{-1, -2, -3, -4}))
	near(t, "after writing row 2", f32(t, a)[8:], []float32{-1, -2, -3, -4}, 0)
	c := ok(a.Copy())
	if ok(a.SharesMemory(c)) {
		t.Fatal("Copy must not share memory")
	}
	if _, err := a.Slice(2, 5); !errors.Is(err, weft.ErrIndex) && !errors.Is(err, weft.ErrValue) {
		t.Fatalf("Slice(2,5) of 3 rows: want an index error, got %v", err)
	}
	if _, err := a.Reshape(5, 5); !errors.Is(err, weft.ErrShape) && !errors.Is(err, weft.ErrValue) {
		t.Fatalf("Reshape(5,5) of 12 elements: want a shape error, got %v", err)
	}
	if !strings.Contains(a.String(), "3x4 float32") {
		t.Fatalf("String() = %q", a.String())
	}
}

func TestNDArraySaveLoadAcrossPython(t *testing.T) {
	dir := t.TempDir()
	w := ok(weft.NewFrom([]float32{1, 2, 3, 4, 5, 6}, 2, 3))
	b := ok(weft.NewFrom([]int32{7, -8}))
	named := filepath.Join(dir, "named.params")
	unnamed := filepath.Join(dir, "unnamed.params")
	check(t, weft.SaveNamed(named, map[string]*weft.NDArray{"arg:w": w, "aux:b": b}))
	check(t, weft.Save(unnamed, []*weft.NDArray{b, w}))

	back := ok(weft.LoadNamed(named))
	near(t, "named w", f32(t, back["arg:w"]), []float32{1, 2, 3, 4, 5, 6}, 0)
	if got := ok(weft.Values[int32](back["aux:b"])); fmt.Sprint(got) != "[7 -8]" {
		t.Fatalf("named b: %v", got)
	}
	list, names, err := weft.Load(unnamed)
	check(t, err)
	if names != nil || len(list) != 2 {
		t.Fatalf("unnamed list: %d arrays, names %v", len(list), names)
	}
	shapeIs(t, list[1], 2, 3)
	if _, err := weft.LoadNamed(unnamed); !errors.Is(err, weft.ErrValue) {
		t.Fatalf("LoadNamed of an unnamed list: want ErrValue, got %v", err)
	}

	// Python reads what Go wrote, and writes a file Go reads.
	fromPy := filepath.Join(dir, "py.params")
	out := python(t, `
import sys, weft as mx
d = mx.nd.load(sys.argv[1])
l = mx.nd.load(sys.argv[2])
print(sorted(d), d["arg:w"].asnumpy().tolist(), d["aux:b"].dtype.__name__ if hasattr(d["aux:b"].dtype, "__name__") else d["aux:b"].dtype, l[0].asnumpy().tolist(), l[1].shape)
mx.nd.save(sys.argv[3], {"x": mx.nd.array([[0.5, 1.5], [2.5, 3.5]]), "y": mx.nd.array([9], dtype="int64")})
`, named, unnamed, fromPy)
	want := "['arg:w', 'aux:b'] [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]] int32 [7, -8] (2, 3)"
	if out != want {
		t.Fatalf("Python read:\n%s\nwant\n%s", out, want)
	}
	py := ok(weft.LoadNamed(fromPy))
	near(t, "x from Python", f32(t, py["x"]), []float32{0.5, 1.5, 2.5, 3.5}, 0)
	shapeIs(t, py["x"], 2, 2)
	if got := ok(weft.Values[int64](py["y"])); fmt.Sprint(got) != "[9]" {
		t.Fatalf("y from Python: %v", got)
	}
}

func TestNDArrayHalfConversionsMatchTheLibrary(t *testing.T) {
	var vals []float32
	for v := 1e-8; v < 7e4; v *= 1.037 {
		vals = append(vals, float32(v), float32(-v))
	}
	a := ok(weft.NewFrom(vals))
	h := ok(weft.Values[weft.Float16](ok(a.AsType(weft.DTypeFloat16))))
	b := ok(weft.Values[weft.BFloat16](ok(a.AsType(weft.DTypeBFloat16))))
	for i, v := range vals {
		if got := weft.Float16FromFloat32(v); got != h[i] {
			t.Fatalf("float16 of %g: Go %#04x, library %#04x", v, uint16(got), uint16(h[i]))
		}
		if got := weft.BFloat16FromFloat32(v); got != b[i] {
			t.Fatalf("bfloat16 of %g: Go %#04x, library %#04x", v, uint16(got), uint16(b[i]))
		}
	}
	// And back: the library widens what Go narrowed as Go does.
	back := f32(t, ok(ok(weft.NewFrom(h)).AsType(weft.DTypeFloat32)))
	for i := range h {
		if back[i] != h[i].Float32() {
			t.Fatalf("float16 %#04x widens to %g in the library, %g in Go", uint16(h[i]), back[i], h[i].Float32())
		}
	}
}

// cpu_shared (MXNet's device type 5): an array made there reports that context, reads back,
// and mixes with CPU arrays in one operator call.
func TestNDArrayOnCPUShared(t *testing.T) {
	ctx := weft.CPUShared(0)
	if ctx.String() != "cpu_shared(0)" || ctx.DeviceType != weft.DeviceTypeCPUShared {
		t.Fatalf("CPUShared(0) is %v (type %d)", ctx, ctx.DeviceType)
	}
	a := ok(weft.Full(2, weft.DTypeFloat32, ctx, 2, 3))
	defer a.Close()
	if got := ok(a.Context()); got != ctx {
		t.Fatalf("an array made on %v reports %v", ctx, got)
	}
	b := ok(weft.Ones(2, 3))
	defer b.Close()
	sum := ok(a.Add(b))
	defer sum.Close()
	near(t, "cpu_shared + cpu", f32(t, sum), []float32{3, 3, 3, 3, 3, 3}, 0)
}
