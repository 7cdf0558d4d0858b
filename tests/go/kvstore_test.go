package tests

import (
	"errors"
	"strings"
	"testing"

	"weft.dev/weft"
)

func TestKVStoreLocalInitPushPullPushPull(t *testing.T) {
	kv := ok(weft.CreateKVStore("local"))
	defer kv.Close()
	if kind := ok(kv.Type()); kind != "local" {
		t.Fatalf("type %q", kind)
	}
	if r, n := ok(kv.Rank()), ok(kv.NumWorkers()); r != 0 || n != 1 {
		t.Fatalf("rank %d of %d", r, n)
	}
	check(t, kv.Init("3", ok(weft.NewFrom([]float32{1, 2}))))
	check(t, kv.Init("w", ok(weft.NewFrom([]float32{5}))))
	out := ok(weft.Zeros(2))
	check(t, kv.Pull("3", out))
	near(t, "pulled init", f32(t, out), []float32{1, 2}, 0)
	// Values pushed together for one key are summed, and the sum replaces the value.
	check(t, kv.Push("3", ok(weft.NewFrom([]float32{1, 1})), ok(weft.NewFrom([]float32{10, 20}))))
	check(t, kv.Pull("3", out))
	near(t, "pulled sum", f32(t, out), []float32{11, 21}, 0)
	o1, o2 := ok(weft.Zeros(1)), ok(weft.Zeros(1))
	check(t, kv.PushPull("w", []*weft.NDArray{ok(weft.NewFrom([]float32{7}))}, []*weft.NDArray{o1, o2}))
	near(t, "pushpull", append(f32(t, o1), f32(t, o2)...), []float32{7, 7}, 0)
	if err := kv.Pull("missing", out); err == nil {
		t.Fatal("pulling an unknown key succeeded")
	}
}

func TestKVStoreUpdaterRunsAnSGDStep(t *testing.T) {
	kv := ok(weft.CreateKVStore("local"))
	defer kv.Close()
	opt := &weft.SGD{LearningRate: 0.1, Momentum: 0.9}
	defer opt.Close()
	check(t, kv.SetOptimizer(opt))
	check(t, kv.Init("w", ok(weft.NewFrom([]float32{1, -1}))))
	w := ok(weft.Zeros(2))
	grad := ok(weft.NewFrom([]float32{0.5, 2}))
	// mom = 0.9 mom - lr g; w += mom: step 1: mom = -0.1 g, step 2: mom = -0.19 g.
	check(t, kv.Push("w", grad))
	check(t, kv.Pull("w", w))
	near(t, "after step 1", f32(t, w), []float32{1 - 0.05, -1 - 0.2}, 1e-6)
	check(t, kv.Push("w", grad))
	check(t, kv.Pull("w", w))
	near(t, "after step 2", f32(t, w), []float32{1 - 0.05 - 0.095, -1 - 0.2 - 0.38}, 1e-6)

	// A Go updater's error fails the push, with its message.
	check(t, kv.SetUpdater(func(key string, merged, stored *weft.NDArray) error {
		return errors.New("refusing " + key)
	}))
	err := kv.Push("w", grad)
	if err == nil || !strings.Contains(err.Error(), "refusing w") {
		t.Fatalf("want the updater's error, got %v", err)
	}
	// A panicking updater fails the push instead of crashing the process.
	check(t, kv.SetUpdater(func(key string, merged, stored *weft.NDArray) error { panic("boom") }))
	if err := kv.Push("w", grad); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("want the panic as an error, got %v", err)
	}
	check(t, kv.SetUpdater(nil))
	check(t, kv.Push("w", grad))
	check(t, kv.Pull("w", w))
	near(t, "without updater the push is stored", f32(t, w), []float32{0.5, 2}, 0)
}
