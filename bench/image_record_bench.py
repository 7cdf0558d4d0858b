"""ImageRecordIter against torchvision's ImageFolder + DataLoader(num_workers=2) on the
same JPEGs: decode, random resized crop to 224 (area 0.08..1, ratio 3/4..4/3), random
mirror, normalisation, batches of 64, shuffled; images per second over one epoch.

No Debian package ships a few thousand photos, so the folder is generated once (cached
in --dir): photo-like JPEGs of ImageNet's typical sizes (500x375 and 375x500, quality 90)
with smooth colour fields, shapes, edges and sensor-like noise, in 10 class folders.
tools/im2rec lists the folder and packs it (--pass-through: the .rec holds the very same
JPEG files), then both pipelines read their copy.

    PYTHONPATH=<build>/python python3 bench/image_record_bench.py [--count 2000] [--dir /tmp/weft_image_bench]
"""
import argparse
import os
import subprocess
import sys

import peer  # first: it sets the environment the libraries read

import time  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

import weft  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
IM2REC = os.path.join(HERE, "..", "tools", "im2rec")
BATCH = 64
MEAN = (123.68, 116.28, 103.53)
STD = (58.395, 57.12, 57.375)


def make_photo(rng, h, w, noise):
    from PIL import Image, ImageDraw, ImageFilter
    # A smooth colour field (a tiny random grid enlarged), shapes with edges, a blur, all
    # drawn at half size and enlarged (cheap, and soft like optics), then sensor-like noise
    # cut from a shared bank: the statistics that make JPEG decoding cost what it does on
    # photos (many non-zero DCT coefficients, not flat blocks).
    hh, hw = h // 2, w // 2
    base = rng.randint(0, 256, (4, 5, 3)).astype(np.uint8)
    img = Image.fromarray(base).resize((hw, hh), Image.BILINEAR)
    draw = ImageDraw.Draw(img)
    for _ in range(rng.randint(4, 12)):
        x0, y0 = rng.randint(0, hw), rng.randint(0, hh)
        x1, y1 = x0 + rng.randint(10, hw // 2), y0 + rng.randint(10, hh // 2)
        colour = tuple(int(c) for c in rng.randint(0, 256, 3))
        (draw.ellipse if rng.rand() < 0.5 else draw.rectangle)([x0, y0, x1, y1], fill=colour)
    img = img.filter(ImageFilter.BoxBlur(1)).resize((w, h), Image.BILINEAR)
    oy, ox = rng.randint(0, noise.shape[0] - h), rng.randint(0, noise.shape[1] - w)
    arr = np.asarray(img).astype(np.int16) + noise[oy:oy + h, ox:ox + w]
    return Image.fromarray(np.clip(arr, 0, 255).astype(np.uint8))


def make_folder(root, count):
    marker = os.path.join(root, ".complete_%d" % count)
    if os.path.exists(marker):
        return
    rng = np.random.RandomState(0)
    start = time.time()
    # Grain of a phone photo: luminance sigma 12, colour 6 (files of ~90 KB, as ImageNet's).
    noise = (rng.normal(0, 12, (700, 700, 1)) + rng.normal(0, 6, (700, 700, 3))).astype(np.int16)
    for i in range(count):
        cls = os.path.join(root, "class%02d" % (i % 10))
        os.makedirs(cls, exist_ok=True)
        h, w = (375, 500) if rng.rand() < 0.7 else (500, 375)
        make_photo(rng, h, w, noise).save(os.path.join(cls, "img%05d.jpg" % i), quality=90)
    open(marker, "w").close()
    print("generated %d JPEGs in %.1f s" % (count, time.time() - start))


def im2rec(prefix, root):
    env = dict(os.environ, PYTHON=sys.executable)
    if not os.path.exists(prefix + ".rec"):
        subprocess.run([IM2REC, "--list", "--recursive", prefix, root], env=env, check=True, stdout=subprocess.DEVNULL)
        subprocess.run([IM2REC, "--pass-through", "--num-thread", "2", prefix, root], env=env, check=True)


def weft_epoch(prefix, threads):
    # The clock starts before construction: the prefetcher starts decoding at once, as
    # torch's workers start at the loader's first iteration (also timed).
    start = time.perf_counter()
    it = weft.io.ImageRecordIter(
        path_imgrec=prefix + ".rec", path_imgidx=prefix + ".idx", data_shape=(3, 224, 224), batch_size=BATCH,
        shuffle=True, random_resized_crop=True, min_random_area=0.08, max_random_area=1.0,
        min_aspect_ratio=3.0 / 4, max_aspect_ratio=4.0 / 3, rand_mirror=True,
        mean_r=MEAN[0], mean_g=MEAN[1], mean_b=MEAN[2], std_r=STD[0], std_g=STD[1], std_b=STD[2],
        preprocess_threads=threads, prefetch_buffer=4, round_batch=False)
    images = 0
    for batch in it:
        batch.data[0].wait_to_read()
        images += BATCH - batch.pad
    return images, time.perf_counter() - start


def torch_epoch(root, workers):
    import torchvision
    from torchvision import transforms
    tf = transforms.Compose([
        transforms.RandomResizedCrop(224),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize([m / 255 for m in MEAN], [s / 255 for s in STD]),
    ])
    ds = torchvision.datasets.ImageFolder(root, transform=tf)
    loader = torch.utils.data.DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=workers)
    images = 0
    start = time.perf_counter()
    for data, _label in loader:
        images += data.shape[0]
    return images, time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=2000, help="number of JPEGs")
    ap.add_argument("--dir", default="/tmp/weft_image_bench", help="where the folder and the .rec are kept")
    ap.add_argument("--threads", type=int, default=2, help="ImageRecordIter preprocess_threads")
    args = ap.parse_args()
    root = os.path.join(args.dir, "images_%d" % args.count)
    prefix = os.path.join(args.dir, "bench_%d" % args.count)
    make_folder(root, args.count)
    im2rec(prefix, root)
    print("machine: %d cores; %d JPEGs, batch %d, 224x224 random resized crop + mirror + normalise"
          % (os.cpu_count(), args.count, BATCH))
    n_w, t_w = weft_epoch(prefix, args.threads)
    n_t, t_t = torch_epoch(root, 2)
    ips_w, ips_t = n_w / t_w, n_t / t_t
    print("weft ImageRecordIter (preprocess_threads=%d): %6d images in %6.2f s = %7.1f images/s"
          % (args.threads, n_w, t_w, ips_w))
    print("torchvision ImageFolder + DataLoader(num_workers=2): %6d images in %6.2f s = %7.1f images/s"
          % (n_t, t_t, ips_t))
    print("ratio weft / torch: %.2fx" % (ips_w / ips_t))
    peer.record("ImageRecordIter vs ImageFolder, 224x224 augmented", ips_w, ips_t, "images/s", True)


if __name__ == "__main__":
    main()
