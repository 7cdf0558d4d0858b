// The data iterators through the Go binding: a CSV file read back batch by batch.
package smoke

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"weft"
)

func TestCSVIterBatches(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "data.csv")
	if err := os.WriteFile(path, []byte("1,2,3\n4,5,6\n7,8,9\n10,11,12\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	it, err := weft.NewDataIter("CSVIter", map[string]string{"data_csv": path, "data_shape": "(3,)", "batch_size": "2"})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Free()
	var got []float32
	for {
		more, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
		data, err := it.Data(0)
		if err != nil {
			t.Fatal(err)
		}
		values, err := data.Float32s()
		data.Free()
		if err != nil {
			t.Fatal(err)
		}
		if pad, err := it.Pad(); err != nil || pad != 0 {
			t.Fatalf("expected pad 0, got %d (%v)", pad, err)
		}
		got = append(got, values...)
	}
	if len(got) != 12 {
		t.Fatalf("expected 12 values over the epoch, got %v", got)
	}
	for i, v := range got {
		if v != float32(i+1) {
			t.Fatalf("value %d: expected %d, got %v (all: %v)", i, i+1, v, got)
		}
	}
}

func TestDataIterErrorsCarryTheMessage(t *testing.T) {
	_, err := weft.NewDataIter("CSVIter", map[string]string{"data_csv": "/no/such/file.csv", "data_shape": "(3,)",
		"batch_size": "2"})
	if err == nil || !strings.Contains(err.Error(), "/no/such/file.csv") {
		t.Fatalf("expected an error naming the missing file, got %v", err)
	}
	if _, err := weft.NewDataIter("NoSuchIter", nil); err == nil || !strings.Contains(err.Error(), "NoSuchIter") {
		t.Fatalf("expected an error naming the unknown iterator, got %v", err)
	}
}
