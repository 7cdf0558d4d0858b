"""Symbol definitions of the networks the benchmarks use: MLP, LeNet, VGG-16, ResNet-50
(v1, bottleneck blocks), Inception-BN (BN-Inception, Ioffe & Szegedy 2015) and MobileNet
v1, written from the papers' layer tables."""
import weft as mx

sym = mx.sym


def conv_bn_relu(x, name, filters, kernel, stride=(1, 1), pad=(0, 0), relu=True):
    x = sym.Convolution(x, num_filter=filters, kernel=kernel, stride=stride, pad=pad, no_bias=True, name=name)
    x = sym.BatchNorm(x, fix_gamma=False, eps=2e-5, name=name + "_bn")
    return sym.Activation(x, act_type="relu", name=name + "_relu") if relu else x


def head(x, classes):
    x = sym.Flatten(x)
    x = sym.FullyConnected(x, num_hidden=classes, name="fc")
    return sym.SoftmaxOutput(x, name="softmax")


def mlp(classes=10):
    x = sym.Variable("data")
    for i, width in enumerate((1024, 1024)):
        x = sym.Activation(sym.FullyConnected(x, num_hidden=width, name="fc%d" % i), act_type="relu")
    return head(x, classes)


def lenet(classes=10):
    x = sym.Variable("data")
    for i, filters in enumerate((20, 50)):
        x = sym.Convolution(x, kernel=(5, 5), num_filter=filters, name="conv%d" % i)
        x = sym.Activation(x, act_type="relu")
        x = sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2))
    x = sym.Activation(sym.FullyConnected(sym.Flatten(x), num_hidden=500, name="fc0"), act_type="relu")
    return head(x, classes)


def vgg16(classes=1000):
    x = sym.Variable("data")
    for stage, (reps, filters) in enumerate(((2, 64), (2, 128), (3, 256), (3, 512), (3, 512))):
        for r in range(reps):
            x = sym.Convolution(x, kernel=(3, 3), pad=(1, 1), num_filter=filters, name="conv%d_%d" % (stage, r))
            x = sym.Activation(x, act_type="relu")
        x = sym.Pooling(x, pool_type="max", kernel=(2, 2), stride=(2, 2))
    x = sym.Flatten(x)
    for i in range(2):
        x = sym.Activation(sym.FullyConnected(x, num_hidden=4096, name="fc%d" % i), act_type="relu")
        x = sym.Dropout(x, p=0.5)
    return head(x, classes)


def resnet50(classes=1000):
    x = sym.Variable("data")
    x = conv_bn_relu(x, "conv0", 64, (7, 7), (2, 2), (3, 3))
    x = sym.Pooling(x, pool_type="max", kernel=(3, 3), stride=(2, 2), pad=(1, 1))
    for stage, (blocks, width) in enumerate(((3, 64), (4, 128), (6, 256), (3, 512))):
        for b in range(blocks):
            name = "stage%d_unit%d" % (stage, b)
            stride = (2, 2) if b == 0 and stage > 0 else (1, 1)
            y = conv_bn_relu(x, name + "_conv1", width, (1, 1))
            y = conv_bn_relu(y, name + "_conv2", width, (3, 3), stride, (1, 1))
            y = conv_bn_relu(y, name + "_conv3", width * 4, (1, 1), relu=False)
            shortcut = conv_bn_relu(x, name + "_sc", width * 4, (1, 1), stride, relu=False) if b == 0 else x
            x = sym.Activation(y + shortcut, act_type="relu", name=name + "_relu")
    x = sym.Pooling(x, pool_type="avg", global_pool=True, kernel=(7, 7))
    return head(x, classes)


def _inception(x, name, c1, c3r, c3, d3r, d3, pool, proj, stride=1):
    branches = []
    if c1:
        branches.append(conv_bn_relu(x, name + "_1x1", c1, (1, 1)))
    s = (stride, stride)
    b = conv_bn_relu(x, name + "_3x3r", c3r, (1, 1))
    branches.append(conv_bn_relu(b, name + "_3x3", c3, (3, 3), s, (1, 1)))
    b = conv_bn_relu(x, name + "_d3x3r", d3r, (1, 1))
    b = conv_bn_relu(b, name + "_d3x3a", d3, (3, 3), (1, 1), (1, 1))
    branches.append(conv_bn_relu(b, name + "_d3x3b", d3, (3, 3), s, (1, 1)))
    p = sym.Pooling(x, pool_type=pool, kernel=(3, 3), stride=s, pad=(1, 1), name=name + "_pool")
    if proj:
        p = conv_bn_relu(p, name + "_proj", proj, (1, 1))
    branches.append(p)
    return sym.Concat(*branches, dim=1, name=name + "_concat")


def inception_bn(classes=1000):
    x = sym.Variable("data")
    x = conv_bn_relu(x, "conv1", 64, (7, 7), (2, 2), (3, 3))
    x = sym.Pooling(x, pool_type="max", kernel=(3, 3), stride=(2, 2), pad=(1, 1))
    x = conv_bn_relu(x, "conv2r", 64, (1, 1))
    x = conv_bn_relu(x, "conv2", 192, (3, 3), pad=(1, 1))
    x = sym.Pooling(x, pool_type="max", kernel=(3, 3), stride=(2, 2), pad=(1, 1))
    x = _inception(x, "3a", 64, 64, 64, 64, 96, "avg", 32)
    x = _inception(x, "3b", 64, 64, 96, 64, 96, "avg", 64)
    x = _inception(x, "3c", 0, 128, 160, 64, 96, "max", 0, stride=2)
    x = _inception(x, "4a", 224, 64, 96, 96, 128, "avg", 128)
    x = _inception(x, "4b", 192, 96, 128, 96, 128, "avg", 128)
    x = _inception(x, "4c", 160, 128, 160, 128, 160, "avg", 128)
    x = _inception(x, "4d", 96, 128, 192, 160, 192, "avg", 128)
    x = _inception(x, "4e", 0, 128, 192, 192, 256, "max", 0, stride=2)
    x = _inception(x, "5a", 352, 192, 320, 160, 224, "avg", 128)
    x = _inception(x, "5b", 352, 192, 320, 192, 224, "max", 128)
    x = sym.Pooling(x, pool_type="avg", global_pool=True, kernel=(7, 7))
    return head(x, classes)


def mobilenet(classes=1000):
    """MobileNet v1 (Howard et al. 2017), width 1.0: a 3x3 convolution, then 13 depthwise
    separable blocks (a 3x3 convolution per channel, a 1x1 across them, each with BatchNorm
    and relu)."""
    x = conv_bn_relu(sym.Variable("data"), "conv0", 32, (3, 3), (2, 2), (1, 1))
    channels = 32
    for i, (filters, stride) in enumerate(((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1),
                                           (512, 1), (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1))):
        x = sym.Convolution(x, num_filter=channels, num_group=channels, kernel=(3, 3), stride=(stride, stride),
                            pad=(1, 1), no_bias=True, name="dw%d" % i)
        x = sym.Activation(sym.BatchNorm(x, fix_gamma=False, eps=2e-5, name="dw%d_bn" % i), act_type="relu")
        x = conv_bn_relu(x, "pw%d" % i, filters, (1, 1))
        channels = filters
    x = sym.Pooling(x, pool_type="avg", global_pool=True, kernel=(7, 7))
    return head(x, classes)


NETWORKS = {
    "mlp": (mlp, (784,)),
    "lenet": (lenet, (1, 28, 28)),
    "vgg16": (vgg16, (3, 224, 224)),
    "resnet50": (resnet50, (3, 224, 224)),
    "inception_bn": (inception_bn, (3, 224, 224)),
    "mobilenet": (mobilenet, (3, 224, 224)),
}
