package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestDistSyncWithGoWorkers runs tools/launch.py with a scheduler, one server and two
// workers, every one the Go program distworker, on loopback.
func TestDistSyncWithGoWorkers(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "distworker")
	if out, err := exec.Command("go", "build", "-o", bin, "./distworker").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	launch := os.Getenv("WEFT_LAUNCH")
	if launch == "" {
		launch = filepath.Join(repoRoot(), "tools", "launch.py")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", launch, "-n", "2", "-s", "1", "--grace", "10", bin, dir)
	cmd.Env = append(os.Environ(), "WEFT_KVSTORE_HEARTBEAT_TIMEOUT=10", "OMP_NUM_THREADS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("launch.py: %v\n%s", err, out)
	}
	ranks := map[int]bool{}
	var sums []float64
	for i := 0; i < 2; i++ {
		text, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("worker-%d.json", i)))
		if err != nil {
			t.Fatalf("worker %d wrote nothing: %v\n%s", i, err, out)
		}
		var r struct {
			Rank, Workers  int
			Init, Sum, SGD []float32
			FitSum         float64 `json:"fit_sum"`
			FitAcc         float64 `json:"fit_acc"`
		}
		check(t, json.Unmarshal(text, &r))
		ranks[r.Rank] = true
		if r.Workers != 2 {
			t.Fatalf("worker %d sees %d workers", i, r.Workers)
		}
		// Rank 0's initial value reaches the servers.
		near(t, "init", r.Init, []float32{10, 0, 0}, 0)
		// Ranks 0 and 1 push (1, 1, 0) and (2, 1, 1).
		near(t, "sum", r.Sum, []float32{3, 2, 1}, 0)
		// w = 1 - 0.1 * (1 + 2)
		near(t, "sgd", r.SGD, []float32{0.7, 0.7, 0.7, 0.7}, 1e-6)
		if r.FitAcc < 0.85 {
			t.Fatalf("worker %d: accuracy %.3f after Fit through the servers", r.Rank, r.FitAcc)
		}
		t.Logf("worker %d: accuracy %.3f after Fit, weights summing to %g", r.Rank, r.FitAcc, r.FitSum)
		sums = append(sums, r.FitSum)
	}
	// Both workers pulled the same weights from the servers.
	if sums[0] != sums[1] {
		t.Fatalf("the workers ended with different weights (sums %v)", sums)
	}
	if !ranks[0] || !ranks[1] {
		t.Fatalf("ranks %v", ranks)
	}
}
