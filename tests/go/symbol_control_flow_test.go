package tests

import (
	"testing"

	"weft.dev/weft"
)

// An MXNet 1.9 symbol file with a _foreach node (its body in the node's "subgraphs"):
// out_t = x_t * w + s_{t-1}, s_t = out_t. The body's inputs, depth first, are x, w, s.
const foreachJSON = `{
  "nodes": [
    {"op": "null", "name": "seq", "inputs": []},
    {"op": "null", "name": "s0", "inputs": []},
    {"op": "null", "name": "w", "inputs": []},
    {"op": "_foreach", "name": "loop",
     "attrs": {"num_args": "4", "num_outputs": "2", "num_out_data": "1",
               "in_data_locs": "[0]", "in_state_locs": "[2]", "remain_locs": "[1]"},
     "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]],
     "subgraphs": [{
       "nodes": [
         {"op": "null", "name": "x", "inputs": []},
         {"op": "null", "name": "wv", "inputs": []},
         {"op": "elemwise_mul", "name": "mul", "inputs": [[0, 0, 0], [1, 0, 0]]},
         {"op": "null", "name": "s", "inputs": []},
         {"op": "elemwise_add", "name": "add", "inputs": [[2, 0, 0], [3, 0, 0]]}
       ],
       "arg_nodes": [0, 1, 3],
       "heads": [[4, 0, 0], [4, 0, 0]]
     }]}
  ],
  "arg_nodes": [0, 1, 2],
  "heads": [[3, 0, 0], [3, 1, 0]],
  "attrs": {"mxnet_version": ["int", 10901]}
}`

func TestSymbolControlFlowFromMXNetJSON(t *testing.T) {
	sym := ok(weft.SymbolFromJSON(foreachJSON))
	seqv := []float32{1, 2, 3, 4, 5, 6}
	seq := ok(weft.NewFrom(seqv, 3, 2))
	s0 := ok(weft.NewFrom([]float32{0.5, -1}))
	w := ok(weft.NewFrom([]float32{2, -3}))
	exec := ok(weft.Bind(sym, weft.CPU(), []*weft.NDArray{seq, s0, w}, nil, []string{"null", "null", "null"}, nil))
	defer exec.Close()
	check(t, exec.Forward(false))
	outs := ok(exec.Outputs())
	shapeIs(t, outs[0], 3, 2)
	want := make([]float32, 6)
	s := []float32{0.5, -1}
	for step := 0; step < 3; step++ {
		for k := 0; k < 2; k++ {
			s[k] += seqv[step*2+k] * []float32{2, -3}[k]
			want[step*2+k] = s[k]
		}
	}
	near(t, "steps", f32(t, outs[0]), want, 1e-5)
	near(t, "final state", f32(t, outs[1]), s, 1e-5)
}
