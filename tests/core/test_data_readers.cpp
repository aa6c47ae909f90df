// File readers: CSV (RFC 4180 quoting, numeric and categorical targets, column selection, every
// error path) and image folders (PNG / JPEG decoding, bilinear resizing, concurrent get(), corrupt
// files), all on files written at run time.
#include <myelin/data/dataloader.h>
#include <myelin/data/dataset.h>
#include <myelin/data/readers.h>
#include <myelin/error.h>
#include <myelin/tensor.h>

#include <QTemporaryDir>
#include <QtTest>

#include "test_support.h"

#include <jpeglib.h>
#include <png.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

using namespace myelin;
using namespace myelin::data;

namespace {
// Writes 8-bit grey (channels 1) or RGB (channels 3) interleaved pixels with libpng.
void write_png(const std::string& path, int w, int h, int channels,
               const std::vector<uint8_t>& pixels) {
    png_image image;
    std::memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    image.width = static_cast<png_uint_32>(w);
    image.height = static_cast<png_uint_32>(h);
    image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
    QVERIFY(png_image_write_to_file(&image, path.c_str(), 0, pixels.data(), 0, nullptr));
}

// Writes a JPEG (quality 100) with libjpeg.
void write_jpeg(const std::string& path, int w, int h, int channels,
                const std::vector<uint8_t>& pixels) {
    FILE* f = std::fopen(path.c_str(), "wb");
    QVERIFY(f);
    jpeg_compress_struct cinfo;
    jpeg_error_mgr jerr;
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&cinfo);
    jpeg_stdio_dest(&cinfo, f);
    cinfo.image_width = static_cast<JDIMENSION>(w);
    cinfo.image_height = static_cast<JDIMENSION>(h);
    cinfo.input_components = channels;
    cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, 100, TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        auto* row = const_cast<JSAMPROW>(pixels.data() + cinfo.next_scanline * w * channels);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    std::fclose(f);
}
} // namespace

class TestDataReaders : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;

    std::string mkdir(const std::string& rel) {
        const std::string path = dir_.filePath(QString::fromStdString(rel)).toStdString();
        std::filesystem::create_directories(path);
        return path;
    }

    // Writes `text` byte for byte to a file in the temporary directory and returns its path.
    std::string write(const std::string& name, const std::string& text) {
        const std::string path = dir_.filePath(QString::fromStdString(name)).toStdString();
        std::ofstream out(path, std::ios::binary);
        out << text;
        return path;
    }

  private slots:
    void initTestCase() { QVERIFY(dir_.isValid()); }

    void csvNumericTarget() {
        const auto path = write("num.csv", "x,y,price\n1,2,10.5\n3, -4e1 ,+20\n\n5,6.25,30\n");
        CsvOptions o;
        o.target_column = "price";
        auto ds = read_csv(path, o);
        QCOMPARE(ds->size(), int64_t(3));
        QCOMPARE(ds->features().shape(), Dims({3, 2}));
        QCOMPARE(ds->features().dtype(), DType::Float32);
        QCOMPARE(ds->features().to_vector<float>(), std::vector<float>({1, 2, 3, -40, 5, 6.25f}));
        QCOMPARE(ds->targets().dtype(), DType::Float32);
        QCOMPARE(ds->targets().to_vector<float>(), std::vector<float>({10.5f, 20, 30}));
        QCOMPARE(ds->feature_names(), std::vector<std::string>({"x", "y"}));
        QCOMPARE(ds->target_name(), std::string("price"));
        QVERIFY(ds->classes().empty());
        QVERIFY(ds->class_counts().empty());
        const Example e = ds->get(1);
        QCOMPARE(e.input.to_vector<float>(), std::vector<float>({3, -40}));
        QCOMPARE(e.target.item<float>(), 20.0f);
        QVERIFY(error_of<IndexError>([&] { ds->get(3); }).contains("out of range"));
        QVERIFY(error_of<Error>([&] { ds->label(0); }).contains("no categorical target"));
    }

    void csvCategoricalTarget() {
        const auto path = write("cat.csv", "a;species;b\r\n1;virginica;2\r\n3;setosa;4\r\n"
                                           "5;versicolor;6\r\n7;setosa;8");
        CsvOptions o;
        o.delimiter = ';';
        o.target_column = "species";
        o.target_kind = CsvTargetKind::Categorical;
        o.feature_columns = {"b", "a"};
        auto ds = read_csv(path, o);
        QCOMPARE(ds->classes(), std::vector<std::string>({"setosa", "versicolor", "virginica"}));
        QCOMPARE(ds->targets().dtype(), DType::Int64);
        QCOMPARE(ds->targets().to_vector<int64_t>(), std::vector<int64_t>({2, 0, 1, 0}));
        QCOMPARE(ds->features().to_vector<float>(), std::vector<float>({2, 1, 4, 3, 6, 5, 8, 7}));
        QCOMPARE(ds->label(2), int64_t(1));
        QCOMPARE(ds->class_counts(), std::vector<int64_t>({2, 1, 1}));
        QCOMPARE(ds->get(3).target.item<int64_t>(), int64_t(0));

        // A DataLoader batches it like any dataset.
        DataLoaderOptions lo;
        lo.batch_size = 3;
        lo.num_workers = 2;
        DataLoader loader(ds, lo);
        auto b0 = loader.next();
        QVERIFY(b0.has_value());
        QCOMPARE(b0->input.shape(), Dims({3, 2}));
        QCOMPARE(b0->target.to_vector<int64_t>(), std::vector<int64_t>({2, 0, 1}));
        auto b1 = loader.next();
        QVERIFY(b1.has_value());
        QCOMPARE(b1->input.shape(), Dims({1, 2}));
        QVERIFY(!loader.next().has_value());
    }

    void csvQuoting() {
        // Quoted delimiters, doubled quotes and a line break inside quotes (the record after it
        // starts on line 5, which the error below checks).
        const auto path =
            write("quoted.csv", "\xEF\xBB\xBF\"na,me\",\"v\"\n\"a,\"\"b\"\"\",\"1.5\"\n"
                                "\"two\nlines\",2\n\"x\",\"\"\n");
        CsvOptions o;
        o.target_column = "na,me";
        o.target_kind = CsvTargetKind::Categorical;
        QVERIFY(error_of<Error>([&] {
                    read_csv(path, o);
                }).contains("row 5, column 'v': missing value"));
        const auto ok =
            write("quoted_ok.csv", "\"na,me\",v\n\"a,\"\"b\"\"\",\"1.5\"\n\"two\nlines\",2\n");
        auto ds = read_csv(ok, o);
        QCOMPARE(ds->classes(), std::vector<std::string>({"a,\"b\"", "two\nlines"}));
        QCOMPARE(ds->features().to_vector<float>(), std::vector<float>({1.5f, 2}));
        QCOMPARE(ds->feature_names(), std::vector<std::string>({"v"}));
    }

    void csvNoHeaderNoTarget() {
        const auto path = write("plain.csv", "1,2,3\n4,5,6\n");
        CsvOptions o;
        o.header = false;
        auto ds = read_csv(path, o);
        QCOMPARE(ds->features().shape(), Dims({2, 3}));
        QVERIFY(!ds->get(0).target.defined());
        QCOMPARE(ds->feature_names(), std::vector<std::string>({"0", "1", "2"}));
        o.target_column = std::to_string(2); // (a literal trips GCC 12 -Wrestrict at -O3)
        ds = read_csv(path, o);
        QCOMPARE(ds->targets().to_vector<float>(), std::vector<float>({3, 6}));
        // A header with no rows is an empty dataset.
        auto empty = read_csv(write("header_only.csv", "a,b\n"), CsvOptions{});
        QCOMPARE(empty->size(), int64_t(0));
        QCOMPARE(empty->features().shape(), Dims({0, 2}));
    }

    void csvErrors() {
        const auto missing = write("missing.csv", "x,y,t\n1,2,3\n4,,6\n");
        CsvOptions o;
        o.target_column = "t";
        QString e = error_of<Error>([&] { read_csv(missing, o); });
        QVERIFY2(e.contains("missing.csv") && e.contains("row 3, column 'y': missing value"),
                 qPrintable(e));

        const auto text = write("text.csv", "x,y,t\n1,2,3\n4,abc,6\n");
        e = error_of<Error>([&] { read_csv(text, o); });
        QVERIFY2(e.contains("text.csv") && e.contains("row 3, column 'y'") &&
                     e.contains("'abc' is not a finite number"),
                 qPrintable(e));
        QVERIFY(error_of<Error>([&] {
                    read_csv(write("nan.csv", "x,t\nnan,1\n"), o);
                }).contains("row 2, column 'x'"));
        QVERIFY(error_of<Error>([&] {
                    read_csv(write("tail.csv", "x,t\n1.5kg,1\n"), o);
                }).contains("'1.5kg'"));
        QVERIFY(error_of<Error>([&] {
                    read_csv(write("mtarget.csv", "x,t\n1,\n"), o);
                }).contains("row 2, column 't': missing value"));

        o.target_column = "price";
        e = error_of<Error>([&] { read_csv(missing, o); });
        QVERIFY2(e.contains("unknown target column 'price'") &&
                     e.contains("the columns are 'x', 'y', 't'"),
                 qPrintable(e));
        o.target_column = "t";
        o.feature_columns = {"x", "z"};
        e = error_of<Error>([&] { read_csv(missing, o); });
        QVERIFY2(e.contains("unknown feature column 'z'") && e.contains("'x', 'y', 't'"),
                 qPrintable(e));
        o.feature_columns = {"x", "t"};
        QVERIFY(error_of<Error>([&] {
                    read_csv(missing, o);
                }).contains("both a feature and the target"));
        o.feature_columns = {};

        e = error_of<Error>(
            [&] { read_csv(write("ragged.csv", "x,y,t\n1,2,3\n4,5\n7,8,9\n"), o); });
        QVERIFY2(e.contains("ragged.csv") && e.contains("row 3 has 2 fields but the header has 3"),
                 qPrintable(e));
        QVERIFY(error_of<Error>([&] {
                    read_csv(write("unclosed.csv", "x,t\n\"1,2\n"), o);
                }).contains("row 2: a quoted field is not closed"));
        QVERIFY(error_of<Error>([&] {
                    read_csv(write("badq.csv", "x,t\n\"1\"2,3\n"), o);
                }).contains("after the closing quote"));
        QVERIFY(error_of<Error>([&] {
                    read_csv(write("dup.csv", "x,x,t\n1,2,3\n"), o);
                }).contains("column 'x' twice"));
        QVERIFY(
            error_of<Error>([&] { read_csv(write("empty.csv", ""), o); }).contains("no records"));
        QVERIFY(error_of<Error>([&] {
                    read_csv(dir_.filePath("nope.csv").toStdString(), o);
                }).contains("cannot open"));
    }

    void imageFolder() {
        const std::string root = mkdir("images");
        mkdir("images/cat");
        mkdir("images/dog");
        // cat/a.png: 2x2 grey {0, 100; 200, 250}. dog/b.jpg: 8x8 constant RGB (30, 120, 210).
        // dog/c.PNG: 4x4 RGB, pixel (y, x) = (10y, 10x, 7). dog/notes.txt is not listed.
        write_png(root + "/cat/a.png", 2, 2, 1, {0, 100, 200, 250});
        std::vector<uint8_t> jpg;
        for (int k = 0; k < 64; ++k)
            jpg.insert(jpg.end(), {30, 120, 210});
        write_jpeg(root + "/dog/b.jpg", 8, 8, 3, jpg);
        std::vector<uint8_t> rgb;
        for (int y = 0; y < 4; ++y)
            for (int x = 0; x < 4; ++x)
                rgb.insert(rgb.end(), {uint8_t(10 * y), uint8_t(10 * x), uint8_t(7)});
        write_png(root + "/dog/c.PNG", 4, 4, 3, rgb);
        write("images/dog/notes.txt", "not an image");

        ImageFolderOptions o;
        o.height = 4;
        o.width = 4;
        auto ds = read_image_folder(root, o);
        QCOMPARE(ds->classes(), std::vector<std::string>({"cat", "dog"}));
        QCOMPARE(ds->size(), int64_t(3));
        QCOMPARE(ds->label(0), int64_t(0));
        QCOMPARE(ds->label(2), int64_t(1));
        QCOMPARE(ds->class_counts(), std::vector<int64_t>({1, 2}));

        // Same size: exact pixels, planar [C, H, W].
        Example c = ds->get(2);
        QCOMPARE(c.input.shape(), Dims({3, 4, 4}));
        QCOMPARE(c.input.dtype(), DType::UInt8);
        QCOMPARE(c.target.item<int64_t>(), int64_t(1));
        const auto cv = c.input.to_vector<uint8_t>();
        QCOMPARE(int(cv[0 * 16 + 2 * 4 + 3]), 20); // R at (2, 3)
        QCOMPARE(int(cv[1 * 16 + 2 * 4 + 3]), 30); // G at (2, 3)
        QCOMPARE(int(cv[2 * 16 + 1 * 4 + 1]), 7);  // B

        // Grey PNG upsampled 2x2 -> 4x4 and replicated to 3 channels. Half-pixel bilinear: the
        // source coordinates are {0, 0.25, 0.75, 1}, so the top row is {0, 25, 75, 100} and the
        // left column {0, 50, 150, 200}.
        const auto av = ds->get(0).input.to_vector<uint8_t>();
        QCOMPARE(av.size(), size_t(48));
        const std::vector<int> top = {av[0], av[1], av[2], av[3]};
        QCOMPARE(top, std::vector<int>({0, 25, 75, 100}));
        const std::vector<int> left = {av[0], av[4], av[8], av[12]};
        QCOMPARE(left, std::vector<int>({0, 50, 150, 200}));
        QCOMPARE(int(av[15]), 250);
        QCOMPARE(int(av[16 + 15]), 250); // G equals grey

        // JPEG downsampled 8x8 -> 4x4, as float in [0, 1] (JPEG is lossy: small tolerance).
        o.as_float = true;
        auto fds = read_image_folder(root, o);
        Tensor b = fds->get(1).input;
        QCOMPARE(b.dtype(), DType::Float32);
        const auto bv = b.to_vector<float>();
        const float expect[3] = {30 / 255.f, 120 / 255.f, 210 / 255.f};
        for (size_t k = 0; k < bv.size(); ++k)
            QVERIFY2(std::abs(bv[k] - expect[k / 16]) < 3 / 255.f, qPrintable(QString::number(k)));

        // One channel: grey stays grey; a constant colour gives a constant grey.
        o.channels = 1;
        o.height = 2;
        o.width = 3;
        auto gds = read_image_folder(root, o);
        QCOMPARE(gds->get(0).input.shape(), Dims({1, 2, 3}));
        const auto gv = gds->get(1).input.to_vector<float>();
        for (float v : gv)
            QVERIFY(std::abs(v - gv[0]) < 2 / 255.f && v > 0.2f && v < 0.7f);

        // Concurrent get() equals serial get(), and a DataLoader with workers batches it.
        std::vector<std::vector<float>> serial;
        for (int64_t i = 0; i < fds->size(); ++i)
            serial.push_back(fds->get(i).input.to_vector<float>());
        std::vector<std::thread> threads;
        std::vector<int> mismatches(4, 0);
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                for (int rep = 0; rep < 20; ++rep)
                    for (int64_t i = 0; i < fds->size(); ++i)
                        if (fds->get(i).input.to_vector<float>() != serial[size_t(i)])
                            ++mismatches[size_t(t)];
            });
        for (auto& th : threads)
            th.join();
        QCOMPARE(mismatches, std::vector<int>(4, 0));
        DataLoaderOptions lo;
        lo.batch_size = 2;
        lo.num_workers = 3;
        DataLoader loader(fds, lo);
        auto batch = loader.next();
        QVERIFY(batch.has_value());
        QCOMPARE(batch->input.shape(), Dims({2, 3, 4, 4}));
        QCOMPARE(batch->target.to_vector<int64_t>(), std::vector<int64_t>({0, 1}));
    }

    void imageErrors() {
        const std::string root = mkdir("bad");
        mkdir("bad/x");
        write_png(root + "/x/ok.png", 1, 1, 1, {42});
        write("bad/x/broken.png", std::string("\x89PNG\r\n\x1a\n", 8) + "garbage garbage");
        write("bad/x/fake.jpg", "GIF89a not really");
        std::vector<uint8_t> jpg(16 * 16 * 3, 128);
        write_jpeg(root + "/x/whole.jpg", 16, 16, 3, jpg);
        {
            std::ifstream in(root + "/x/whole.jpg", std::ios::binary);
            std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
            // Cut inside the scan data: libjpeg only warns there, the reader must still fail.
            write("bad/x/truncated.jpg", bytes.substr(0, bytes.size() - 40));
        }
        ImageFolderOptions o;
        o.height = 2;
        o.width = 2;
        auto ds = read_image_folder(root, o);
        // Sorted: broken.png, fake.jpg, ok.png, truncated.jpg, whole.jpg
        QCOMPARE(ds->size(), int64_t(5));
        QString e = error_of<Error>([&] { ds->get(0); });
        QVERIFY2(e.contains("broken.png") && e.contains("corrupt PNG"), qPrintable(e));
        e = error_of<Error>([&] { ds->get(1); });
        QVERIFY2(e.contains("fake.jpg") && e.contains("unsupported image format"), qPrintable(e));
        QCOMPARE(ds->get(2).input.to_vector<uint8_t>(), std::vector<uint8_t>(12, 42));
        e = error_of<Error>([&] { ds->get(3); });
        QVERIFY2(e.contains("truncated.jpg") && e.contains("corrupt JPEG"), qPrintable(e));
        QCOMPARE(ds->get(4).input.shape(), Dims({3, 2, 2}));

        QCOMPARE(read_image(root + "/x/ok.png", 1).to_vector<uint8_t>(),
                 std::vector<uint8_t>({42}));
        mkdir("bad/y"); // a class folder without images
        QVERIFY(error_of<Error>([&] {
                    read_image_folder(root, o);
                }).contains("class folder 'y' holds no"));
        QVERIFY(error_of<Error>([&] {
                    read_image_folder(root + "/x/ok.png", o);
                }).contains("not a directory"));
        o.channels = 4;
        QVERIFY(error_of<Error>([&] { read_image_folder(root, o); }).contains("channels must be"));
        o.channels = 3;
        o.height = 0;
        QVERIFY(error_of<Error>([&] { read_image_folder(root, o); }).contains("positive"));
    }
};

QTEST_GUILESS_MAIN(TestDataReaders)
#include "test_data_readers.moc"
