# MXNet 1.9's control-flow nodes, with their subgraphs, loaded from JSON in MXNet's form and
# run from R: while i < limit: acc <- acc + i, i <- i + 1 (at most 5 steps), the step
# output being the new acc.
while_json <- '{
  "nodes": [
    {"op": "null", "name": "i", "inputs": []},
    {"op": "null", "name": "acc", "inputs": []},
    {"op": "null", "name": "limit", "inputs": []},
    {"op": "_while_loop", "name": "wl",
     "attrs": {"num_args": "5", "num_outputs": "3", "num_out_data": "1", "max_iterations": "5",
               "cond_input_locs": "[0, 2]", "func_input_locs": "[1, 0]", "func_var_locs": "[1, 0]"},
     "inputs": [[0, 0, 0], [1, 0, 0], [2, 0, 0]],
     "subgraphs": [
       {"nodes": [{"op": "null", "name": "ci", "inputs": []}, {"op": "null", "name": "cl", "inputs": []},
                  {"op": "broadcast_lesser", "name": "lt", "inputs": [[0, 0, 0], [1, 0, 0]]}],
        "arg_nodes": [0, 1], "heads": [[2, 0, 0]]},
       {"nodes": [{"op": "null", "name": "facc", "inputs": []}, {"op": "null", "name": "fi", "inputs": []},
                  {"op": "elemwise_add", "name": "sum", "inputs": [[0, 0, 0], [1, 0, 0]]},
                  {"op": "_plus_scalar", "name": "next", "attrs": {"scalar": "1"}, "inputs": [[1, 0, 0]]}],
        "arg_nodes": [0, 1], "heads": [[2, 0, 0], [3, 0, 0], [2, 0, 0]]}]}
  ],
  "arg_nodes": [0, 1, 2],
  "heads": [[3, 0, 0], [3, 1, 0], [3, 2, 0]],
  "attrs": {"mxnet_version": ["int", 10901]}
}'

test_that("a _while_loop node from MXNet's JSON runs and pads its step outputs", {
  net <- mx.symbol.load.json(while_json)
  exec <- mx.symbol.bind(net, arg.arrays = list(i = 0, acc = 0, limit = 3), grad.reqs = "null")
  mx.exec.forward(exec, is.train = FALSE)
  expect_equal(as.vector(as.array(exec$outputs[[1]])), c(0, 1, 3, 0, 0))
  expect_equal(as.vector(as.array(exec$outputs[[2]])), 3)
  expect_equal(as.vector(as.array(exec$outputs[[3]])), 3)
  expect_true(grepl('"subgraphs"', mx.symbol.tojson(net), fixed = TRUE))
})
