// The built-in text data sources: text-lines (one file per class, one example per line) and
// csv-text (a text column and a label column). Both load raw text; train::make_data builds the
// vocabulary from the training split (data/text.h).
#include "builtin_kinds.h"

#include <myelin/data/text.h>
#include <myelin/error.h>

#include <filesystem>

namespace myelin::spec::builtin {

using graph::AttrDesc;
using graph::Attrs;
using namespace graph::attr;

namespace {

std::vector<AttrDesc> encoding_options() {
    return {choice("level", "char", {"char", "word"},
                   "Tokens: Unicode characters, or words (punctuation marks are tokens too)."),
            integer("max_length", 32,
                    "Token ids per example: longer texts are cut, shorter "
                    "ones padded with 0 (<pad>).",
                    1),
            integer("min_frequency", 1,
                    "Tokens seen fewer times in the training split become <unk>.", 1),
            integer("max_vocabulary", 0,
                    "Largest vocabulary, <pad> and <unk> included (most frequent tokens); 0: "
                    "no limit.",
                    0)};
}

AttrDesc encoding_choice() {
    return choice("encoding", "utf-8", {"utf-8", "latin-1", "auto"},
                  "utf-8: lines that are not UTF-8 are skipped and counted; latin-1: "
                  "ISO-8859-1; auto: UTF-8 when the whole file is, else ISO-8859-1.");
}

data::TextEncodingOptions encoding_of(const Attrs& o) {
    data::TextEncodingOptions e;
    e.level = data::token_level_from_string(o.get_string("level"));
    e.lowercase = o.get_bool("lowercase");
    e.max_length = o.get_int("max_length");
    e.vocabulary.min_frequency = o.get_int("min_frequency");
    e.vocabulary.max_size = o.get_int("max_vocabulary");
    if (e.vocabulary.max_size == 1)
        throw Error("max_vocabulary must be 0 (no limit) or at least 2 (<pad> and <unk>)");
    return e;
}

SourceData load_text_lines(const Attrs& o, const SourceContext& context) {
    data::TextLinesOptions lines;
    try {
        lines.classes = data::parse_class_files(o.get_string("classes"));
    } catch (const Error& e) {
        throw Error("data source text-lines: " + std::string(e.what()));
    }
    for (auto& [name, file] : lines.classes)
        file = context.resolve(file);
    lines.encoding = data::text_file_encoding_from_string(o.get_string("encoding"));
    lines.lowercase = o.get_bool("lowercase");
    lines.drop_duplicates = o.get_string("duplicates") == "drop";
    lines.max_per_class = o.get_int("max_per_class");
    lines.seed = uint64_t(o.get_int("sample_seed"));
    auto corpus = data::read_text_lines(lines);
    return {std::make_shared<data::TextDataset>(corpus, encoding_of(o)), nullptr,
            o.get_float("test_fraction")};
}

SourceData load_csv_text(const Attrs& o, const SourceContext& context) {
    data::CsvTextOptions csv;
    csv.text_column = o.get_string("text_column");
    csv.label_column = o.get_string("label_column");
    csv.header = o.get_bool("header");
    csv.encoding = data::text_file_encoding_from_string(o.get_string("encoding"));
    csv.lowercase = o.get_bool("lowercase");
    auto corpus = data::read_csv_text(context.required_path(o, "path"), csv);
    return {std::make_shared<data::TextDataset>(corpus, encoding_of(o)), nullptr,
            o.get_float("test_fraction")};
}

} // namespace

// Reading a text source holds every line as a string, the de-duplication set and the encoded
// examples at once: measured 217 MB at the peak for the word-language examples' 23.2 MB of
// word lists (1.98 million lines), 9.4 bytes per byte of file.
constexpr double kTextLoadBytesPerFileByte = 9.4;

std::vector<DataSourceKind> text_data_sources() {
    std::vector<DataSourceKind> kinds;
    std::vector<AttrDesc> lines = {
        text("classes", "",
             "Comma-separated 'class name=file' pairs; each file holds one example per line "
             "(e.g. German=/usr/share/dict/ngerman)."),
        encoding_choice(),
        flag("lowercase", false, "Lower-case the text before anything else."),
        choice("duplicates", "drop", {"drop", "keep"},
               "drop: a text in several classes' files is removed from all of them and a "
               "repeated line is kept once; keep: every line as it is."),
        integer("max_per_class", 0,
                "At most this many examples per class, a seeded sample; 0: all.", 0),
        integer("sample_seed", 0, "Seed of the per-class sample.", 0),
    };
    for (auto& d : encoding_options())
        lines.push_back(std::move(d));
    lines.push_back(
        number("test_fraction", 0.1, "Examples held out for the final test.", 0.0, 1.0));
    kinds.push_back(kind<DataSourceKind>(
        "text-lines", "Text classification: one text file per class, one example per line.",
        std::move(lines), load_text_lines));
    kinds.back().memory_bytes = [](const Attrs& o, const SourceContext& context) {
        int64_t bytes = 0;
        for (const auto& [name, file] : data::parse_class_files(o.get_string("classes"))) {
            std::error_code error;
            const auto size = std::filesystem::file_size(context.resolve(file), error);
            if (!error) bytes += int64_t(size);
        }
        return int64_t(double(bytes) * kTextLoadBytesPerFileByte);
    };

    std::vector<AttrDesc> csv = {
        file("path", "The CSV file."),
        text("text_column", "text", "Column holding the text."),
        text("label_column", "label", "Column holding the class name."),
        flag("header", true, "The first row names the columns (else columns are 0, 1, ...)."),
        encoding_choice(),
        flag("lowercase", false, "Lower-case the text before anything else."),
    };
    for (auto& d : encoding_options())
        csv.push_back(std::move(d));
    csv.push_back(number("test_fraction", 0.1, "Rows held out for the final test.", 0.0, 1.0));
    kinds.push_back(kind<DataSourceKind>("csv-text",
                                         "Text classification from a CSV: a text column and a "
                                         "label column.",
                                         std::move(csv), load_csv_text));
    kinds.back().memory_bytes = [](const Attrs& o, const SourceContext& context) {
        std::error_code error;
        const auto size = std::filesystem::file_size(context.required_path(o, "path"), error);
        return error ? int64_t(0) : int64_t(double(size) * kTextLoadBytesPerFileByte);
    };
    return kinds;
}

} // namespace myelin::spec::builtin
