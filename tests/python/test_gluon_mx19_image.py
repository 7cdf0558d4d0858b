"""mx.image's augmenters and helpers (MXNet 1.9 names): crops against slices, borders
against numpy's pad modes, rotation against torch's grid_sample, colour jitters against the
formulas with the same random draws, CreateAugmenter's pipeline."""
import json
import random

import numpy as np
import pytest

import weft as mx
from weft import image


def _u8(shape=(20, 30, 3), seed=0):
    return mx.nd.array(np.random.RandomState(seed).randint(0, 256, shape), dtype="uint8")


def _f32(shape=(6, 7, 3), seed=1):
    return mx.nd.array(np.random.RandomState(seed).uniform(0, 255, shape).astype(np.float32))


@pytest.mark.parametrize("border,mode", [(1, "edge"), (2, "symmetric"), (3, "wrap"), (4, "reflect")])
def test_copy_make_border_modes(border, mode):
    a = _u8((4, 5, 3))
    out = image.copyMakeBorder(a, 1, 2, 3, 1, type=border)
    np.testing.assert_array_equal(out.asnumpy(), np.pad(a.asnumpy(), [(1, 2), (3, 1), (0, 0)], mode=mode))


def test_copy_make_border_constant():
    a = _u8((3, 3, 3))
    out = image.copyMakeBorder(a, 1, 1, 1, 1, values=(7, 8, 9)).asnumpy()
    np.testing.assert_array_equal(out[0, 0], [7, 8, 9])
    np.testing.assert_array_equal(out[1:4, 1:4], a.asnumpy())
    assert (image.copyMakeBorder(a, 0, 1, 0, 0, value=5).asnumpy()[3] == 5).all()
    with pytest.raises(ValueError, match="type"):
        image.copyMakeBorder(a, 1, 1, 1, 1, type=7)
    # out= receives the padded image, in its own dtype.
    dst = mx.nd.zeros((5, 5, 3), dtype=np.float32)
    assert image.copyMakeBorder(a, 1, 1, 1, 1, type=1, out=dst) is dst
    np.testing.assert_array_equal(dst.asnumpy(), np.pad(a.asnumpy(), [(1, 1), (1, 1), (0, 0)], mode="edge"))
    with pytest.raises(ValueError, match="out has shape"):
        image.copyMakeBorder(a, 1, 1, 1, 1, out=mx.nd.zeros((4, 4, 3)))


def test_random_crops_are_windows_of_the_source():
    a = _u8()
    random.seed(0)
    out, (x0, y0, w, h) = image.random_crop(a, (12, 8))
    assert (w, h) == (12, 8) and out.shape == (8, 12, 3)
    np.testing.assert_array_equal(out.asnumpy(), a.asnumpy()[y0:y0 + h, x0:x0 + w])
    out, (x0, y0, w, h) = image.random_size_crop(a, (10, 10), (0.3, 0.6), (0.8, 1.25))
    assert out.shape == (10, 10, 3) and 0.3 * 600 * 0.8 <= w * h <= 0.6 * 600 * 1.25
    assert 0 <= x0 <= 30 - w and 0 <= y0 <= 20 - h


def test_color_normalize():
    a = _f32()
    mean, std = mx.nd.array([1.0, 2.0, 3.0]), mx.nd.array([2.0, 4.0, 8.0])
    want = (a.asnumpy() - [1, 2, 3]) / [2, 4, 8]
    np.testing.assert_allclose(image.color_normalize(a, mean, std).asnumpy(), want, rtol=1e-6)
    np.testing.assert_allclose(image.ColorNormalizeAug([1.0, 2.0, 3.0], None)(a).asnumpy(), a.asnumpy() - [1, 2, 3],
                               rtol=1e-6)


def _torch_rotate(a, degrees):
    import torch
    import torch.nn.functional as TF
    n, c, h, w = a.shape
    rad = np.deg2rad(degrees).reshape(-1, 1)
    hc, wc = (h - 1) / 2.0, (w - 1) / 2.0
    theta = np.stack([np.concatenate([np.cos(rad), -hc / wc * np.sin(rad), 0 * rad], 1),
                      np.concatenate([wc / hc * np.sin(rad), np.cos(rad), 0 * rad], 1)], 1)
    grid = TF.affine_grid(torch.from_numpy(theta), (n, c, h, w), align_corners=True)
    return TF.grid_sample(torch.from_numpy(a.astype(np.float64)), grid, align_corners=True).numpy()


def test_imrotate_and_random_rotate():
    a = np.random.RandomState(2).uniform(0, 1, (3, 2, 5, 8)).astype(np.float32)
    angles = np.array([10.0, -45.0, 120.0])
    out = image.imrotate(mx.nd.array(a), mx.nd.array(angles)).asnumpy()
    np.testing.assert_allclose(out, _torch_rotate(a, angles), rtol=1e-4, atol=1e-5)
    one = image.imrotate(mx.nd.array(a[0]), 30).asnumpy()
    np.testing.assert_allclose(one, _torch_rotate(a[:1], np.array([30.0]))[0], rtol=1e-4, atol=1e-5)
    np.random.seed(4)
    got = image.random_rotate(mx.nd.array(a), (-30, 30)).asnumpy()
    np.random.seed(4)
    np.testing.assert_allclose(got, _torch_rotate(a, np.random.uniform(-30, 30, size=3)), rtol=1e-4, atol=1e-5)
    with pytest.raises(TypeError, match="float32"):
        image.imrotate(_u8((3, 4, 4)), 10)
    with pytest.raises(ValueError, match="cannot both"):
        image.imrotate(mx.nd.array(a), 10, zoom_in=True, zoom_out=True)


def test_colour_jitters_follow_their_formulas():
    a = _f32()
    x = a.asnumpy().astype(np.float64)
    grey_w = np.array([0.299, 0.587, 0.114])
    random.seed(5)
    b = image.BrightnessJitterAug(0.3)(a).asnumpy()
    random.seed(5)
    np.testing.assert_allclose(b, x * (1 + random.uniform(-0.3, 0.3)), rtol=1e-5)
    random.seed(6)
    c = image.ContrastJitterAug(0.4)(a).asnumpy()
    random.seed(6)
    alpha = 1 + random.uniform(-0.4, 0.4)
    np.testing.assert_allclose(c, alpha * x + (1 - alpha) * (x * grey_w).sum(2).mean() , rtol=1e-4)
    random.seed(7)
    s = image.SaturationJitterAug(0.4)(a).asnumpy()
    random.seed(7)
    alpha = 1 + random.uniform(-0.4, 0.4)
    np.testing.assert_allclose(s, alpha * x + (1 - alpha) * (x * grey_w).sum(2, keepdims=True), rtol=1e-4)
    grey = mx.nd.array(np.repeat(np.random.RandomState(8).uniform(0, 255, (4, 4, 1)), 3, axis=2))
    np.testing.assert_allclose(image.HueJitterAug(0.5)(grey).asnumpy(), grey.asnumpy(), rtol=2e-3, atol=0.5)
    np.random.seed(9)
    lit = image.LightingAug(0.1, image.image._PCA_EIGVAL, image.image._PCA_EIGVEC)(a).asnumpy()
    np.random.seed(9)
    noise = np.dot(image.image._PCA_EIGVEC * np.random.normal(0, 0.1, size=3), image.image._PCA_EIGVAL)
    np.testing.assert_allclose(lit, x + noise, rtol=1e-5)
    g = image.RandomGrayAug(1.0)(a).asnumpy()
    np.testing.assert_allclose(g[..., 0], (x * [0.21, 0.72, 0.07]).sum(2), rtol=1e-5)
    np.testing.assert_allclose(g[..., 0], g[..., 2], rtol=1e-6)
    np.testing.assert_array_equal(image.HorizontalFlipAug(1.0)(a).asnumpy(), x[:, ::-1].astype(np.float32))
    assert image.HorizontalFlipAug(0.0)(a) is a


def test_geometric_augmenters():
    a = _u8()
    assert image.ResizeAug(10)(a).shape == (10, 15, 3)
    assert image.ForceResizeAug((9, 4))(a).shape == (4, 9, 3)
    np.testing.assert_array_equal(image.CenterCropAug((10, 6))(a).asnumpy(), image.center_crop(a, (10, 6))[0].asnumpy())
    assert image.RandomCropAug((5, 5))(a).shape == (5, 5, 3)
    assert image.RandomSizedCropAug((8, 8), 0.2, (0.5, 2.0), interp=9)(a).shape == (8, 8, 3)
    assert image.CastAug()(a).dtype == np.float32
    seq = image.SequentialAug([image.CastAug(), image.BrightnessJitterAug(0.0)])
    assert seq(a).dtype == np.float32
    assert json.loads(seq.dumps()[1][0]) == ["castaug", {"type": "float32"}]


def test_create_augmenter():
    augs = image.CreateAugmenter((3, 16, 16), resize=20, rand_crop=True, rand_mirror=True, mean=True, std=True,
                                 brightness=0.1, hue=0.1, pca_noise=0.1, rand_gray=0.1)
    assert [type(t).__name__ for t in augs] == ["ResizeAug", "RandomCropAug", "HorizontalFlipAug", "CastAug",
                                                "ColorJitterAug", "HueJitterAug", "LightingAug", "RandomGrayAug",
                                                "ColorNormalizeAug"]
    x = _u8()
    for t in augs:
        x = t(x)
    assert x.shape == (16, 16, 3) and x.dtype == np.float32
    plain = image.CreateAugmenter((3, 8, 8))
    assert [type(t).__name__ for t in plain] == ["CenterCropAug", "CastAug"]
    with pytest.raises(ValueError, match="rand_crop"):
        image.CreateAugmenter((3, 8, 8), rand_resize=True)


# --- ImageIter ----------------------------------------------------------------------------------

H, W = 6, 8


def _images(n, seed=10):
    rs = np.random.RandomState(seed)
    return [rs.randint(0, 256, (H, W, 3)).astype(np.uint8) for _ in range(n)]


def _png(rgb):
    return mx.recordio.unpack(mx.recordio.pack_img(mx.recordio.IRHeader(0, 0, 0, 0), rgb[..., ::-1],
                                                   img_fmt=".png"))[1]


def _files(tmp_path, imgs):
    for i, img in enumerate(imgs):
        (tmp_path / ("%d.png" % i)).write_bytes(_png(img))


def _chw(img):
    return img.transpose(2, 0, 1).astype(np.float32)


def test_image_iter_imglist_pad_discard_roll_over(tmp_path):
    imgs = _images(5)
    _files(tmp_path, imgs)
    items = [[float(i * 10), "%d.png" % i] for i in range(5)]
    it = image.ImageIter(2, (3, H, W), imglist=items, path_root=str(tmp_path), aug_list=[image.CastAug()])
    assert it.provide_data == [("data", (2, 3, H, W))] and it.provide_label == [("softmax_label", (2,))]
    batches = list(it)
    assert [b.pad for b in batches] == [0, 0, 1]
    np.testing.assert_array_equal(batches[2].data[0].asnumpy(), np.stack([_chw(imgs[4]), _chw(imgs[0])]))
    np.testing.assert_array_equal(batches[1].label[0].asnumpy(), [20.0, 30.0])
    it.reset()
    assert len(list(it)) == 3
    it = image.ImageIter(2, (3, H, W), imglist=items, path_root=str(tmp_path), aug_list=[image.CastAug()],
                         last_batch_handle="discard")
    assert len(list(it)) == 2
    it = image.ImageIter(2, (3, H, W), imglist=items, path_root=str(tmp_path), aug_list=[image.CastAug()],
                         last_batch_handle="roll_over")
    assert len(list(it)) == 2
    it.reset()
    first = it.next()   # image 4 rolled over, completed by the next epoch's first image
    np.testing.assert_array_equal(first.label[0].asnumpy(), [40.0, 0.0])
    assert first.pad == 1
    rest = list(it)
    assert [b.label[0].asnumpy().tolist() for b in rest] == [[10.0, 20.0], [30.0, 40.0]]


def test_image_iter_imglist_file_multilabel_and_augmenters(tmp_path):
    imgs = _images(4, 11)
    _files(tmp_path, imgs)
    lst = tmp_path / "a.lst"
    lst.write_text("".join("%d\t%d\t%d\t%d.png\n" % (i, i, 2 * i, i) for i in range(4)))
    it = image.ImageIter(4, (3, 4, 4), label_width=2, path_imglist=str(lst), path_root=str(tmp_path),
                         resize=5, mean=True, std=True, dtype="int32")
    b = it.next()
    assert b.data[0].shape == (4, 3, 4, 4) and b.label[0].shape == (4, 2) and b.label[0].dtype == np.int32
    np.testing.assert_array_equal(b.label[0].asnumpy(), [[i, 2 * i] for i in range(4)])
    assert abs(float(b.data[0].asnumpy().mean())) < 3   # normalised by ImageNet's mean and std


def test_image_iter_recordio_shuffle_and_parts(tmp_path):
    imgs = _images(6, 12)
    rec, idx = str(tmp_path / "d.rec"), str(tmp_path / "d.idx")
    writer = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i, img in enumerate(imgs):
        writer.write_idx(i, mx.recordio.pack_img(mx.recordio.IRHeader(0, float(i), i, 0), img[..., ::-1],
                                                 img_fmt=".png"))
    writer.close()
    seq = image.ImageIter(3, (3, H, W), path_imgrec=rec, aug_list=[image.CastAug()])   # sequential read
    got = [b for b in seq]
    assert [b.label[0].asnumpy().tolist() for b in got] == [[0, 1, 2], [3, 4, 5]]
    np.testing.assert_array_equal(got[1].data[0].asnumpy()[2], _chw(imgs[5]))
    random.seed(1)
    shuf = image.ImageIter(6, (3, H, W), path_imgrec=rec, path_imgidx=idx, shuffle=True, aug_list=[image.CastAug()])
    b = shuf.next()
    labels = b.label[0].asnumpy().astype(int)
    assert sorted(labels) == list(range(6)) and list(labels) != list(range(6))
    for k, lab in enumerate(labels):
        np.testing.assert_array_equal(b.data[0].asnumpy()[k], _chw(imgs[lab]))
    part = image.ImageIter(2, (3, H, W), path_imgrec=rec, path_imgidx=idx, num_parts=3, part_index=1,
                           aug_list=[image.CastAug()])
    assert [b.label[0].asnumpy().tolist() for b in part] == [[2, 3]]
    with pytest.raises(ValueError, match="path_imgidx"):
        image.ImageIter(2, (3, H, W), path_imgrec=rec, shuffle=True)
    with pytest.raises(ValueError, match="data_shape"):
        image.ImageIter(2, (1, H, W), path_imgrec=rec)
    with pytest.raises(ValueError, match="give path_imgrec"):
        image.ImageIter(2, (3, H, W))
