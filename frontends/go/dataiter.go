package weft

/*
#cgo pkg-config: weft
#include <weft/c_api.h>
*/
import "C"

import (
	"math/rand"
	"runtime"
)

// Batch is one batch of an iterator. Its arrays are the caller's: Close them (Batch.Close)
// when done. The last Pad samples are filler that completes the last batch.
type Batch struct {
	Data  []*NDArray
	Label []*NDArray
	Pad   int
}

// Close closes the batch's arrays.
func (b *Batch) Close() {
	if b == nil {
		return
	}
	closeAll(b.Data)
	closeAll(b.Label)
}

// DataDesc describes the arrays of every batch.
type DataDesc struct {
	Name  string
	Shape []int
	DType DType
}

// Iterator is what Fit, Score and Predict read: data iterators of the registry (package
// iter) and ArrayIter.
type Iterator interface {
	// Reset starts a new epoch.
	Reset() error
	// Next is the next batch, or nil at the end of the epoch.
	Next() (*Batch, error)
	// ProvideData and ProvideLabel describe the batches' arrays.
	ProvideData() ([]DataDesc, error)
	ProvideLabel() ([]DataDesc, error)
	Close() error
}

// DataIter is a data iterator of the registry (MNISTIter, CSVIter, ImageRecordIter,
// LibSVMIter: see package iter), which prepares batches on background threads.
type DataIter struct {
	h *C.weft_dataiter_t
}

// NewDataIter creates an iterator of type name with string parameters keys[i] = vals[i].
func NewDataIter(name string, keys, vals []string) (*DataIter, error) {
	if len(keys) != len(vals) {
		return nil, errorf(StatusValue, "NewDataIter", "%s: %d parameter keys but %d values", name, len(keys), len(vals))
	}
	n, k, v := newCStrings([]string{name}), newCStrings(keys), newCStrings(vals)
	defer n.free()
	defer k.free()
	defer v.free()
	var h *C.weft_dataiter_t
	if err := weft_dataiter_create(n.ptrs[0], C.int(len(keys)), k.ptr(), v.ptr(), &h); err != nil {
		return nil, err
	}
	it := &DataIter{h: h}
	runtime.SetFinalizer(it, (*DataIter).finalize)
	return it, nil
}

func (it *DataIter) finalize() { C.weft_dataiter_free(it.h) }

func (it *DataIter) ptr() *C.weft_dataiter_t {
	if it == nil {
		return nil
	}
	return it.h
}

// Close stops the iterator's threads and frees it; batches already read stay valid.
func (it *DataIter) Close() error {
	if it == nil || it.h == nil {
		return nil
	}
	runtime.SetFinalizer(it, nil)
	err := weft_dataiter_free(it.h)
	it.h = nil
	return err
}

// Reset starts a new epoch.
func (it *DataIter) Reset() error {
	err := weft_dataiter_reset(it.ptr())
	runtime.KeepAlive(it)
	return err
}

// Next is the next batch, or nil at the end of the epoch.
func (it *DataIter) Next() (*Batch, error) {
	defer runtime.KeepAlive(it)
	var more C.int
	if err := weft_dataiter_next(it.ptr(), &more); err != nil || more == 0 {
		return nil, err
	}
	b := &Batch{}
	get := func(count func(*C.weft_dataiter_t, *C.int) error,
		at func(*C.weft_dataiter_t, C.int, **C.weft_ndarray_t) error) ([]*NDArray, error) {
		var n C.int
		if err := count(it.ptr(), &n); err != nil {
			return nil, err
		}
		out := make([]*NDArray, 0, int(n))
		for i := 0; i < int(n); i++ {
			var h *C.weft_ndarray_t
			if err := at(it.ptr(), C.int(i), &h); err != nil {
				closeAll(out)
				return nil, err
			}
			out = append(out, newNDArray(h))
		}
		return out, nil
	}
	var err error
	if b.Data, err = get(weft_dataiter_get_num_data, weft_dataiter_get_data); err != nil {
		return nil, err
	}
	if b.Label, err = get(weft_dataiter_get_num_label, weft_dataiter_get_label); err != nil {
		b.Close()
		return nil, err
	}
	var pad C.int
	if err := weft_dataiter_get_pad(it.ptr(), &pad); err != nil {
		b.Close()
		return nil, err
	}
	b.Pad = int(pad)
	return b, nil
}

func (it *DataIter) descs(isLabel C.int) ([]DataDesc, error) {
	defer runtime.KeepAlive(it)
	var n C.int
	if err := weft_dataiter_get_num_descs(it.ptr(), isLabel, &n); err != nil {
		return nil, err
	}
	out := make([]DataDesc, int(n))
	for i := range out {
		var dims [8]C.int64_t
		var ndim, dtype C.int
		if err := weft_dataiter_get_desc(it.ptr(), isLabel, C.int(i), &out[i].Name, &dims[0], C.int(len(dims)),
			&ndim, &dtype); err != nil {
			return nil, err
		}
		if int(ndim) > len(dims) {
			return nil, errorf(StatusShape, "DataIter.ProvideData", "%s has %d dims, more than %d",
				out[i].Name, int(ndim), len(dims))
		}
		out[i].Shape, _ = intsOf(dims[:ndim], nil)
		out[i].DType = DType(dtype)
	}
	return out, nil
}

// ProvideData describes the data arrays of every batch.
func (it *DataIter) ProvideData() ([]DataDesc, error) { return it.descs(0) }

// ProvideLabel describes the label arrays of every batch.
func (it *DataIter) ProvideLabel() ([]DataDesc, error) { return it.descs(1) }

// ArrayIter iterates over arrays held in memory in batches along their first axis (MXNet's
// NDArrayIter): the last batch is completed with samples from the start (Batch.Pad says
// how many).
type ArrayIter struct {
	data, label *NDArray
	batch, n    int
	shuffle     bool
	rng         *rand.Rand
	order       []int
	pos         int
	dataName    string
	labelName   string
}

// NewArrayIter iterates over data and label (nil: no label) in batches of batchSize,
// in a new random order each epoch when shuffle is set. The iterator reads the arrays; it
// does not own them.
func NewArrayIter(data, label *NDArray, batchSize int, shuffle bool) (*ArrayIter, error) {
	ds, err := data.Shape()
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 {
		return nil, errorf(StatusShape, "NewArrayIter", "data must have a first axis, got a scalar")
	}
	if batchSize <= 0 {
		return nil, errorf(StatusValue, "NewArrayIter", "batch size must be positive, got %d", batchSize)
	}
	if label != nil {
		ls, err := label.Shape()
		if err != nil {
			return nil, err
		}
		if len(ls) == 0 || ls[0] != ds[0] {
			return nil, errorf(StatusShape, "NewArrayIter", "data has %d samples but label has shape %v", ds[0], ls)
		}
	}
	it := &ArrayIter{data: data, label: label, batch: batchSize, n: ds[0], shuffle: shuffle,
		rng: rand.New(rand.NewSource(1)), dataName: "data", labelName: "softmax_label"}
	return it, it.Reset()
}

// Reset starts a new epoch (reshuffled when shuffling).
func (it *ArrayIter) Reset() error {
	it.pos = 0
	if it.shuffle {
		it.order = it.rng.Perm(it.n)
	}
	return nil
}

func (it *ArrayIter) take(a *NDArray, begin int) (*NDArray, error) {
	if !it.shuffle && begin+it.batch <= it.n {
		return a.Slice(begin, begin+it.batch)
	}
	idx := make([]float32, it.batch)
	for i := range idx {
		j := (begin + i) % it.n
		if it.shuffle {
			j = it.order[j]
		}
		idx[i] = float32(j)
	}
	ia, err := NewFrom(idx)
	if err != nil {
		return nil, err
	}
	defer ia.Close()
	return invoke1("take", []*NDArray{a, ia}, nil, nil)
}

// Next is the next batch, or nil at the end of the epoch.
func (it *ArrayIter) Next() (*Batch, error) {
	if it.pos >= it.n {
		return nil, nil
	}
	b := &Batch{}
	d, err := it.take(it.data, it.pos)
	if err != nil {
		return nil, err
	}
	b.Data = []*NDArray{d}
	if it.label != nil {
		l, err := it.take(it.label, it.pos)
		if err != nil {
			b.Close()
			return nil, err
		}
		b.Label = []*NDArray{l}
	}
	if it.pos+it.batch > it.n {
		b.Pad = it.pos + it.batch - it.n
	}
	it.pos += it.batch
	return b, nil
}

func desc(name string, a *NDArray, batch int) ([]DataDesc, error) {
	if a == nil {
		return nil, nil
	}
	s, err := a.Shape()
	if err != nil {
		return nil, err
	}
	dt, err := a.DType()
	if err != nil {
		return nil, err
	}
	s[0] = batch
	return []DataDesc{{Name: name, Shape: s, DType: dt}}, nil
}

// ProvideData describes the data of every batch ("data").
func (it *ArrayIter) ProvideData() ([]DataDesc, error) { return desc(it.dataName, it.data, it.batch) }

// ProvideLabel describes the label of every batch ("softmax_label").
func (it *ArrayIter) ProvideLabel() ([]DataDesc, error) {
	return desc(it.labelName, it.label, it.batch)
}

// Close does nothing: the arrays belong to the caller.
func (it *ArrayIter) Close() error { return nil }
