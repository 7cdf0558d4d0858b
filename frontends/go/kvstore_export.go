package weft

/*
#cgo pkg-config: weft
#include <weft/c_api.h>
*/
import "C"

import (
	"fmt"
	"runtime/cgo"
	"unsafe"
)

// goWeftUpdater is the C updater of every store with a Go updater: `user` points at the
// cgo.Handle of the store's updater state. merged and stored are new handles owned here.
//
//export goWeftUpdater
func goWeftUpdater(key *C.char, merged, stored *C.weft_ndarray_t, user unsafe.Pointer) (status C.int) {
	m, s := newNDArray(merged), newNDArray(stored)
	defer m.Close()
	defer s.Close()
	u := cgo.Handle(*(*C.uintptr_t)(user)).Value().(*updaterState)
	// A panic must not unwind through C: the push fails instead, naming the key.
	defer func() {
		if r := recover(); r != nil {
			u.setErr(fmt.Errorf("updater panicked: %v", r))
			status = 1
		}
	}()
	if err := u.fn(C.GoString(key), m, s); err != nil {
		u.setErr(err)
		return 1
	}
	return 0
}

// goWeftController handles the commands workers send to a server run by RunDistRole;
// `user` points at the cgo.Handle of its *serverState.
//
//export goWeftController
func goWeftController(head C.int, body unsafe.Pointer, size C.size_t, user unsafe.Pointer) (status C.int) {
	s := cgo.Handle(*(*C.uintptr_t)(user)).Value().(*serverState)
	defer func() {
		if r := recover(); r != nil {
			status = 1
		}
	}()
	if err := s.command(int(head), C.GoBytes(body, C.int(size))); err != nil {
		return 1
	}
	return 0
}
