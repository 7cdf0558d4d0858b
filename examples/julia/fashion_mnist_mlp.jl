# Trains a 784-128-64-10 MLP on Fashion-MNIST with Weft's Julia package and saves it as
# a checkpoint that Weft's Python (and R, Go) front ends load.
#
#   WEFT_LIBRARY=<weft>/build/libweft.so \
#     julia --project=frontends/julia/Weft examples/julia/fashion_mnist_mlp.jl [data folder] [prefix]
#
# The data folder defaults to Debian's dataset-fashion-mnist; the checkpoint prefix to
# ./fashion-mlp (writing fashion-mlp-symbol.json and fashion-mlp-0006.params).

using Weft

folder = length(ARGS) >= 1 ? ARGS[1] : "/usr/share/datasets/fashion-mnist"
prefix = length(ARGS) >= 2 ? ARGS[2] : "fashion-mlp"

provider(kind; shuffle) = mx.MNISTProvider(image=joinpath(folder, "$kind-images-idx3-ubyte.gz"),
                                           label=joinpath(folder, "$kind-labels-idx1-ubyte.gz"),
                                           batch_size=100, flat=true, shuffle=shuffle)
train = provider("train"; shuffle=true)
test = provider("t10k"; shuffle=false)

mlp = @mx.chain mx.Variable(:data) =>
      mx.FullyConnected(num_hidden=128, name=:fc1) =>
      mx.Activation(act_type=:relu, name=:relu1) =>
      mx.FullyConnected(num_hidden=64, name=:fc2) =>
      mx.Activation(act_type=:relu, name=:relu2) =>
      mx.FullyConnected(num_hidden=10, name=:fc3) =>
      mx.SoftmaxOutput(name=:softmax)

model = mx.FeedForward(mlp; context=mx.cpu())
optimizer = mx.SGD(lr=0.03, momentum=0.9, weight_decay=0.0001)
mx.fit(model, optimizer, train; n_epoch=6, eval_data=test, initializer=mx.XavierInitializer(),
       callbacks=[mx.speedometer(frequency=200)])

accuracy = get(mx.score(model, test))[1][2]
println("test accuracy: ", round(accuracy * 100; digits=2), " %")
mx.save_checkpoint(model, prefix, 6)
println("saved $prefix-symbol.json and $prefix-0006.params")
accuracy >= 0.85 || error("accuracy below 85 %")
