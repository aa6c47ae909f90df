// Absurd data requests (issue 41): a CSV with one 1 GB line, a text data set with a line of 10^8
// characters, an image folder of thousands of empty files (and more files than the limit), and a
// batch size of 10^9 are refused with a message naming the file, line or option and the limit,
// before memory or time grows with the input. The long lines are sparse files (no disk used), and
// the reads are measured in bytes this process read (/proc/self/io), which must stay far below
// the file's size.
#include <myelin/data/dataloader.h>
#include <myelin/data/limits.h>
#include <myelin/data/readers.h>
#include <myelin/data/sampler.h>
#include <myelin/data/text.h>
#include <myelin/error.h>
#include <myelin/io/project.h>
#include <myelin/tensor.h>
#include <myelin/train/data_setup.h>
#include <myelin/train/memory_estimate.h>
#include <myelin/train/trainer.h>

#include <QTemporaryDir>
#include <QtTest>

#include "test_support.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using namespace myelin;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kGiB = int64_t(1) << 30;
// Far more than one line's limit and one read chunk, far less than the sparse files' sizes.
constexpr int64_t kReadBound = int64_t(64) << 20;

// Bytes this process has read through read() so far (rchar); -1 where /proc does not say.
int64_t bytes_read_so_far() {
    std::ifstream io("/proc/self/io");
    std::string key;
    int64_t value = 0;
    while (io >> key >> value)
        if (key == "rchar:") return value;
    return -1;
}

// `prefix`, then zero bytes up to `size` (a sparse file: it takes no disk).
void write_sparse(const std::string& path, const std::string& prefix, int64_t size) {
    {
        std::ofstream out(path, std::ios::binary);
        out << prefix;
    }
    fs::resize_file(path, uintmax_t(size));
}

void write_file(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << text;
}

// The message of the Error f() throws and how many bytes were read meanwhile.
template <typename F> std::pair<QString, int64_t> error_and_bytes_read(F&& f) {
    const int64_t before = bytes_read_so_far();
    const QString message = error_of<Error>(f);
    const int64_t after = bytes_read_so_far();
    return {message, before < 0 || after < 0 ? -1 : after - before};
}

io::Project example(const char* name) {
    return io::load_project(std::string(MYELIN_SOURCE_DIR) + "/resources/examples/" + name +
                            ".myelin");
}

} // namespace

class TestDataLimits : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() { QVERIFY(dir_.isValid()); }

    // A CSV whose third line is 1 GB of zero bytes: refused after reading about 17 MiB of it.
    void csvWithAOneGigabyteLine() {
        const std::string path = file("one_gb_line.csv");
        write_sparse(path, "a,b\n1,2\n", kGiB);
        data::CsvOptions options;
        options.target_column = "b";
        const auto [message, bytes] = error_and_bytes_read([&] { data::read_csv(path, options); });
        QCOMPARE(message, QString::fromStdString("cannot read '" + path +
                                                 "': line 3 is longer than 16 MiB (the limit)"));
        if (bytes < 0) QSKIP("/proc/self/io is not readable here");
        QVERIFY2(bytes < kReadBound, qPrintable(QString::number(bytes)));
        // The csv-text source reads the same records.
        QVERIFY(error_of<Error>([&] {
                    data::read_csv_text(path, {.text_column = "a", .label_column = "b"});
                }).contains(QStringLiteral("line 3 is longer than 16 MiB (the limit)")));
    }

    // A text-lines class file with a line of 10^8 characters: refused while reading, naming the
    // file and the line; the other class's file is fine.
    void textWithAHundredMillionCharacterLine() {
        const std::string words = file("words.txt"), long_line = file("long_line.txt");
        write_file(words, "hello\nworld\n");
        write_sparse(long_line, "short\nlines\n", 12 + 100'000'000);
        data::TextLinesOptions options;
        options.classes = {{"words", words}, {"long", long_line}};
        const auto [message, bytes] = error_and_bytes_read([&] { data::read_text_lines(options); });
        QCOMPARE(message, QString::fromStdString("cannot read '" + long_line +
                                                 "': line 3 is longer than 16 MiB (the limit)"));
        if (bytes < 0) QSKIP("/proc/self/io is not readable here");
        QVERIFY2(bytes < kReadBound, qPrintable(QString::number(bytes)));
    }

    // The limit itself: a line of exactly kMaxLineBytes is read, one byte more is not, whether
    // the line ends in a line break inside a read chunk or ends the file.
    void lineLimitBoundary() {
        const std::string at_limit(data::kMaxLineBytes, 'x');
        std::istringstream fits("first\n" + at_limit + "\nlast");
        QCOMPARE(data::read_text_with_line_limit(fits, "fits.txt").size(), 6 + at_limit.size() + 5);
        const QString over_message =
            QStringLiteral("cannot read 'over.txt': line 2 is longer than 16 MiB (the limit)");
        std::istringstream over("first\n" + at_limit + "x\nlast\n");
        QCOMPARE(error_of<Error>([&] { data::read_text_with_line_limit(over, "over.txt"); }),
                 over_message);
        std::istringstream over_at_end("first\n" + at_limit + "x");
        QCOMPARE(error_of<Error>([&] { data::read_text_with_line_limit(over_at_end, "over.txt"); }),
                 over_message);
    }

    // 3,000 empty files in two class folders: refused when listed, naming the count and the
    // first three in path order, before any is decoded.
    void imageFolderOfEmptyFiles() {
        const fs::path root = fs::path(file("empty_images"));
        for (int i = 0; i < 3000; ++i) {
            char name[32];
            std::snprintf(name, sizeof name, "%s/%04d.png", i % 2 ? "cat" : "dog", i);
            write_file(root / name, "");
        }
        data::ImageFolderOptions options{.height = 8, .width = 8};
        QCOMPARE(error_of<Error>([&] { data::read_image_folder(root.string(), options); }),
                 QString::fromStdString("cannot read '" + root.string() +
                                        "': 3000 of its 3000 image files are empty (0 bytes): "
                                        "'cat/0001.png', 'cat/0003.png', 'cat/0005.png', ..."));
        // More image files than the limit: listing stops at the limit and says so.
        options.max_files = 1000;
        QCOMPARE(error_of<Error>([&] { data::read_image_folder(root.string(), options); }),
                 QString::fromStdString("cannot read '" + root.string() +
                                        "': holds more than 1000 image files (the limit; listing "
                                        "stopped there): use a subset of the images"));
        QCOMPARE(data::ImageFolderOptions{}.max_files, data::kMaxFolderFiles);
    }

    // One empty file among others is named alone; an empty or undecodable file read directly
    // says what it is.
    void oneEmptyImageIsNamed() {
        const fs::path root = fs::path(file("one_empty"));
        write_file(root / "a" / "garbage.png", "not an image at all");
        write_file(root / "b" / "empty.jpg", "");
        QCOMPARE(error_of<Error>(
                     [&] { data::read_image_folder(root.string(), {.height = 4, .width = 4}); }),
                 QString::fromStdString("cannot read '" + root.string() +
                                        "': 1 of its 2 image files is empty (0 bytes): "
                                        "'b/empty.jpg'"));
        const std::string empty = (root / "b" / "empty.jpg").string();
        QCOMPARE(error_of<Error>([&] { data::read_image(empty); }),
                 QString::fromStdString("cannot read '" + empty +
                                        "': the file is empty (0 bytes), not an image"));
        const std::string garbage = (root / "a" / "garbage.png").string();
        QCOMPARE(error_of<Error>([&] { data::read_image(garbage); }),
                 QString::fromStdString("cannot read '" + garbage +
                                        "': unsupported image format (only PNG and JPEG are "
                                        "read)"));
        // A 4 GB "PNG" (sparse, a PNG signature then zeros) is refused from its size, unread.
        const std::string huge = file("huge.png");
        write_sparse(huge, "\x89PNG\r\n\x1a\n", 4 * kGiB);
        const auto [message, bytes] = error_and_bytes_read([&] { data::read_image(huge); });
        QVERIFY2(message.contains(QStringLiteral("the file holds 4294967296 bytes, more than an "
                                                 "image of 268435456 pixels (the limit) can take")),
                 qPrintable(message));
        if (bytes >= 0) QVERIFY2(bytes < kReadBound, qPrintable(QString::number(bytes)));
    }

    // A batch size of 10^9 is refused by the memory pre-flight, which allocates nothing that
    // grows with the batch: the estimate holds hundreds of GB of activations as numbers.
    void hugeBatchIsRefusedByThePreflight() {
        const io::Project p = example("tabular_regression");
        const std::string dir = std::string(MYELIN_SOURCE_DIR) + "/resources/examples";
        const train::MemoryEstimate e =
            train::estimate_training_memory(p, dir, 1'000'000'000, kCPU);
        QVERIFY(e.total_bytes() > int64_t(100) * kGiB);
        const train::MemoryVerdict v =
            train::check_training_memory(e, {16 * kGiB, "this machine"}, p, dir);
        QCOMPARE(v.fit, train::MemoryFit::DoesNotFit);
        QVERIFY2(v.message.starts_with("training at batch size 1000000000 needs about "),
                 v.message.c_str());
        QVERIFY2(v.message.find("a batch size of ") != std::string::npos, v.message.c_str());
        QVERIFY(v.largest_batch >= 1 && v.largest_batch < 1'000'000'000);
    }

    // Beyond kMaxBatchSize a batch size is refused where it enters: the project file (naming
    // the field) and the batch sampler; products of it with a layer's size stay in 64 bits.
    void batchSizeAboveTheLimitIsRefused() {
        io::Project p = example("tabular_regression");
        p.data.batch_size = 32;
        const std::string path = file("huge_batch.myelin");
        io::save_project(p, path);
        QString text;
        {
            QFile f(QString::fromStdString(path));
            QVERIFY(f.open(QIODevice::ReadOnly));
            text = QString::fromUtf8(f.readAll());
        }
        QVERIFY(text.contains(QStringLiteral("\"batch_size\": 32")));
        text.replace(QStringLiteral("\"batch_size\": 32"),
                     QStringLiteral("\"batch_size\": 4611686018427387904"));
        {
            QFile f(QString::fromStdString(path));
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write(text.toUtf8());
        }
        CHECK_ERROR(Error, io::load_project(path), "batch_size", "expected at most 1073741824");
        CHECK_ERROR(Error,
                    data::BatchSampler(std::make_shared<data::SequentialSampler>(10),
                                       data::kMaxBatchSize + 1, false),
                    "batch_size 1073741825 is more than 1073741824 (the limit)");
    }

    // A batch larger than the training split: one short batch per epoch, as PyTorch's
    // DataLoader, said in the data's notes; with drop_last no batch at all.
    void batchLargerThanTheData() {
        auto dataset = std::make_shared<data::TensorDataset>(
            zeros({10, 3}), zeros({10}, DType::Int64), std::vector<std::string>{"a"});
        data::DataLoaderOptions options;
        options.batch_size = 1'000'000'000;
        data::DataLoader loader(dataset, options);
        QCOMPARE(loader.size(), int64_t(1));
        int batches = 0;
        for (const data::Example& batch : loader) {
            QCOMPARE(batch.input.size(0), int64_t(10));
            ++batches;
        }
        QCOMPARE(batches, 1);
        options.batch_size = 11;
        options.drop_last = true;
        data::DataLoader dropping(dataset, options);
        QCOMPARE(dropping.size(), int64_t(0));

        io::Project p = example("tabular_regression");
        p.data.batch_size = 1'000'000'000;
        const train::DataSplits splits = train::make_data(
            p.data, std::string(MYELIN_SOURCE_DIR) + "/resources/examples", p.train.seed);
        const std::string n = std::to_string(splits.train->size());
        QCOMPARE(splits.notes.size(), size_t(1));
        QCOMPARE(splits.notes[0], "the batch size 1000000000 is larger than the training split (" +
                                      n + " examples): each epoch is one batch of " + n);
        // With drop_last the trainer refuses a run that would have no batch.
        p.data.drop_last = true;
        train::TrainerOptions trainer_options;
        trainer_options.project_dir = std::string(MYELIN_SOURCE_DIR) + "/resources/examples";
        const std::string no_batch = "the training split has fewer examples (" + n +
                                     ") than one batch (1000000000) with drop_last";
        CHECK_ERROR(Error, train::Trainer(p, trainer_options), no_batch.c_str());
        p.data.drop_last = false;
        p.data.batch_size = 32;
        QVERIFY(train::make_data(p.data, std::string(MYELIN_SOURCE_DIR) + "/resources/examples",
                                 p.train.seed)
                    .notes.empty());
    }

    // The pre-flight counts an image folder as its list of files, not the bytes of its images
    // (decoded a batch at a time): ten 100 MB files are a few kB of listing.
    void imageFolderMemoryIsItsListing() {
        const fs::path root = fs::path(file("big_images"));
        for (int i = 0; i < 10; ++i) {
            fs::create_directories(root / "c");
            write_sparse((root / "c" / (std::to_string(i) + ".png")).string(), "",
                         int64_t(100) << 20);
        }
        io::Project p = example("tabular_regression");
        p.data.source = {"image-folder", {{"root", root.string()}}};
        const train::MemoryEstimate e = train::estimate_training_memory(p, ".", 32, kCPU);
        int64_t data_part = -1;
        for (const train::MemoryPart& part : e.parts)
            if (part.name == "data (image-folder)") data_part = part.bytes;
        QVERIFY2(data_part > 0 && data_part < (int64_t(1) << 20),
                 qPrintable(QString::number(data_part)));
    }

  private:
    std::string file(const char* name) const { return dir_.filePath(name).toStdString(); }
    QTemporaryDir dir_;
};

QTEST_GUILESS_MAIN(TestDataLimits)
#include "test_data_limits.moc"
