// Package iter holds one constructor per data iterator type of the registry
// (iters_gen.go): MNISTIter, CSVIter, ImageRecordIter, LibSVMIter. Required parameters are
// positional, optional ones options With<Param>(value).
package iter

import "weft.dev/weft"

// Option sets an optional parameter of an iterator.
type Option func(*call)

type call struct {
	keys, vals []string
}

func param(key string, v interface{}) Option {
	s := weft.FormatParam(v)
	return func(c *call) {
		c.keys = append(c.keys, key)
		c.vals = append(c.vals, s)
	}
}

// WithParam sets the parameter key to value (as weft.FormatParam writes it).
func WithParam(key string, value interface{}) Option { return param(key, value) }

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

func (c *call) create(name string) (*weft.DataIter, error) {
	return weft.NewDataIter(name, c.keys, c.vals)
}
