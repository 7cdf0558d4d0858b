package tests

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"weft.dev/weft"
	"weft.dev/weft/op"
)

// TestErrorsEveryOperatorWithMissingInputs calls every registered operator (from the
// committed registry dump) with no input and with one input of an odd shape: each call
// either works or returns Weft's error; none may crash the process.
func TestErrorsEveryOperatorWithMissingInputs(t *testing.T) {
	text, err := os.ReadFile(filepath.Join(repoRoot(), "frontends", "registry.json"))
	check(t, err)
	var reg struct {
		Operators []struct{ Name string }
	}
	check(t, json.Unmarshal(text, &reg))
	odd := ok(weft.NewFrom([]float32{1, 2, 3}, 3, 1, 1))
	failed := 0
	for _, o := range reg.Operators {
		if strings.HasPrefix(o.Name, "_backward_") {
			continue
		}
		for _, inputs := range [][]*weft.NDArray{nil, {odd}} {
			outs, err := op.Invoke(o.Name, inputs)
			if err != nil {
				if !strings.Contains(err.Error(), "weft") {
					t.Errorf("%s: error without Weft's message: %v", o.Name, err)
				}
				failed++
				continue
			}
			for _, x := range outs {
				x.Close()
			}
		}
		s, err := op.SymInvoke(o.Name, nil)
		if err == nil {
			s.Close()
		}
	}
	if failed == 0 {
		t.Fatal("no operator refused missing inputs")
	}
	// Work that failed on the engine (a sampler given values that are not probabilities)
	// is reported by the next wait, as Weft's error, once.
	if err := weft.WaitAll(); err != nil {
		var werr *weft.Error
		if !errors.As(err, &werr) || werr.Message == "" {
			t.Fatalf("WaitAll: %T %v", err, err)
		}
	}
	check(t, weft.WaitAll())
}
