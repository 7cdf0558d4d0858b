// Package op holds one Go function per registered operator, generated from the registry
// (ops_gen.go): X(inputs..., required parameters..., options...) runs operator X on
// NDArrays, SymX(...) adds a node of X to a symbolic graph. Optional parameters are
// options With<Param>(value), shared by every operator that has a parameter of that name;
// where operators disagree on its type, the option is generic over those types. Operators
// whose registry name starts with "_" are generated as InternalX (_plus_scalar ->
// InternalPlusScalar): the building blocks of weft.NDArray's arithmetic, random and
// creation helpers.
//
// Each X returns the operator's first output; Invoke returns them all (split, topk...).
package op

import "weft.dev/weft"

// Option sets an optional parameter, the node name or attributes of a symbol, or the
// arrays an imperative call writes into.
type Option func(*call)

type call struct {
	keys, vals []string
	name       string
	out        []*weft.NDArray
}

func param(key string, v interface{}) Option {
	s := weft.FormatParam(v)
	return func(c *call) {
		c.keys = append(c.keys, key)
		c.vals = append(c.vals, s)
	}
}

// WithParam sets the parameter key to value (as weft.FormatParam writes it): for
// parameters by their registry name.
func WithParam(key string, value interface{}) Option { return param(key, value) }

// WithName names the node a Sym function adds (default: a unique name made by Weft).
// Parameters of a network are named after it: "fc1" gives "fc1_weight", "fc1_bias".
func WithName(name string) Option { return func(c *call) { c.name = name } }

// WithAttr sets an attribute of the node a Sym function adds ("__lr_mult__", ...).
func WithAttr(key, value string) Option { return param(key, value) }

// WithOut makes an imperative call write its outputs into out (which it then returns)
// instead of new arrays.
func WithOut(out ...*weft.NDArray) Option { return func(c *call) { c.out = out } }

func newCall(opts []Option) *call {
	c := &call{}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

func (c *call) set(key string, v interface{}) {
	c.keys = append(c.keys, key)
	c.vals = append(c.vals, weft.FormatParam(v))
}

func present(inputs []*weft.NDArray) []*weft.NDArray {
	out := make([]*weft.NDArray, 0, len(inputs))
	for _, x := range inputs {
		if x != nil {
			out = append(out, x)
		}
	}
	return out
}

func (c *call) invoke(o *weft.Operator, inputs ...*weft.NDArray) (*weft.NDArray, error) {
	return weft.First(o.Invoke(present(inputs), c.keys, c.vals, c.out))
}

func (c *call) invokeList(o *weft.Operator, countKey string, inputs []*weft.NDArray) (*weft.NDArray, error) {
	if countKey != "" {
		c.set(countKey, len(inputs))
	}
	return weft.First(o.Invoke(inputs, c.keys, c.vals, c.out))
}

func (c *call) compose(o *weft.Operator, names []string, inputs ...*weft.Symbol) (*weft.Symbol, error) {
	s, err := o.AtomicSymbol(c.keys, c.vals)
	if err != nil {
		return nil, err
	}
	var argNames []string
	var args []*weft.Symbol
	for i, x := range inputs {
		if x != nil {
			argNames = append(argNames, names[i])
			args = append(args, x)
		}
	}
	if argNames == nil {
		argNames = []string{}
	}
	if err := s.Compose(c.name, argNames, args); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (c *call) composeList(o *weft.Operator, countKey string, inputs []*weft.Symbol) (*weft.Symbol, error) {
	if countKey != "" {
		c.set(countKey, len(inputs))
	}
	s, err := o.AtomicSymbol(c.keys, c.vals)
	if err != nil {
		return nil, err
	}
	if err := s.Compose(c.name, nil, inputs); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Invoke runs the operator `name` (or alias) on inputs and returns every visible output.
func Invoke(name string, inputs []*weft.NDArray, opts ...Option) ([]*weft.NDArray, error) {
	c := newCall(opts)
	return weft.LookupOperator(name).Invoke(inputs, c.keys, c.vals, c.out)
}

// SymInvoke adds a node of the operator `name` with inputs (positional) to a graph.
func SymInvoke(name string, inputs []*weft.Symbol, opts ...Option) (*weft.Symbol, error) {
	c := newCall(opts)
	s, err := weft.LookupOperator(name).AtomicSymbol(c.keys, c.vals)
	if err != nil {
		return nil, err
	}
	if err := s.Compose(c.name, nil, inputs); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}
