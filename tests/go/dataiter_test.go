package tests

import (
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"weft.dev/weft"
	"weft.dev/weft/iter"
	"weft.dev/weft/op"
)

// idx reads an MNIST idx file (gzip) as its raw bytes after the header.
func idx(t *testing.T, name string, header int) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join(fashion, name))
	check(t, err)
	defer f.Close()
	z, err := gzip.NewReader(f)
	check(t, err)
	all, err := io.ReadAll(z)
	check(t, err)
	return all[header:]
}

func TestDataIterMNISTReadsFashionMNIST(t *testing.T) {
	it := ok(iter.MNISTIter(iter.WithImage(filepath.Join(fashion, "t10k-images-idx3-ubyte.gz")),
		iter.WithLabel(filepath.Join(fashion, "t10k-labels-idx1-ubyte.gz")),
		iter.WithBatchSize(100), iter.WithFlat(true), iter.WithShuffle(false)))
	defer it.Close()
	descs := ok(it.ProvideData())
	if len(descs) != 1 || descs[0].Name != "data" || len(descs[0].Shape) != 2 || descs[0].Shape[1] != 784 {
		t.Fatalf("data descs %+v", descs)
	}
	labels := idx(t, "t10k-labels-idx1-ubyte.gz", 8)
	pixels := idx(t, "t10k-images-idx3-ubyte.gz", 16)
	b := ok(it.Next())
	defer b.Close()
	shapeIs(t, b.Data[0], 100, 784)
	want := make([]float32, 100)
	for i := range want {
		want[i] = float32(labels[i])
	}
	near(t, "first 100 labels", f32(t, b.Label[0]), want, 0)
	// Pixels are divided by 256, as MXNet's MNISTIter does.
	first := f32(t, b.Data[0])[:784]
	wantPix := make([]float32, 784)
	for i := range wantPix {
		wantPix[i] = float32(pixels[i]) / 256
	}
	near(t, "first image", first, wantPix, 1e-6)
	n := 1
	for {
		b := ok(it.Next())
		if b == nil {
			break
		}
		b.Close()
		n++
	}
	if n != 100 {
		t.Fatalf("%d batches of 100 in 10000 images", n)
	}
	check(t, it.Reset())
	again := ok(it.Next())
	near(t, "labels after Reset", f32(t, again.Label[0]), want, 0)
	again.Close()
	if _, err := iter.MNISTIter(iter.WithImage("/nonexistent/images")); !errors.Is(err, weft.ErrNotFound) {
		t.Fatalf("missing file: want ErrNotFound, got %v", err)
	}
}

func TestDataIterCSVAndLibSVM(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data.csv")
	label := filepath.Join(dir, "label.csv")
	check(t, os.WriteFile(data, []byte("1,2,3\n4,5,6\n7,8,9\n"), 0o644))
	check(t, os.WriteFile(label, []byte("0\n1\n2\n"), 0o644))
	it := ok(iter.CSVIter(data, []int{3}, 2, iter.WithLabelCsv(label)))
	defer it.Close()
	b := ok(it.Next())
	near(t, "csv batch 1", f32(t, b.Data[0]), []float32{1, 2, 3, 4, 5, 6}, 0)
	near(t, "csv labels 1", f32(t, b.Label[0]), []float32{0, 1}, 0)
	b = ok(it.Next())
	// The last batch is completed with the first row (round_batch) and says so.
	if b.Pad != 1 {
		t.Fatalf("pad %d", b.Pad)
	}
	near(t, "csv batch 2", f32(t, b.Data[0])[:3], []float32{7, 8, 9}, 0)
	if b := ok(it.Next()); b != nil {
		t.Fatal("a third batch of 3 rows in batches of 2")
	}

	svm := filepath.Join(dir, "data.svm")
	check(t, os.WriteFile(svm, []byte("1 0:0.5 3:2\n0 1:1.5\n"), 0o644))
	ls := ok(iter.LibSVMIter(svm, []int{4}, 2))
	defer ls.Close()
	sb := ok(ls.Next())
	near(t, "libsvm labels", f32(t, sb.Label[0]), []float32{1, 0}, 0)
	// The rows come as csr, as MXNet gives them; their dense equivalent:
	dense := ok(op.CastStorage(sb.Data[0], "default"))
	near(t, "libsvm rows", f32(t, dense), []float32{0.5, 0, 0, 2, 0, 1.5, 0, 0}, 0)
}

func TestDataIterImageRecordIter(t *testing.T) {
	dir := t.TempDir()
	rec := filepath.Join(dir, "imgs.rec")
	// Three 4x4 PNG images (lossless), pixel (y, x) of image k = (10k + y, x, 7) in RGB.
	python(t, `
import sys, numpy as np, weft as mx
w = mx.recordio.MXRecordIO(sys.argv[1], "w")
for k in range(3):
    img = np.zeros((4, 4, 3), np.uint8)
    for y in range(4):
        for x in range(4):
            img[y, x] = (7, x, 10 * k + y)  # BGR
    w.write(mx.recordio.pack_img(mx.recordio.IRHeader(0, float(k), k, 0), img, img_fmt=".png"))
w.close()
`, rec)
	it := ok(iter.ImageRecordIter(rec, []int{3, 4, 4}, 2, iter.WithPreprocessThreads(1)))
	defer it.Close()
	var labels []float32
	var firstR []float32
	for {
		b := ok(it.Next())
		if b == nil {
			break
		}
		shapeIs(t, b.Data[0], 2, 3, 4, 4)
		l := f32(t, b.Label[0])
		labels = append(labels, l[:2-b.Pad]...)
		if firstR == nil {
			firstR = f32(t, b.Data[0])[:16]
		}
		b.Close()
	}
	near(t, "labels", labels, []float32{0, 1, 2}, 0)
	// Channel R of image 0: row y holds y.
	near(t, "R of image 0", firstR, []float32{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}, 0)
}

func TestDataIterArrayIterBatchesPadsAndShuffles(t *testing.T) {
	vals := make([]float32, 10)
	for i := range vals {
		vals[i] = float32(i)
	}
	data := ok(weft.NewFrom(vals, 5, 2))
	label := ok(weft.NewFrom([]float32{0, 1, 2, 3, 4}))
	it := ok(weft.NewArrayIter(data, label, 2, false))
	var got []float32
	var pads []int
	for {
		b := ok(it.Next())
		if b == nil {
			break
		}
		got = append(got, f32(t, b.Label[0])...)
		pads = append(pads, b.Pad)
		b.Close()
	}
	// The last batch wraps around to the first sample.
	near(t, "labels in order", got, []float32{0, 1, 2, 3, 4, 0}, 0)
	if pads[2] != 1 {
		t.Fatalf("pads %v", pads)
	}
	sh := ok(weft.NewArrayIter(data, label, 5, true))
	b := ok(sh.Next())
	l, d := f32(t, b.Label[0]), f32(t, b.Data[0])
	seen := map[float32]bool{}
	for i, v := range l {
		seen[v] = true
		// Rows move with their labels.
		if d[2*i] != 2*v || d[2*i+1] != 2*v+1 {
			t.Fatalf("row %d of the shuffled batch is %v for label %g", i, d[2*i:2*i+2], v)
		}
	}
	if len(seen) != 5 {
		t.Fatalf("a shuffled epoch must hold every sample once: %v", l)
	}
	if _, err := weft.NewArrayIter(data, ok(weft.Zeros(4)), 2, false); !errors.Is(err, weft.ErrShape) {
		t.Fatalf("5 samples with 4 labels: want ErrShape, got %v", err)
	}
}
