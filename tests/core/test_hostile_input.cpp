// Hostile but small inputs (issue 20): every JSON entry point refuses nesting 10^6 deep before
// any recursive parse, and the readers refuse well-formed files that ask for unbounded work or
// memory (a 1 GB CSV line, 10^6 columns, IDX sizes whose product overflows, millions of
// safetensors entries) quickly, within a memory limit the test sets on a child process.
#include <myelin/data/readers.h>
#include <myelin/error.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/json_limits.h>
#include <myelin/io/project.h>
#include <myelin/io/safetensors.h>
#include <myelin/tensor.h>

#include <QTemporaryDir>
#include <QtTest>

#include "test_support.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <istream>
#include <sstream>
#include <streambuf>
#include <string>

using namespace myelin;

namespace {

std::string nested(size_t depth) {
    return std::string(depth, '[') + std::string(depth, ']');
}

// An endless stream of one repeated character, generated on the fly: a "file" with a line of any
// length that never exists in memory.
class EndlessBuf : public std::streambuf {
  public:
    explicit EndlessBuf(char c) : chunk_(1 << 16, c) {}

  protected:
    int_type underflow() override {
        setg(chunk_.data(), chunk_.data(), chunk_.data() + chunk_.size());
        return traits_type::to_int_type(chunk_[0]);
    }

  private:
    std::string chunk_;
};

// Virtual memory the process maps now, in bytes (VmSize).
size_t mapped_bytes() {
    std::ifstream status("/proc/self/status");
    std::string key;
    size_t kib = 0;
    while (status >> key)
        if (key == "VmSize:" && status >> kib) return kib * 1024;
    return 0;
}

constexpr bool kSanitized =
#if defined(__SANITIZE_ADDRESS__)
    true; // ASan maps terabytes of shadow memory; an address-space limit means nothing there
#else
    false;
#endif

// Runs f() in a child process whose address space may grow by at most `budget_mb` over the
// parent's, and returns f()'s error message (or what happened instead). Without sanitizers the
// limit is real: reading what f() reads must not need more memory than that.
template <typename F> QString error_within_memory(size_t budget_mb, F&& f) {
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) return QStringLiteral("pipe failed");
    const pid_t child = ::fork();
    if (child < 0) return QStringLiteral("fork failed");
    if (child == 0) {
        ::close(pipe_fds[0]);
        if (!kSanitized) {
            const rlim_t limit = mapped_bytes() + budget_mb * (size_t(1) << 20);
            const rlimit rl{limit, limit};
            ::setrlimit(RLIMIT_AS, &rl);
        }
        std::string message;
        try {
            f();
            message = "no exception";
        } catch (const Error& e) {
            message = e.what();
        } catch (const std::bad_alloc&) {
            message = "out of memory (std::bad_alloc)";
        } catch (const std::exception& e) {
            message = std::string("wrong exception type: ") + e.what();
        }
        const ssize_t written = ::write(pipe_fds[1], message.data(), message.size());
        ::_exit(written == ssize_t(message.size()) ? 0 : 1);
    }
    ::close(pipe_fds[1]);
    std::string message;
    char buffer[4096];
    for (ssize_t n; (n = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;)
        message.append(buffer, size_t(n));
    ::close(pipe_fds[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return QStringLiteral("the child died (status %1): %2")
            .arg(status)
            .arg(QString::fromStdString(message));
    return QString::fromStdString(message);
}

std::string le64(uint64_t v) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i)
        out[size_t(i)] = char((v >> (8 * i)) & 0xff);
    return out;
}

} // namespace

class TestHostileInput : public QObject {
    Q_OBJECT

  private slots:
    void initTestCase() { QVERIFY(dir_.isValid()); }

    void nestingDepthIsCountedOutsideStrings() {
        QCOMPARE(io::json_nesting_depth("1"), int64_t(0));
        QCOMPARE(io::json_nesting_depth("[]"), int64_t(1));
        QCOMPARE(io::json_nesting_depth("{\"a\": [[1], {\"b\": []}], \"c\": {}}"), int64_t(4));
        QCOMPARE(io::json_nesting_depth("[\"[[[[\", \"\\\"[[[\", \"\\\\\"]"), int64_t(1));
        QCOMPARE(io::json_nesting_depth("[\"\\\\\", [[]]]"), int64_t(3)); // "\\" closes the string
        QCOMPARE(io::json_nesting_depth("]]]][["), int64_t(2)); // unbalanced: the parser reports
        QCOMPARE(io::json_nesting_depth(nested(1000000)), int64_t(1000000));
        QVERIFY(io::json_nesting_problem(nested(64)).empty());
        QCOMPARE(QString::fromStdString(io::json_nesting_problem(nested(65))).left(56),
                 QStringLiteral("nests arrays and objects 65 levels deep; the limit is 64"));
    }

    void projectFilesRefuseDeepNesting() {
        const std::string deep = "{\"format_version\": 1, \"model\": " + nested(1000000) + "}";
        const QString message =
            error_of<io::ProjectError>([&] { io::parse_project(deep, "deep.myelin"); });
        QVERIFY2(message.startsWith(QStringLiteral(
                     "deep.myelin: the JSON nests arrays and objects 1000001 levels deep")),
                 qPrintable(message));
        // The same inside a string is text, and the reader gets to say what is wrong with it.
        const std::string quoted = "{\"format_version\": 1, \"name\": \"" + nested(1000) + "\"}";
        QVERIFY(error_of<io::ProjectError>([&] {
                    io::parse_project(quoted, "q.myelin");
                }).contains(QStringLiteral("q.myelin:(top level): missing field 'model'")));
        // The studio's layout data goes through the writer too.
        io::Project project;
        project.ui_json = "{\"a\": " + nested(1000000) + "}";
        QVERIFY(error_of<Error>([&] {
                    io::serialize_project(project);
                }).startsWith(QStringLiteral("project ui data nests arrays and objects 1000001")));
    }

    void checkpointMetadataRefusesDeepNesting() {
        const std::string path =
            dir_.filePath(QStringLiteral("deep_meta.safetensors")).toStdString();
        io::save_safetensors(path, {{"w", zeros({2})}},
                             {{"format", io::kCheckpointFormat},
                              {"training", "{\"epoch\": " + nested(1000000) + "}"}});
        const QString message = error_of<Error>([&] { io::load_checkpoint(path); });
        QVERIFY2(message.startsWith(QString::fromStdString(path) +
                                    ": metadata 'training' nests arrays and objects 1000001 "
                                    "levels deep; the limit is 64"),
                 qPrintable(message));
    }

    // A header may hold at most 100,000 tensors: the most entries that fit in the 100 MB header
    // limit (about two million) are refused early, in a child whose memory may grow by 400 MB
    // (the file's bytes are 100 MB of that).
    void safetensorsEntryCountIsBounded() {
        std::string header = "{";
        const std::string tiny = "{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,0]}";
        for (int i = 0; header.size() + tiny.size() + 16 < 99000000; ++i)
            header += (i ? ",\"" : "\"") + std::to_string(i) + "\":" + tiny;
        header += "}";
        header.append((8 - header.size() % 8) % 8, ' ');
        const std::string bytes = le64(header.size()) + header;
        const QString message = error_within_memory(400, [&] {
            io::load_safetensors_from_memory(reinterpret_cast<const uint8_t*>(bytes.data()),
                                             bytes.size(), "many.safetensors");
        });
        QVERIFY2(message == QStringLiteral("cannot read 'many.safetensors': the header lists more "
                                           "than 100000 tensors (the limit; no real model comes "
                                           "close)"),
                 qPrintable(message));
        // Millions of values in one shape: refused while parsing, not after.
        std::string shape = "{\"a\":{\"dtype\":\"U8\",\"shape\":[0";
        for (int i = 0; i < 2000000; ++i)
            shape += ",0";
        shape += "],\"data_offsets\":[0,0]}}";
        shape.append((8 - shape.size() % 8) % 8, ' ');
        const std::string shape_bytes = le64(shape.size()) + shape;
        const QString values = error_within_memory(200, [&] {
            io::load_safetensors_from_memory(reinterpret_cast<const uint8_t*>(shape_bytes.data()),
                                             shape_bytes.size(), "wide.safetensors");
        });
        QVERIFY2(values.startsWith(QStringLiteral(
                     "cannot read 'wide.safetensors': the header holds more than 1600000 JSON")),
                 qPrintable(values));
    }

    // A CSV "file" with a 1 GB line (generated, never stored) is refused after 16 MiB.
    void csvLineLengthIsBounded() {
        const QString message = error_within_memory(200, [] {
            EndlessBuf endless('7');
            std::istream in(&endless);
            data::CsvDataset dataset(in, "endless.csv");
        });
        QCOMPARE(message,
                 QStringLiteral("cannot read 'endless.csv': line 1 is longer than 16 MiB (the "
                                "limit)"));
    }

    void csvColumnCountIsBounded() {
        std::string wide;
        for (int i = 0; i < 1000000; ++i)
            wide += (i ? ",c" : "c") + std::to_string(i);
        wide += "\n";
        const QString message = error_within_memory(400, [&] {
            std::istringstream in(wide);
            data::CsvDataset dataset(in, "wide.csv");
        });
        QCOMPARE(message, QStringLiteral("cannot read 'wide.csv': row 1 has more than 100000 "
                                         "fields (the limit)"));
        // A wide header within the limit is checked for repeated names in linear time.
        std::string header;
        for (int i = 0; i < 99999; ++i)
            header += "c" + std::to_string(i) + ",";
        header += "c7\n";
        std::istringstream in(header + header);
        QVERIFY(error_of<Error>([&] { data::CsvDataset dataset(in, "dup.csv"); })
                    .contains(QStringLiteral("the header names column 'c7' twice (columns 8 and "
                                             "100000)")));
    }

    // IDX sizes of 2^31 x 2^31 x 2^31 (a product that overflows 64 bits) are refused from the
    // header, before anything is allocated.
    void idxDimensionProductIsBounded() {
        const std::string path = dir_.filePath(QStringLiteral("huge.idx")).toStdString();
        {
            std::ofstream out(path, std::ios::binary);
            const unsigned char header[] = {0, 0, 0x08, 3, 0x80, 0, 0, 0, 0x80, 0,
                                            0, 0, 0x80, 0, 0,    0, 1, 2, 3,    4};
            out.write(reinterpret_cast<const char*>(header), sizeof header);
        }
        const QString message = error_within_memory(100, [&] { data::read_idx(path); });
        QVERIFY2(message.contains(QStringLiteral("IDX dimensions are implausibly large")),
                 qPrintable(message));
    }

  private:
    QTemporaryDir dir_;
};

QTEST_GUILESS_MAIN(TestHostileInput)
#include "test_hostile_input.moc"
