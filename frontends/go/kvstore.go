package weft

/*
#cgo pkg-config: weft
#include <stdlib.h>
#include <stdint.h>
#include <weft/c_api.h>

extern int goWeftUpdater(char* key, weft_ndarray_t* merged, weft_ndarray_t* stored, void* user);
extern int goWeftController(int head, void* body, size_t size, void* user);

static weft_kvstore_updater_t gw_go_updater(void) {
  return (weft_kvstore_updater_t)goWeftUpdater;
}

static weft_kvstore_controller_t gw_go_controller(void) {
  return (weft_kvstore_controller_t)goWeftController;
}

static void* gw_new_handle_slot(uintptr_t h) {
  uintptr_t* p = (uintptr_t*)malloc(sizeof(uintptr_t));
  if (p != NULL) *p = h;
  return p;
}
*/
import "C"

import (
	"encoding/json"
	"runtime"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// Updater changes stored (the value held for key) given merged (the sum of the values
// pushed), in place, with operators. The arrays are valid during the call only.
type Updater func(key string, merged, stored *NDArray) error

type updaterState struct {
	fn  Updater
	mu  sync.Mutex
	err error
}

func (u *updaterState) setErr(err error) {
	u.mu.Lock()
	if u.err == nil {
		u.err = err
	}
	u.mu.Unlock()
}

func (u *updaterState) takeErr() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	err := u.err
	u.err = nil
	return err
}

// KVStore is a key-value store for parameter synchronisation (MXNet's KVStore): "local",
// "device", or "dist_sync"/"dist_async" in a job started by tools/launch.py. Keys are
// strings; values pushed for one key are summed.
type KVStore struct {
	h       *C.weft_kvstore_t
	updater *updaterState
	handle  cgo.Handle
	slot    unsafe.Pointer
}

// CreateKVStore creates a store of the given type. A dist type joins the job its DMLC_*
// environment describes (see RunDistRole for the server and scheduler processes).
func CreateKVStore(kind string) (*KVStore, error) {
	t := newCStrings([]string{kind})
	defer t.free()
	var h *C.weft_kvstore_t
	if err := weft_kvstore_create(t.ptrs[0], &h); err != nil {
		return nil, err
	}
	kv := &KVStore{h: h}
	runtime.SetFinalizer(kv, (*KVStore).finalize)
	return kv, nil
}

func (kv *KVStore) finalize() {
	C.weft_kvstore_free(kv.h)
	kv.releaseUpdater()
}

func (kv *KVStore) releaseUpdater() {
	if kv.slot != nil {
		C.free(kv.slot)
		kv.handle.Delete()
		kv.slot = nil
	}
}

func (kv *KVStore) ptr() *C.weft_kvstore_t {
	if kv == nil {
		return nil
	}
	return kv.h
}

// Close frees the store (a dist worker leaves the job).
func (kv *KVStore) Close() error {
	if kv == nil || kv.h == nil {
		return nil
	}
	runtime.SetFinalizer(kv, nil)
	err := weft_kvstore_free(kv.h)
	kv.h = nil
	kv.releaseUpdater()
	return err
}

// Type is the type given at creation.
func (kv *KVStore) Type() (string, error) {
	var s string
	err := weft_kvstore_get_type(kv.ptr(), &s)
	runtime.KeepAlive(kv)
	return s, err
}

// Rank is this worker's rank (0 outside a dist job).
func (kv *KVStore) Rank() (int, error) {
	var n C.int
	err := weft_kvstore_get_rank(kv.ptr(), &n)
	runtime.KeepAlive(kv)
	return int(n), err
}

// NumWorkers is the number of workers (1 outside a dist job).
func (kv *KVStore) NumWorkers() (int, error) {
	var n C.int
	err := weft_kvstore_get_num_workers(kv.ptr(), &n)
	runtime.KeepAlive(kv)
	return int(n), err
}

// Barrier blocks until every worker has reached it.
func (kv *KVStore) Barrier() error {
	err := weft_kvstore_barrier(kv.ptr())
	runtime.KeepAlive(kv)
	return err
}

// Init initialises key with a copy of value.
func (kv *KVStore) Init(key string, value *NDArray) error {
	return kv.InitAll([]string{key}, []*NDArray{value})
}

// InitAll initialises keys[i] with values[i].
func (kv *KVStore) InitAll(keys []string, values []*NDArray) error {
	if len(keys) != len(values) {
		return errorf(StatusValue, "KVStore.InitAll", "%d keys for %d values", len(keys), len(values))
	}
	k, h := newCStrings(keys), handles(values)
	defer k.free()
	err := weft_kvstore_init(kv.ptr(), C.int(len(keys)), k.ptr(), handlePtr(h))
	keepAlive(kv, values)
	return err
}

func repeat(key string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = key
	}
	return out
}

// Push pushes values for key (summed, then given to the updater or stored).
func (kv *KVStore) Push(key string, values ...*NDArray) error {
	return kv.PushAll(repeat(key, len(values)), values, 0)
}

// PushAll pushes values[i] for keys[i]; higher priority runs earlier.
func (kv *KVStore) PushAll(keys []string, values []*NDArray, priority int) error {
	if len(keys) != len(values) {
		return errorf(StatusValue, "KVStore.PushAll", "%d keys for %d values", len(keys), len(values))
	}
	k, h := newCStrings(keys), handles(values)
	defer k.free()
	err := weft_kvstore_push(kv.ptr(), C.int(len(keys)), k.ptr(), handlePtr(h), C.int(priority))
	keepAlive(kv, values)
	return kv.withUpdaterErr(err)
}

// Pull copies the value of key into every out.
func (kv *KVStore) Pull(key string, outs ...*NDArray) error {
	return kv.PullAll(repeat(key, len(outs)), outs, 0)
}

// PullAll copies the value of keys[i] into outs[i].
func (kv *KVStore) PullAll(keys []string, outs []*NDArray, priority int) error {
	if len(keys) != len(outs) {
		return errorf(StatusValue, "KVStore.PullAll", "%d keys for %d arrays", len(keys), len(outs))
	}
	k, h := newCStrings(keys), handles(outs)
	defer k.free()
	err := weft_kvstore_pull(kv.ptr(), C.int(len(keys)), k.ptr(), handlePtr(h), C.int(priority))
	keepAlive(kv, outs)
	return err
}

// PushPull pushes values for key, then pulls the result into outs, in one call.
func (kv *KVStore) PushPull(key string, values, outs []*NDArray) error {
	pk, qk := newCStrings(repeat(key, len(values))), newCStrings(repeat(key, len(outs)))
	defer pk.free()
	defer qk.free()
	v, o := handles(values), handles(outs)
	err := weft_kvstore_pushpull(kv.ptr(), C.int(len(v)), pk.ptr(), handlePtr(v), C.int(len(o)), qk.ptr(),
		handlePtr(o), 0)
	keepAlive(kv, values, outs)
	return kv.withUpdaterErr(err)
}

// withUpdaterErr adds what the Go updater reported to the failure of the push it failed.
func (kv *KVStore) withUpdaterErr(err error) error {
	if kv == nil || kv.updater == nil {
		return err
	}
	uerr := kv.updater.takeErr()
	if uerr == nil {
		return err
	}
	werr, isWeft := err.(*Error)
	if !isWeft {
		return errorf(StatusRuntime, "KVStore.Push", "the updater failed: %v", uerr)
	}
	return &Error{Status: werr.Status, Func: werr.Func, Message: werr.Message + ": " + uerr.Error()}
}

// SetUpdater makes fn update stored values on push (nil: stored = merged). A dist worker
// refuses: the servers update.
func (kv *KVStore) SetUpdater(fn Updater) error {
	if kv == nil {
		return errorf(StatusHandle, "KVStore.SetUpdater", "nil store")
	}
	if fn == nil {
		err := weft_kvstore_set_updater(kv.ptr(), nil, nil)
		runtime.KeepAlive(kv)
		if err == nil {
			kv.updater = nil
			kv.releaseUpdater()
		}
		return err
	}
	state := &updaterState{fn: fn}
	h := cgo.NewHandle(state)
	slot := C.gw_new_handle_slot(C.uintptr_t(h))
	if slot == nil {
		h.Delete()
		return errorf(StatusRuntime, "KVStore.SetUpdater", "out of memory")
	}
	err := weft_kvstore_set_updater(kv.ptr(), C.gw_go_updater(), slot)
	runtime.KeepAlive(kv)
	if err != nil {
		C.free(slot)
		h.Delete()
		return err
	}
	kv.releaseUpdater()
	kv.updater, kv.handle, kv.slot = state, h, slot
	return nil
}

// SetOptimizer makes the store run opt's update on every push (see SGD).
func (kv *KVStore) SetOptimizer(opt *SGD) error {
	if opt == nil {
		return errorf(StatusValue, "KVStore.SetOptimizer", "nil optimizer")
	}
	return kv.SetUpdater(opt.Update)
}

// Role is this process's role in a dist job from DMLC_ROLE: "worker", "server" or
// "scheduler".
func Role() (string, error) {
	var s string
	err := weft_kvstore_get_role(&s)
	return s, err
}

// RunDistRole runs the role of a server or scheduler process of a dist job (tools/launch.py
// starts every process with the same command and DMLC_ROLE) until the job ends, and returns
// false; in a worker it returns true at once. Call it first in main.
func RunDistRole() (isWorker bool, err error) {
	role, err := Role()
	if err != nil {
		return false, err
	}
	switch role {
	case "scheduler":
		return false, weft_kvstore_run_scheduler()
	case "server":
		kv, err := CreateKVStore("dist")
		if err != nil {
			return false, err
		}
		defer kv.Close()
		state := &serverState{kv: kv}
		h := cgo.NewHandle(state)
		defer h.Delete()
		slot := C.gw_new_handle_slot(C.uintptr_t(h))
		if slot == nil {
			return false, errorf(StatusRuntime, "RunDistRole", "out of memory")
		}
		defer C.free(slot)
		err = weft_kvstore_run_server(kv.ptr(), C.gw_go_controller(), slot)
		runtime.KeepAlive(kv)
		return false, err
	}
	return true, nil
}

// goSetOptimizer is the command head by which Go workers give the servers their SGD (as
// JSON). Python's servers take head 0 with a pickled optimizer; Go's use their own head so
// that neither misreads the other's.
const goSetOptimizer = 0x476f

// sgdConfig is what a worker sends of its SGD.
type sgdConfig struct {
	LearningRate, Momentum, WD, RescaleGrad, ClipGradient float64
}

type serverState struct {
	kv *KVStore
}

func (s *serverState) command(head int, body []byte) error {
	if head != goSetOptimizer {
		return errorf(StatusValue, "RunDistRole", "unknown server command %d", head)
	}
	var c sgdConfig
	if err := json.Unmarshal(body, &c); err != nil {
		return errorf(StatusValue, "RunDistRole", "bad optimizer: %v", err)
	}
	return s.kv.SetOptimizer(&SGD{LearningRate: c.LearningRate, Momentum: c.Momentum, WD: c.WD,
		RescaleGrad: c.RescaleGrad, ClipGradient: c.ClipGradient})
}

// SetServerOptimizer makes the servers of a dist store (run by RunDistRole in Go
// processes) update the values with opt: rank 0 sends it, and every worker waits until the
// servers have it.
func SetServerOptimizer(kv *KVStore, opt *SGD) error {
	if opt == nil {
		return errorf(StatusValue, "SetServerOptimizer", "nil optimizer")
	}
	rank, err := kv.Rank()
	if err != nil {
		return err
	}
	if rank == 0 {
		body, _ := json.Marshal(sgdConfig{opt.LearningRate, opt.Momentum, opt.WD, opt.RescaleGrad, opt.ClipGradient})
		err = weft_kvstore_send_command_to_servers(kv.ptr(), goSetOptimizer, dataPtr(body), C.size_t(len(body)))
		runtime.KeepAlive(kv)
		if err != nil {
			return err
		}
	}
	return kv.Barrier()
}
