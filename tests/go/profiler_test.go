package tests

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"weft.dev/weft"
)

func TestProfilerRecordsOperatorsIntoTheTraceAndTheStatistics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	check(t, weft.ProfilerSetConfig(map[string]string{
		"profile_all": "True", "aggregate_stats": "True", "continuous_dump": "False", "filename": path}))
	check(t, weft.ProfilerSetState(true))
	if running := ok(weft.ProfilerRunning()); !running {
		t.Fatal("the profiler does not say it runs")
	}
	x := ok(weft.NewFrom([]float32{1, 4, 9}))
	y := ok(weft.Invoke("sqrt", []*weft.NDArray{x}, nil, nil, nil))[0]
	near(t, "sqrt", f32(t, y), []float32{1, 2, 3}, 0)
	check(t, weft.ProfilerPause())
	near(t, "square", f32(t, ok(weft.Invoke("square", []*weft.NDArray{x}, nil, nil, nil))[0]), []float32{1, 16, 81}, 0)
	check(t, weft.ProfilerResume())
	check(t, weft.ProfilerSetState(false))
	table := ok(weft.ProfilerDumps(false, "table", "count", false))
	if !strings.Contains(table, "sqrt") || strings.Contains(table, "square") {
		t.Fatalf("the table should list sqrt and not square (run while paused):\n%s", table)
	}
	if _, err := weft.ProfilerDumps(false, "xml", "total", false); err == nil {
		t.Fatal("format xml was accepted")
	}
	check(t, weft.ProfilerDump(true))
	raw := ok(os.ReadFile(path))
	var trace struct {
		TraceEvents []map[string]interface{} `json:"traceEvents"`
	}
	check(t, json.Unmarshal(raw, &trace))
	found := false
	for _, e := range trace.TraceEvents {
		if e["name"] == "sqrt" && e["ph"] == "X" {
			found = true
		}
	}
	if !found {
		t.Fatal("no sqrt event in the trace")
	}
	if err := weft.ProfilerSetConfig(map[string]string{"nonsense": "1"}); err == nil ||
		!strings.Contains(err.Error(), "nonsense") {
		t.Fatalf("an unknown key gave %v", err)
	}
	check(t, weft.ProfilerSetConfig(map[string]string{"continuous_dump": "False"}))
}
