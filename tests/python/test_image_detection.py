"""weft.image.detection: the detection augmenters' box arithmetic against numpy, and
ImageDetIter over RecordIO files, list files and lists built here."""
import json
import os
import random

import numpy as np
import pytest

import weft as mx
from weft import recordio
from weft.image import detection as det


def picture(h, w, seed=0):
    rng = np.random.RandomState(seed)
    return rng.randint(0, 256, size=(h, w, 3)).astype(np.uint8)


LABEL = np.array([[0, 0.1, 0.2, 0.5, 0.6],
                  [1, 0.4, 0.1, 0.9, 0.5],
                  [2, 0.6, 0.6, 0.95, 0.9]], dtype=np.float32)


def test_namespaces():
    assert mx.image.ImageDetIter is det.ImageDetIter
    assert mx.image.det is det
    assert mx.image.detection.CreateDetAugmenter is mx.image.CreateDetAugmenter
    for name in det.__all__:
        assert getattr(mx.image, name) is getattr(det, name)


def test_horizontal_flip_boxes():
    img = picture(12, 20)
    out, lab = det.DetHorizontalFlipAug(1.0)(mx.nd.array(img, dtype=np.uint8), LABEL)
    np.testing.assert_array_equal(out.asnumpy(), img[:, ::-1])
    want = LABEL.copy()
    want[:, 1], want[:, 3] = 1 - LABEL[:, 3], 1 - LABEL[:, 1]
    np.testing.assert_allclose(lab, want, rtol=0, atol=1e-7)
    # the boxes in pixels land on the mirrored pixels
    x1 = np.round(LABEL[0, 1] * 20).astype(int)
    x2 = np.round(LABEL[0, 3] * 20).astype(int)
    fx1 = np.round(lab[0, 1] * 20).astype(int)
    fx2 = np.round(lab[0, 3] * 20).astype(int)
    np.testing.assert_array_equal(out.asnumpy()[:, fx1:fx2], img[:, x1:x2][:, ::-1])
    same, lab0 = det.DetHorizontalFlipAug(0.0)(mx.nd.array(img, dtype=np.uint8), LABEL)
    np.testing.assert_array_equal(same.asnumpy(), img)
    np.testing.assert_array_equal(lab0, LABEL)


def crop_reference(label, x, y, w, h, height, width, min_eject_coverage):
    """The label re-expressed in the window (x, y, w, h) by pixels, dropping objects that
    keep too little of their area."""
    rows = []
    for row in label.astype(np.float64):
        bx = row[1:5] * [width, height, width, height]
        nx1, ny1 = max(bx[0], x), max(bx[1], y)
        nx2, ny2 = min(bx[2], x + w), min(bx[3], y + h)
        if nx2 <= nx1 or ny2 <= ny1:
            continue
        kept = (nx2 - nx1) * (ny2 - ny1) / ((bx[2] - bx[0]) * (bx[3] - bx[1]))
        if kept <= min_eject_coverage:
            continue
        rows.append([row[0], (nx1 - x) / w, (ny1 - y) / h, (nx2 - x) / w, (ny2 - y) / h])
    return np.array(rows)


def coverage_by_window(label, x, y, w, h, height, width):
    out = []
    for row in label.astype(np.float64):
        bx = row[1:5] * [width, height, width, height]
        iw = max(0.0, min(bx[2], x + w) - max(bx[0], x))
        ih = max(0.0, min(bx[3], y + h) - max(bx[1], y))
        out.append(iw * ih / ((bx[2] - bx[0]) * (bx[3] - bx[1])))
    return np.array(out)


@pytest.mark.parametrize("min_covered,seed", [(0.1, 0), (0.5, 1), (0.7, 2), (0.0, 3)])
def test_random_crop_boxes_and_constraints(min_covered, seed):
    height, width = 60, 80
    img = picture(height, width, seed)
    aug = det.DetRandomCropAug(min_object_covered=min_covered, aspect_ratio_range=(0.5, 2.0),
                               area_range=(0.1, 0.8), min_eject_coverage=0.3, max_attempts=200)
    found = 0
    for trial in range(20):
        random.seed(seed * 100 + trial)
        prop = aug._random_crop_proposal(LABEL, height, width)
        if not prop:
            continue
        found += 1
        x, y, w, h, lab = prop
        assert 0 <= x and x + w <= width and 0 <= y and y + h <= height
        assert 0.1 * height * width <= w * h <= 0.8 * height * width
        cov = coverage_by_window(LABEL, x, y, w, h, height, width)
        touched = cov[cov > 0]
        assert touched.size and touched.min() > min_covered
        np.testing.assert_allclose(lab, crop_reference(LABEL, x, y, w, h, height, width, 0.3), atol=1e-6)
        # the call draws the same window from the same seed and crops the pixels
        random.seed(seed * 100 + trial)
        out, lab2 = aug(mx.nd.array(img, dtype=np.uint8), LABEL)
        np.testing.assert_array_equal(out.asnumpy(), img[y:y + h, x:x + w])
        np.testing.assert_array_equal(lab2, lab)
    assert found >= 10


def test_random_crop_gives_up_unchanged():
    img = picture(30, 30)
    # a window of at most 10% of the image can never cover 95% of a box of half the image
    label = np.array([[0, 0.0, 0.0, 0.7, 0.7]], dtype=np.float32)
    aug = det.DetRandomCropAug(min_object_covered=0.95, area_range=(0.05, 0.1), max_attempts=30)
    random.seed(0)
    out, lab = aug(mx.nd.array(img, dtype=np.uint8), label)
    np.testing.assert_array_equal(out.asnumpy(), img)
    np.testing.assert_array_equal(lab, label)
    with pytest.warns(UserWarning, match="area_range"):
        bad = det.DetRandomCropAug(area_range=(0.8, 0.2))
    assert not bad.enabled
    out, lab = bad(mx.nd.array(img, dtype=np.uint8), label)
    np.testing.assert_array_equal(out.asnumpy(), img)
    with pytest.warns(UserWarning, match="aspect_ratio_range"):
        assert not det.DetRandomCropAug(aspect_ratio_range=(-1, 2)).enabled
    # a number is a fixed range
    assert det.DetRandomCropAug(aspect_ratio_range=1.0).aspect_ratio_range == (1.0, 1.0)


@pytest.mark.parametrize("seed", range(5))
def test_random_pad_boxes(seed):
    height, width = 24, 32
    img = picture(height, width, seed)
    aug = det.DetRandomPadAug(aspect_ratio_range=(0.5, 2.0), area_range=(1.5, 4.0), pad_val=(7, 8, 9))
    random.seed(seed)
    prop = aug._random_pad_proposal(LABEL, height, width)
    assert prop
    x, y, w, h, lab = prop
    assert h - height >= 2 and w - width >= 2 and x + width <= w and y + height <= h
    assert 1.5 * height * width <= w * h * 1.0 + w and w * h <= 4.0 * height * width + h
    random.seed(seed)
    out, lab2 = aug(mx.nd.array(img, dtype=np.uint8), LABEL)
    out = out.asnumpy()
    assert out.shape == (h, w, 3)
    np.testing.assert_array_equal(out[y:y + height, x:x + width], img)
    border = np.ones((h, w), bool)
    border[y:y + height, x:x + width] = False
    np.testing.assert_array_equal(out[border], np.tile([7, 8, 9], (border.sum(), 1)))
    # box corners in canvas pixels are the original pixels shifted by (x, y)
    px = LABEL[:, (1, 3)] * width + x
    py = LABEL[:, (2, 4)] * height + y
    np.testing.assert_allclose(lab2[:, (1, 3)] * w, px, rtol=1e-5)
    np.testing.assert_allclose(lab2[:, (2, 4)] * h, py, rtol=1e-5)
    np.testing.assert_array_equal(lab2[:, 0], LABEL[:, 0])
    np.testing.assert_array_equal(lab2, lab)


def test_random_pad_scalar_value_and_disabled():
    img = picture(10, 10)
    random.seed(3)
    out, _ = det.DetRandomPadAug(area_range=(2.0, 3.0), pad_val=5)(mx.nd.array(img, dtype=np.uint8), LABEL)
    out = out.asnumpy()
    assert out.shape[0] > 10 and (out == 5).all(axis=2).sum() == out.shape[0] * out.shape[1] - 100
    with pytest.warns(UserWarning, match="area_range"):
        assert not det.DetRandomPadAug(area_range=(1.0, 1.0)).enabled


def test_select_borrow_and_dumps():
    crop = det.DetRandomCropAug()
    sel = det.DetRandomSelectAug([crop], skip_prob=1.0)
    img = mx.nd.array(picture(8, 8), dtype=np.uint8)
    out, lab = sel(img, LABEL)
    assert out is img and lab is LABEL
    assert det.DetRandomSelectAug([]).skip_prob == 1
    with pytest.raises(ValueError, match="DetAugmenter"):
        det.DetRandomSelectAug([mx.image.CastAug()])
    with pytest.raises(TypeError, match="Augmenter"):
        det.DetBorrowAug(crop)
    borrow = det.DetBorrowAug(mx.image.CastAug())
    out, lab = borrow(img, LABEL)
    assert out.dtype == np.float32 and lab is LABEL
    assert borrow.dumps() == ["detborrowaug", mx.image.CastAug().dumps()]
    name, kwargs = json.loads(crop.dumps())
    assert name == "detrandomcropaug" and kwargs["min_object_covered"] == 0.1
    assert kwargs["aspect_ratio_range"] == [0.75, 1.33] and kwargs["max_attempts"] == 50
    assert sel.dumps() == ["detrandomselectaug", [crop.dumps()]]


def test_create_multi_rand_crop_augmenter():
    aug = det.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.3, 0.5], area_range=[(0.1, 1.0)] * 3,
                                           aspect_ratio_range=(0.5, 2.0), skip_prob=0.2)
    assert aug.skip_prob == 0.2 and len(aug.aug_list) == 3
    assert [a.min_object_covered for a in aug.aug_list] == [0.1, 0.3, 0.5]
    assert all(a.aspect_ratio_range == (0.5, 2.0) for a in aug.aug_list)
    with pytest.raises(ValueError, match="max_attempts has 2 values"):
        det.CreateMultiRandCropAugmenter(min_object_covered=[0.1, 0.3, 0.5], max_attempts=[5, 6])


def test_create_det_augmenter_order():
    augs = det.CreateDetAugmenter((3, 32, 32), resize=40, rand_crop=0.5, rand_pad=0.5, rand_mirror=True, mean=True,
                                  std=True, brightness=0.1, hue=0.1, pca_noise=0.1, rand_gray=0.1)
    kinds = [type(a).__name__ if not isinstance(a, det.DetBorrowAug) else type(a.augmenter).__name__ for a in augs]
    assert kinds == ["ResizeAug", "DetRandomSelectAug", "DetHorizontalFlipAug", "DetRandomSelectAug",
                     "ForceResizeAug", "CastAug", "ColorJitterAug", "HueJitterAug", "LightingAug", "RandomGrayAug",
                     "ColorNormalizeAug"]
    assert augs[1].skip_prob == 0.5 and isinstance(augs[3].aug_list[0], det.DetRandomPadAug)
    assert augs[3].aug_list[0].area_range == (1.0, 3.0)
    assert [type(a).__name__ for a in det.CreateDetAugmenter((3, 8, 8))] == ["DetBorrowAug", "DetBorrowAug"]
    with pytest.raises(ValueError, match="mean must be True"):
        det.CreateDetAugmenter((3, 8, 8), mean=[1, 2])
    # the whole chain keeps valid boxes on a real image
    random.seed(5)
    img = mx.nd.array(picture(50, 70), dtype=np.uint8)
    for _ in range(10):
        data, lab = img, LABEL
        for a in augs:
            data, lab = a(data, lab)
        assert data.shape == (32, 32, 3) and data.dtype == np.float32
        assert lab.shape[1] == 5 and (lab[:, 1:] >= 0).all() and (lab[:, 1:] <= 1).all()
        assert (lab[:, 3] > lab[:, 1]).all() and (lab[:, 4] > lab[:, 2]).all()


def objects_for(i):
    """1 to 3 boxes for sample i, distinct per sample."""
    n = i % 3 + 1
    rows = [[i + k, 0.05 * k + 0.01 * i, 0.1, 0.5 + 0.1 * k, 0.6 + 0.05 * i] for k in range(n)]
    return np.array(rows, dtype=np.float32)


def write_rec(tmp_path, count=5, h=16, w=20, header=(4, 5, 20.0, 16.0)):
    path = str(tmp_path / "det.rec")
    idx = str(tmp_path / "det.idx")
    rec = recordio.MXIndexedRecordIO(idx, path, "w")
    images = []
    for i in range(count):
        img = picture(h, w, seed=i)
        images.append(img)
        label = np.concatenate([np.array(header, dtype=np.float32), objects_for(i).ravel()])
        # pack_img takes BGR as cv2 does; PNG keeps the pixels exact
        rec.write_idx(i, recordio.pack_img((0, label, i, 0), img[:, :, ::-1], img_fmt=".png"))
    rec.close()
    return path, idx, images


def test_image_det_iter_over_rec(tmp_path):
    path, idx, images = write_rec(tmp_path)
    it = mx.image.ImageDetIter(2, (3, 16, 20), path_imgrec=path)
    assert it.label_shape == (3, 5)
    assert it.provide_label == [("label", (2, 3, 5))]
    assert it.provide_data == [("data", (2, 3, 16, 20))]
    seen = 0
    for epoch in range(2):
        it.reset()
        batches = list(it)
        assert len(batches) == 3 and [b.pad for b in batches] == [0, 0, 1]
        for b, batch in enumerate(batches):
            data, label = batch.data[0].asnumpy(), batch.label[0].asnumpy()
            assert data.shape == (2, 3, 16, 20) and label.shape == (2, 3, 5)
            for j in range(2):
                i = (2 * b + j) % 5
                np.testing.assert_array_equal(data[j], images[i].transpose(2, 0, 1).astype(np.float32))
                want = objects_for(i)
                np.testing.assert_allclose(label[j, :len(want)], want, rtol=1e-6)
                assert (label[j, len(want):] == -1).all()
                seen += 1
    assert seen == 12


def test_image_det_iter_indexed_shuffle(tmp_path):
    path, idx, _ = write_rec(tmp_path, count=4)
    it = mx.image.ImageDetIter(4, (3, 16, 20), path_imgrec=path, path_imgidx=idx, shuffle=True)
    random.seed(1)
    it.reset()
    batch = it.next()
    classes = sorted(int(r[0]) for r in batch.label[0].asnumpy()[:, 0])
    assert classes == [0, 1, 2, 3]


def test_image_det_iter_imglist_lst_and_last_batch(tmp_path):
    paths = []
    for i in range(5):
        p = str(tmp_path / ("img%d.png" % i))
        with open(p, "wb") as f:
            f.write(recordio.unpack(recordio.pack_img((0, 0, 0, 0), picture(12, 12, i)[:, :, ::-1],
                                                      img_fmt=".png"))[1])
        paths.append(p)
    bad = [2, 5, 0, 0.5, 0.5, 0.4, 0.9]  # xmax < xmin: no valid box
    imglist = [[2, 5] + objects_for(i).ravel().tolist() + [paths[i]] for i in range(5)]
    imglist.insert(2, bad + [paths[0]])
    it = mx.image.ImageDetIter(2, (3, 12, 12), imglist=imglist[:2] + imglist[3:])
    assert it.label_shape == (3, 5)
    with pytest.raises(RuntimeError, match="no valid box"):
        mx.image.ImageDetIter(2, (3, 12, 12), imglist=imglist)
    # a sample whose only object has class -1 parses but is skipped when batching
    skipped = [2, 5, -1, 0.1, 0.1, 0.5, 0.5, paths[4]]
    it = mx.image.ImageDetIter(2, (3, 12, 12), imglist=[imglist[0], skipped, imglist[1]], last_batch_handle="discard")
    batches = list(it)
    assert len(batches) == 1
    np.testing.assert_allclose(batches[0].label[0].asnumpy()[:, 0, 0], [0, 1])
    lst = str(tmp_path / "det.lst")
    with open(lst, "w") as f:
        for i in range(5):
            f.write("\t".join([str(i)] + ["%g" % v for v in [2, 5] + objects_for(i).ravel().tolist()]
                              + [paths[i]]) + "\n")
    counts = {}
    for handle in ("pad", "discard", "roll_over"):
        it = mx.image.ImageDetIter(3, (3, 12, 12), path_imglist=lst, last_batch_handle=handle)
        counts[handle] = [[b.pad for b in it]]
        it.reset()
        counts[handle].append([b.pad for b in it])
    assert counts["pad"] == [[0, 1], [0, 1]]
    assert counts["discard"] == [[0], [0]]
    # the 2 left over carry into the next epoch
    assert counts["roll_over"] == [[0], [1, 0]]


def test_reshape_and_sync_label_shape(tmp_path):
    path, _, _ = write_rec(tmp_path, count=2)
    a = mx.image.ImageDetIter(1, (3, 16, 20), path_imgrec=path)
    b = mx.image.ImageDetIter(1, (3, 16, 20), path_imgrec=write_rec(tmp_path, count=3)[0])
    assert a.label_shape == (2, 5) and b.label_shape == (3, 5)
    assert a.sync_label_shape(b) is b
    assert a.label_shape == (3, 5) and a.provide_label[0][1] == (1, 3, 5)
    batch = a.next()
    lab = batch.label[0].asnumpy()
    assert lab.shape == (1, 3, 5) and (lab[0, 1:] == -1).all()
    a.reshape(label_shape=(6, 5))
    assert a.next().label[0].shape == (1, 6, 5)
    with pytest.raises(ValueError, match="reduce the object count from 6 to 2"):
        a.reshape(label_shape=(2, 5))
    with pytest.raises(ValueError, match="object width must stay 5"):
        a.reshape(label_shape=(6, 7))
    with pytest.raises(ValueError, match=r"\(objects, object_width\)"):
        a.check_label_shape((6,))
    with pytest.raises(ValueError, match="data_shape"):
        a.reshape(data_shape=(1, 16, 20))
    a.reshape(data_shape=(3, 8, 10))
    assert a.provide_data == [("data", (1, 3, 8, 10))]
    a.reset()
    # as in MXNet, the augmenters stay as built: the old resize no longer fits
    with pytest.raises(ValueError, match=r"shape \(3, 16, 20\), data_shape is \(3, 8, 10\)"):
        a.next()
    a.auglist = mx.image.CreateDetAugmenter((3, 8, 10))
    a.reset()
    assert a.next().data[0].shape == (1, 3, 8, 10)
    with pytest.raises(TypeError, match="ImageDetIter"):
        a.sync_label_shape(object())


def test_label_header_parsing_errors(tmp_path):
    path, _, _ = write_rec(tmp_path, count=1)
    it = mx.image.ImageDetIter(1, (3, 16, 20), path_imgrec=path)
    with pytest.raises(RuntimeError, match="at least 7 values"):
        it._parse_label(np.array([2, 5, 0, 0.1, 0.1], dtype=np.float32))
    with pytest.raises(RuntimeError, match="whole number of objects of width 5"):
        it._parse_label(np.array([2, 5, 0, 0.1, 0.1, 0.5, 0.5, 1], dtype=np.float32))
    out = it._parse_label(np.array([3, 6, 99, 1, 0.1, 0.1, 0.5, 0.5, 7, 2, 0.5, 0.5, 0.4, 0.6, 8],
                                   dtype=np.float32))
    np.testing.assert_allclose(out, [[1, 0.1, 0.1, 0.5, 0.5, 7]], rtol=1e-6)


def test_det_iter_with_augmenters_and_draw_next(tmp_path):
    path, _, images = write_rec(tmp_path, count=3, h=30, w=40)
    it = mx.image.ImageDetIter(3, (3, 24, 24), path_imgrec=path, rand_crop=1, rand_pad=1, rand_mirror=True,
                               mean=True, std=True, area_range=(0.3, 2.0), min_object_covered=0.3)
    random.seed(2)
    for batch in it:
        lab = batch.label[0].asnumpy()
        assert batch.data[0].shape == (3, 3, 24, 24)
        for row in lab.reshape(-1, 5):
            if row[0] >= 0:
                assert 0 <= row[1] < row[3] <= 1 and 0 <= row[2] < row[4] <= 1
            else:
                assert (row == -1).all()
    plain = mx.image.ImageDetIter(1, (3, 30, 40), path_imgrec=path)
    drawn = list(plain.draw_next(color=(255, 0, 0), thickness=1))
    assert len(drawn) == 3
    img = drawn[0]
    assert img.shape == (30, 40, 3) and img.dtype == np.uint8
    box = objects_for(0)[0]
    x1, y1, x2, y2 = int(box[1] * 40), int(box[2] * 30), int(box[3] * 40), int(box[4] * 30)
    red_bgr = [0, 0, 255]
    np.testing.assert_array_equal(img[y1, x1:x2 + 1], np.tile(red_bgr, (x2 - x1 + 1, 1)))
    np.testing.assert_array_equal(img[y1:y2 + 1, x2], np.tile(red_bgr, (y2 - y1 + 1, 1)))
    # inside the box the picture is untouched (RGB shown as BGR)
    np.testing.assert_array_equal(img[y1 + 2:y2 - 1, x1 + 2:x2 - 1], images[0][y1 + 2:y2 - 1, x1 + 2:x2 - 1, ::-1])


def test_copy_make_border_isolated_flag():
    img = picture(4, 5)
    out = mx.image.copyMakeBorder(mx.nd.array(img, dtype=np.uint8), 1, 2, 3, 4, 16, values=(1, 2, 3)).asnumpy()
    assert out.shape == (7, 12, 3)
    np.testing.assert_array_equal(out[1:5, 3:8], img)
    np.testing.assert_array_equal(out[0, 0], [1, 2, 3])
