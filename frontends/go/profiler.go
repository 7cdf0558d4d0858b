package weft

/*
#include <weft/c_api.h>
*/
import "C"

import (
	"sort"
	"unsafe"
)

// ProfilerSetConfig configures the profiler (MXNet's profiler.set_config) with string
// values: "profile_all": "True", "filename": "trace.json", "aggregate_stats": "True",
// "continuous_dump": "False", ... Keys not given take MXNet's defaults; an unknown key or
// a bad value is an error naming it.
func ProfilerSetConfig(config map[string]string) error {
	keys := make([]string, 0, len(config))
	for k := range config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = config[k]
	}
	ck, cv := newCStrings(keys), newCStrings(vals)
	defer ck.free()
	defer cv.free()
	return weft_profiler_set_config(C.int(len(keys)), ck.ptr(), cv.ptr())
}

// ProfilerSetState starts (true) or stops (false) recording.
func ProfilerSetState(run bool) error { return weft_profiler_set_state(cBool(run)) }

// ProfilerRunning says whether the profiler is started.
func ProfilerRunning() (bool, error) {
	var s C.int
	err := weft_profiler_get_state(&s)
	return s == C.WEFT_PROFILER_RUN, err
}

// ProfilerPause stops recording until ProfilerResume; the profiler stays started.
func ProfilerPause() error { return weft_profiler_set_paused(1) }

// ProfilerResume records again after ProfilerPause.
func ProfilerResume() error { return weft_profiler_set_paused(0) }

// ProfilerDump writes what was recorded to the configured file as Chrome trace JSON;
// finished makes it the final dump (the profiler stops and forgets its records).
func ProfilerDump(finished bool) error { return weft_profiler_dump(cBool(finished)) }

var profilerSortBy = map[string]C.int{"total": 0, "avg": 1, "min": 2, "max": 3, "count": 4}

// ProfilerDumps returns the aggregate statistics (needs "aggregate_stats": "True") as a
// "table" or "json", rows sorted by "total", "avg", "min", "max" or "count"; reset clears
// them afterwards.
func ProfilerDumps(reset bool, format, sortBy string, ascending bool) (string, error) {
	f := map[string]C.int{"table": 0, "json": 1}
	cf, ok := f[format]
	if !ok {
		return "", errorf(StatusValue, "ProfilerDumps", "format must be \"table\" or \"json\", got %q", format)
	}
	cs, ok := profilerSortBy[sortBy]
	if !ok {
		return "", errorf(StatusValue, "ProfilerDumps", "sortBy must be total, avg, min, max or count, got %q", sortBy)
	}
	var b *C.weft_bytes_t
	if err := weft_profiler_dumps(cBool(reset), cf, cs, cBool(ascending), &b); err != nil {
		return "", err
	}
	defer weft_bytes_free(b)
	var data unsafe.Pointer
	var size C.size_t
	if err := weft_bytes_get(b, &data, &size); err != nil {
		return "", err
	}
	return C.GoStringN((*C.char)(data), C.int(size)), nil
}
