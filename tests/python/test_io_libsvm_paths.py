"""LibSVMIter's data_libsvm / label_libsvm path forms, as MXNet's dmlc InputSplit takes them:
a file, a directory (its non-empty files in name order, not its subdirectories), a regular
expression over the file paths of one directory, several of these separated by ';', and a
'file://' prefix; clear errors for what is not accepted."""
import numpy as np
import pytest

import weft as mx

ROWS = ["1 0:1", "0 1:2", "1 2:3", "0 3:4", "1 0:5 3:6", "0 2:7"]


def _dense(rows):
    out = np.zeros((len(rows), 4), dtype=np.float32)
    for r, line in enumerate(rows):
        for item in line.split()[1:]:
            c, v = item.split(":")
            out[r, int(c)] = float(v)
    return out


def _read(path, label=None, **kw):
    args = dict(data_libsvm=path, data_shape=(4,), batch_size=1, round_batch=False)
    if label is not None:
        args.update(label_libsvm=label, label_shape=(4,))
    args.update(kw)
    it = mx.io.LibSVMIter(**args)
    data, labels = [], []
    for b in it:
        data.append(b.data[0].asnumpy())
        labels.append(b.label[0].asnumpy())
    return np.concatenate(data), np.concatenate(labels)


def _layout(tmp_path):
    """Files written out of name order; the second has no end of line after its last row."""
    d = tmp_path / "train"
    d.mkdir()
    (d / "part-1.libsvm").write_text("\n".join(ROWS[3:]))  # no final end of line
    (d / "part-0.libsvm").write_text("\n".join(ROWS[:3]) + "\n")
    (d / "empty.libsvm").write_text("")  # left out, as dmlc leaves out empty files
    (d / "sub").mkdir()
    (d / "sub" / "part-9.libsvm").write_text("1 0:99\n")  # subdirectories are not read
    return d


def test_directory_reads_every_file_in_name_order(tmp_path):
    d = _layout(tmp_path)
    data, labels = _read(str(d))
    np.testing.assert_array_equal(data, _dense(ROWS))
    np.testing.assert_array_equal(labels, [float(r.split()[0]) for r in ROWS])
    data2, _ = _read(str(d) + "/")
    np.testing.assert_array_equal(data2, _dense(ROWS))


def test_lists_patterns_and_file_urls(tmp_path):
    d = _layout(tmp_path)
    p0, p1 = str(d / "part-0.libsvm"), str(d / "part-1.libsvm")
    # ';' keeps the order given.
    data, _ = _read(p1 + ";" + p0)
    np.testing.assert_array_equal(data, _dense(ROWS[3:] + ROWS[:3]))
    # A regular expression over the paths of one directory, matched whole, in name order.
    data, _ = _read(str(d) + r"/part-\d\.libsvm")
    np.testing.assert_array_equal(data, _dense(ROWS))
    data, _ = _read(str(d) + "/part-1.*")
    np.testing.assert_array_equal(data, _dense(ROWS[3:]))
    data, _ = _read("file://" + p0)
    np.testing.assert_array_equal(data, _dense(ROWS[:3]))


def test_label_directory_and_parts_across_files(tmp_path):
    d = _layout(tmp_path)
    lab = tmp_path / "labels"
    lab.mkdir()
    lrows = ["0 %d:1" % (i % 4) for i in range(len(ROWS))]
    (lab / "b").write_text("\n".join(lrows[2:]) + "\n")
    (lab / "a").write_text("\n".join(lrows[:2]) + "\n")
    data, labels = _read(str(d), label=str(lab))
    np.testing.assert_array_equal(data, _dense(ROWS))
    np.testing.assert_array_equal(labels, _dense(lrows))
    # num_parts shares the rows of all the files (here: 3 and 3, across the file boundary
    # of the labels, which split 2 / 4).
    got = [_read(str(d), label=str(lab), num_parts=2, part_index=i) for i in range(2)]
    np.testing.assert_array_equal(np.concatenate([g[0] for g in got]), _dense(ROWS))
    np.testing.assert_array_equal(np.concatenate([g[1] for g in got]), _dense(lrows))
    # A reset reads the files again from the first.
    it = mx.io.LibSVMIter(data_libsvm=str(d), data_shape=(4,), batch_size=4, round_batch=False)
    first = [b.data[0].asnumpy() for b in it]
    it.reset()
    again = [b.data[0].asnumpy() for b in it]
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)


def test_errors_name_the_path_and_the_accepted_forms(tmp_path):
    d = _layout(tmp_path)
    empty = tmp_path / "nothing"
    empty.mkdir()
    (empty / "zero").write_text("")
    with pytest.raises(mx.base.WeftNotFoundError, match="cannot find any non-empty file for .*data_libsvm '.*nothing'"
                                                        ": expected a file, a directory, a regular expression"):
        _read(str(empty))
    with pytest.raises(mx.base.WeftNotFoundError, match=r"'.*train/part-7\.libsvm': no such file or directory, and "
                                                        r"no non-empty file of '.*train' matches it"):
        _read(str(d / "part-0.libsvm") + ";" + str(d / "part-7.libsvm"))
    with pytest.raises(mx.base.WeftNotFoundError, match="not a valid regular expression"):
        _read(str(d) + "/part-[")
    with pytest.raises(mx.base.WeftUnsupportedError, match="only local files are read, not 'hdfs://' URLs"):
        _read("hdfs://namenode/train.libsvm")
    with pytest.raises(mx.base.WeftNotFoundError, match="label_libsvm '/no/such/labels'"):
        _read(str(d), label="/no/such/labels")
    # A malformed row names the file it is in, and its line there.
    (d / "part-1.libsvm").write_text("1 0:1\n1 2:x\n")
    with pytest.raises(mx.base.WeftValueError, match=r"data_libsvm '.*part-1\.libsvm' line 2: expected a value"):
        _read(str(d))
