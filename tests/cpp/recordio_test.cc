// RecordIO container, .idx files, image record headers, and the JPEG/PNG codec and resize.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/base/error.h"
#include "core/io/data_iter.h"
#include "core/io/image_aug.h"
#include "core/io/image_codec.h"
#include "core/io/recordio.h"
#include "weft/c_api.h"

using namespace weft;      // NOLINT
using namespace weft::io;  // NOLINT

namespace {

std::string TempPath(const std::string& name) {
  return "/tmp/weft_recordio_test_" + std::to_string(getpid()) + "_" + name;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string Le32(uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[i] = static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}
const std::string kMagicBytes = Le32(kRecordIOMagic);

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

// Runs `fn`, expecting a kIO error whose message holds every string of `parts`.
template <typename Fn>
void ExpectIOError(Fn fn, const std::vector<std::string>& parts) {
  try {
    fn();
    FAIL() << "expected an IO error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIO) << e.what();
    for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "'" << p << "' not in: " << e.what();
  }
}

std::vector<std::string> ReadAll(const std::string& path) {
  RecordIOReader r(path);
  std::vector<std::string> out;
  std::string rec;
  while (r.Next(&rec)) out.push_back(rec);
  return out;
}

}  // namespace

TEST(RecordIO, EncodeSplitsOnAlignedMagicOnly) {
  // Magic at aligned offsets 0 and 8, and at unaligned offset 13 (left in place).
  std::string payload = kMagicBytes + "abcd" + kMagicBytes + "x" + kMagicBytes + "yz";
  std::string enc;
  EncodeRecord(payload.data(), payload.size(), &enc);
  std::string expect = kMagicBytes + Le32((1u << 29) | 0) + kMagicBytes + Le32((2u << 29) | 4) + "abcd" + kMagicBytes +
                       Le32((3u << 29) | 7) + "x" + kMagicBytes + "yz" + std::string(1, '\0');
  EXPECT_EQ(enc, expect);
  std::string path = TempPath("split.rec");
  WriteFile(path, enc);
  auto recs = ReadAll(path);
  ASSERT_EQ(recs.size(), 1u);
  EXPECT_EQ(recs[0], payload);
  std::remove(path.c_str());
}

TEST(RecordIO, RoundTripManyShapes) {
  std::mt19937 rng(7);
  std::vector<std::string> records;
  for (int n = 0; n < 40; ++n) {
    std::string r(n, '\0');
    for (auto& c : r) c = static_cast<char>(rng() & 0xFF);
    // Plant the magic at several places: aligned start, aligned middle, end, unaligned.
    if (n >= 4 && n % 3 == 0) std::memcpy(&r[0], kMagicBytes.data(), 4);
    if (n >= 12 && n % 2 == 0) std::memcpy(&r[8], kMagicBytes.data(), 4);
    if (n >= 8 && n % 4 == 0) std::memcpy(&r[n - 4], kMagicBytes.data(), 4);
    if (n >= 10 && n % 5 == 0) std::memcpy(&r[5], kMagicBytes.data(), 4);
    records.push_back(r);
  }
  records.push_back(kMagicBytes + kMagicBytes + kMagicBytes);
  std::string path = TempPath("many.rec");
  std::vector<uint64_t> offsets;
  {
    RecordIOWriter w(path);
    for (const auto& r : records) {
      offsets.push_back(w.Tell());
      w.Write(r.data(), r.size());
    }
    w.Close();
  }
  EXPECT_EQ(ReadFile(path).size() % 4, 0u);
  EXPECT_EQ(ReadAll(path), records);
  RecordIOReader r(path);
  std::string rec;
  for (size_t i = records.size(); i-- > 0;) {
    r.Seek(offsets[i]);
    ASSERT_TRUE(r.Next(&rec));
    EXPECT_EQ(rec, records[i]) << "record " << i;
  }
  std::remove(path.c_str());
}

TEST(RecordIO, ReadsMXNetFixture) {
  const std::string dir = WEFT_COMPAT_DIR "/synthetic/";
  nlohmann::json expected = nlohmann::json::parse(ReadFile(dir + "expected.json"))["tiny.rec"];
  auto recs = ReadAll(dir + "tiny.rec");
  ASSERT_EQ(recs.size(), expected.size());
  auto index = ReadRecordIndex(dir + "tiny.idx");
  ASSERT_EQ(index.size(), expected.size());
  const uint64_t offsets[] = {0, 36, 88, 148};
  RecordIOReader reader(dir + "tiny.rec");
  for (size_t i = 0; i < recs.size(); ++i) {
    std::string want = FromHex(expected[i]["record_hex"].get<std::string>());
    EXPECT_EQ(recs[i], want) << "record " << i;
    EXPECT_EQ(recs[i].size(), expected[i]["record_len"].get<size_t>());
    EXPECT_EQ(index[i].first, std::to_string(expected[i]["key"].get<int>()));
    EXPECT_EQ(index[i].second, offsets[i]);
    reader.Seek(index[i].second);
    std::string rec;
    ASSERT_TRUE(reader.Next(&rec));
    EXPECT_EQ(rec, want);
  }
  // Writing the same records gives MXNet's bytes.
  std::string path = TempPath("tiny.rec");
  {
    RecordIOWriter w(path);
    for (const auto& r : recs) w.Write(r.data(), r.size());
  }
  EXPECT_EQ(ReadFile(path), ReadFile(dir + "tiny.rec"));
  std::remove(path.c_str());
  // Image headers: single label, then a 3-float label array.
  ImageRecordView v0 = UnpackImageRecord(recs[0].data(), recs[0].size(), "rec 0");
  EXPECT_EQ(v0.header.flag, 0u);
  EXPECT_EQ(v0.header.label, 3.0f);
  EXPECT_EQ(v0.header.id, 100u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(v0.data), v0.size), "abc");
  ImageRecordView v1 = UnpackImageRecord(recs[1].data(), recs[1].size(), "rec 1");
  EXPECT_EQ(v1.header.flag, 3u);
  EXPECT_EQ(v1.labels, (std::vector<float>{1.f, 2.f, 3.f}));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(v1.data), v1.size), "hello!!!");
  ImageRecordHeader h;
  h.id = 101;
  std::string packed = PackImageRecord(h, {1.f, 2.f, 3.f}, "hello!!!", 8);
  EXPECT_EQ(packed, recs[1]);
  ImageRecordView v3 = UnpackImageRecord(recs[3].data(), recs[3].size(), "rec 3");
  EXPECT_EQ(v3.header.label, -1.f);
  EXPECT_EQ(v3.size, 0u);
}

TEST(RecordIO, CorruptInputsNameFileAndOffset) {
  const std::string good = ReadFile(WEFT_COMPAT_DIR "/synthetic/tiny.rec");
  std::string path = TempPath("bad.rec");
  auto read_all = [&] { ReadAll(path); };

  std::string bad = good;
  bad[36] = 'X';  // the second record's magic
  WriteFile(path, bad);
  ExpectIOError(read_all, {path, "bad magic", "offset 36"});

  WriteFile(path, good.substr(0, 36 + 5));  // header cut short
  ExpectIOError(read_all, {path, "truncated", "offset 36"});

  WriteFile(path, good.substr(0, 36 + 8 + 10));  // payload cut short
  ExpectIOError(read_all, {path, "truncated", "offset 36", "44 payload bytes"});

  WriteFile(path, good.substr(0x78));  // starts at the cflag 2 chunk of record 2
  ExpectIOError(read_all, {path, "offset 0", "continues a record (flag 2)"});

  WriteFile(path, good.substr(0, 0x78));  // record 2's first part, then the file ends
  ExpectIOError(read_all, {path, "ends at offset 120", "starts at offset 88"});

  // A first part followed by a whole record: the multi-part record never ends.
  WriteFile(path, good.substr(88, 0x78 - 88) + good.substr(0, 36));
  ExpectIOError(read_all, {path, "not finished", "offset 32"});

  bad = good;
  bad[7] = static_cast<char>(0xA0);  // flag 5
  WriteFile(path, bad);
  ExpectIOError(read_all, {path, "continuation flag 5", "offset 0"});

  RecordIOReader r(path);
  try {
    r.Seek(good.size() + 4);
    FAIL() << "seek past the end must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
  }
  std::remove(path.c_str());

  std::string idx = TempPath("bad.idx");
  WriteFile(idx, "0\t0\n1\t36\n2 88\n");
  ExpectIOError([&] { ReadRecordIndex(idx); }, {idx, "line 3", "2 88"});
  WriteFile(idx, "0\t0\n1\tx36\n");
  ExpectIOError([&] { ReadRecordIndex(idx); }, {idx, "line 2"});
  std::remove(idx.c_str());
  ExpectIOError([&] { ReadRecordIndex(idx); }, {idx});

  ExpectIOError([&] { UnpackImageRecord("abc", 3, "short"); }, {"short", "24-byte header"});
  ImageRecordHeader h;
  h.flag = 5;
  std::string rec(reinterpret_cast<const char*>(&h), 24);
  rec += std::string(8, '\0');
  ExpectIOError([&] { UnpackImageRecord(rec.data(), rec.size(), "labels"); }, {"5 labels", "32 bytes"});
}

TEST(RecordIO, PartsCoverEveryRecordOnce) {
  std::string path = TempPath("parts.rec");
  std::vector<std::string> records;
  {
    RecordIOWriter w(path);
    for (int i = 0; i < 97; ++i) {
      std::string r = "record-" + std::to_string(i) + std::string(i % 13, 'z');
      if (i % 7 == 0) r = kMagicBytes + r + kMagicBytes + "tail";
      records.push_back(r);
      w.Write(r.data(), r.size());
    }
  }
  for (int parts : {1, 2, 3, 5, 8}) {
    std::vector<std::string> all;
    for (int p = 0; p < parts; ++p) {
      RecordIOReader r(path);
      r.SetPart(p, parts);
      std::string rec;
      while (r.Next(&rec)) all.push_back(rec);
    }
    EXPECT_EQ(all, records) << parts << " parts";
  }
  std::remove(path.c_str());
}

// ---------------------------------------------------------------- codec

namespace {
Image Gradient(int h, int w, int c) {
  Image im;
  im.height = h;
  im.width = w;
  im.channels = c;
  im.data.resize(static_cast<size_t>(h) * w * c);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int ch = 0; ch < c; ++ch) im.row(y)[x * c + ch] = static_cast<uint8_t>((x * 4 + y * 2 + ch * 60) & 0xFF);
  return im;
}
}  // namespace

TEST(ImageCodec, PngRoundTripIsExact) {
  for (int c : {1, 3, 4}) {
    Image im = Gradient(17, 23, c);
    std::string png = EncodeImage(ImageView::Of(im), ".png", 3);
    Image back = DecodeImage(png.data(), png.size(), -1);
    EXPECT_EQ(back.channels, c);
    EXPECT_EQ(back.height, 17);
    EXPECT_EQ(back.width, 23);
    EXPECT_EQ(back.data, im.data) << c << " channels";
  }
  // BGR in, RGB out: the channels swap.
  Image im = Gradient(5, 6, 3);
  std::string png = EncodeImage(ImageView::Of(im), ".png", 9, /*is_bgr=*/true);
  Image rgb = DecodeImage(png.data(), png.size(), 1, true);
  for (size_t i = 0; i < im.data.size(); i += 3) {
    EXPECT_EQ(rgb.data[i], im.data[i + 2]);
    EXPECT_EQ(rgb.data[i + 2], im.data[i]);
  }
  // Grey decoded as colour repeats the value; colour decoded as grey uses luma weights.
  Image grey = Gradient(4, 4, 1);
  std::string gpng = EncodeImage(ImageView::Of(grey), ".png", 1);
  Image col = DecodeImage(gpng.data(), gpng.size(), 1);
  ASSERT_EQ(col.channels, 3);
  for (size_t i = 0; i < grey.data.size(); ++i) EXPECT_EQ(col.data[3 * i + 1], grey.data[i]);
}

TEST(ImageCodec, JpegRoundTripWithinTolerance) {
  // Smooth content (no wrap-around edges), which JPEG keeps closely.
  Image im = Gradient(32, 48, 3);
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 48; ++x)
      for (int ch = 0; ch < 3; ++ch) im.row(y)[x * 3 + ch] = static_cast<uint8_t>(20 + 3 * x + 2 * y + 20 * ch);
  std::string jpg = EncodeImage(ImageView::Of(im), ".jpg", 95);
  int h = 0, w = 0, c = 0;
  PeekImageSize(jpg.data(), jpg.size(), &h, &w, &c);
  EXPECT_EQ(h, 32);
  EXPECT_EQ(w, 48);
  EXPECT_EQ(c, 3);
  Image back = DecodeImage(jpg.data(), jpg.size(), 1);
  ASSERT_EQ(back.data.size(), im.data.size());
  double err = 0;
  for (size_t i = 0; i < im.data.size(); ++i) err += std::abs(int(back.data[i]) - int(im.data[i]));
  EXPECT_LT(err / im.data.size(), 3.0);
  // A reduced-scale decode keeps at least the asked size.
  Image half = DecodeImage(jpg.data(), jpg.size(), 1, true, 16, 20);
  EXPECT_EQ(half.height, 16);
  EXPECT_EQ(half.width, 24);
  Image grey = DecodeImage(jpg.data(), jpg.size(), 0);
  EXPECT_EQ(grey.channels, 1);
}

TEST(ImageCodec, BadDataIsAnError) {
  ExpectIOError([] { DecodeImage("GIF89a", 6); }, {"neither JPEG", "47 49 46"});
  Image im = Gradient(16, 16, 3);
  std::string jpg = EncodeImage(ImageView::Of(im), ".jpg", 90);
  ExpectIOError([&] { DecodeImage(jpg.data(), 20); }, {"corrupt JPEG"});
  std::string png = EncodeImage(ImageView::Of(im), ".png", 1);
  ExpectIOError([&] { DecodeImage(png.data(), png.size() / 2); }, {"corrupt PNG"});
  EXPECT_THROW(EncodeImage(ImageView::Of(im), ".bmp", 1), Error);
  EXPECT_THROW(ResizeImage(ImageView::Of(im), 0, 4), Error);
}

TEST(ImageCodec, ResizeKnownValues) {
  Image im;
  im.height = 2;
  im.width = 2;
  im.channels = 1;
  im.data = {0, 100, 200, 40};
  // Bilinear 2x2 -> 4x4 (half-pixel centres): the corners keep their values, the inner
  // samples blend with weights 3/4 and 1/4.
  Image up = ResizeImage(ImageView::Of(im), 4, 4, 1);
  EXPECT_EQ(up.row(0)[0], 0);
  EXPECT_EQ(up.row(0)[1], 25);
  EXPECT_EQ(up.row(0)[2], 75);
  EXPECT_EQ(up.row(0)[3], 100);
  EXPECT_EQ(up.row(1)[1], std::lround(0.75 * (0.75 * 0 + 0.25 * 100) + 0.25 * (0.75 * 200 + 0.25 * 40)));
  EXPECT_EQ(up.row(3)[3], 40);
  Image near = ResizeImage(ImageView::Of(im), 4, 4, 0);
  EXPECT_EQ(near.data, (std::vector<uint8_t>{0, 0, 100, 100, 0, 0, 100, 100, 200, 200, 40, 40, 200, 200, 40, 40}));
  // Area 4x4 -> 2x2 averages the 2x2 blocks.
  Image big = Gradient(4, 4, 1);
  Image down = ResizeImage(ImageView::Of(big), 2, 2, 3);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 2; ++x) {
      int s = big.row(2 * y)[2 * x] + big.row(2 * y)[2 * x + 1] + big.row(2 * y + 1)[2 * x] + big.row(2 * y + 1)[2 * x + 1];
      EXPECT_EQ(down.row(y)[x], std::lround(s / 4.0));
    }
  // A crop view resizes only its window.
  Image crop = ResizeImage(ImageView::Of(big).Crop(1, 1, 2, 2), 2, 2, 1);
  EXPECT_EQ(crop.row(0)[0], big.row(1)[1]);
  EXPECT_EQ(crop.row(1)[1], big.row(2)[2]);
}

// ---------------------------------------------------------------- augmentation and ImageRecordIter


namespace {

// A .rec of n PNG images of h x w: image i is the constant colour (i, 2i, 3i) with label i
// and id 1000 + i, except that pixel (0, 0) is 255 in every channel so crops are visible.
std::string MakeColourRec(const std::string& name, int n, int h, int w, std::string* idx_path) {
  std::string path = TempPath(name + ".rec");
  RecordIOWriter wr(path);
  std::vector<std::pair<std::string, uint64_t>> idx;
  for (int i = 0; i < n; ++i) {
    Image im;
    im.height = h;
    im.width = w;
    im.channels = 3;
    im.data.resize(static_cast<size_t>(h) * w * 3);
    for (size_t p = 0; p < im.data.size(); p += 3) {
      im.data[p] = static_cast<uint8_t>(i);
      im.data[p + 1] = static_cast<uint8_t>(2 * i);
      im.data[p + 2] = static_cast<uint8_t>(3 * i);
    }
    im.data[0] = im.data[1] = im.data[2] = 255;
    std::string png = EncodeImage(ImageView::Of(im), ".png", 1);
    ImageRecordHeader hd;
    hd.label = static_cast<float>(i);
    hd.id = 1000 + i;
    std::string rec = PackImageRecord(hd, {}, png.data(), png.size());
    idx.emplace_back(std::to_string(i), wr.Tell());
    wr.Write(rec.data(), rec.size());
  }
  wr.Close();
  if (idx_path != nullptr) {
    *idx_path = TempPath(name + ".idx");
    WriteRecordIndex(*idx_path, idx);
  }
  return path;
}

std::vector<float> Host(const NDArray& a) {
  std::vector<float> v(static_cast<size_t>(a.Size()));
  a.SyncCopyToCPU(v.data(), v.size() * sizeof(float));
  return v;
}

// The labels seen in one epoch, with the pad of every batch.
std::vector<int> Epoch(DataIter* it, std::vector<int>* pads = nullptr) {
  std::vector<int> labels;
  while (it->Next()) {
    const DataBatch& b = it->Value();
    std::vector<float> l = Host(b.label[0]);
    std::vector<float> d = Host(b.data[0]);
    const size_t per = d.size() / l.size();
    for (size_t i = 0; i + b.pad < l.size(); ++i) {
      int lab = static_cast<int>(l[i]);
      labels.push_back(lab);
      // Channel 0 is R = label, 1 is G = 2 * label (the sample plane is per / 3 floats).
      EXPECT_EQ(d[i * per + per / 3 + 1], 2.f * lab);
      EXPECT_EQ(b.index[i], 1000u + lab);
    }
    if (pads) pads->push_back(b.pad);
  }
  return labels;
}

}  // namespace

TEST(ImageRecordIter, EverySampleOncePerEpoch) {
  std::string idx;
  std::string rec = MakeColourRec("iter", 23, 6, 7, &idx);
  auto it = CreateDataIter("ImageRecordIter", {{"path_imgrec", rec}, {"data_shape", "(3, 6, 7)"}, {"batch_size", "5"},
                                                 {"preprocess_threads", "2"}});
  ASSERT_EQ(it->ProvideData()[0].shape, (Shape{5, 3, 6, 7}));
  ASSERT_EQ(it->ProvideLabel()[0].shape, (Shape{5}));
  std::vector<int> pads;
  std::vector<int> labels = Epoch(it.get(), &pads);
  std::vector<int> want(23);
  std::iota(want.begin(), want.end(), 0);
  EXPECT_EQ(labels, want);
  EXPECT_EQ(pads, (std::vector<int>{0, 0, 0, 0, 2}));
  // A second epoch is the same; the data of a sample is its colour, pixel (0, 0) included.
  it->Reset();
  EXPECT_EQ(Epoch(it.get()), want);

  for (bool with_idx : {false, true}) {
    KwArgs kw = {{"path_imgrec", rec}, {"data_shape", "(3,6,7)"}, {"batch_size", "4"}, {"shuffle", "1"},
                 {"seed", "3"}, {"round_batch", "0"}};
    if (with_idx) kw.push_back({"path_imgidx", idx});
    auto sh = CreateDataIter("ImageRecordIter", kw);
    std::vector<int> e1 = Epoch(sh.get());
    sh->Reset();
    std::vector<int> e2 = Epoch(sh.get());
    EXPECT_NE(e1, want) << "shuffled";
    EXPECT_NE(e1, e2) << "reshuffled at reset";
    std::sort(e1.begin(), e1.end());
    std::sort(e2.begin(), e2.end());
    EXPECT_EQ(e1, want);
    EXPECT_EQ(e2, want);
  }
  for (int parts : {2, 3}) {
    for (bool with_idx : {false, true}) {
      std::vector<int> all;
      for (int p = 0; p < parts; ++p) {
        KwArgs kw = {{"path_imgrec", rec},         {"data_shape", "(3,6,7)"},      {"batch_size", "3"},
                     {"num_parts", std::to_string(parts)}, {"part_index", std::to_string(p)}, {"round_batch", "0"}};
        if (with_idx) kw.push_back({"path_imgidx", idx});
        auto part = CreateDataIter("ImageRecordIter", kw);
        for (int l : Epoch(part.get())) all.push_back(l);
      }
      EXPECT_EQ(all, want) << parts << " parts, idx " << with_idx;
    }
  }
  std::remove(rec.c_str());
  std::remove(idx.c_str());
}

TEST(ImageRecordIter, NormaliseMirrorAndCrop) {
  std::string rec = MakeColourRec("norm", 3, 6, 8, nullptr);
  auto it = CreateDataIter("ImageRecordIter", {{"path_imgrec", rec}, {"data_shape", "(3,6,8)"}, {"batch_size", "3"},
                                                 {"mean_r", "1"}, {"mean_g", "2"}, {"mean_b", "3"}, {"std_r", "2"},
                                                 {"std_g", "4"}, {"std_b", "0.5"}, {"mirror", "1"}, {"prefetch_buffer", "0"}});
  ASSERT_TRUE(it->Next());
  std::vector<float> d = Host(it->Value().data[0]);
  const size_t plane = 6 * 8;
  for (int i = 0; i < 3; ++i) {
    const float* s = d.data() + i * 3 * plane;
    // Mirrored: pixel (0, 0) lands at (0, 7).
    EXPECT_FLOAT_EQ(s[7], (255.f - 1) / 2);
    EXPECT_FLOAT_EQ(s[plane + 7], (255.f - 2) / 4);
    EXPECT_FLOAT_EQ(s[0], (i - 1.f) / 2);
    EXPECT_FLOAT_EQ(s[plane + 9], (2.f * i - 2) / 4);
    EXPECT_FLOAT_EQ(s[2 * plane + 20], (3.f * i - 3) / 0.5f);
  }
  // Centre crop (4x4 of 6x8 at x=2, y=1): the marked pixel falls outside.
  auto crop = CreateDataIter("ImageRecordIter", {{"path_imgrec", rec}, {"data_shape", "(3,4,4)"}, {"batch_size", "3"}});
  ASSERT_TRUE(crop->Next());
  std::vector<float> c = Host(crop->Value().data[0]);
  for (int i = 0; i < 3; ++i)
    for (size_t k = 0; k < 16; ++k) EXPECT_EQ(c[i * 48 + k], static_cast<float>(i));
  // Grey output: one channel of luma.
  auto grey = CreateDataIter("ImageRecordIter", {{"path_imgrec", rec}, {"data_shape", "(1,6,8)"}, {"batch_size", "3"}});
  ASSERT_TRUE(grey->Next());
  std::vector<float> g = Host(grey->Value().data[0]);
  EXPECT_NEAR(g[plane * 2 + 5], 0.299 * 2 + 0.587 * 4 + 0.114 * 6, 0.51);
  std::remove(rec.c_str());
}

TEST(ImageRecordIter, BadInputsAreErrors) {
  std::string rec = MakeColourRec("bad", 2, 4, 4, nullptr);
  EXPECT_THROW(CreateDataIter("ImageRecordIter", {{"path_imgrec", rec}, {"data_shape", "(3,4)"}, {"batch_size", "1"}}),
               Error);
  // A key the iterator does not know is ignored with a warning, as MXNet's iterators do.
  testing::internal::CaptureStderr();
  auto extra = CreateDataIter("ImageRecordIter", {{"path_imgrec", rec}, {"data_shape", "(3,4,4)"}, {"batch_size", "1"},
                                                  {"no_such_param", "1"}, {"prefetch_buffer", "0"}});
  EXPECT_NE(testing::internal::GetCapturedStderr().find("ignoring unknown parameter 'no_such_param'"), std::string::npos);
  EXPECT_TRUE(extra->Next());
  EXPECT_EQ(extra->Value().data[0].shape(), (Shape{1, 3, 4, 4}));
  auto lw = CreateDataIter("ImageRecordIter", {{"path_imgrec", rec}, {"data_shape", "(3,4,4)"}, {"batch_size", "1"},
                                                 {"label_width", "2"}, {"prefetch_buffer", "0"}});
  try {
    lw->Next();
    FAIL() << "label_width 2 on single-label records must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("label_width is 2"), std::string::npos) << e.what();
  }
  // A record whose payload is not an image: the error names the file and the offset.
  std::string path = TempPath("notimg.rec");
  {
    RecordIOWriter w(path);
    ImageRecordHeader h;
    std::string r = PackImageRecord(h, {}, "not an image", 12);
    w.Write(r.data(), r.size());
  }
  auto it = CreateDataIter("ImageRecordIter", {{"path_imgrec", path}, {"data_shape", "(3,4,4)"}, {"batch_size", "1"}});
  try {
    it->Next();
    FAIL() << "a non-image record must fail";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kIO);
    EXPECT_NE(std::string(e.what()).find("offset 0 of '" + path + "'"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
  std::remove(rec.c_str());
}

TEST(ImageAug, PlanRespectsAreaAndRatio) {
  ImageAugParam p;
  p.random_resized_crop = true;
  p.min_random_area = 0.25f;
  p.max_random_area = 0.5f;
  p.max_aspect_ratio = 4.f / 3;
  p.min_aspect_ratio = 3.0 / 4;
  p.rand_mirror = true;
  std::mt19937 rng(1);
  int mirrored = 0;
  for (int t = 0; t < 500; ++t) {
    AugPlan plan = PlanAugment(p, 300, 400, 32, 32, &rng);
    const double area = plan.w * plan.h / (300.0 * 400.0);
    EXPECT_GE(area, 0.24);
    EXPECT_LE(area, 0.51);
    EXPECT_GE(plan.w / plan.h, 0.74);
    EXPECT_LE(plan.w / plan.h, 1.35);
    EXPECT_GE(plan.x, 0);
    EXPECT_GE(plan.y, 0);
    EXPECT_LE(plan.x + plan.w, 400);
    EXPECT_LE(plan.y + plan.h, 300);
    mirrored += plan.mirror;
  }
  EXPECT_GT(mirrored, 200);
  EXPECT_LT(mirrored, 300);
  // resize=100 on 300x400: the centre 50x50 crop of the 100x133 image is 150x150 stored pixels.
  ImageAugParam r;
  r.resize = 100;
  AugPlan c = PlanAugment(r, 300, 400, 50, 50, &rng);
  EXPECT_DOUBLE_EQ(c.w, 150);
  EXPECT_DOUBLE_EQ(c.h, 150);
  EXPECT_DOUBLE_EQ(c.x, 41 * 3);
  EXPECT_DOUBLE_EQ(c.y, 25 * 3);
}

TEST(ImageAug, JitterOnKnownColours) {
  Image im;
  im.height = 2;
  im.width = 2;
  im.channels = 3;
  im.data = {100, 50, 20, 100, 50, 20, 100, 50, 20, 100, 50, 20};
  std::string png = EncodeImage(ImageView::Of(im), ".png", 1);
  auto run = [&](AugPlan plan) {
    ImageAugParam p;
    plan.w = 2;
    plan.h = 2;
    std::vector<float> out(12);
    ApplyAugment(p, plan, reinterpret_cast<const uint8_t*>(png.data()), png.size(), 3, 2, 2, out.data());
    return out;
  };
  AugPlan b;
  b.brightness = 1.5f;
  std::vector<float> o = run(b);
  EXPECT_FLOAT_EQ(o[0], 150.f);
  EXPECT_FLOAT_EQ(o[4], 75.f);
  EXPECT_FLOAT_EQ(o[8], 30.f);
  b.brightness = 3.f;  // clamped at 255
  EXPECT_FLOAT_EQ(run(b)[0], 255.f);
  const float grey = 0.299f * 100 + 0.587f * 50 + 0.114f * 20;
  AugPlan c;
  c.contrast = 0.5f;  // halfway to the image's mean grey
  o = run(c);
  EXPECT_NEAR(o[0], 0.5f * 100 + 0.5f * grey, 1e-3);
  EXPECT_NEAR(o[8], 0.5f * 20 + 0.5f * grey, 1e-3);
  AugPlan s;
  s.saturation = 0.f;  // fully desaturated: every channel is the grey
  o = run(s);
  for (int ch = 0; ch < 3; ++ch) EXPECT_NEAR(o[ch * 4], grey, 1e-3);
}

// ---------------------------------------------------------------- C API

TEST(RecordIOCApi, WriteReadSeekAndErrors) {
  std::string path = TempPath("capi.rec");
  weft_recordio_t* w = nullptr;
  ASSERT_EQ(weft_recordio_writer_create(path.c_str(), &w), WEFT_OK) << weft_get_last_error();
  const std::string recs[3] = {"first", kMagicBytes + "second", ""};
  int64_t offsets[3];
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(weft_recordio_tell(w, &offsets[i]), WEFT_OK);
    ASSERT_EQ(weft_recordio_write(w, recs[i].data(), recs[i].size()), WEFT_OK);
  }
  EXPECT_EQ(offsets[1], 16);
  weft_bytes_t* b = nullptr;
  EXPECT_EQ(weft_recordio_read(w, &b), WEFT_ERR_VALUE);
  EXPECT_NE(std::string(weft_get_last_error()).find("opened for writing"), std::string::npos);
  EXPECT_EQ(weft_recordio_seek(w, 0), WEFT_ERR_VALUE);
  ASSERT_EQ(weft_recordio_free(w), WEFT_OK);
  EXPECT_EQ(weft_recordio_write(w, "x", 1), WEFT_ERR_HANDLE);  // freed

  weft_recordio_t* r = nullptr;
  ASSERT_EQ(weft_recordio_reader_create(path.c_str(), &r), WEFT_OK);
  for (int i : {2, 0, 1}) {
    ASSERT_EQ(weft_recordio_seek(r, offsets[i]), WEFT_OK);
    ASSERT_EQ(weft_recordio_read(r, &b), WEFT_OK);
    ASSERT_NE(b, nullptr);
    const void* data = nullptr;
    size_t size = 0;
    ASSERT_EQ(weft_bytes_get(b, &data, &size), WEFT_OK);
    EXPECT_EQ(std::string(static_cast<const char*>(data), size), recs[i]);
    weft_bytes_free(b);
  }
  ASSERT_EQ(weft_recordio_seek(r, offsets[2]), WEFT_OK);
  ASSERT_EQ(weft_recordio_read(r, &b), WEFT_OK);
  weft_bytes_free(b);
  ASSERT_EQ(weft_recordio_read(r, &b), WEFT_OK);
  EXPECT_EQ(b, nullptr);  // end of file
  EXPECT_EQ(weft_recordio_seek(r, -4), WEFT_ERR_VALUE);
  EXPECT_EQ(weft_recordio_write(r, "x", 1), WEFT_ERR_VALUE);
  EXPECT_EQ(weft_recordio_read(reinterpret_cast<weft_recordio_t*>(b), &b), WEFT_ERR_HANDLE);
  ASSERT_EQ(weft_recordio_free(r), WEFT_OK);
  EXPECT_EQ(weft_recordio_free(nullptr), WEFT_OK);

  EXPECT_EQ(weft_recordio_reader_create((path + ".missing").c_str(), &r), WEFT_ERR_IO);
  EXPECT_NE(std::string(weft_get_last_error()).find(path + ".missing"), std::string::npos);
  EXPECT_EQ(weft_recordio_reader_create(nullptr, &r), WEFT_ERR_VALUE);
  std::remove(path.c_str());
}

TEST(RecordIOCApi, ImageDecodeEncodeResize) {
  Image im = Gradient(6, 5, 3);
  std::string png = EncodeImage(ImageView::Of(im), ".png", 1);
  weft_ndarray_t* arr = nullptr;
  ASSERT_EQ(weft_image_decode(png.data(), png.size(), 1, 1, &arr), WEFT_OK) << weft_get_last_error();
  int64_t dims[3];
  int ndim = 0;
  ASSERT_EQ(weft_ndarray_get_shape(arr, dims, 3, &ndim), WEFT_OK);
  EXPECT_EQ(ndim, 3);
  EXPECT_EQ(dims[0], 6);
  EXPECT_EQ(dims[1], 5);
  EXPECT_EQ(dims[2], 3);
  std::vector<uint8_t> host(90);
  ASSERT_EQ(weft_ndarray_copy_to_host(arr, host.data(), host.size()), WEFT_OK);
  EXPECT_EQ(host, im.data);
  weft_bytes_t* enc = nullptr;
  ASSERT_EQ(weft_image_encode(arr, ".png", 3, 0, &enc), WEFT_OK);
  const void* data = nullptr;
  size_t size = 0;
  ASSERT_EQ(weft_bytes_get(enc, &data, &size), WEFT_OK);
  EXPECT_EQ(DecodeImage(data, size, -1).data, im.data);
  weft_bytes_free(enc);
  weft_ndarray_t* small = nullptr;
  ASSERT_EQ(weft_image_resize(arr, 2, 3, 0, &small), WEFT_OK);
  ASSERT_EQ(weft_ndarray_get_shape(small, dims, 3, &ndim), WEFT_OK);
  EXPECT_EQ(dims[0], 3);
  EXPECT_EQ(dims[1], 2);
  EXPECT_EQ(weft_image_encode(arr, ".gif", 3, 0, &enc), WEFT_ERR_VALUE);
  EXPECT_EQ(weft_image_decode("xx", 2, 1, 1, &small), WEFT_ERR_IO);
  EXPECT_EQ(weft_image_decode(png.data(), png.size(), 2, 1, &small), WEFT_ERR_VALUE);
  weft_ndarray_free(small);
  weft_ndarray_free(arr);
}
