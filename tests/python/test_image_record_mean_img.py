"""ImageRecordIter(mean_img=...): the mean image computed over the data set and saved when
its file is missing, loaded when it exists, and subtracted from every image (MXNet 1.9)."""
import numpy as np
import pytest

import weft as mx
from weft import recordio

wio = pytest.importorskip("weft.io")


def write_rec(path, images):
    w = recordio.MXRecordIO(path, "w")
    for i, img in enumerate(images):
        # PNG keeps the pixels exact; pack_img takes BGR as OpenCV does.
        w.write(recordio.pack_img((0, float(i), i, 0), img[:, :, ::-1], img_fmt=".png"))
    w.close()


def images(n, h, w, seed):
    rng = np.random.RandomState(seed)
    return [rng.randint(0, 256, size=(h, w, 3)).astype(np.uint8) for _ in range(n)]


def chw(img):
    return img.astype(np.float32).transpose(2, 0, 1)


def test_mean_img_is_computed_saved_and_subtracted(tmp_path):
    imgs = images(5, 6, 7, seed=0)
    rec = str(tmp_path / "d.rec")
    write_rec(rec, imgs)
    mean_file = tmp_path / "mean.nd"
    it = wio.ImageRecordIter(path_imgrec=rec, data_shape=(3, 6, 7), batch_size=5, mean_img=str(mean_file),
                             preprocess_threads=2)
    want_mean = np.mean([chw(i) for i in imgs], axis=0)
    saved = mx.nd.load(str(mean_file))
    assert list(saved) == ["mean_img"]
    assert saved["mean_img"].shape == (3, 6, 7) and saved["mean_img"].dtype == np.float32
    np.testing.assert_allclose(saved["mean_img"].asnumpy(), want_mean, rtol=1e-6, atol=1e-4)
    got = it.next().data[0].asnumpy()
    for k, img in enumerate(imgs):
        np.testing.assert_allclose(got[k], chw(img) - saved["mean_img"].asnumpy(), rtol=1e-6, atol=1e-4)


def test_mean_img_is_computed_from_the_normalised_images(tmp_path):
    # As MXNet: the mean is taken over the images as the iterator outputs them without a
    # mean image (mean_r/g/b, std and scale applied), then subtracted from the raw pixels,
    # and the result scaled.
    imgs = images(4, 5, 5, seed=1)
    rec = str(tmp_path / "d.rec")
    write_rec(rec, imgs)
    mean_file = str(tmp_path / "m.nd")
    kw = dict(path_imgrec=rec, data_shape=(3, 5, 5), batch_size=4, mean_r=10.0, std_g=2.0, scale=0.5)
    it = wio.ImageRecordIter(mean_img=mean_file, **kw)
    mul = np.array([0.5, 0.25, 0.5], np.float32)[:, None, None]
    sub = np.array([10.0, 0, 0], np.float32)[:, None, None]
    want_mean = np.mean([(chw(i) - sub) * mul for i in imgs], axis=0)
    np.testing.assert_allclose(mx.nd.load(mean_file)["mean_img"].asnumpy(), want_mean, rtol=1e-5, atol=1e-4)
    got = it.next().data[0].asnumpy()
    for k, img in enumerate(imgs):
        np.testing.assert_allclose(got[k], (chw(img) - want_mean) * mul, rtol=1e-5, atol=1e-4)


def test_existing_mean_img_is_loaded_and_mirroring_uses_source_positions(tmp_path):
    imgs = images(2, 4, 6, seed=2)
    rec = str(tmp_path / "d.rec")
    write_rec(rec, imgs)
    mean = np.random.RandomState(5).uniform(0, 50, size=(3, 4, 6)).astype(np.float32)
    mean_file = str(tmp_path / "given.nd")
    mx.nd.save(mean_file, {"mean_img": mx.nd.array(mean)})
    it = wio.ImageRecordIter(path_imgrec=rec, data_shape=(3, 4, 6), batch_size=2, mean_img=mean_file, mirror=True)
    got = it.next().data[0].asnumpy()
    # The file is read, not rewritten.
    np.testing.assert_array_equal(mx.nd.load(mean_file)["mean_img"].asnumpy(), mean)
    for k, img in enumerate(imgs):
        np.testing.assert_allclose(got[k], (chw(img) - mean)[:, :, ::-1], rtol=1e-6, atol=1e-4)


def test_bad_mean_img_files_are_refused(tmp_path):
    imgs = images(2, 4, 4, seed=3)
    rec = str(tmp_path / "d.rec")
    write_rec(rec, imgs)
    wrong_shape = str(tmp_path / "wrong.nd")
    mx.nd.save(wrong_shape, {"mean_img": mx.nd.zeros((3, 5, 4))})
    with pytest.raises(mx.base.MXNetError, match="shape data_shape"):
        wio.ImageRecordIter(path_imgrec=rec, data_shape=(3, 4, 4), batch_size=2, mean_img=wrong_shape)
    two = str(tmp_path / "two.nd")
    mx.nd.save(two, [mx.nd.zeros((3, 4, 4)), mx.nd.zeros((3, 4, 4))])
    with pytest.raises(mx.base.MXNetError, match="must hold one array"):
        wio.ImageRecordIter(path_imgrec=rec, data_shape=(3, 4, 4), batch_size=2, mean_img=two)
    garbage = tmp_path / "garbage.nd"
    garbage.write_bytes(b"not an ndarray file")
    with pytest.raises(mx.base.MXNetError):
        wio.ImageRecordIter(path_imgrec=rec, data_shape=(3, 4, 4), batch_size=2, mean_img=str(garbage))
