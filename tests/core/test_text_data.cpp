// Text data: tokens (char and word, non-ASCII), UTF-8 checks, the vocabulary (min frequency, max
// size, deterministic order, training split only), padding / truncation / lengths, the readers
// (invalid lines skipped and reported, missing files named, Latin-1, duplicates, per-class
// caps), the vocabulary's round trip through checkpoint metadata and evaluation using it, and
// the word-language source on small files (plus the real word lists when installed).
#include <myelin/data/text.h>
#include <myelin/error.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/project.h>
#include <myelin/train/data_setup.h>
#include <myelin/train/evaluation.h>
#include <myelin/train/trainer.h>

#include <QTemporaryDir>
#include <QtTest>

#include "test_support.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

using namespace myelin;
using namespace myelin::data;

namespace {

using Tokens = std::vector<std::string>;

void writeFile(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
}

// A text-lines or csv-text data spec as a project's "data" JSON.
spec::DataSpec dataSpec(const std::string& source_json, double validation = 0.2) {
    const std::string project =
        R"({"format_version": 1, "name": "t", "model": {"nodes": [],
        "edges": []}, "data": {"source": )" +
        source_json + R"(, "validation_fraction": )" + std::to_string(validation) +
        R"(, "num_workers": 0}, "training": {"loss": {"kind": "CrossEntropyLoss"}, "optimizer": {"kind": "Adam"}}})";
    return io::parse_project(project).data;
}

// The token ids of example `i` of `split`.
std::vector<int64_t> ids(const Dataset& split, int64_t i) {
    const Tensor t = split.get(i).input;
    std::vector<int64_t> out;
    for (int64_t k = 0; k < t.numel(); ++k)
        out.push_back(t.select(0, k).item<int64_t>());
    return out;
}

// A classifier over char tokens: Input int64 [8] -> Embedding -> Flatten -> Linear.
std::string textProject(const std::string& classes, int64_t min_frequency) {
    return R"({"format_version": 1, "name": "text", "model": {"nodes": [
        {"id": 1, "kind": "Input", "attrs": {"shape": [8], "dtype": "int64"}},
        {"id": 2, "kind": "Embedding", "attrs": {"num_embeddings": 64, "embedding_dim": 4}},
        {"id": 3, "kind": "Flatten"},
        {"id": 4, "kind": "Linear", "attrs": {"in_features": 32, "out_features": 2}},
        {"id": 5, "kind": "Output"}],
        "edges": [{"from": 1, "to": 2}, {"from": 2, "to": 3}, {"from": 3, "to": 4},
                  {"from": 4, "to": 5}]},
      "data": {"source": {"kind": "text-lines", "classes": ")" +
           classes + R"(", "max_length": 8, "min_frequency": )" + std::to_string(min_frequency) +
           R"(, "test_fraction": 0.25}, "validation_fraction": 0.25, "batch_size": 8,
           "num_workers": 0},
      "training": {"loss": {"kind": "CrossEntropyLoss"}, "optimizer": {"kind": "Adam", "lr": 0.01},
                   "epochs": 1, "seed": 4}})";
}

} // namespace

class TestTextData : public QObject {
    Q_OBJECT

  private slots:
    void charTokensAreCodePoints() {
        QCOMPARE(tokenize("Käse", TokenLevel::Char), (Tokens{"K", "ä", "s", "e"}));
        QCOMPARE(tokenize("été å", TokenLevel::Char), (Tokens{"é", "t", "é", " ", "å"}));
        QCOMPARE(tokenize("", TokenLevel::Char), Tokens{});
    }

    void wordTokensSplitSpaceAndPunctuation() {
        QCOMPARE(tokenize("Hello, wörld! Ça va?", TokenLevel::Word),
                 (Tokens{"Hello", ",", "wörld", "!", "Ça", "va", "?"}));
        QCOMPARE(tokenize("  gå\tpå  «fête»  ", TokenLevel::Word),
                 (Tokens{"gå", "på", "«", "fête", "»"}));
        QCOMPARE(tokenize("don't", TokenLevel::Word), (Tokens{"don", "'", "t"}));
    }

    void utf8AndLowerCase() {
        QVERIFY(is_valid_utf8("Größe å é"));
        QVERIFY(!is_valid_utf8("\xC3\x28"));     // a lead byte without its continuation
        QVERIFY(!is_valid_utf8("\xC0\xAF"));     // overlong '/'
        QVERIFY(!is_valid_utf8("\xED\xA0\x80")); // a surrogate
        QVERIFY(!is_valid_utf8("\xFF"));
        QCOMPARE(lowercase_utf8("ÄÖÜ ÉÈ Å ŁŚ ΑΩ ДЯ ABC ß"), std::string("äöü éè å łś αω дя abc ß"));
        QCOMPARE(latin1_to_utf8("gr\xE5"), std::string("grå"));
        QCOMPARE(text_file_encoding_from_string("auto"), TextFileEncoding::Utf8ElseLatin1);
        QVERIFY(error_of<Error>([] {
                    text_file_encoding_from_string("utf-16");
                }).contains("utf-8, latin-1, auto"));
    }

    void vocabularyFrequencySizeAndOrder() {
        const std::vector<Tokens> examples = {{"b", "a", "c"}, {"a", "b"}, {"a", "d"}, {"e"}};
        // Counts a:3 b:2 c:1 d:1 e:1; ties in byte order.
        QCOMPARE(build_vocabulary(examples, {}),
                 (Tokens{"<pad>", "<unk>", "a", "b", "c", "d", "e"}));
        QCOMPARE(build_vocabulary(examples, {2, 0}), (Tokens{"<pad>", "<unk>", "a", "b"}));
        QCOMPARE(build_vocabulary(examples, {1, 4}), (Tokens{"<pad>", "<unk>", "a", "b"}));
        std::vector<Tokens> reversed(examples.rbegin(), examples.rend());
        for (auto& t : reversed)
            std::reverse(t.begin(), t.end());
        QCOMPARE(build_vocabulary(reversed, {}), build_vocabulary(examples, {}));
        QVERIFY(error_of<Error>([&] {
                    build_vocabulary(examples, {0, 0});
                }).contains("min_frequency"));
        QVERIFY(error_of<Error>([&] { build_vocabulary(examples, {1, 1}); }).contains("max_size"));
    }

    void paddingTruncationAndLengths() {
        TextEncoding e;
        e.max_length = 4;
        e.lowercase = true;
        e.vocabulary = {"<pad>", "<unk>", "a", "b", "ä"};
        const TextEncoder encoder(e);
        int64_t length = -1;
        QCOMPARE(encoder.encode("AB", &length), (std::vector<int64_t>{2, 3, 0, 0}));
        QCOMPARE(length, int64_t(2));
        QCOMPARE(encoder.encode("Äbzaab", &length), (std::vector<int64_t>{4, 3, 1, 2}));
        QCOMPARE(length, int64_t(4));
        QCOMPARE(encoder.encode("", &length), (std::vector<int64_t>{0, 0, 0, 0}));
        QCOMPARE(length, int64_t(0));
        QCOMPARE(encoder.token(4), std::string("ä"));

        auto corpus = std::make_shared<TextCorpus>();
        corpus->texts = {"ab", "abbaab", "z"};
        corpus->labels = {0, 1, 0};
        corpus->class_names = {"x", "y"};
        TextDataset raw(corpus, {});
        QVERIFY(error_of<Error>([&] { raw.get(0); }).contains("no vocabulary yet"));
        auto encoded = raw.with_encoder(std::make_shared<TextEncoder>(e));
        QCOMPARE(encoded->length(0), int64_t(2));
        QCOMPARE(encoded->length(1), int64_t(4));
        QCOMPARE(ids(*encoded, 2), (std::vector<int64_t>{1, 0, 0, 0}));
        QCOMPARE(encoded->get(1).target.item<int64_t>(), int64_t(1));
        QCOMPARE(encoded->class_counts(), (std::vector<int64_t>{2, 1}));

        TextEncoding bad = e;
        bad.vocabulary = {"a", "<unk>"};
        QVERIFY(error_of<Error>([&] { TextEncoder{bad}; }).contains("<pad>, <unk>"));
        bad.vocabulary = {"<pad>", "<unk>", "a", "a"};
        QVERIFY(error_of<Error>([&] { TextEncoder{bad}; }).contains("'a' twice"));
    }

    void invalidUtf8LineIsSkippedAndReported() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("de.txt").toStdString();
        writeFile(path, "Haus\nGr\xF6\xDF\x65\n\nStraße\r\n\xC3\x28x\n");
        TextLinesOptions o;
        o.classes = {{"German", path}};
        const auto corpus = read_text_lines(o);
        QCOMPARE(corpus->texts, (Tokens{"Haus", "Straße"}));
        QCOMPARE(corpus->notes.size(), size_t(1));
        const QString note = QString::fromStdString(corpus->notes[0]);
        QVERIFY2(note.contains(QString::fromStdString(path) + " line 2: not valid UTF-8"),
                 qPrintable(note));
        QVERIFY2(note.contains("2 lines skipped"), qPrintable(note));

        o.encoding = TextFileEncoding::Utf8ElseLatin1; // the whole file as ISO-8859-1
        const auto latin = read_text_lines(o);
        QCOMPARE(latin->texts.size(), size_t(4));
        QCOMPARE(latin->texts[1], std::string("Größe"));
        QVERIFY(QString::fromStdString(latin->notes.at(0)).contains("read as ISO-8859-1"));
    }

    void missingFileNamesTheFile() {
        TextLinesOptions o;
        o.classes = {{"A", "/nonexistent/words-a"}};
        QVERIFY(error_of<Error>([&] { read_text_lines(o); }).contains("/nonexistent/words-a"));
        QVERIFY(error_of<Error>([] {
                    parse_class_files("German=de, French");
                }).contains("'French' is not 'class name=file'"));
        QVERIFY(error_of<Error>([] { parse_class_files("A=x, A=y"); }).contains("named twice"));
        const QString missing = error_of<Error>([] {
            train::make_data(dataSpec(R"({"kind": "csv-text", "path": "missing.csv"})"),
                             "/nonexistent", 0);
        });
        QVERIFY2(missing.contains("/nonexistent/missing.csv"), qPrintable(missing));
    }

    void duplicatesKeepFileOrderAndCountCrossClassDrops() {
        // Within a class a repeat keeps its first line; a text in two classes leaves both (and is
        // counted once per class); everything else stays in file order.
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        writeFile(d + "/a", "x\ny\nx\nz\nq\nz\n");
        writeFile(d + "/b", "y\nw\nw\nv\ny\n");
        writeFile(d + "/c", "q\nu\n");
        TextLinesOptions o;
        o.classes = {{"A", d + "/a"}, {"B", d + "/b"}, {"C", d + "/c"}};
        const auto corpus = read_text_lines(o);
        QCOMPARE(corpus->texts, (Tokens{"x", "z", "w", "v", "u"}));
        QCOMPARE(corpus->labels, (std::vector<int64_t>{0, 0, 1, 1, 2}));
        QCOMPARE(corpus->notes.back(),
                 std::string("4 examples dropped: their text is in more than one class"));
    }

    void wordLanguageSourceOnSmallFiles() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        writeFile(d + "/en", "house\nHouse\nTaxi\ngarden\nwater\nsun\nmoon\n");
        writeFile(d + "/de", "Haus\nTaxi\nGarten\nWasser\nSonne\nMond\nhaus\n");
        writeFile(d + "/sv", "hus\ntaxi\ntr\xE4\x64g\xE5rd\nvatten\nsol\nm\xE5ne\n"); // ISO-8859-1
        TextLinesOptions o;
        o.classes = {{"English", d + "/en"}, {"German", d + "/de"}, {"Swedish", d + "/sv"}};
        o.encoding = TextFileEncoding::Utf8ElseLatin1;
        o.lowercase = true;
        auto corpus = read_text_lines(o);
        QCOMPARE(corpus->class_names, (Tokens{"English", "German", "Swedish"}));
        // "taxi" is in all three lists: dropped; "house" and "haus" kept once each.
        const std::set<std::string> texts(corpus->texts.begin(), corpus->texts.end());
        QVERIFY(!texts.count("taxi"));
        QCOMPARE(int(std::count(corpus->texts.begin(), corpus->texts.end(), "house")), 1);
        QVERIFY(texts.count("trädgård") && texts.count("måne"));
        QCOMPARE(corpus->texts.size(), size_t(5 + 5 + 5));
        o.drop_duplicates = false;
        QCOMPARE(read_text_lines(o)->texts.size(), size_t(7 + 7 + 6));

        // Balanced, seeded cap: 3 per class; the same seed gives the same sample.
        o.drop_duplicates = true;
        o.max_per_class = 3;
        const auto capped = read_text_lines(o);
        QCOMPARE(TextDataset(capped, {}).class_counts(), (std::vector<int64_t>{3, 3, 3}));
        QCOMPARE(read_text_lines(o)->texts, capped->texts);
        o.seed = 99;
        QVERIFY(read_text_lines(o)->texts != capped->texts);

        // Through the data source and make_data: classes, splits, the vocabulary, notes.
        const train::DataSplits s = train::make_data(
            dataSpec(R"({"kind": "text-lines", "classes": "English=en, German=de, Swedish=sv",
                         "encoding": "auto", "lowercase": true, "max_length": 6,
                         "test_fraction": 0.2})"),
            d, 1);
        QCOMPARE(s.class_names, (Tokens{"English", "German", "Swedish"}));
        QCOMPARE(s.train->size() + s.validation->size() + s.test->size(), int64_t(15));
        QCOMPARE(s.input_dtype, DType::Int64);
        QCOMPARE(s.input_shape, (Dims{6}));
        QVERIFY(s.text_encoder);
        QCOMPARE(s.text_encoder->encoding().vocabulary[0], std::string("<pad>"));
        QVERIFY(!s.notes.empty());
        int64_t index = 0;
        const TextDataset* text = find_text_dataset(*s.test, &index);
        QVERIFY(text && text->encoder() == s.text_encoder);
    }

    void vocabularyComesFromTheTrainingSplitOnly() {
        QTemporaryDir dir;
        const std::string path = dir.filePath("t.csv").toStdString();
        std::string csv = "text,label\n";
        for (int i = 0; i < 40; ++i) // every row has a word of its own: w0, w1, ...
            csv += "common w" + std::to_string(i) + "," + (i % 2 ? "odd" : "even") + "\n";
        writeFile(path, csv);
        const train::DataSplits s = train::make_data(
            dataSpec(R"({"kind": "csv-text", "path": "t.csv", "level": "word", "max_length": 3,
                         "test_fraction": 0.25})"),
            dir.path().toStdString(), 7);
        QCOMPARE(s.class_names, (Tokens{"even", "odd"}));
        const TextEncoder& enc = *s.text_encoder;
        QCOMPARE(enc.vocabulary_size(), 2 + 1 + s.train->size()); // pad, unk, common, own words
        for (const auto* split : {s.validation.get(), s.test.get()})
            for (int64_t i = 0; i < split->size(); ++i)
                QCOMPARE(ids(*split, i), (std::vector<int64_t>{2, kUnkId, kPadId}));
        for (int64_t i = 0; i < s.train->size(); ++i)
            QVERIFY(ids(*s.train, i)[1] > kUnkId);
    }

    void checkpointMetadataRoundTrip() {
        QTemporaryDir dir;
        io::Checkpoint c;
        c.model.emplace_back("w", zeros({2}));
        TextEncoding e;
        e.level = TokenLevel::Word;
        e.lowercase = true;
        e.max_length = 12;
        e.vocabulary = {"<pad>", "<unk>", "grå", "\"quoted\"", "é"};
        c.description.text_encoding = e;
        const auto path = std::filesystem::path(dir.path().toStdString()) / "c.safetensors";
        io::save_checkpoint(path, c);
        const io::Checkpoint back = io::load_checkpoint(path);
        QVERIFY(back.description.text_encoding);
        QCOMPARE(*back.description.text_encoding, e);
        QCOMPARE(TextEncoder(*back.description.text_encoding).encode("Grå é x"),
                 TextEncoder(e).encode("Grå é x"));
        c.description.text_encoding.reset();
        io::save_checkpoint(path, c);
        QVERIFY(!io::load_checkpoint(path).description.text_encoding);
    }

    void evaluationUsesTheCheckpointsVocabulary() {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        writeFile(d + "/a", "aab\naba\nbaa\naaa\nabb\nbab\naax\naay\n");
        writeFile(d + "/b", "ccd\ncdc\ndcc\nccc\ncdd\ndcd\nccz\nccw\n");
        train::TrainerOptions options;
        options.project_dir = d;
        options.checkpoint_dir = d + "/ck";
        train::Trainer trainer(io::parse_project(textProject("A=a, B=b", 1)), options);
        const train::TrainResult result = trainer.run();
        QVERIFY2(result.status == train::RunStatus::Finished, result.error.c_str());
        const TextEncoding trained = trainer.data().text_encoder->encoding();
        const io::Checkpoint saved = io::load_checkpoint(result.last_checkpoint);
        QVERIFY(saved.description.text_encoding);
        QCOMPARE(*saved.description.text_encoding, trained);

        // The project now asks for another vocabulary; the checkpoint's is the one evaluated.
        const io::Project changed = io::parse_project(textProject("A=a, B=b", 3));
        QVERIFY(train::make_data(changed.data, d, 4).text_encoder->encoding() != trained);
        auto evaluator = train::trainer_for_checkpoint(changed, d, result.last_checkpoint);
        QCOMPARE(evaluator->data().text_encoder->encoding(), trained);
        const train::Evaluation e =
            train::evaluate_examples(*evaluator, train::evaluation_dataset(*evaluator));
        QCOMPARE(e.size, int64_t(4));
    }

    void realWordLists() {
        if (!std::filesystem::exists("/usr/share/dict/ngerman") ||
            !std::filesystem::exists("/usr/share/dict/swedish"))
            QSKIP("Debian's word lists are not installed (scripts/deps.sh installs wngerman, "
                  "wswedish, ...)");
        const io::Project p =
            io::load_project(MYELIN_SOURCE_DIR "/resources/examples/word_language.myelin");
        const train::DataSplits s =
            train::make_data(p.data, MYELIN_SOURCE_DIR "/resources/examples", p.train.seed);
        QCOMPARE(s.class_names.size(), size_t(8));
        const std::vector<int64_t> counts = find_text_dataset(*s.train)->class_counts();
        QVERIFY(
            std::all_of(counts.begin(), counts.end(), [&](int64_t n) { return n == counts[0]; }));
        const auto& vocabulary = s.text_encoder->encoding().vocabulary;
        QVERIFY(int64_t(vocabulary.size()) <= 128);
        for (const char* letter : {"ä", "å", "é", "ñ", "ç"})
            QVERIFY2(std::count(vocabulary.begin(), vocabulary.end(), letter), letter);
    }
};

QTEST_APPLESS_MAIN(TestTextData)
#include "test_text_data.moc"
