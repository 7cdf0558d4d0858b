package tests

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"weft.dev/weft"
	"weft.dev/weft/op"
)

// mlp is data -> fc1(hidden) -> relu -> fc2(classes) -> softmax.
func mlp(t *testing.T, hidden, classes int) *weft.Symbol {
	t.Helper()
	data := ok(weft.Variable("data"))
	fc1 := ok(op.SymFullyConnected(data, nil, nil, hidden, op.WithName("fc1")))
	act := ok(op.SymActivation(fc1, "relu", op.WithName("relu1")))
	fc2 := ok(op.SymFullyConnected(act, nil, nil, classes, op.WithName("fc2")))
	return ok(op.SymSoftmaxOutput(fc2, nil, op.WithName("softmax")))
}

func TestSymbolCompositionListsAndShapes(t *testing.T) {
	net := mlp(t, 4, 3)
	args := ok(net.ListArguments())
	if fmt.Sprint(args) != "[data fc1_weight fc1_bias fc2_weight fc2_bias softmax_label]" {
		t.Fatalf("arguments %v", args)
	}
	if outs := ok(net.ListOutputs()); fmt.Sprint(outs) != "[softmax_output]" {
		t.Fatalf("outputs %v", outs)
	}
	if name := ok(net.Name()); name != "softmax" {
		t.Fatalf("name %q", name)
	}
	shapes := ok(net.InferShape(map[string][]int{"data": {5, 6}}))
	if !shapes.Complete || fmt.Sprint(shapes.Arguments) != "[[5 6] [4 6] [4] [3 4] [3] [5]]" ||
		fmt.Sprint(shapes.Outputs) != "[[5 3]]" {
		t.Fatalf("inferred %+v", shapes)
	}
	types := ok(net.InferType(map[string]weft.DType{"data": weft.DTypeFloat32}))
	if types.Outputs[0] != weft.DTypeFloat32 {
		t.Fatalf("inferred types %+v", types)
	}
	if _, err := net.InferShape(map[string][]int{"data": {5, 6}, "fc1_weight": {7, 7}}); !errors.Is(err, weft.ErrShape) {
		t.Fatalf("conflicting shapes: want ErrShape, got %v", err)
	}
}

func TestSymbolGroupsInternalsAndAttributes(t *testing.T) {
	net := mlp(t, 4, 3)
	fc1 := ok(net.InternalOutput("fc1_output"))
	if outs := ok(fc1.ListOutputs()); fmt.Sprint(outs) != "[fc1_output]" {
		t.Fatalf("fc1 outputs %v", outs)
	}
	internals := ok(net.Internals())
	outs := ok(internals.ListOutputs())
	if len(outs) < 4 || outs[len(outs)-1] != "softmax_output" {
		t.Fatalf("internals %v", outs)
	}
	g := ok(weft.Group(fc1, net))
	if outs := ok(g.ListOutputs()); fmt.Sprint(outs) != "[fc1_output softmax_output]" {
		t.Fatalf("group outputs %v", outs)
	}
	if _, err := net.InternalOutput("nope_output"); !errors.Is(err, weft.ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
	check(t, fc1.SetAttr("__lr_mult__", "0.5"))
	if v, found := ok2(fc1.Attr("__lr_mult__")); !found || v != "0.5" {
		t.Fatalf("attr %q %v", v, found)
	}
	if v, found := ok2(fc1.Attr("num_hidden")); !found || v != "4" {
		t.Fatalf("num_hidden attr %q %v", v, found)
	}
	if _, found := ok2(fc1.Attr("missing")); found {
		t.Fatal("a missing attribute was found")
	}
}

func ok2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(err)
	}
	return a, b
}

func TestSymbolJSONRoundTripsWithPython(t *testing.T) {
	net := mlp(t, 8, 10)
	js := ok(net.ToJSON())
	back := ok(weft.SymbolFromJSON(js))
	if js2 := ok(back.ToJSON()); js2 != js {
		t.Fatalf("Go JSON round trip differs:\n%s\n%s", js, js2)
	}
	dir := t.TempDir()
	goFile := filepath.Join(dir, "go-symbol.json")
	pyFile := filepath.Join(dir, "py-symbol.json")
	check(t, net.Save(goFile))
	out := python(t, `
import sys, weft as mx
s = mx.sym.load(sys.argv[1])
print(s.list_arguments())
print(s.infer_shape(data=(2, 5))[1])
s.save(sys.argv[2])
n = mx.sym.FullyConnected(mx.sym.Variable("x"), num_hidden=3, name="py_fc")
open(sys.argv[3], "w").write(n.tojson())
`, goFile, pyFile, filepath.Join(dir, "py-fc.json"))
	want := "['data', 'fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias', 'softmax_label']\n[(2, 10)]"
	if out != want {
		t.Fatalf("Python saw:\n%s\nwant\n%s", out, want)
	}
	fromPy := ok(weft.LoadSymbol(pyFile))
	if js2 := ok(fromPy.ToJSON()); js2 != js {
		t.Fatalf("the graph Python saved differs from Go's:\n%s\n%s", js, js2)
	}
	pyFC := ok(weft.LoadSymbol(filepath.Join(dir, "py-fc.json")))
	if args := ok(pyFC.ListArguments()); fmt.Sprint(args) != "[x py_fc_weight py_fc_bias]" {
		t.Fatalf("Python's fc arguments %v", args)
	}
}
