package weft

// DataIter is one of the library's data iterators (MNISTIter, CSVIter, LibSVMIter,
// ImageRecordIter, ...), created by name with string parameters as in Python's weft.io.
type DataIter struct {
	handle SwigcptrStruct_SS_weft_dataiter
}

// NewDataIter creates the iterator `name`; the caller frees it.
func NewDataIter(name string, params map[string]string) (*DataIter, error) {
	keys, vals := sortedParams(params)
	it := &DataIter{}
	if err := Weft_dataiter_create(name, len(keys), keys, vals, &it.handle); err != nil {
		return nil, err
	}
	return it, nil
}

// Next moves to the next batch; false at the end of the epoch.
func (it *DataIter) Next() (bool, error) {
	more := []int{0}
	if err := Weft_dataiter_next(it.handle, more); err != nil {
		return false, err
	}
	return more[0] != 0, nil
}

// Reset starts a new epoch.
func (it *DataIter) Reset() error {
	return Weft_dataiter_reset(it.handle)
}

// Data is the i-th data array of the current batch; the caller frees it.
func (it *DataIter) Data(i int) (*NDArray, error) {
	a := &NDArray{}
	if err := Weft_dataiter_get_data(it.handle, i, &a.handle); err != nil {
		return nil, err
	}
	return a, nil
}

// Label is the i-th label array of the current batch; the caller frees it.
func (it *DataIter) Label(i int) (*NDArray, error) {
	a := &NDArray{}
	if err := Weft_dataiter_get_label(it.handle, i, &a.handle); err != nil {
		return nil, err
	}
	return a, nil
}

// Pad is how many samples at the end of the current batch repeat earlier ones.
func (it *DataIter) Pad() (int, error) {
	pad := []int{0}
	if err := Weft_dataiter_get_pad(it.handle, pad); err != nil {
		return 0, err
	}
	return pad[0], nil
}

// Free releases the iterator.
func (it *DataIter) Free() error {
	return Weft_dataiter_free(it.handle)
}
