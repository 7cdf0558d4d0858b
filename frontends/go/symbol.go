package weft

/*
#cgo pkg-config: weft
#include <weft/c_api.h>
*/
import "C"

import (
	"encoding/json"
	"runtime"
)

// Symbol is a symbolic graph: the outputs of operator nodes and variables. Build one from
// Variable and the Sym functions of package op; bind it with SimpleBind or Bind. Close it
// when done (a finalizer is only a backstop).
type Symbol struct {
	h *C.weft_symbol_t
}

func newSymbol(h *C.weft_symbol_t) *Symbol {
	s := &Symbol{h: h}
	runtime.SetFinalizer(s, (*Symbol).finalize)
	return s
}

func (s *Symbol) finalize() { C.weft_symbol_free(s.h) }

func (s *Symbol) handle() *C.weft_symbol_t {
	if s == nil {
		return nil
	}
	return s.h
}

// Close releases the symbol (nodes other symbols use stay). Closing twice does nothing.
func (s *Symbol) Close() error {
	if s == nil || s.h == nil {
		return nil
	}
	runtime.SetFinalizer(s, nil)
	err := weft_symbol_free(s.h)
	s.h = nil
	return err
}

func symbolOut(fn func(out **C.weft_symbol_t) error) (*Symbol, error) {
	var h *C.weft_symbol_t
	if err := fn(&h); err != nil {
		return nil, err
	}
	return newSymbol(h), nil
}

// Variable is a symbol of one variable (an input or a parameter of the graph).
func Variable(name string) (*Symbol, error) {
	n := newCStrings([]string{name})
	defer n.free()
	return symbolOut(func(out **C.weft_symbol_t) error { return weft_symbol_create_variable(n.ptrs[0], out) })
}

// Group is the outputs of every symbol as one symbol.
func Group(syms ...*Symbol) (*Symbol, error) {
	h := make([]*C.weft_symbol_t, len(syms))
	for i, s := range syms {
		h[i] = s.handle()
	}
	var p **C.weft_symbol_t
	if len(h) > 0 {
		p = &h[0]
	}
	defer keepAlive(syms)
	return symbolOut(func(out **C.weft_symbol_t) error { return weft_symbol_group(C.int(len(h)), p, out) })
}

// Compose gives an atomic symbol (Operator.AtomicSymbol) its inputs, in place: args by
// position when argNames is nil, else args[i] replaces the input (or, for a composed
// symbol, the variable) argNames[i]. name names the node ("" for a generated name).
func (s *Symbol) Compose(name string, argNames []string, args []*Symbol) error {
	if argNames != nil && len(argNames) != len(args) {
		return errorf(StatusValue, "Compose", "%d argument names for %d arguments", len(argNames), len(args))
	}
	h := make([]*C.weft_symbol_t, len(args))
	for i, a := range args {
		h[i] = a.handle()
	}
	var p **C.weft_symbol_t
	if len(h) > 0 {
		p = &h[0]
	}
	cn := newCStrings(argNames)
	defer cn.free()
	var cname *C.char
	if name != "" {
		n := newCStrings([]string{name})
		defer n.free()
		cname = n.ptrs[0]
	}
	err := weft_symbol_compose(s.handle(), cname, C.int(len(h)), cn.ptr(), p)
	keepAlive(s, args)
	return err
}

// Copy is a deep copy sharing no node with s.
func (s *Symbol) Copy() (*Symbol, error) {
	defer runtime.KeepAlive(s)
	return symbolOut(func(out **C.weft_symbol_t) error { return weft_symbol_copy(s.handle(), out) })
}

// Output is output i alone.
func (s *Symbol) Output(i int) (*Symbol, error) {
	defer runtime.KeepAlive(s)
	return symbolOut(func(out **C.weft_symbol_t) error { return weft_symbol_get_output(s.handle(), C.int(i), out) })
}

// Internals is every internal output of the graph (MXNet's get_internals), by name
// "<node>_output" among its ListOutputs.
func (s *Symbol) Internals() (*Symbol, error) {
	defer runtime.KeepAlive(s)
	return symbolOut(func(out **C.weft_symbol_t) error { return weft_symbol_get_internals(s.handle(), out) })
}

// Children is the inputs of the output nodes.
func (s *Symbol) Children() (*Symbol, error) {
	defer runtime.KeepAlive(s)
	return symbolOut(func(out **C.weft_symbol_t) error { return weft_symbol_get_children(s.handle(), out) })
}

// InternalOutput is the internal output named `name` ("fc1_output"), or ErrNotFound.
func (s *Symbol) InternalOutput(name string) (*Symbol, error) {
	in, err := s.Internals()
	if err != nil {
		return nil, err
	}
	defer in.Close()
	outs, err := in.ListOutputs()
	if err != nil {
		return nil, err
	}
	for i, o := range outs {
		if o == name {
			return in.Output(i)
		}
	}
	return nil, errorf(StatusNotFound, "InternalOutput", "no internal output named %q", name)
}

func (s *Symbol) list(kind C.int) ([]string, error) {
	var text string
	err := weft_symbol_list(s.handle(), kind, &text)
	runtime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	var names []string
	if err := json.Unmarshal([]byte(text), &names); err != nil {
		return nil, errorf(StatusInternal, "Symbol.list", "unreadable name list %q: %v", text, err)
	}
	return names, nil
}

// ListArguments is the variables the graph reads, in graph order.
func (s *Symbol) ListArguments() ([]string, error) { return s.list(C.WEFT_SYMBOL_ARGUMENTS) }

// ListOutputs is the names of the outputs.
func (s *Symbol) ListOutputs() ([]string, error) { return s.list(C.WEFT_SYMBOL_OUTPUTS) }

// ListAuxiliaryStates is the variables operators write (BatchNorm's moving statistics).
func (s *Symbol) ListAuxiliaryStates() ([]string, error) { return s.list(C.WEFT_SYMBOL_AUXILIARY) }

// ListInputs is every variable.
func (s *Symbol) ListInputs() ([]string, error) { return s.list(C.WEFT_SYMBOL_INPUTS) }

// Name is the name of a one-output symbol's node ("" for a group).
func (s *Symbol) Name() (string, error) {
	var name string
	err := weft_symbol_get_name(s.handle(), &name)
	runtime.KeepAlive(s)
	return name, err
}

// Attr is the attribute key of a one-output symbol's node, and whether it is set.
func (s *Symbol) Attr(key string) (string, bool, error) {
	k := newCStrings([]string{key})
	defer k.free()
	var val string
	var found C.int
	err := weft_symbol_get_attr(s.handle(), k.ptrs[0], &val, &found)
	runtime.KeepAlive(s)
	return val, found != 0, err
}

// SetAttr sets an attribute of a one-output symbol's node (an operator parameter is checked).
func (s *Symbol) SetAttr(key, value string) error {
	kv := newCStrings([]string{key, value})
	defer kv.free()
	err := weft_symbol_set_attr(s.handle(), kv.ptrs[0], kv.ptrs[1])
	runtime.KeepAlive(s)
	return err
}

// DebugStr is MXNet's debug_str text of the graph.
func (s *Symbol) DebugStr() (string, error) {
	var text string
	err := weft_symbol_debug_str(s.handle(), &text)
	runtime.KeepAlive(s)
	return text, err
}

// ToJSON is the graph in MXNet's symbol JSON.
func (s *Symbol) ToJSON() (string, error) {
	var text string
	err := weft_symbol_to_json(s.handle(), &text)
	runtime.KeepAlive(s)
	return text, err
}

// SymbolFromJSON reads MXNet's symbol JSON (any MXNet version).
func SymbolFromJSON(text string) (*Symbol, error) {
	t := newCStrings([]string{text})
	defer t.free()
	return symbolOut(func(out **C.weft_symbol_t) error { return weft_symbol_from_json(t.ptrs[0], out) })
}

// Save writes the symbol JSON to path.
func (s *Symbol) Save(path string) error {
	p := newCStrings([]string{path})
	defer p.free()
	err := weft_symbol_save_file(s.handle(), p.ptrs[0])
	runtime.KeepAlive(s)
	return err
}

// LoadSymbol reads a symbol JSON file.
func LoadSymbol(path string) (*Symbol, error) {
	p := newCStrings([]string{path})
	defer p.free()
	return symbolOut(func(out **C.weft_symbol_t) error { return weft_symbol_load_file(p.ptrs[0], out) })
}

// Shapes is the result of InferShape: one shape per argument, output and auxiliary state
// (in list order), nil where unknown.
type Shapes struct {
	Arguments [][]int `json:"arguments"`
	Outputs   [][]int `json:"outputs"`
	Auxiliary [][]int `json:"auxiliary"`
	Complete  bool    `json:"complete"`
}

// InferShape infers every shape from the known ones ({input name: dims}, -1 unknown).
func (s *Symbol) InferShape(known map[string][]int) (*Shapes, error) {
	text, err := json.Marshal(known)
	if err != nil {
		return nil, errorf(StatusValue, "InferShape", "%v", err)
	}
	t := newCStrings([]string{string(text)})
	defer t.free()
	var out string
	err = weft_symbol_infer_shape(s.handle(), t.ptrs[0], &out)
	runtime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	var res Shapes
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return nil, errorf(StatusInternal, "InferShape", "unreadable result %q: %v", out, err)
	}
	return &res, nil
}

// DTypes is the result of InferType (-1 where unknown).
type DTypes struct {
	Arguments []DType `json:"arguments"`
	Outputs   []DType `json:"outputs"`
	Auxiliary []DType `json:"auxiliary"`
	Complete  bool    `json:"complete"`
}

// InferType infers every dtype from the known ones.
func (s *Symbol) InferType(known map[string]DType) (*DTypes, error) {
	text, err := json.Marshal(known)
	if err != nil {
		return nil, errorf(StatusValue, "InferType", "%v", err)
	}
	t := newCStrings([]string{string(text)})
	defer t.free()
	var out string
	err = weft_symbol_infer_type(s.handle(), t.ptrs[0], &out)
	runtime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	var res DTypes
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return nil, errorf(StatusInternal, "InferType", "unreadable result %q: %v", out, err)
	}
	return &res, nil
}
