"""mx.io.ImageDetRecordIter on a small .rec of PNG images with detection labels, written with
weft.recordio: images against a reference decode, labels in MXNet's layout ([channels,
height, width, label length, label..., padding]), and the detection augmentations moving
the boxes with the pixels."""
import numpy as np
import pytest

import weft as mx
from weft import recordio


def _det_label(objects, header_extra=()):
    """MXNet's detection label: header_width, object_width, extra header, then objects."""
    header = [2 + len(header_extra), 5] + list(header_extra)
    return np.array(header + [v for o in objects for v in o], np.float32)


def _images(rng):
    """(rgb image, objects) per record: sizes differ; each object box is a solid block of its
    own colour, so a box's pixels can be found again after augmentation."""
    out = []
    for k, (h, w) in enumerate([(20, 30), (24, 16), (18, 18)]):
        img = np.zeros((h, w, 3), np.uint8)
        img[:] = rng.integers(0, 40, (h, w, 3))
        objects = []
        for j in range(k + 1):
            x0, y0 = 2 + 4 * j, 3 + 3 * j
            x1, y1 = x0 + 6, y0 + 5
            img[y0:y1, x0:x1] = (200 - 40 * j, 60 + 50 * j, 120)
            objects.append([float(j), x0 / w, y0 / h, x1 / w, y1 / h])
        out.append((img, objects))
    return out


@pytest.fixture
def rec(tmp_path):
    rng = np.random.default_rng(5)
    items = _images(rng)
    path = str(tmp_path / "det.rec")
    w = recordio.MXRecordIO(path, "w")
    for i, (img, objects) in enumerate(items):
        label = _det_label(objects, header_extra=(7.0,) if i == 1 else ())
        # pack_img takes BGR, as cv2
        w.write(recordio.pack_img(recordio.IRHeader(0, label, i, 0), img[:, :, ::-1], img_fmt=".png"))
    w.close()
    return path, items


def _label(objects, header_extra=()):
    return list(_det_label(objects, header_extra))


def test_plain_images_and_labels_match_the_reference(rec):
    path, items = rec
    it = mx.io.ImageDetRecordIter(path_imgrec=path, data_shape=(3, 18, 18), batch_size=3, resize_mode="shrink")
    assert it.provide_data[0].shape == (3, 3, 18, 18)
    longest = max(len(_label(o, (7.0,) if i == 1 else ())) for i, (_, o) in enumerate(items))
    assert it.provide_label[0].shape == (3, longest + 4)
    batch = it.next()
    data, label = batch.data[0].asnumpy(), batch.label[0].asnumpy()
    for i, (img, objects) in enumerate(items):
        h, w = img.shape[:2]
        ratio = min(18 / h, 18 / w, 1.0)
        nh, nw = int(ratio * h), int(ratio * w)
        raw = _label(objects, (7.0,) if i == 1 else ())
        np.testing.assert_allclose(label[i, :4], [3, nh, nw, len(raw)])
        np.testing.assert_allclose(label[i, 4:4 + len(raw)], raw, rtol=1e-6)
        np.testing.assert_array_equal(label[i, 4 + len(raw):], -1)
        if ratio == 1.0:  # stored size: the pixels as decoded, the rest zeros
            np.testing.assert_array_equal(data[i, :, :h, :w], img.transpose(2, 0, 1))
            assert not data[i, :, h:, :].any() and not data[i, :, :, w:].any()
    with pytest.raises(StopIteration):
        it.next()


def test_force_resize_normalisation_and_padding_options(rec):
    path, items = rec
    it = mx.io.ImageDetRecordIter(path_imgrec=path, data_shape=(3, 20, 30), batch_size=2, label_pad_width=40,
                                  label_pad_value=-7, mean_r=10, mean_g=20, mean_b=30, std_r=2, std_g=4, scale=0.5,
                                  round_batch=False)
    b = it.next()
    img = items[0][0].astype(np.float32)  # stored at 20 x 30: force resize keeps it
    want = (img - [10, 20, 30]) / [2, 4, 1] * 0.5
    np.testing.assert_allclose(b.data[0].asnumpy()[0], want.transpose(2, 0, 1), rtol=1e-6)
    lab = b.label[0].asnumpy()
    assert lab.shape == (2, 44) and (lab[0, :4] == [3, 20, 30, 7]).all() and (lab[0, 11:] == -7).all()
    assert (lab[1, 1:3] == [20, 30]).all()  # every image forced to data_shape
    last = it.next()
    assert last.pad == 1 and (last.label[0].asnumpy()[1] == -7).all()


def test_mirror_flips_pixels_and_boxes(rec):
    path, items = rec
    plain = mx.io.ImageDetRecordIter(path_imgrec=path, data_shape=(3, 20, 30), batch_size=1)
    mirrored = mx.io.ImageDetRecordIter(path_imgrec=path, data_shape=(3, 20, 30), batch_size=1, rand_mirror_prob=1.0)
    a, b = plain.next(), mirrored.next()
    np.testing.assert_array_equal(b.data[0].asnumpy(), a.data[0].asnumpy()[..., ::-1])
    la, lb = a.label[0].asnumpy()[0], b.label[0].asnumpy()[0]
    obj_a, obj_b = la[6:11], lb[6:11]
    np.testing.assert_allclose(obj_b, [obj_a[0], 1 - obj_a[3], obj_a[2], 1 - obj_a[1], obj_a[4]], rtol=1e-6)


def _box_pixels(data, box):
    """The pixels (c, h, w) of a relative box in one image (c, H, W)."""
    _, hh, ww = data.shape
    x0, y0, x1, y1 = (int(round(v * s)) for v, s in zip(box, (ww, hh, ww, hh)))
    return data[:, y0:y1, x0:x1]


def test_crop_and_pad_move_the_boxes_with_the_pixels(rec):
    path, items = rec
    colours = [(200 - 40 * j, 60 + 50 * j, 120) for j in range(3)]
    for kw in ({"rand_crop_prob": 1.0, "min_crop_scales": 0.5, "max_crop_scales": 0.9,
                "min_crop_aspect_ratios": 0.7, "max_crop_aspect_ratios": 1.4, "min_crop_object_coverages": 0.99},
               {"rand_pad_prob": 1.0, "max_pad_scale": 2.0, "fill_value": 250}):
        it = mx.io.ImageDetRecordIter(path_imgrec=path, data_shape=(3, 40, 40), batch_size=3, resize_mode="fit",
                                      inter_method=0, seed=3, **kw)
        seen_change = False
        for epoch in range(3):
            it.reset()
            b = it.next()
            data, label = b.data[0].asnumpy(), b.label[0].asnumpy()
            for i in range(3):
                h, w = int(label[i, 1]), int(label[i, 2])
                n = int(label[i, 3])
                raw = label[i, 4:4 + n]
                header = int(raw[0])
                objs = raw[header:].reshape(-1, 5)
                assert len(objs) >= 1 and ((objs[:, 1:] >= 0) & (objs[:, 1:] <= 1)).all()
                img = data[i, :, :h, :w]
                orig = np.array(items[i][1])
                if not np.allclose(objs, orig[:len(objs)], atol=1e-6):
                    seen_change = True
                for o in objs:
                    px = _box_pixels(img, o[1:])
                    if px.size == 0:
                        continue
                    # nearest resampling keeps colours: the box's centre holds its object's colour
                    cy, cx = px.shape[1] // 2, px.shape[2] // 2
                    np.testing.assert_array_equal(px[:, cy, cx], colours[int(o[0])])
                if "fill_value" in kw and w > 0:
                    assert (data[i, :, :h, :w] == 250).any()  # the canvas shows
        assert seen_change


def test_reproducible_shuffle_and_errors(rec, tmp_path):
    path, _ = rec
    def ids(**kw):
        it = mx.io.ImageDetRecordIter(path_imgrec=path, data_shape=(3, 8, 8), batch_size=1, **kw)
        return [int(b.index[0]) for b in it]
    assert sorted(ids(shuffle=True, seed=4)) == [0, 1, 2]
    assert ids(shuffle=True, seed=4) == ids(shuffle=True, seed=4)
    with pytest.raises(mx.base.MXNetError, match="label_pad_width \\(3\\) is smaller than the longest label"):
        mx.io.ImageDetRecordIter(path_imgrec=path, data_shape=(3, 8, 8), batch_size=1, label_pad_width=3)
    with pytest.raises(mx.base.MXNetError, match="holds 7 labels but label_width is 9"):
        mx.io.ImageDetRecordIter(path_imgrec=path, data_shape=(3, 8, 8), batch_size=1, label_width=9)
    with pytest.raises(mx.base.MXNetError, match="unknown augmenter"):
        mx.io.ImageDetRecordIter(path_imgrec=path, data_shape=(3, 8, 8), batch_size=1, aug_seq="aug_default")
    with pytest.raises(mx.base.MXNetError, match="min_crop_scales has 2 values for num_crop_sampler=3"):
        mx.io.ImageDetRecordIter(path_imgrec=path, data_shape=(3, 8, 8), batch_size=1, num_crop_sampler=3,
                                 min_crop_scales=(0.1, 0.2))
    with pytest.raises(mx.base.MXNetError, match="resize_mode"):
        mx.io.ImageDetRecordIter(path_imgrec=path, data_shape=(3, 8, 8), batch_size=1, resize_mode="stretch")
    bad = str(tmp_path / "bad.rec")
    w = recordio.MXRecordIO(bad, "w")
    w.write(recordio.pack_img(recordio.IRHeader(0, np.array([2, 5, 0, 0.1], np.float32), 0, 0),
                              np.zeros((4, 4, 3), np.uint8), img_fmt=".png"))
    w.close()
    it = mx.io.ImageDetRecordIter(path_imgrec=bad, data_shape=(3, 4, 4), batch_size=1)
    with pytest.raises(mx.base.MXNetError, match="expected a detection label of at least 7 values"):
        it.next()


def _hls_shift(rgb, dh, dl, ds):
    """OpenCV's 8-bit HLS shift of one RGB pixel, through colorsys."""
    import colorsys
    h, l, s = colorsys.rgb_to_hls(*(c / 255.0 for c in rgb))
    h8, l8, s8 = round(h * 180) % 180, round(l * 255), round(s * 255)
    h8, l8, s8 = min(max(h8 + dh, 0), 180) % 180, min(max(l8 + dl, 0), 255), min(max(s8 + ds, 0), 255)
    return [round(c * 255) for c in colorsys.hls_to_rgb(h8 / 180.0, l8 / 255.0, s8 / 255.0)]


@pytest.mark.parametrize("kind", ["hue", "illumination", "saturation", "contrast"])
def test_colour_jitter_against_a_reference(tmp_path, kind):
    img = np.zeros((4, 6, 3), np.uint8)
    img[0] = [[v, v, v] for v in (0, 30, 90, 128, 200, 255)]  # greys
    img[1:] = np.array([[200, 40, 40], [40, 180, 60], [50, 60, 220], [230, 200, 20], [120, 30, 150],
                        [90, 160, 170]], np.uint8)[None]
    path = str(tmp_path / "c.rec")
    w = recordio.MXRecordIO(path, "w")
    w.write(recordio.pack_img(recordio.IRHeader(0, _det_label([[0, 0.1, 0.1, 0.9, 0.9]]), 0, 0), img[:, :, ::-1],
                              img_fmt=".png"))
    w.close()
    kw = {"max_random_contrast": 0.5} if kind == "contrast" else {"max_random_" + kind: 30}
    kw["random_%s_prob" % kind] = 1.0
    it = mx.io.ImageDetRecordIter(path_imgrec=path, data_shape=(3, 4, 6), batch_size=1, **kw)
    src = img.astype(int)
    changed = 0
    for epoch in range(4):
        it.reset()
        out = it.next().data[0].asnumpy()[0].transpose(1, 2, 0).astype(int)
        if (out == src).all():
            continue  # the draw was 0
        changed += 1
        if kind == "contrast":
            c = out[0, 2, 0] / 90.0 - 1  # from the grey 90, which no factor in [0.5, 1.5] saturates
            assert abs(c) <= 0.5 + 1e-2
            assert np.abs(out - np.clip(np.round(src * (1 + c)), 0, 255)).max() <= 2
            continue
        deltas = range(-30, 31)
        fits = []
        for d in deltas:
            dh, dl, ds = (d if kind == k else 0 for k in ("hue", "illumination", "saturation"))
            want = np.array([[_hls_shift(p, dh, dl, ds) for p in row] for row in src])
            if np.abs(out - want).max() <= 2:
                fits.append(d)
        assert fits, "no %s shift in [-30, 30] explains the output" % kind
        if kind == "hue":
            np.testing.assert_array_equal(out[0], src[0])  # greys have no hue
    assert changed >= 2


def test_same_draws_whatever_the_thread_count_and_parts_cover_the_file(rec):
    path, items = rec
    kw = dict(path_imgrec=path, data_shape=(3, 16, 16), batch_size=3, rand_crop_prob=0.7, min_crop_scales=0.4,
              rand_mirror_prob=0.5, rand_pad_prob=0.5, max_pad_scale=1.8, seed=9)
    one = mx.io.ImageDetRecordIter(preprocess_threads=1, **kw).next()
    three = mx.io.ImageDetRecordIter(preprocess_threads=3, **kw).next()
    np.testing.assert_array_equal(one.data[0].asnumpy(), three.data[0].asnumpy())
    np.testing.assert_array_equal(one.label[0].asnumpy(), three.label[0].asnumpy())
    seen = []
    for part in range(2):
        it = mx.io.ImageDetRecordIter(path_imgrec=path, data_shape=(3, 8, 8), batch_size=1, num_parts=2,
                                      part_index=part, round_batch=False)
        seen += [int(b.index[0]) for b in it]
    assert sorted(seen) == [0, 1, 2]


def test_labels_from_path_imglist(rec, tmp_path):
    # MXNet's path_imglist: the list's labels replace the records' own, by image index; with
    # label_width -1 every value between the index and the path is a label.
    path, items = rec
    lists = {0: _label([[1, .1, .1, .5, .5]]), 1: _label([[2, .2, .2, .6, .6], [3, .0, .0, .3, .3]]),
             2: _label([[4, .3, .3, .9, .9]])}
    lst = tmp_path / "det.lst"
    lst.write_text("".join("%d\t%s\timg%d.png\n" % (i, "\t".join("%g" % v for v in lab), i)
                           for i, lab in lists.items()))
    it = mx.io.ImageDetRecordIter(path_imgrec=path, path_imglist=str(lst), data_shape=(3, 18, 18), batch_size=3,
                                  resize_mode="shrink")
    lab = it.next().label[0].asnumpy()
    assert it.provide_label[0].shape == (3, 12 + 4)  # the longest list label: 2 + 2 * 5
    for i, want in lists.items():
        np.testing.assert_allclose(lab[i, 3:4 + len(want)], [len(want)] + want, rtol=1e-6)
    lst.write_text("0\t%s\timg0.png\n" % "\t".join("%g" % v for v in lists[0]))
    with pytest.raises(mx.MXNetError, match="is image 1, which path_imglist .* does not list"):
        mx.io.ImageDetRecordIter(path_imgrec=path, path_imglist=str(lst), data_shape=(3, 18, 18), batch_size=3)
    lst.write_text("0\t2\t5\n")
    with pytest.raises(mx.MXNetError, match="line 1 .* holds 3 fields; expected the index, 7 labels and the path"):
        mx.io.ImageDetRecordIter(path_imgrec=path, path_imglist=str(lst), label_width=7, data_shape=(3, 18, 18),
                                 batch_size=3)
