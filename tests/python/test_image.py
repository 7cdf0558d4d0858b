"""weft.image (decode/encode/resize) against PIL and torch, tools/im2rec on a generated
folder, and ImageRecordIter's augmentations on known images."""
import io as _io
import os
import subprocess
import sys

import numpy as np
import pytest

import weft
from weft import recordio

PIL = pytest.importorskip("PIL.Image")
torch = pytest.importorskip("torch")

HERE = os.path.dirname(os.path.abspath(__file__))
IM2REC = os.path.join(HERE, "..", "..", "tools", "im2rec")


def photo_like(h, w, seed=0):
    rng = np.random.RandomState(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.stack([128 + 90 * np.sin(x / 11.0 + seed), 128 + 90 * np.cos(y / 8.0 + seed),
                    (x + y) * 200.0 / (h + w) + 20], axis=2)
    img += rng.normal(0, 3, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


def pil_bytes(arr, fmt, **kw):
    buf = _io.BytesIO()
    PIL.fromarray(arr).save(buf, format=fmt, **kw)
    return buf.getvalue()


def test_png_decode_matches_pil_exactly():
    rgb = photo_like(33, 47)
    np.testing.assert_array_equal(weft.image.imdecode(pil_bytes(rgb, "PNG")).asnumpy(), rgb)
    bgr = weft.image.imdecode(pil_bytes(rgb, "PNG"), to_rgb=0).asnumpy()
    np.testing.assert_array_equal(bgr, rgb[:, :, ::-1])
    rgba = np.concatenate([rgb, rgb[:, :, :1]], axis=2)
    data = pil_bytes(rgba, "PNG")
    np.testing.assert_array_equal(weft.image.imdecode(data, flag=-1).asnumpy(), rgba)
    np.testing.assert_array_equal(weft.image.imdecode(data, flag=1).asnumpy(), rgb)
    grey = rgb[:, :, 0].copy()
    g = weft.image.imdecode(pil_bytes(grey, "PNG"), flag=0).asnumpy()
    assert g.shape == (33, 47, 1)
    np.testing.assert_array_equal(g[:, :, 0], grey)
    # Colour to grey with BT.601 weights (cv2's).
    want = (rgb[..., 0] * 0.299 + rgb[..., 1] * 0.587 + rgb[..., 2] * 0.114)
    got = weft.image.imdecode(pil_bytes(rgb, "PNG"), flag=0).asnumpy()[:, :, 0]
    assert np.abs(got - want).max() <= 1.0


def test_jpeg_decode_matches_pil():
    rgb = photo_like(64, 80, seed=2)
    data = pil_bytes(rgb, "JPEG", quality=90)
    ours = weft.image.imdecode(data).asnumpy().astype(int)
    theirs = np.asarray(PIL.open(_io.BytesIO(data)).convert("RGB")).astype(int)
    assert ours.shape == theirs.shape
    # Both are libjpeg-turbo with the same IDCT and upsampling.
    assert np.abs(ours - theirs).max() <= 1
    assert np.abs(ours - rgb).mean() < 4


def test_encode_read_by_pil(tmp_path):
    rgb = photo_like(30, 20, seed=3)
    s = recordio.pack_img((0, 0.0, 0, 0), rgb[:, :, ::-1], img_fmt=".png")
    png = recordio.unpack(s)[1]
    np.testing.assert_array_equal(np.asarray(PIL.open(_io.BytesIO(png))), rgb)
    s = recordio.pack_img((0, 0.0, 0, 0), rgb[:, :, ::-1], quality=98, img_fmt=".jpg")
    jpg = np.asarray(PIL.open(_io.BytesIO(recordio.unpack(s)[1]))).astype(int)
    assert np.abs(jpg - rgb).mean() < 3
    path = str(tmp_path / "x.png")
    PIL.fromarray(rgb).save(path)
    np.testing.assert_array_equal(weft.image.imread(path).asnumpy(), rgb)


def _torch_resize(img, w, h, mode):
    t = torch.from_numpy(img.astype(np.float32)).permute(2, 0, 1)[None]
    kw = {} if mode in ("nearest", "area") else {"align_corners": False}
    out = torch.nn.functional.interpolate(t, size=(h, w), mode=mode, **kw)
    return out[0].permute(1, 2, 0).numpy()


@pytest.mark.parametrize("interp,mode,size", [(0, "nearest", (37, 23)), (1, "bilinear", (50, 41)),
                                              (1, "bilinear", (17, 13)), (2, "bicubic", (45, 38)),
                                              (3, "area", (10, 8))])
def test_resize_matches_torch(interp, mode, size):
    img = photo_like(24, 30, seed=4)
    w, h = size
    ours = weft.image.imresize(weft.nd.array(img, dtype=np.uint8), w, h, interp=interp).asnumpy()
    assert ours.shape == (h, w, 3) and ours.dtype == np.uint8
    ref = np.clip(np.round(_torch_resize(img, w, h, mode)), 0, 255)
    assert np.abs(ours.astype(int) - ref).max() <= 1, mode


def _lanczos4_reference(img, w, h):
    """OpenCV's INTER_LANCZOS4 written out from its definition: 8 taps around the half-pixel
    source position, weights sinc(d) * sinc(d / 4) normalised per output cell, edges
    replicated; separable (rows, then columns), in float64."""
    def matrix(n_in, n_out):
        m = np.zeros((n_out, n_in))
        for o in range(n_out):
            f = (o + 0.5) * n_in / n_out - 0.5
            s = int(np.floor(f))
            taps = np.arange(s - 3, s + 5)
            wts = np.sinc(f - taps) * np.sinc((f - taps) / 4)
            for t, wt in zip(np.clip(taps, 0, n_in - 1), wts / wts.sum()):
                m[o, t] += wt
        return m
    x = img.astype(np.float64)
    return np.einsum("yh,hwc,xw->yxc", matrix(img.shape[0], h), x, matrix(img.shape[1], w))


@pytest.mark.parametrize("size", [(61, 45), (13, 9), (30, 50), (30, 24)])
def test_lanczos_resize_matches_its_definition(size):
    # interp=4 is MXNet's (OpenCV's) Lanczos: the float operator to float precision, uint8
    # images (the decoder's resize) to rounding; resizing to the same size changes nothing.
    img = photo_like(24, 30, seed=6)
    w, h = size
    ref = _lanczos4_reference(img, w, h)
    out = weft.nd.image.resize(weft.nd.array(img.astype(np.float32)), size=(w, h), interp=4).asnumpy()
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-3)
    u8 = weft.image.imresize(weft.nd.array(img, dtype=np.uint8), w, h, interp=4).asnumpy()
    assert u8.dtype == np.uint8
    assert np.abs(u8.astype(np.float64) - np.clip(np.round(ref), 0, 255)).max() <= 1
    if size == (30, 24):
        np.testing.assert_array_equal(u8, img)


@pytest.mark.parametrize("interp", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("size", [(80, 61), (20, 15), (30, 50), (53, 18)])
def test_uint8_and_float_resizes_agree(interp, size):
    # The decoder's uint8 resize (imresize, ImageRecordIter) and the float operator are one
    # resampling: enlarging or stretching with area (interp=3) interpolates as OpenCV's, it
    # does not average (the uint8 path was 65-106 grey levels off there before).
    img = photo_like(37, 53, seed=2)
    w, h = size
    u8 = weft.image.imresize(weft.nd.array(img, dtype=np.uint8), w, h, interp=interp).asnumpy()
    f32 = weft.nd.image.resize(weft.nd.array(img.astype(np.float32)), size=(w, h), interp=interp).asnumpy()
    assert np.abs(u8.astype(np.float64) - np.clip(np.round(f32), 0, 255)).max() <= 1


def test_nearest_resize_takes_opencvs_cells():
    # OpenCV's INTER_NEAREST reads cell floor(x * (1 / (out / in))): for 2 -> 98 cells the
    # exact 49 * 2 / 98 = 1 comes out just below 1, so output 49 still reads cell 0 (MXNet's
    # test of imresize compares with OpenCV and met such cells).
    row = np.array([[[10], [20]]], dtype=np.uint8)
    u8 = weft.image.imresize(weft.nd.array(row, dtype=np.uint8), 98, 1, interp=0).asnumpy()[0, :, 0]
    f32 = weft.nd.image.resize(weft.nd.array(row.astype(np.float32)), size=(98, 1), interp=0).asnumpy()[0, :, 0]
    want = np.where(np.arange(98) <= 49, 10, 20)
    np.testing.assert_array_equal(u8, want)
    np.testing.assert_array_equal(f32, want)
    cv2 = pytest.importorskip("cv2")
    src = np.arange(500, dtype=np.float32).reshape(1, 500, 1).repeat(2, axis=0)
    for out_w in range(1, 1000, 7):
        ref = cv2.resize(src[:, :, 0], (out_w, 2), interpolation=0)
        got = weft.nd.image.resize(weft.nd.array(src), size=(out_w, 2), interp=0).asnumpy()[:, :, 0]
        np.testing.assert_array_equal(got, ref, err_msg="500 -> %d" % out_w)


@pytest.mark.parametrize("interp", [0, 1, 2, 3, 4])
@pytest.mark.parametrize("size", [(80, 61), (20, 15), (30, 50), (53, 18)])
def test_resize_matches_opencv(interp, size):
    # MXNet resizes with OpenCV: the same cells, taps and weights (uint8 within OpenCV's
    # fixed-point rounding, float to float precision).
    cv2 = pytest.importorskip("cv2")
    img = photo_like(37, 53, seed=3)
    w, h = size
    ref = cv2.resize(img, (w, h), interpolation=interp)
    u8 = weft.image.imresize(weft.nd.array(img, dtype=np.uint8), w, h, interp=interp).asnumpy()
    assert np.abs(u8.astype(int) - ref.astype(int)).max() <= 1
    ref_f = cv2.resize(img.astype(np.float32), (w, h), interpolation=interp)
    f32 = weft.nd.image.resize(weft.nd.array(img.astype(np.float32)), size=(w, h), interp=interp).asnumpy()
    np.testing.assert_allclose(f32, ref_f, rtol=1e-5, atol=2e-3)


def test_image_errors():
    with pytest.raises(weft.base.WeftIOError, match="neither JPEG"):
        weft.image.imdecode(b"GIF89a....")
    data = pil_bytes(photo_like(40, 40), "JPEG")
    with pytest.raises(weft.base.WeftIOError, match="corrupt JPEG"):
        weft.image.imdecode(data[:len(data) // 2])
    with pytest.raises(ValueError, match="flag"):
        weft.image.imdecode(data, flag=3)
    img = weft.nd.array(photo_like(8, 8), dtype=np.uint8)
    with pytest.raises(weft.base.WeftValueError, match="interp"):
        weft.image.imresize(img, 4, 4, interp=7)
    with pytest.raises(ValueError, match="0-4, 9 auto or 10 random"):
        weft.image.ResizeAug(4, interp=5)(img)
    with pytest.raises(weft.base.MXNetError, match="interp"):
        weft.image.imresize(weft.nd.ones((4, 4, 3)), 2, 2, interp=7)


def test_imresize_float_images():
    # MXNet's imresize takes float images too and keeps their dtype; a 2x2 box average
    # (area) of a 4x4 image is exact.
    x = np.arange(48, dtype=np.float64).reshape(4, 4, 3)
    out = weft.image.imresize(weft.nd.array(x, dtype=np.float64), 2, 2, interp=3)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.asnumpy(), x.reshape(2, 2, 2, 2, 3).mean(axis=(1, 3)), rtol=1e-12)
    # A 2-D image stays 2-D; halving by bilinear interpolation averages 2x2 blocks too.
    y = np.arange(16, dtype=np.float32).reshape(4, 4)
    out2 = weft.image.imresize(weft.nd.array(y), 2, 2, interp=1).asnumpy()
    np.testing.assert_allclose(out2, y.reshape(2, 2, 2, 2).mean(axis=(1, 3)), rtol=1e-6)


def _make_folder(root):
    """3 classes of 4 images each, PNG and JPEG, of varied sizes; returns {relpath: array}."""
    images = {}
    for c, cls in enumerate(["cat", "dog", "eel"]):
        os.makedirs(os.path.join(root, cls))
        for k in range(4):
            arr = photo_like(20 + 3 * k, 26 - 2 * k, seed=10 * c + k)
            ext = ".png" if k % 2 == 0 else ".jpg"
            rel = os.path.join(cls, "img%d%s" % (k, ext))
            PIL.fromarray(arr).save(os.path.join(root, rel), quality=95)
            images[rel] = arr
    with open(os.path.join(root, "cat", "notes.txt"), "w") as f:
        f.write("not an image")
    return images


def _im2rec(*args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(weft.__file__))
    env["PYTHON"] = sys.executable
    out = subprocess.run([IM2REC] + list(args), env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _read_lst(path):
    rows = []
    with open(path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            rows.append((int(parts[0]), float(parts[1]), parts[2]))
    return rows


def test_im2rec_list_and_pack(tmp_path):
    root = str(tmp_path / "imgs")
    images = _make_folder(root)
    prefix = str(tmp_path / "data")
    out = _im2rec("--list", "--recursive", "--train-ratio", "0.75", prefix, root)
    assert "cat 0" in out and "eel 2" in out
    train, val = _read_lst(prefix + "_train.lst"), _read_lst(prefix + "_val.lst")
    assert len(train) == 9 and len(val) == 3
    rows = train + val
    assert sorted(r[2] for r in rows) == sorted(images)
    assert sorted(r[0] for r in rows) == list(range(12))
    for _, label, rel in rows:
        assert label == ["cat", "dog", "eel"].index(rel.split(os.sep)[0])

    split = str(tmp_path / "split")
    # --exts takes several values, so the positional arguments go first (as with MXNet's tool).
    _im2rec(split, root, "--list", "--recursive", "--train-ratio", "0.5", "--test-ratio", "0.25", "--exts", ".png")
    parts = [_read_lst(split + suffix) for suffix in ("_train.lst", "_test.lst", "_val.lst")]
    assert [len(p) for p in parts] == [3, 1, 2]
    assert sorted(r[2] for p in parts for r in p) == sorted(k for k in images if k.endswith(".png"))

    # Pass-through keeps the file bytes; records follow the list order.
    _im2rec("--pass-through", "--num-thread", "2", prefix + "_train", root)
    rec = recordio.MXIndexedRecordIO(prefix + "_train.idx", prefix + "_train.rec", "r")
    assert rec.keys == [r[0] for r in train]
    for idx, label, rel in train:
        header, payload = recordio.unpack(rec.read_idx(idx))
        assert header.label == label and header.id == idx
        with open(os.path.join(root, rel), "rb") as f:
            assert payload == f.read()
    rec.close()

    # Re-encoded as PNG with the shorter side resized to 12 and centre-cropped to a square.
    _im2rec("--resize", "12", "--center-crop", "--encoding", ".png", "--num-thread", "3", prefix + "_val", root)
    rec = recordio.MXIndexedRecordIO(prefix + "_val.idx", prefix + "_val.rec", "r")
    for idx, label, rel in val:
        header, img = recordio.unpack_img(rec.read_idx(idx))
        assert header.label == label
        assert img.shape == (12, 12, 3)
        src = images[rel]
        h, w = src.shape[:2]
        m = abs(h - w) // 2
        sq = src[m:m + w] if h > w else src[:, m:m + h]
        ref = weft.image.imresize(weft.nd.array(np.ascontiguousarray(sq), dtype=np.uint8), 12, 12).asnumpy()
        tol = 0 if rel.endswith(".png") else 12
        assert np.abs(img[:, :, ::-1].astype(int) - ref.astype(int)).mean() <= tol, rel
    rec.close()


def test_image_record_iter_on_im2rec_output(tmp_path):
    wio = pytest.importorskip("weft.io")
    if not hasattr(wio, "ImageRecordIter"):
        pytest.skip("weft.io has no ImageRecordIter in this build")
    root = str(tmp_path / "imgs")
    images = _make_folder(root)
    prefix = str(tmp_path / "all")
    _im2rec("--list", "--recursive", "--no-shuffle", prefix, root)
    _im2rec("--resize", "16", "--center-crop", "--encoding", ".png", prefix, root)
    rows = _read_lst(prefix + ".lst")
    it = wio.ImageRecordIter(path_imgrec=prefix + ".rec", path_imgidx=prefix + ".idx", data_shape=(3, 12, 12),
                             batch_size=5, mean_r=10.0, std_b=2.0, mirror=True, preprocess_threads=2)
    seen = []
    for batch in it:
        data = batch.data[0].asnumpy()
        label = batch.label[0].asnumpy()
        for i in range(5 - batch.pad):
            seen.append(int(label[i]))
        assert data.shape == (5, 3, 12, 12)
    assert sorted(seen) == sorted(int(r[1]) for r in rows)
    # The first record's sample, recomputed: centre 12x12 of the stored 16x16, mirrored,
    # R - 10, B / 2.
    rec = recordio.MXIndexedRecordIO(prefix + ".idx", prefix + ".rec", "r")
    _, stored = recordio.unpack_img(rec.read_idx(rows[0][0]))
    rgb = stored[:, :, ::-1].astype(np.float32)[2:14, 2:14, :][:, ::-1, :]
    it.reset()
    first = it.next().data[0].asnumpy()[0]
    np.testing.assert_allclose(first[0], rgb[:, :, 0] - 10)
    np.testing.assert_allclose(first[1], rgb[:, :, 1])
    np.testing.assert_allclose(first[2], rgb[:, :, 2] / 2)
    # resize=8 shrinks the stored 16x16 to 8x8 (bilinear, as imresize), which is then the whole crop.
    small = wio.ImageRecordIter(path_imgrec=prefix + ".rec", data_shape=(3, 8, 8), batch_size=1, resize=8)
    want = weft.image.imresize(weft.nd.array(np.ascontiguousarray(stored[:, :, ::-1]), dtype=np.uint8), 8, 8)
    got = small.next().data[0].asnumpy()[0]
    np.testing.assert_array_equal(got, want.asnumpy().transpose(2, 0, 1).astype(np.float32))


def test_image_record_iter_random_augment_is_seeded(tmp_path):
    wio = pytest.importorskip("weft.io")
    if not hasattr(wio, "ImageRecordIter"):
        pytest.skip("weft.io has no ImageRecordIter in this build")
    path = str(tmp_path / "r.rec")
    w = recordio.MXRecordIO(path, "w")
    for i in range(6):
        w.write(recordio.pack_img((0, float(i), i, 0), photo_like(40, 60, seed=i), quality=95))
    w.close()

    def first_batch(seed, threads=3, **kw):
        it = wio.ImageRecordIter(path_imgrec=path, data_shape=(3, 24, 24), batch_size=6, seed=seed,
                                 random_resized_crop=True, min_random_area=0.2, max_aspect_ratio=4 / 3.,
                                 min_aspect_ratio=3 / 4., rand_mirror=True, brightness=0.3, contrast=0.3,
                                 saturation=0.3, preprocess_threads=threads, **kw)
        return it.next().data[0].asnumpy()

    a, b, c = first_batch(1), first_batch(1, threads=1), first_batch(2)
    assert a.shape == (6, 3, 24, 24)
    np.testing.assert_array_equal(a, b)  # the same seed gives the same augmentations, whatever the threads
    assert np.abs(a - c).mean() > 1
    assert a.min() >= 0 and a.max() <= 255
    # An unknown parameter is ignored (with a warning), as MXNet's iterators ignore it.
    ignored = wio.ImageRecordIter(path_imgrec=path, data_shape=(3, 24, 24), batch_size=2, no_such=1).next()
    assert ignored.data[0].shape == (2, 3, 24, 24)
    with pytest.raises(weft.MXNetError, match="min_random_area"):
        first_batch(1, max_random_area=0.1)


def test_image_record_iter_inter_methods(tmp_path):
    # MXNet's inter_method: 0-4 as cv2's, 9 auto (area when both sides shrink), 10 one of
    # 0-4 per image; anything else is refused when the iterator is made.
    wio = pytest.importorskip("weft.io")
    imgs = [photo_like(40, 60, seed=20 + i) for i in range(8)]
    path = _png_records(tmp_path, imgs)

    def resized(img, interp):
        rgb = weft.nd.array(img, dtype=np.uint8)
        return weft.image.imresize(rgb, 30, 20, interp=interp).asnumpy().transpose(2, 0, 1).astype(np.float32)

    def batch(method, **kw):
        it = wio.ImageRecordIter(path_imgrec=path, data_shape=(3, 20, 30), batch_size=8, resize=20,
                                 inter_method=method, **kw)
        return it.next().data[0].asnumpy()

    for method, interp in ((4, 4), (2, 2), (9, 3)):
        got = batch(method)
        for k, img in enumerate(imgs):
            np.testing.assert_array_equal(got[k], resized(img, interp), err_msg="inter_method=%d" % method)
    drawn = batch(10, seed=3)
    picks = []
    for k, img in enumerate(imgs):
        picks.append([i for i in range(5) if np.array_equal(drawn[k], resized(img, i))])
        assert picks[-1], "image %d matches none of the five methods" % k
    assert len({p[0] for p in picks}) > 1  # drawn per image
    np.testing.assert_array_equal(drawn, batch(10, seed=3))
    with pytest.raises(weft.MXNetError, match="inter_method must be 0..4, 9 or 10, got 5"):
        batch(5)


def _png_records(tmp_path, images, name="aug.rec"):
    """A .rec of lossless PNG records (image i has label i and index i); images are RGB."""
    path = str(tmp_path / name)
    w = recordio.MXRecordIO(path, "w")
    for i, img in enumerate(images):
        w.write(recordio.pack_img((0, float(i), i, 0), np.ascontiguousarray(img[:, :, ::-1]), img_fmt=".png"))
    w.close()
    return path


def _first_batch(path, n, shape, **kw):
    wio = pytest.importorskip("weft.io")
    return wio.ImageRecordIter(path_imgrec=path, data_shape=shape, batch_size=n, **kw).next()


def test_image_record_iter_rotation_shear_and_scale(tmp_path):
    # MXNet's affine augmentation: a 90 degree rotation of a square image maps pixel (x, y)
    # to (y, W - x), pixels brought in from outside take fill_value.
    img = photo_like(20, 20, seed=7)
    path = _png_records(tmp_path, [img])
    got = _first_batch(path, 1, (3, 20, 20), rotate=90, fill_value=9).data[0].asnumpy()[0].transpose(1, 2, 0)
    want = np.full_like(img, 9)
    want[1:] = img.transpose(1, 0, 2)[19:0:-1]  # out[y, x] = img[x, 20 - y]
    np.testing.assert_allclose(got, want, atol=1)
    # Against OpenCV's warpAffine with MXNet's matrix for a rotation, a shear and a scale.
    cv2 = pytest.importorskip("cv2")
    img = photo_like(48, 64, seed=8)
    path = _png_records(tmp_path, [img], "affine.rec")
    for kw in (dict(rotate=30), dict(max_shear_ratio=0.3, seed=2), dict(min_random_scale=0.5, max_random_scale=0.5)):
        got = _first_batch(path, 1, (3, 24, 32), fill_value=0, inter_method=1, **kw).data[0].asnumpy()[0]
        assert got.shape == (3, 24, 32)
    got = _first_batch(path, 1, (3, 48, 64), rotate=30, fill_value=0).data[0].asnumpy()[0].transpose(1, 2, 0)
    a, b = np.cos(np.pi / 6), np.sin(np.pi / 6)
    m = np.array([[a, b, 0], [-b, a, 0]])
    m[0, 2] = (64 - (m[0, 0] * 64 + m[0, 1] * 48)) / 2
    m[1, 2] = (48 - (m[1, 0] * 64 + m[1, 1] * 48)) / 2
    ref = cv2.warpAffine(img, m, (64, 48), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    diff = np.abs(got - ref.astype(np.float32))
    assert diff.mean() < 0.5 and np.percentile(diff, 99) <= 2


def test_image_record_iter_pad_crop_size_and_aspect(tmp_path):
    img = photo_like(20, 30, seed=9)
    path = _png_records(tmp_path, [img])
    # pad=3 with fill_value 5 around the image, then the centre data_shape crop.
    got = _first_batch(path, 1, (3, 26, 36), pad=3, fill_value=5).data[0].asnumpy()[0].transpose(1, 2, 0)
    want = np.pad(img, [(3, 3), (3, 3), (0, 0)], constant_values=5)
    np.testing.assert_array_equal(got, want)
    # A centred square of min_crop_size = max_crop_size = 10, resized to data_shape.
    got = _first_batch(path, 1, (3, 10, 10), min_crop_size=10, max_crop_size=10).data[0].asnumpy()[0]
    np.testing.assert_array_equal(got.transpose(1, 2, 0), img[5:15, 10:20])
    # The aspect ratio without random_resized_crop stretches the image (MXNet's affine path):
    # different seeds give different images.
    a = _first_batch(path, 1, (3, 16, 16), max_aspect_ratio=0.5, seed=1).data[0].asnumpy()
    b = _first_batch(path, 1, (3, 16, 16), max_aspect_ratio=0.5, seed=2).data[0].asnumpy()
    assert np.abs(a - b).mean() > 1
    with pytest.raises(weft.MXNetError, match="smaller than max_crop_size 40"):
        _first_batch(path, 1, (3, 10, 10), min_crop_size=10, max_crop_size=40)
    with pytest.raises(weft.MXNetError, match="random_resized_crop conflicts"):
        _first_batch(path, 1, (3, 10, 10), random_resized_crop=True, max_random_scale=2.0)


def test_image_record_iter_hsl_and_pca_noise(tmp_path):
    img = photo_like(16, 16, seed=10)
    path = _png_records(tmp_path, [img])
    plain = _first_batch(path, 1, (3, 16, 16)).data[0].asnumpy()[0]
    # PCA noise adds one offset per channel to every pixel (clamped to [0, 255], truncated).
    noisy = _first_batch(path, 1, (3, 16, 16), pca_noise=0.5, seed=4).data[0].asnumpy()[0]
    inner = (plain > 40) & (plain < 215)
    for c in range(3):
        offs = np.unique(noisy[c][inner[c]] - plain[c][inner[c]])
        assert offs.max() - offs.min() <= 1, offs
    assert np.abs(noisy - plain).max() >= 1
    # random_l shifts L in HSL space by one whole value in [-10, 10]: OpenCV's conversions
    # with one of those shifts give the output.
    cv2 = pytest.importorskip("cv2")
    got = _first_batch(path, 1, (3, 16, 16), random_l=10, seed=5).data[0].asnumpy()[0].transpose(1, 2, 0)
    hls = cv2.cvtColor(img, cv2.COLOR_RGB2HLS).astype(int)
    best = min(range(-10, 11), key=lambda d: np.abs(cv2.cvtColor(
        np.dstack([hls[..., 0], np.clip(hls[..., 1] + d, 0, 255), hls[..., 2]]).astype(np.uint8),
        cv2.COLOR_HLS2RGB).astype(int) - got).max())
    shifted = np.dstack([hls[..., 0], np.clip(hls[..., 1] + best, 0, 255), hls[..., 2]]).astype(np.uint8)
    assert np.abs(cv2.cvtColor(shifted, cv2.COLOR_HLS2RGB).astype(int) - got).max() <= 2
    assert best != 0 or np.array_equal(got, plain.transpose(1, 2, 0))


def test_image_record_iter_labels_from_path_imglist(tmp_path):
    imgs = [photo_like(12, 12, seed=s) for s in range(3)]
    path = _png_records(tmp_path, imgs)
    lst = tmp_path / "labels.lst"
    lst.write_text("0\t7\t70\ta.png\n\n1\t8\t80\tb.png\n2\t9\t90\tc.png\n")
    b = _first_batch(path, 3, (3, 12, 12), path_imglist=str(lst), label_width=2)
    np.testing.assert_array_equal(b.label[0].asnumpy(), [[7, 70], [8, 80], [9, 90]])
    lst.write_text("0\t7\ta.png\n")
    with pytest.raises(weft.MXNetError, match="is image 1, which path_imglist .* does not list"):
        _first_batch(path, 3, (3, 12, 12), path_imglist=str(lst))
    lst.write_text("0\t7\ta.png\n")
    with pytest.raises(weft.MXNetError, match="fewer than label_width = 2 labels"):
        _first_batch(path, 3, (3, 12, 12), path_imglist=str(lst), label_width=2)
    # seed_aug seeds the augmentations apart from seed.
    x = _first_batch(path, 3, (3, 8, 8), rand_crop=True, seed=1, seed_aug=3).data[0].asnumpy()
    y = _first_batch(path, 3, (3, 8, 8), rand_crop=True, seed=2, seed_aug=3).data[0].asnumpy()
    np.testing.assert_array_equal(x, y)


def test_image_record_iter_integer_outputs_and_mxnet_names(tmp_path):
    wio = pytest.importorskip("weft.io")
    imgs = [photo_like(10, 12, seed=s) for s in range(3)]
    path = _png_records(tmp_path, imgs)
    pixels = np.stack(imgs).transpose(0, 3, 1, 2)
    kw = dict(path_imgrec=path, data_shape=(3, 10, 12), batch_size=3)
    # uint8: the pixels, whatever the normalisation parameters say.
    u8 = wio.ImageRecordIter(dtype="uint8", mean_r=9, std_g=2, scale=3, **kw)
    assert u8.provide_data[0].dtype == np.uint8
    got = u8.next().data[0]
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got.asnumpy(), pixels)
    np.testing.assert_array_equal(wio.ImageRecordUInt8Iter(**kw).next().data[0].asnumpy(), pixels)
    np.testing.assert_array_equal(wio.ImageRecordUInt8Iter_v1(**kw).next().data[0].asnumpy(), pixels)
    # int8: the pixels less the rounded mean, saturated; no std or scale.
    i8 = wio.ImageRecordInt8Iter(mean_r=100.4, mean_g=50, mean_b=200, std_r=4, **kw).next().data[0]
    assert i8.dtype == np.int8
    want = np.clip(pixels.astype(int) - np.array([100, 50, 200])[None, :, None, None], -128, 127)
    np.testing.assert_array_equal(i8.asnumpy(), want)
    np.testing.assert_array_equal(wio.ImageRecordIter(dtype="int8", mean_r=100.4, mean_g=50, mean_b=200, **kw)
                                  .next().data[0].asnumpy(), want)
    # The first implementation's name gives ImageRecordIter's batches.
    np.testing.assert_array_equal(wio.ImageRecordIter_v1(mean_r=5, **kw).next().data[0].asnumpy(),
                                  wio.ImageRecordIter(mean_r=5, **kw).next().data[0].asnumpy())
    with pytest.raises(weft.MXNetError, match="ImageRecordUInt8Iter: gives uint8 data; dtype=int8 contradicts it"):
        wio.ImageRecordUInt8Iter(dtype="int8", **kw)
    with pytest.raises(weft.MXNetError, match="dtype"):
        wio.ImageRecordIter(dtype="float16", **kw)
    # MXNet's ctx hint (cpu or gpu, or a context's name) is accepted; batches stay in host memory.
    for ctx in ("cpu", "gpu", "gpu(0)"):
        batch = wio.ImageRecordIter(dtype="uint8", ctx=ctx, **kw).next().data[0]
        assert batch.context == weft.cpu() and batch.dtype == np.uint8
    with pytest.raises(weft.MXNetError, match="ctx must be 'cpu' or 'gpu', got 'tpu'"):
        wio.ImageRecordIter(ctx="tpu", **kw)


def test_image_record_iter_normalisation_jitter(tmp_path):
    # max_random_contrast / max_random_illumination: each image's normalised values are
    # (x - mean) * scale / std * k + b * scale / std, k in [1 - c, 1 + c], b in [-i, i].
    wio = pytest.importorskip("weft.io")
    imgs = [photo_like(10, 12, seed=s) for s in range(4)]
    path = _png_records(tmp_path, imgs)
    kw = dict(path_imgrec=path, data_shape=(3, 10, 12), batch_size=4, mean_r=100, std_g=2, scale=0.5)
    plain = wio.ImageRecordIter(**kw).next().data[0].asnumpy()
    got = wio.ImageRecordIter(max_random_contrast=0.3, max_random_illumination=20, seed=3, **kw).next().data[0].asnumpy()
    ks = []
    for n in range(4):
        a = np.vstack([plain[n].ravel(), np.ones(plain[n].size)]).T
        # One (k, b) per image: per channel the fit is exact with the same k; b scales with 1 / std.
        for c, mul in enumerate([0.5, 0.25, 0.5]):
            sol, res, _, _ = np.linalg.lstsq(a[c * 120:(c + 1) * 120], got[n, c].ravel(), rcond=None)
            assert res.size == 0 or res[0] < 1e-6
            k, bias = sol
            assert 0.7 - 1e-5 <= k <= 1.3 + 1e-5 and abs(bias / mul) <= 20 + 1e-4
            ks.append(k)
    assert np.std(ks) > 1e-3


def test_resize_short_and_center_crop():
    img = weft.nd.array(photo_like(30, 50), dtype=np.uint8)
    short = weft.image.resize_short(img, 15, interp=1)
    assert short.shape == (15, 25, 3)
    np.testing.assert_array_equal(short.asnumpy(), weft.image.imresize(img, 25, 15, interp=1).asnumpy())
    out, (x0, y0, w, h) = weft.image.center_crop(img, (20, 10))
    assert (x0, y0, w, h) == (15, 10, 20, 10)
    np.testing.assert_array_equal(out.asnumpy(), img.asnumpy()[10:20, 15:35])
    # A window larger than the image is scaled down to fit, then resized to the size asked.
    out, (x0, y0, w, h) = weft.image.center_crop(img, (60, 30))
    assert (w, h) == (50, 25) and out.shape == (30, 60, 3)
    with pytest.raises(ValueError, match="does not fit"):
        weft.image.fixed_crop(img, 40, 0, 20, 10)
