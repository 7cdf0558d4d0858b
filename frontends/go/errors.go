package weft

/*
#cgo pkg-config: weft
#include <weft/c_api.h>
*/
import "C"

import "fmt"

// Error is a failure reported by Weft (the status and the message of the C API) or found
// by this package before calling it (then Func is the Go function's name). Compare with the
// sentinels ErrValue, ErrShape, ErrNotFound, ErrHandle... through errors.Is.
type Error struct {
	Status  Status
	Message string
	Func    string // the C function (weft_...) or Go function that failed
}

func (e *Error) Error() string {
	if e.Func == "" {
		return "weft: " + e.Message
	}
	return "weft: " + e.Func + ": " + e.Message
}

// Is makes errors.Is(err, ErrShape) true for every error of status WEFT_ERR_SHAPE: a
// sentinel (an Error without a message) matches on the status alone.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	if t.Message == "" && t.Func == "" {
		return t.Status == e.Status
	}
	return t == e
}

func errorf(status Status, fn, format string, args ...interface{}) error {
	return &Error{Status: status, Message: fmt.Sprintf(format, args...), Func: fn}
}

// errLibrary is set when the loaded libweft cannot be used with this package (another
// ABI); every call of the raw layer then returns it instead of calling the library.
var errLibrary error

func init() {
	errLibrary = CheckVersion()
}

// Version is the version of the libweft loaded in this process.
func Version() (major, minor, patch, abi int) {
	var ma, mi, pa, ab C.int
	C.weft_get_version(&ma, &mi, &pa, &ab)
	return int(ma), int(mi), int(pa), int(ab)
}

// CheckVersion says whether the loaded libweft has the ABI this package was generated for
// (ABIVersion); when not, every function of the package fails with this error.
func CheckVersion() error {
	ma, mi, pa, abi := Version()
	return checkABI(fmt.Sprintf("%d.%d.%d", ma, mi, pa), abi, ABIVersion)
}

func checkABI(libVersion string, libABI, wantABI int) error {
	if libABI == wantABI {
		return nil
	}
	return &Error{Status: StatusUnsupported, Func: "CheckVersion",
		Message: fmt.Sprintf("the loaded libweft %s has ABI version %d, but this Go package was generated "+
			"for ABI version %d (c_api.h %s): rebuild the package against that library or load the matching one",
			libVersion, libABI, wantABI, HeaderVersion)}
}
