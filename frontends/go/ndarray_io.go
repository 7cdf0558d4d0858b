package weft

/*
#cgo pkg-config: weft
#include <weft/c_api.h>
*/
import "C"

import (
	"sort"
)

// Save writes arrays as an unnamed list in MXNet's NDArray list format (`.params`).
func Save(fname string, arrays []*NDArray) error {
	return save(fname, arrays, nil)
}

// SaveNamed writes a named list (a dict in MXNet's terms), in order of name.
func SaveNamed(fname string, arrays map[string]*NDArray) error {
	names := make([]string, 0, len(arrays))
	for n := range arrays {
		names = append(names, n)
	}
	sort.Strings(names)
	list := make([]*NDArray, len(names))
	for i, n := range names {
		list[i] = arrays[n]
	}
	return save(fname, list, names)
}

func save(fname string, arrays []*NDArray, names []string) error {
	f := newCStrings([]string{fname})
	defer f.free()
	cn := newCStrings(names)
	defer cn.free()
	h := handles(arrays)
	err := weft_ndarray_save(f.ptrs[0], C.int(len(h)), handlePtr(h), cn.ptr())
	keepAlive(arrays)
	return err
}

// Load reads an NDArray list file: the arrays and, for a named list, their names (nil for
// an unnamed one).
func Load(fname string) ([]*NDArray, []string, error) {
	f := newCStrings([]string{fname})
	defer f.free()
	var list *C.weft_ndarray_list_t
	if err := weft_ndarray_load(f.ptrs[0], &list); err != nil {
		return nil, nil, err
	}
	defer C.weft_ndarray_list_free(list)
	var n, named C.int
	if err := weft_ndarray_list_size(list, &n); err != nil {
		return nil, nil, err
	}
	if err := weft_ndarray_list_has_names(list, &named); err != nil {
		return nil, nil, err
	}
	arrays := make([]*NDArray, 0, int(n))
	var names []string
	for i := 0; i < int(n); i++ {
		var h *C.weft_ndarray_t
		if err := weft_ndarray_list_get(list, C.int(i), &h); err != nil {
			closeAll(arrays)
			return nil, nil, err
		}
		arrays = append(arrays, newNDArray(h))
		if named != 0 {
			var name string
			if err := weft_ndarray_list_name(list, C.int(i), &name); err != nil {
				closeAll(arrays)
				return nil, nil, err
			}
			names = append(names, name)
		}
	}
	return arrays, names, nil
}

// LoadNamed reads a named NDArray list file into a map; an unnamed list is an error.
func LoadNamed(fname string) (map[string]*NDArray, error) {
	arrays, names, err := Load(fname)
	if err != nil {
		return nil, err
	}
	if names == nil && len(arrays) > 0 {
		closeAll(arrays)
		return nil, errorf(StatusValue, "LoadNamed", "%s holds an unnamed list of %d arrays", fname, len(arrays))
	}
	out := make(map[string]*NDArray, len(arrays))
	for i, a := range arrays {
		out[names[i]] = a
	}
	return out, nil
}

// closeAll closes every array of the list (nil entries included).
func closeAll(arrays []*NDArray) {
	for _, a := range arrays {
		a.Close()
	}
}

// CloseAll closes every array of the map.
func CloseAll(arrays map[string]*NDArray) {
	for _, a := range arrays {
		a.Close()
	}
}
