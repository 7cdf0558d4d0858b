// Tests of the Go module weft.dev/weft as its users see it. Expected values are computed
// independently: by hand, in Go from the inputs, or by the Python front end (run through
// WEFT_PYTHON) for files exchanged between the languages.
package tests

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"weft.dev/weft"
)

// ok is v, or a panic with err: the test fails with the error and where it happened (Go
// cannot pass a function's two results and a *testing.T to one call).
func ok[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func f32(t *testing.T, a *weft.NDArray) []float32 {
	t.Helper()
	return ok(a.Float32s())
}

func near(t *testing.T, what string, got, want []float32, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d (%v vs %v)", what, len(got), len(want), got, want)
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > tol*(1+math.Abs(float64(want[i]))) {
			if len(got) > 16 {
				t.Fatalf("%s: element %d is %g, want %g", what, i, got[i], want[i])
			}
			t.Fatalf("%s: element %d is %g, want %g\ngot  %v\nwant %v", what, i, got[i], want[i], got, want)
		}
	}
}

func shapeIs(t *testing.T, a *weft.NDArray, want ...int) {
	t.Helper()
	got := ok(a.Shape())
	if len(got) != len(want) {
		t.Fatalf("shape %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("shape %v, want %v", got, want)
		}
	}
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// python runs a script with the Python front end and returns what it printed.
func python(t *testing.T, script string, args ...string) string {
	t.Helper()
	py := os.Getenv("WEFT_PYTHON")
	if py == "" {
		py = filepath.Join(repoRoot(), ".venv", "bin", "python")
	}
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("no Python front end at %s (run tools/build.sh, or set WEFT_PYTHON): %v", py, err)
	}
	cmd := exec.Command(py, append([]string{"-c", script}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python failed: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

const fashion = "/usr/share/datasets/fashion-mnist"

func osWrite(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }
