"""CSVIter's data_csv / label_csv take the path forms of MXNet's dmlc InputSplit, as LibSVMIter
does: a directory (its non-empty files in name order), a regular expression over one
directory's file paths, several paths separated by ';', a 'file://' prefix and gzip files;
errors name the file and line a bad value came from."""
import gzip

import numpy as np
import pytest

import weft as mx

ROWS = np.arange(24, dtype=np.float32).reshape(8, 3)


def _write(path, rows, final_eol=True):
    text = "\n".join(",".join("%g" % v for v in r) for r in rows) + ("\n" if final_eol else "")
    path.write_text(text)


def _read(data_csv, label_csv=None, dtype="float32"):
    args = dict(data_csv=data_csv, data_shape=(3,), batch_size=2, round_batch=False, dtype=dtype)
    if label_csv is not None:
        args.update(label_csv=label_csv, label_shape=(3,))
    data, labels = [], []
    for b in mx.io.CSVIter(**args):
        data.append(b.data[0].asnumpy())
        labels.append(b.label[0].asnumpy())
    return np.concatenate(data), np.concatenate(labels)


def test_directory_regex_list_prefix_and_gzip_read_the_rows_in_order(tmp_path):
    d = tmp_path / "train"
    d.mkdir()
    _write(d / "part-1.csv", ROWS[4:], final_eol=False)  # written first, read second
    _write(d / "part-0.csv", ROWS[:4])
    (d / "empty.csv").write_text("")
    (d / "sub").mkdir()
    _write(d / "sub" / "skipped.csv", ROWS[:1])
    got, _ = _read(str(d))
    np.testing.assert_array_equal(got, ROWS)
    got, _ = _read(str(d / r"part-\d\.csv"))
    np.testing.assert_array_equal(got, ROWS)
    got, _ = _read("file://%s;%s" % (d / "part-1.csv", d / "part-0.csv"))
    np.testing.assert_array_equal(got, np.concatenate([ROWS[4:], ROWS[:4]]))
    with gzip.open(str(tmp_path / "all.csv.gz"), "wt") as f:
        f.write("\n".join(",".join("%g" % v for v in r) for r in ROWS) + "\n")
    got, labels = _read(str(tmp_path / "all.csv.gz"), label_csv=str(d), dtype="int64")
    np.testing.assert_array_equal(got, ROWS.astype(np.int64))
    np.testing.assert_array_equal(labels, ROWS.astype(np.int64))


def test_errors_name_the_file_and_line_and_the_forms_accepted(tmp_path):
    d = tmp_path / "parts"
    d.mkdir()
    _write(d / "a.csv", ROWS[:2])
    (d / "b.csv").write_text("1,2,3\n4,x,6\n")
    with pytest.raises(mx.base.MXNetError, match=r"b\.csv' line 2: expected a number in column 2"):
        _read(str(d))
    with pytest.raises(mx.base.MXNetError, match="data_csv of CSVIter"):
        _read(str(tmp_path / "missing.csv"))
    with pytest.raises(mx.base.MXNetError, match="hdfs"):
        _read("hdfs://host/data.csv")
    (d / "b.csv").write_text("1,2,3\n4,5,6\n")
    _write(tmp_path / "labels.csv", ROWS[:3])
    with pytest.raises(mx.base.MXNetError, match="has 3 rows, expected 4"):
        _read(str(d), label_csv=str(tmp_path / "labels.csv"))
