#!/usr/bin/env python3
"""Makes an image list (.lst) from a folder, or packs a list into RecordIO (.rec + .idx):
MXNet's tools/im2rec.py, on Weft's codec.

    im2rec --list --recursive --train-ratio 0.9 data/caltech data/images   # caltech_train.lst, caltech_val.lst
    im2rec --resize 256 --quality 90 --num-thread 4 data/caltech data/images  # one .rec/.idx per .lst

With --recursive every sub-folder is a class, numbered in sorted order. Packing reads the
images listed in <prefix>*.lst (relative to root), re-encodes them (or copies the file with
--pass-through) and writes the records in list order; --num-thread images are encoded at
once (the codec runs without the GIL).
"""
import argparse
import os
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def _weft():
    import weft  # pylint: disable=import-outside-toplevel
    return weft


def list_image(root, recursive, exts):
    """Yields (index, path relative to root, label) for the images under root."""
    i = 0
    if recursive:
        cat = {}
        for path, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            files.sort()
            for fname in files:
                fpath = os.path.join(path, fname)
                suffix = os.path.splitext(fname)[1].lower()
                if os.path.isfile(fpath) and suffix in exts:
                    if path not in cat:
                        cat[path] = len(cat)
                    yield (i, os.path.relpath(fpath, root), cat[path])
                    i += 1
        for k, v in sorted(cat.items(), key=lambda x: x[1]):
            print(os.path.relpath(k, root), v)
    else:
        for fname in sorted(os.listdir(root)):
            fpath = os.path.join(root, fname)
            suffix = os.path.splitext(fname)[1].lower()
            if os.path.isfile(fpath) and suffix in exts:
                yield (i, os.path.relpath(fpath, root), 0)
                i += 1


def write_list(path_out, image_list):
    with open(path_out, "w") as fout:
        for item in image_list:
            line = "%d\t" % item[0]
            for j in item[2:]:
                line += "%f\t" % j
            line += "%s\n" % item[1]
            fout.write(line)


def make_list(args):
    image_list = list(list_image(args.root, args.recursive, args.exts))
    if args.shuffle:
        random.seed(100)
        random.shuffle(image_list)
    n = len(image_list)
    chunk_size = (n + args.chunks - 1) // args.chunks
    for i in range(args.chunks):
        chunk = image_list[i * chunk_size:(i + 1) * chunk_size]
        str_chunk = "_%d" % i if args.chunks > 1 else ""
        sep = int(chunk_size * args.train_ratio)
        sep_test = int(chunk_size * args.test_ratio)
        if args.train_ratio == 1.0:
            write_list(args.prefix + str_chunk + ".lst", chunk)
        else:
            if args.test_ratio:
                write_list(args.prefix + str_chunk + "_test.lst", chunk[:sep_test])
            if args.train_ratio + args.test_ratio < 1.0:
                write_list(args.prefix + str_chunk + "_val.lst", chunk[sep_test + sep:])
            write_list(args.prefix + str_chunk + "_train.lst", chunk[sep_test:sep_test + sep])


def read_list(path_in):
    """Yields [index, path, label...] for each line of a .lst file."""
    with open(path_in) as fin:
        for lineno, line in enumerate(fin, 1):
            parts = [p.strip() for p in line.strip().split("\t")]
            if parts == [""]:
                continue
            if len(parts) < 3:
                print("%s line %d: a list line has at least 3 tab-separated parts (index, label, path), got %d: %r"
                      % (path_in, lineno, len(parts), line.rstrip("\n")), file=sys.stderr)
                continue
            try:
                yield [int(parts[0])] + [parts[-1]] + [float(p) for p in parts[1:-1]]
            except ValueError as e:
                print("%s line %d: %s: %r" % (path_in, lineno, e, line.rstrip("\n")), file=sys.stderr)


def image_encode(args, item):
    """The packed record of one list item, or None when the image cannot be read."""
    weft = _weft()
    from weft import recordio  # pylint: disable=import-outside-toplevel
    fullpath = os.path.join(args.root, item[1])
    if len(item) > 3 and args.pack_label:
        header = recordio.IRHeader(0, item[2:], item[0], 0)
    else:
        header = recordio.IRHeader(0, item[2], item[0], 0)
    try:
        with open(fullpath, "rb") as fin:
            raw = fin.read()
    except OSError as e:
        print("cannot read %s: %s" % (fullpath, e), file=sys.stderr)
        return None
    if args.pass_through:
        return recordio.pack(header, raw)
    try:
        img = weft.image.imdecode(raw, flag=args.color, to_rgb=1)
    except weft.MXNetError as e:
        print("cannot decode %s: %s" % (fullpath, e), file=sys.stderr)
        return None
    h, w = img.shape[0], img.shape[1]
    if args.center_crop and h != w:
        arr = img.asnumpy()
        if h > w:
            margin = (h - w) // 2
            arr = arr[margin:margin + w]
        else:
            margin = (w - h) // 2
            arr = arr[:, margin:margin + h]
        img = weft.nd.array(np.ascontiguousarray(arr), dtype=np.uint8)
        h, w = img.shape[0], img.shape[1]
    if args.resize:
        if h > w:
            new_w, new_h = args.resize, h * args.resize // w
        else:
            new_w, new_h = w * args.resize // h, args.resize
        img = weft.image.imresize(img, new_w, new_h, interp=1)
    from weft.base import _api  # pylint: disable=import-outside-toplevel
    handle = _api.weft_image_encode(img, args.encoding, int(args.quality), 0)
    try:
        buf = _api.weft_bytes_get(handle)
    finally:
        _api.weft_bytes_free(handle)
    return recordio.pack(header, buf)


class _Progress:
    """Progress of packing: one line redrawn in place on a terminal; in a log, a line at each
    tenth of the list (at least every 1000 images), in the manner of MXNet's Speedometer."""

    def __init__(self, total, stream=None):
        self.total = total
        self.stream = sys.stdout if stream is None else stream
        self.tty = bool(getattr(self.stream, "isatty", None) and self.stream.isatty())
        self.every = max(1, min(1000, total // 10))
        self.start = self.last = time.time()
        self.done = 0

    def update(self, n=1):
        self.done += n
        now = time.time()
        speed = self.done / max(now - self.start, 1e-9)
        if self.tty and (now - self.last >= 0.1 or self.done == self.total):
            self.last = now
            width = 30
            filled = int(width * self.done / max(self.total, 1))
            self.stream.write("\r[%s%s] %d/%d images  %.1f images/s\x1b[K"
                              % ("=" * filled, "." * (width - filled), self.done, self.total, speed))
            if self.done == self.total:
                self.stream.write("\n")
            self.stream.flush()
        elif not self.tty and (self.done % self.every == 0 or self.done == self.total):
            self.stream.write("packed %d/%d images  %.1f images/s\n" % (self.done, self.total, speed))
            self.stream.flush()


def pack_list(args, fname):
    from weft import recordio  # pylint: disable=import-outside-toplevel
    image_list = list(read_list(fname))
    base = os.path.splitext(fname)[0]
    record = recordio.MXIndexedRecordIO(base + ".idx", base + ".rec", "w")
    start = time.time()
    count = 0
    # Records go out in list order; encoding runs ahead on the pool with a bounded window so
    # that memory stays small however long the list is.
    window = max(4, 4 * args.num_thread)
    with ThreadPoolExecutor(max_workers=max(1, args.num_thread)) as pool:
        pending = []
        items = iter(image_list)
        lock = threading.Lock()
        progress = _Progress(len(image_list))
        for item in items:
            pending.append((item, pool.submit(image_encode, args, item)))
            if len(pending) >= window:
                count += _flush_one(record, pending, lock)
                progress.update()
        while pending:
            count += _flush_one(record, pending, lock)
            progress.update()
    record.close()
    print("%s: packed %d of %d images in %.1f s" % (base + ".rec", count, len(image_list), time.time() - start))
    return count


def _flush_one(record, pending, lock):
    item, fut = pending.pop(0)
    s = fut.result()
    if s is None:
        return 0
    with lock:
        record.write_idx(item[0], s)
    return 1


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Create an image list or make a record database by reading from an image list")
    parser.add_argument("prefix", help="prefix of input/output lst and rec files.")
    parser.add_argument("root", help="path to folder containing images.")

    cgroup = parser.add_argument_group("Options for creating image lists")
    cgroup.add_argument("--list", action="store_true",
                        help="If this is set im2rec will create image list(s) by traversing root folder "
                        "and output to <prefix>.lst. Otherwise im2rec will read <prefix>.lst and create a database "
                        "at <prefix>.rec")
    cgroup.add_argument("--exts", nargs="+", default=[".jpeg", ".jpg", ".png"],
                        help="list of acceptable image extensions.")
    cgroup.add_argument("--chunks", type=int, default=1, help="number of chunks.")
    cgroup.add_argument("--train-ratio", type=float, default=1.0, help="Ratio of images to use for training.")
    cgroup.add_argument("--test-ratio", type=float, default=0, help="Ratio of images to use for testing.")
    cgroup.add_argument("--recursive", action="store_true",
                        help="If true recursively walk through subdirs and assign an unique label to images "
                        "in each folder. Otherwise only include images in the root folder and give them label 0.")
    cgroup.add_argument("--no-shuffle", dest="shuffle", action="store_false",
                        help="If this is passed, im2rec will not randomize the image order in <prefix>.lst")

    rgroup = parser.add_argument_group("Options for creating database")
    rgroup.add_argument("--pass-through", action="store_true",
                        help="whether to skip transformation and save image as is")
    rgroup.add_argument("--resize", type=int, default=0,
                        help="resize the shorter edge of image to the newsize, original images will be "
                        "packed by default.")
    rgroup.add_argument("--center-crop", action="store_true",
                        help="specify whether to crop the center image to make it rectangular.")
    rgroup.add_argument("--quality", type=int, default=95,
                        help="JPEG quality for encoding, 1-100; or PNG compression for encoding, 1-9")
    rgroup.add_argument("--num-thread", type=int, default=1,
                        help="number of threads to use for encoding. order of images will be the same as "
                        "the input list.")
    rgroup.add_argument("--color", type=int, default=1, choices=[-1, 0, 1],
                        help="specify the color mode of the loaded image. 1: Loads a color image. "
                        "0: Loads image in grayscale mode. -1: Loads image as such including alpha channel.")
    rgroup.add_argument("--encoding", type=str, default=".jpg", choices=[".jpg", ".png"],
                        help="specify the encoding of the images.")
    rgroup.add_argument("--pack-label", action="store_true",
                        help="Whether to also pack multi dimensional label in the record file")
    args = parser.parse_args(argv)
    args.prefix = os.path.abspath(args.prefix)
    args.root = os.path.abspath(args.root)
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.list:
        make_list(args)
        return 0
    if os.path.isdir(args.prefix):
        working_dir = args.prefix
    else:
        working_dir = os.path.dirname(args.prefix)
    files = sorted(os.path.join(working_dir, fname) for fname in os.listdir(working_dir)
                   if os.path.isfile(os.path.join(working_dir, fname)))
    count = 0
    for fname in files:
        if fname.startswith(args.prefix) and fname.endswith(".lst"):
            print("Creating .rec file from", fname, "in", working_dir)
            pack_list(args, fname)
            count += 1
    if not count:
        print("Did not find any .lst file with prefix %s" % args.prefix, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
