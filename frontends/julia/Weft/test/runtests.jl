# Tests of the Weft Julia package. Run with a built libweft:
#   WEFT_LIBRARY=<weft>/build/libweft.so julia --project=frontends/julia/Weft -e 'using Pkg; Pkg.test()'
# Set WEFT_PYTHON to an interpreter that imports weft (e.g. <weft>/.venv/bin/python) to
# also check that Python reads the checkpoint written here.
#
# Expected values are worked out by hand in the comments. Remember the layout: a Julia
# array of size (a, b) is a Weft array of shape (b, a) over the same bytes, so Weft's axis 0
# is Julia's last dimension.

using Test
using Random
using Weft

const FASHION = "/usr/share/datasets/fashion-mnist"

@testset "Weft" begin

@testset "library" begin
    @test isfile(Weft.library_path())
    @test Weft.version() == Weft.WEFT_HEADER_VERSION
    @test mx === Weft
end

@testset "arrays: Julia conversions, every dtype" begin
    for T in (Float32, Float64, Float16, UInt8, Int32, Int8, Int64, Bool)
        a = T === Bool ? Bool[true false true; false true false] : T[1 2 3; 4 5 6]
        x = NDArray(a)
        @test eltype(x) == T
        @test size(x) == (2, 3)
        @test Weft._weft_shape(x) == [3, 2]      # dims reversed
        @test copy(x) == a
        @test Array(x) == a
    end
    b = Weft.BFloat16.(Float32[1.5 -2.0; 0.25 1024.0])
    xb = NDArray(b)
    @test eltype(xb) == Weft.BFloat16
    @test Float32.(copy(xb)) == Float32[1.5 -2.0; 0.25 1024.0]
    @test Float32(Weft.BFloat16(1.00390625f0)) == 1.0f0   # 1 + 2^-8 rounds to even (1.0)

    # cpu_shared (MXNet's device type 5): arrays there keep their context and mix with CPU ones.
    sh = mx.ones(Float32, 2, 3; ctx=Weft.Context(:cpu_shared))
    @test mx.context(sh) == Weft.Context(:cpu_shared, 0)
    @test sprint(show, mx.context(sh)) == "cpu_shared(0)"
    @test copy(sh .+ NDArray(ones(Float32, 2, 3))) == fill(2.0f0, 2, 3)

    # Same bytes: Julia's column-major (2, 3) is Weft's row-major (3, 2); Weft's first row
    # is Julia's first column.
    x = NDArray(Float32[1 2 3; 4 5 6])
    @test copy(x[:, 1]) == Float32[1, 4]
    @test copy(Weft.zeros(2, 3)) == Base.zeros(Float32, 2, 3)
    @test copy(Weft.ones(Int32, 4)) == Int32[1, 1, 1, 1]
    @test size(Weft.empty(Float64, 5, 6, 7)) == (5, 6, 7)
    @test Weft.context(x) == cpu()
    y = copy(x, cpu())
    @test y isa NDArray && copy(y) == copy(x) && !Weft.shares_memory(x, y)
    z = Weft.zeros(2, 3)
    copyto!(z, x)
    @test copy(z) == Float32[1 2 3; 4 5 6]
    @test_throws ArgumentError NDArray(ComplexF32[1, 2])
    @test_throws ArgumentError copyto!(Weft.zeros(Float64, 2, 3), Float32[1 2 3; 4 5 6])
    @test_throws DimensionMismatch copyto!(Weft.zeros(2, 2), Float32[1 2 3; 4 5 6])
end

@testset "arrays: arithmetic" begin
    a = Float32[1 2 3; 4 5 6]
    b = Float32[6 5 4; 3 2 1]
    x, y = NDArray(a), NDArray(b)
    @test copy(x + y) == fill(7f0, 2, 3)
    @test copy(x - y) == Float32[-5 -3 -1; 1 3 5]
    @test copy(x .* y) == Float32[6 10 12; 12 10 6]
    @test copy(x ./ y) ≈ a ./ b
    @test copy(x + 1) == a .+ 1
    @test copy(2 - x) == 2 .- a
    @test copy(x * 3) == a .* 3
    @test copy(3 * x) == a .* 3
    @test copy(x / 2) == a ./ 2
    @test copy(x .+ 1) == a .+ 1
    @test copy(1 ./ x) ≈ 1 ./ a
    @test copy(-x) == -a
    @test copy(x .^ 2) == a .^ 2
    # Broadcasting: a (1, 3) row spreads over both rows, as Julia's broadcasting does.
    r = Float32[10 20 30]
    @test copy(x .+ NDArray(r)) == a .+ r
    @test copy(x .* NDArray(r)) == a .* r
    @test copy(x .* y .+ 1) == a .* b .+ 1
end

@testset "arrays: slicing, reshape, fill" begin
    a = Float32[1 2 3 4; 5 6 7 8]          # Julia (2, 4): 4 samples of 2 values
    x = NDArray(a)
    s = Weft.slice(x, 2:3)
    @test size(s) == (2, 2)
    @test copy(s) == a[:, 2:3]
    @test copy(x[:, 2:3]) == a[:, 2:3]
    @test copy(x[:, 4]) == Float32[4, 8]
    @test Weft.shares_memory(x, s)
    s[:] = 0                                # writes through the view
    @test copy(x) == Float32[1 0 0 4; 5 0 0 8]
    @test copy(reshape(x, 4, 2)) == reshape(copy(x), 4, 2)
    @test copy(reshape(x, (8,))) == vec(copy(x))
    fill!(x, 2.5)
    @test copy(x) == fill(2.5f0, 2, 4)
    @test_throws ArgumentError x[1, 2]      # only the last dimension can be indexed
end

@testset "arrays: .params save and load" begin
    dir = mktempdir()
    w = NDArray(Float32[1 2; 3 4])
    b = NDArray(Int64[7, 8, 9])
    file = joinpath(dir, "t.params")
    Weft.save(file, Dict("arg:w" => w, "aux:b" => b))
    d = Weft.load(file, NDArray)
    @test d isa Dict{Symbol,NDArray}
    @test sort(collect(keys(d))) == [Symbol("arg:w"), Symbol("aux:b")]
    @test copy(d[Symbol("arg:w")]) == Float32[1 2; 3 4]
    @test copy(d[Symbol("aux:b")]) == Int64[7, 8, 9]
    Weft.save(joinpath(dir, "list.params"), [w, b])
    l = Weft.load(joinpath(dir, "list.params"), NDArray)
    @test l isa Vector{NDArray} && length(l) == 2
    @test copy(l[2]) == Int64[7, 8, 9]
end

@testset "operators: imperative, against hand values" begin
    X = Float32[1 2; 3 4; 5 6]              # 2 samples (columns) of 3 features
    W = Float32[1 0; 0 1; 1 1]              # Julia (in, hidden): unit 1 sums features 1 and 3
    bias = Float32[0.5, -1]
    out = mx.FullyConnected(NDArray(X), NDArray(W), NDArray(bias); num_hidden=2)
    # unit 1: 1+5+0.5, 2+6+0.5; unit 2: 3+5-1, 4+6-1
    @test copy(out) == Float32[6.5 8.5; 7 9]
    @test copy(out) == W' * X .+ bias
    # By name, and without the bias.
    out2 = mx.FullyConnected(data=NDArray(X), weight=NDArray(W), num_hidden=2, no_bias=true)
    @test copy(out2) == W' * X

    @test copy(mx.Activation(NDArray(Float32[-1, 0, 2]); act_type=:relu)) == Float32[0, 0, 2]
    @test copy(mx.sigmoid(NDArray(Float32[0]))) == Float32[0.5]
    p = copy(mx.softmax(NDArray(Float32[1, 2, 3])))
    e = exp.(Float32[1, 2, 3])
    @test p ≈ e ./ Base.sum(e)
    @test copy(exp(NDArray(Float32[0, 1]))) ≈ Float32[1, exp(1)]
    # Weft's axis 0 is Julia's last dimension: summing it adds the columns.
    a = Float32[1 2 3; 4 5 6]
    @test copy(sum(NDArray(a); axis=0)) == Float32[6, 15]
    @test copy(sum(NDArray(a); axis=1)) == Float32[5, 7, 9]
    @test copy(mx.dot(NDArray(a), NDArray(Float32[1 0; 0 1; 1 1]))) == a * Float32[1 0; 0 1; 1 1]
    @test copy(mx.dot(NDArray(a), NDArray(a); transpose_b=true)) == a * a'
    # A variadic operator counts its inputs itself; dim 0 is Julia's last dimension.
    c = mx.Concat(NDArray(Float32[1 2; 3 4]), NDArray(reshape(Float32[5, 6], 2, 1)); dim=0)
    @test copy(c) == Float32[1 2 5; 3 4 6]
    # Operators without inputs; an integer tuple is in Julia's order (reversed for the
    # engine, as MXNet.jl passes it), a vector as written.
    z = Weft._zeros(shape=(2, 3))
    @test size(z) == (2, 3)
    @test size(Weft._zeros(shape=[2, 3])) == (3, 2)
    @test Weft.param_str((1, 2, 3)) == "(3, 2, 1)" && Weft.param_str((0.5, 1.0)) == "(0.5, 1.0)"
    @test size(mx.Reshape(NDArray(Float32[1 2 3; 4 5 6]); shape=(3, 2))) == (3, 2)
    @test copy(Weft._full(shape=(2,), value=4.5)) == Float32[4.5, 4.5]
    Weft.srand(42)
    u1 = copy(Weft._random_uniform(shape=(5,)))
    Weft.srand(42)
    u2 = copy(Weft._random_uniform(shape=(5,)))
    @test u1 == u2 && all(0 .<= u1 .< 1)
    # Writing into a given array.
    dst = Weft.zeros(3)
    r = Weft._plus_scalar(NDArray(Float32[1, 2, 3]); scalar=0.5, out=dst)
    @test r === dst && copy(dst) == Float32[1.5, 2.5, 3.5]
    # A keyword parameter named like a Julia keyword.
    @test copy(mx.slice(NDArray(a); begin_=(1,), end_=(3,))) == a[:, 2:3]
    @test copy(mx.slice(NDArray(a); begin_=(1, 0), end_=(2, 2))) == a[2:2, 1:2]
    @test "FullyConnected" in Weft.operator_names() && "where_" in Weft.operator_names()
end

@testset "autograd" begin
    x = NDArray(Float32[1, 2, 3])
    mx.attach_grad!(x)
    y = mx.record() do
        x .* x
    end
    mx.backward!(y)
    @test copy(mx.getgrad(x)) == Float32[2, 4, 6]   # d(x^2)/dx
    @test !mx.is_recording()
end

@testset "symbols" begin
    data = mx.Variable(:data)
    fc1 = mx.FullyConnected(data; num_hidden=10, name=:fc1)
    act = mx.Activation(fc1; act_type=:relu, name=:relu1)
    @test mx.list_arguments(act) == [:data, :fc1_weight, :fc1_bias]
    @test mx.list_outputs(act) == [:relu1_output]
    @test mx.get_name(fc1) == :fc1
    # Shapes in Julia's order: 100 samples of 784 values; the weight is (784, 10).
    arg_shapes, out_shapes, aux_shapes = mx.infer_shape(act; data=(784, 100))
    @test arg_shapes == [(784, 100), (784, 10), (10,)]
    @test out_shapes == [(10, 100)]
    @test aux_shapes == []
    @test mx.infer_shape(act) == (nothing, nothing, nothing)
    arg_types, out_types, _ = mx.infer_type(act; data=Float32)
    @test arg_types == [Float32, Float32, Float32] && out_types == [Float32]

    g = mx.Group(fc1, act)
    @test mx.list_outputs(g) == [:fc1_output, :relu1_output]
    @test mx.list_outputs(g[2]) == [:relu1_output]
    internals = mx.get_internals(act)
    @test :fc1_output in mx.list_outputs(internals)
    @test mx.list_arguments(internals[:fc1_output]) == [:data, :fc1_weight, :fc1_bias]

    # Inputs by keyword, and composition by call.
    net = mx.FullyConnected(data=mx.Variable(:x), num_hidden=4, name=:fc)
    @test mx.list_arguments(net) == [:x, :fc_weight, :fc_bias]
    net2 = net(x=mx.Variable(:y))
    @test mx.list_arguments(net2) == [:y, :fc_weight, :fc_bias]
    @test mx.list_arguments(net) == [:x, :fc_weight, :fc_bias]   # the original is unchanged
    sumsym = mx.Variable(:a) + mx.Variable(:b) * 2
    @test mx.list_arguments(sumsym) == [:a, :b]

    # JSON, as text and as files; attributes.
    json = mx.to_json(act)
    @test occursin("\"FullyConnected\"", json)
    back = mx.from_json(json, SymbolicNode)
    @test mx.to_json(back) == json
    file = joinpath(mktempdir(), "net-symbol.json")
    mx.save(file, act)
    @test mx.to_json(mx.load(file, SymbolicNode)) == json
    v = mx.Variable(:w; attrs=Dict(:__lr_mult__ => "0.5"))
    @test mx.get_attr(v, :__lr_mult__) == "0.5"
    @test mx.get_attr(v, :nothing_here) === nothing
end

@testset "executors" begin
    X = Float32[1 2; 3 4; 5 6]
    W = Float32[1 0; 0 1; 1 1]
    bias = Float32[0.5, -1]
    net = mx.FullyConnected(mx.Variable(:data); num_hidden=2, name=:fc)
    exec = mx.simple_bind(net, cpu(); data=(3, 2))
    @test size(exec.arg_dict[:fc_weight]) == (3, 2)
    copyto!(exec.arg_dict[:fc_weight], W)
    copyto!(exec.arg_dict[:fc_bias], bias)
    outs = mx.forward(exec; is_train=true, data=X)
    @test copy(outs[1]) == Float32[6.5 8.5; 7 9]
    # With a head gradient of ones: dW[i, h] = sum over samples of X[i, n]; db = 2;
    # dX[i, n] = sum over units of W[i, h].
    mx.backward(exec, [NDArray(Base.ones(Float32, 2, 2))])
    @test copy(exec.grad_dict[:fc_weight]) == Float32[3 3; 7 7; 11 11]
    @test copy(exec.grad_dict[:fc_bias]) == Float32[2, 2]
    @test copy(exec.grad_dict[:data]) == Float32[1 1; 1 1; 2 2]

    # bind with given arrays (a Dict by name), gradients only for the weight.
    gw = Weft.zeros(3, 2)
    e2 = bind(net, cpu(), Dict(:data => NDArray(X), :fc_weight => NDArray(W), :fc_bias => NDArray(bias));
              args_grad=Dict(:fc_weight => gw))
    mx.forward(e2; is_train=true)
    @test copy(e2.outputs[1]) == Float32[6.5 8.5; 7 9]
    mx.backward(e2, NDArray(Base.ones(Float32, 2, 2)))
    @test copy(gw) == Float32[3 3; 7 7; 11 11]
    @test e2.grad_arrays[1] === nothing
    @test_throws ArgumentError bind(net, cpu(), [NDArray(X)])
    @test_throws ArgumentError mx.forward(exec; nosuch=X)
end

@testset "kvstore" begin
    kv = mx.KVStore(:local)
    @test mx.get_type(kv) == :local
    @test mx.get_rank(kv) == 0 && mx.get_num_workers(kv) == 1
    mx.init!(kv, 3, Weft.ones(2, 3))
    # Two values for one key are summed; with no updater the sum is stored.
    push!(kv, 3, [NDArray(fill(2f0, 2, 3)), NDArray(fill(5f0, 2, 3))])
    out = Weft.zeros(2, 3)
    mx.pull!(kv, 3, out)
    @test copy(out) == fill(7f0, 2, 3)

    seen = Any[]
    mx.set_updater(kv, (key, grad, weight) -> begin
        push!(seen, key)
        copyto!(weight, weight - grad * 0.5)
    end)
    push!(kv, 3, NDArray(fill(2f0, 2, 3)))
    mx.pull!(kv, 3, out)
    @test copy(out) == fill(6f0, 2, 3)       # 7 - 0.5 * 2
    @test seen == Any[3]

    mx.init!(kv, "w", NDArray(Float32[1, 2]))
    o2 = Weft.zeros(2)
    mx.pushpull!(kv, "w", NDArray(Float32[2, 2]), o2)
    @test copy(o2) == Float32[0, 1]          # [1, 2] - 0.5 * [2, 2]
    @test seen == Any[3, "w"]

    # An optimizer as the updater: weight -= lr * grad.
    kv2 = mx.KVStore(:local)
    mx.init!(kv2, 0, NDArray(Float32[1, 1]))
    mx.set_optimizer(kv2, SGD(lr=0.1, weight_decay=0))
    push!(kv2, 0, NDArray(Float32[1, 2]))
    o3 = Weft.zeros(2)
    mx.pull!(kv2, 0, o3)
    @test copy(o3) ≈ Float32[0.9, 0.8]

    # Errors: a key never initialised; an updater that throws (its error reaches the push).
    err = try push!(kv, 99, Weft.ones(2)); nothing catch e; e end
    @test err isa WeftError && err.status == Weft.WEFT_ERR_NOT_FOUND && occursin("99", err.msg)
    mx.set_updater(kv, (k, g, w) -> error("updater refuses"))
    err = try push!(kv, 3, Weft.ones(2, 3)); nothing catch e; e end
    @test err isa ErrorException && err.msg == "updater refuses"
end

@testset "data providers" begin
    data = Float32.(reshape(1:30, 3, 10))     # 10 samples of 3 values
    label = Float32.(0:9)
    p = ArrayDataProvider(data, label; batch_size=4)
    @test mx.provide_data(p) == [(:data, (3, 4))]
    @test mx.provide_label(p) == [(:softmax_label, (4,))]
    batches = collect(p)
    @test length(batches) == 3
    @test copy(batches[1].data[1]) == data[:, 1:4]
    @test copy(batches[2].label[1]) == Float32[4, 5, 6, 7]
    @test batches[3].pad == 2
    @test copy(batches[3].data[1])[:, 1:2] == data[:, 9:10]
    @test length(collect(p)) == 3             # iterating again starts a new epoch

    csv = joinpath(mktempdir(), "d.csv")
    write(csv, "1,2,3\n4,5,6\n7,8,9\n10,11,12\n")
    it = mx.CSVIter(data_csv=csv, data_shape=(3,), batch_size=2)
    @test mx.provide_data(it) == [(:data, (3, 2))]
    b = first(it)
    @test copy(b.data[1]) == Float32[1 4; 2 5; 3 6]   # each CSV row is a sample (a column)
    @test length(collect(it)) == 2

    if isfile(joinpath(FASHION, "t10k-images-idx3-ubyte.gz"))
        mnist = mx.MNISTProvider(image=joinpath(FASHION, "t10k-images-idx3-ubyte.gz"),
                                 label=joinpath(FASHION, "t10k-labels-idx1-ubyte.gz"),
                                 batch_size=100, flat=true, shuffle=false)
        @test mx.provide_data(mnist) == [(:data, (784, 100))]
        n = 0
        for batch in mnist
            n += 1
            l = copy(batch.label[1])
            @test all(0 .<= l .<= 9)
            @test 0 <= minimum(copy(batch.data[1])) && maximum(copy(batch.data[1])) <= 1
        end
        @test n == 100
    else
        @warn "Fashion-MNIST is not installed (Debian dataset-fashion-mnist): MNISTIter not tested"
    end
end

@testset "RecordIO, images and ImageRecordIter" begin
    path = joinpath(mktempdir(), "img.rec")
    w = mx.MXRecordIO(path, :w)
    for i in 0:2
        img = Base.zeros(UInt8, 3, 8, 8)        # Julia (C, W, H): Weft's (H, W, C) image
        for c in 1:3
            img[c, :, :] .= 10i + c
        end
        img[:, 2, 1] .= 200                      # row 0, column 1
        png = mx.imencode(NDArray(img), ".png")
        @test copy(mx.imdecode(png)) == img      # PNG is lossless, channels stay RGB
        write(w, mx.pack(i + 5, i, png))
    end
    close(w)

    r = mx.MXRecordIO(path, :r)
    rec1 = mx.unpack(read(r))
    @test rec1.label == 5 && rec1.id == 0 && copy(mx.imdecode(rec1.payload))[:, 2, 1] == UInt8[200, 200, 200]
    second = position(r)
    @test mx.unpack(read(r)).id == 1
    @test mx.unpack(read(r)).id == 2
    @test read(r) === nothing
    seek(r, second)
    @test mx.unpack(read(r)).label == 6
    close(r)
    multi = mx.unpack(mx.pack([1, 2, 3], 7, UInt8[0x61]))
    @test multi.label == Float32[1, 2, 3] && multi.id == 7 && multi.payload == UInt8[0x61]

    # Batches of Weft shape (2, 3, 8, 8) = Julia (W, H, C, N); the last batch wraps around.
    it = mx.ImageRecordIter(path_imgrec=path, data_shape=(8, 8, 3), batch_size=2)
    @test mx.provide_data(it) == [(:data, (8, 8, 3, 2))]
    batches = collect(it)
    @test length(batches) == 2 && batches[1].pad == 0 && batches[2].pad == 1
    @test copy(batches[1].label[1]) == Float32[5, 6]
    @test copy(batches[2].label[1]) == Float32[7, 5]
    d = copy(batches[1].data[1])
    @test d[1, 1, :, 1] == Float32[1, 2, 3]
    @test d[2, 1, :, 1] == Float32[200, 200, 200]
    @test d[5, 7, :, 2] == Float32[11, 12, 13]
    err = try mx.MXRecordIO(joinpath(mktempdir(), "missing.rec"), :r); nothing catch e; e end
    @test err isa WeftError
end

@testset "training: Fashion-MNIST MLP, checkpoints" begin
    if !isfile(joinpath(FASHION, "train-images-idx3-ubyte.gz"))
        @warn "Fashion-MNIST is not installed (Debian dataset-fashion-mnist): training not tested"
    else
        Random.seed!(1)
        train = mx.MNISTProvider(image=joinpath(FASHION, "train-images-idx3-ubyte.gz"),
                                 label=joinpath(FASHION, "train-labels-idx1-ubyte.gz"),
                                 batch_size=100, flat=true, shuffle=true, seed=1)
        test_ = mx.MNISTProvider(image=joinpath(FASHION, "t10k-images-idx3-ubyte.gz"),
                                 label=joinpath(FASHION, "t10k-labels-idx1-ubyte.gz"),
                                 batch_size=100, flat=true, shuffle=false)
        net = mx.Variable(:data)
        net = mx.FullyConnected(net; num_hidden=128, name=:fc1)
        net = mx.Activation(net; act_type=:relu, name=:relu1)
        net = mx.FullyConnected(net; num_hidden=64, name=:fc2)
        net = mx.Activation(net; act_type=:relu, name=:relu2)
        net = mx.FullyConnected(net; num_hidden=10, name=:fc3)
        net = mx.SoftmaxOutput(net; name=:softmax)
        model = mx.FeedForward(net; context=cpu())
        prefix = joinpath(mktempdir(), "mlp")
        # Checked with the same graph, initialisation and updates through the Python front end:
        # about 0.85-0.86 test accuracy from the 3rd epoch on.
        mx.fit(model, SGD(lr=0.03, momentum=0.9, weight_decay=0.0001), train; n_epoch=6,
               initializer=mx.XavierInitializer(), callbacks=[mx.do_checkpoint(prefix)], verbosity=1)
        acc = get(mx.score(model, test_))[1][2]
        @info "Fashion-MNIST test accuracy" acc
        @test acc >= 0.85

        # The callback wrote epochs 1..6; read epoch 6 back as a model.
        @test isfile("$prefix-symbol.json") && isfile("$prefix-0003.params") && isfile("$prefix-0006.params")
        sym, args, aux = mx.load_checkpoint(prefix, 6)
        @test mx.list_arguments(sym) == mx.list_arguments(net)
        @test sort(collect(keys(args))) == [:fc1_bias, :fc1_weight, :fc2_bias, :fc2_weight, :fc3_bias, :fc3_weight]
        @test copy(args[:fc1_weight]) == copy(model.arg_params[:fc1_weight])
        loaded = mx.load_checkpoint(prefix, 6, FeedForward)
        @test mx.predict(loaded, test_) == mx.predict(model, test_)
        @test size(mx.predict(model, test_)) == (10, 10000)

        # Python reads the checkpoint (and its keys carry arg:/aux:).
        python = get(ENV, "WEFT_PYTHON", "")
        if !isempty(python)
            script = "import sys, weft; s, a, x = weft.model.load_checkpoint(sys.argv[1], 6); " *
                     "print(' '.join(sorted(a)), float(a['fc3_bias'].asnumpy()[0]))"
            text = read(`$python -c $script $prefix`, String)
            names, value = split(strip(text))[1:end-1], parse(Float64, split(strip(text))[end])
            @test names == ["fc1_bias", "fc1_weight", "fc2_bias", "fc2_weight", "fc3_bias", "fc3_weight"]
            @test value ≈ Float64(copy(args[:fc3_bias])[1])
        end
    end
end

@testset "a checkpoint written by Python" begin
    python = get(ENV, "WEFT_PYTHON", "")
    if isempty(python)
        @warn "WEFT_PYTHON is not set: reading a Python checkpoint not tested"
    else
        # Python's weight (2, 3) is Julia's (3, 2) W below: unit 1 reads features 1 and 3.
        prefix = joinpath(mktempdir(), "py")
        script = "import sys, numpy as np, weft as mx\n" *
                 "net = mx.sym.FullyConnected(mx.sym.Variable('data'), num_hidden=2, name='fc')\n" *
                 "args = {'fc_weight': mx.nd.array(np.array([[1, 0, 1], [0, 1, 1]], np.float32)),\n" *
                 "        'fc_bias': mx.nd.array(np.array([0.5, -1], np.float32))}\n" *
                 "mx.model.save_checkpoint(sys.argv[1], 1, net, args, {})\n"
        run(`$python -c $script $prefix`)
        sym, args, aux = mx.load_checkpoint(prefix, 1)
        @test mx.list_arguments(sym) == [:data, :fc_weight, :fc_bias]
        @test copy(args[:fc_weight]) == Float32[1 0; 0 1; 1 1]
        @test isempty(aux)
        model = mx.load_checkpoint(prefix, 1, FeedForward)
        X = Float32[1 2; 3 4; 5 6]
        @test mx.predict(model, ArrayDataProvider(X)) == Float32[6.5 8.5; 7 9]
    end
end

@testset "bad input: WeftErrors carrying Weft's message" begin
    x = NDArray(Float32[1 2 3; 4 5 6])          # Weft shape (3, 2)
    err = try mx.FullyConnected(x, Weft.ones(4, 2), Weft.ones(2); num_hidden=2); nothing catch e; e end
    @test err isa WeftError && err.status == Weft.WEFT_ERR_SHAPE && occursin("FullyConnected", err.msg)
    err = try mx.Activation(x; act_type=:nope); nothing catch e; e end
    @test err isa WeftError && err.status == Weft.WEFT_ERR_VALUE && occursin("act_type", err.msg)
    err = try mx.FullyConnected(x, Weft.ones(2, 2), Weft.ones(2)); nothing catch e; e end
    @test err isa WeftError && err.status == Weft.WEFT_ERR_VALUE && occursin("num_hidden", err.msg)
    err = try Weft._invoke_op(Weft.OpDef("NoSuchOperator", String[], false, ""), ()); nothing catch e; e end
    @test err isa WeftError && err.status == Weft.WEFT_ERR_NOT_FOUND
    err = try x + NDArray(Float32[1 2; 3 4]); nothing catch e; e end
    @test err isa WeftError && err.status == Weft.WEFT_ERR_SHAPE
    err = try Weft.load("/nonexistent/file.params", NDArray); nothing catch e; e end
    @test err isa WeftError && err.status == Weft.WEFT_ERR_NOT_FOUND && occursin("/nonexistent/file.params", err.msg)
    err = try mx.MNISTIter(image="/nonexistent-images", label="/nonexistent-labels"); nothing catch e; e end
    @test err isa WeftError && err.status == Weft.WEFT_ERR_NOT_FOUND
    err = try mx.from_json("{not json", SymbolicNode); nothing catch e; e end
    @test err isa WeftError
    # A freed handle is an error, not a crash.
    y = NDArray(Float32[1, 2])
    finalize(y)
    err = try size(y); nothing catch e; e end
    @test err isa WeftError && err.status == Weft.WEFT_ERR_HANDLE
    @test sprint(showerror, WeftError(Weft.WEFT_ERR_SHAPE, "msg")) == "WeftError (shape): msg"
    @test_throws ArgumentError mx.SGD(lr=-1)
    @test_throws ArgumentError Weft.Context(:tpu)
end

end
