// Text sources: one text file per class (one example per line) and a CSV text column.
#include <myelin/data/limits.h>
#include <myelin/data/readers.h>
#include <myelin/data/text.h>
#include <myelin/error.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace myelin::data {

namespace {

std::string trim(std::string_view s) {
    const auto b = s.find_first_not_of(" \t\r\n\f\v"), e = s.find_last_not_of(" \t\r\n\f\v");
    return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

// How a file's lines become UTF-8: `decode` answers false for a line to skip.
struct Decoder {
    TextFileEncoding encoding;
    bool latin1 = false; // Utf8ElseLatin1 decided Latin-1 for this file
    bool decode(const std::string& raw, std::string* out) const {
        if (encoding == TextFileEncoding::Latin1 || latin1) {
            *out = latin1_to_utf8(raw);
            return true;
        }
        if (!is_valid_utf8(raw)) return false;
        *out = raw;
        return true;
    }
};

// Skipped invalid lines of one file, reported as one note naming the first.
struct SkipCount {
    int64_t count = 0, first_line = 0;
    void add(int64_t line) {
        if (count++ == 0) first_line = line;
    }
    void report(const std::string& path, std::vector<std::string>& notes) const {
        if (count == 0) return;
        notes.push_back(path + " line " + std::to_string(first_line) +
                        ": not valid UTF-8, skipped (" + std::to_string(count) + " line" +
                        (count == 1 ? "" : "s") +
                        " skipped in this file; the encoding option 'latin-1' or 'auto' reads "
                        "ISO-8859-1 files)");
    }
};

// The whole file; a line longer than kMaxLineBytes is refused while reading (a 10^8-character
// line would otherwise be split, trimmed and copied at several times its size).
std::string read_whole(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error("cannot read '" + path + "': cannot open the file");
    return read_text_with_line_limit(in, path);
}

Decoder decoder_for(TextFileEncoding encoding, const std::string& path, const std::string& text,
                    std::vector<std::string>& notes) {
    Decoder d{encoding};
    if (encoding == TextFileEncoding::Utf8ElseLatin1 && !is_valid_utf8(text)) {
        d.latin1 = true;
        notes.push_back(path + ": not UTF-8, read as ISO-8859-1");
    }
    return d;
}

// FNV-1a: a seeded order of the texts that a script in any language reproduces.
uint64_t fnv1a(uint64_t seed, const std::string& text) {
    uint64_t h = 14695981039346656037ull;
    const std::string key = std::to_string(seed) + "\n" + text;
    for (unsigned char c : key) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

} // namespace

TextFileEncoding text_file_encoding_from_string(std::string_view name) {
    if (name == "utf-8") return TextFileEncoding::Utf8;
    if (name == "latin-1") return TextFileEncoding::Latin1;
    if (name == "auto") return TextFileEncoding::Utf8ElseLatin1;
    throw Error("unknown text encoding '" + std::string(name) + "' (known: utf-8, latin-1, auto)");
}

std::vector<std::pair<std::string, std::string>> parse_class_files(std::string_view text) {
    std::vector<std::pair<std::string, std::string>> out;
    std::stringstream in{std::string(text)};
    std::set<std::string> seen;
    for (std::string item; std::getline(in, item, ',');) {
        if (trim(item).empty()) continue;
        const auto eq = item.find('=');
        const std::string name = trim(item.substr(0, eq));
        const std::string file = eq == std::string::npos ? "" : trim(item.substr(eq + 1));
        if (eq == std::string::npos || name.empty() || file.empty())
            throw Error("classes: '" + trim(item) + "' is not 'class name=file'");
        if (!seen.insert(name).second) throw Error("classes: '" + name + "' is named twice");
        out.emplace_back(name, file);
    }
    return out;
}

// duplicates: drop. A text repeated within a class keeps its first line; a text in more than one
// class leaves every class (returned: how many lines that removed). Done by sorting the lines'
// hashes once: a tree or hash table of the ~2 million lines of the word-language lists took
// 1.5 s, most of it cache misses on the nodes.
int64_t drop_repeated_texts(std::vector<std::vector<std::string>>& per_class) {
    struct Line {
        uint64_t hash;
        uint32_t cls, index;
    };
    std::vector<Line> all;
    size_t total = 0;
    for (const auto& lines : per_class)
        total += lines.size();
    all.reserve(total);
    const std::hash<std::string_view> hash;
    for (size_t c = 0; c < per_class.size(); ++c)
        for (size_t i = 0; i < per_class[c].size(); ++i)
            all.push_back({hash(per_class[c][i]), uint32_t(c), uint32_t(i)});
    const auto text = [&](const Line& l) -> const std::string& {
        return per_class[l.cls][l.index];
    };
    // Equal texts end up next to each other, in class and line order.
    std::sort(all.begin(), all.end(), [&](const Line& a, const Line& b) {
        if (a.hash != b.hash) return a.hash < b.hash;
        if (const int order = text(a).compare(text(b)); order != 0) return order < 0;
        return a.cls != b.cls ? a.cls < b.cls : a.index < b.index;
    });
    std::vector<std::vector<char>> keep(per_class.size());
    for (size_t c = 0; c < per_class.size(); ++c)
        keep[c].assign(per_class[c].size(), 0);
    int64_t dropped = 0;
    for (size_t first = 0; first < all.size();) {
        size_t end = first + 1;
        while (end < all.size() && all[end].hash == all[first].hash &&
               text(all[end]) == text(all[first]))
            ++end;
        // The group's lines, sorted by class: one class keeps its first line; several keep none.
        if (all[first].cls == all[end - 1].cls) {
            keep[all[first].cls][all[first].index] = 1;
        } else {
            for (size_t i = first; i < end; ++i)
                dropped += i == first || all[i].cls != all[i - 1].cls; // one per class
        }
        first = end;
    }
    for (size_t c = 0; c < per_class.size(); ++c) {
        std::vector<std::string>& lines = per_class[c];
        size_t kept = 0;
        for (size_t i = 0; i < lines.size(); ++i) {
            if (!keep[c][i]) continue;
            if (kept != i) lines[kept] = std::move(lines[i]);
            ++kept;
        }
        lines.resize(kept);
    }
    return dropped;
}

std::shared_ptr<TextCorpus> read_text_lines(const TextLinesOptions& options) {
    if (options.classes.empty()) throw Error("text-lines: no classes (give 'name=file' pairs)");
    if (options.max_per_class < 0) throw Error("text-lines: max_per_class must be >= 0");
    auto corpus = std::make_shared<TextCorpus>();
    std::vector<std::vector<std::string>> per_class;
    for (const auto& [name, path] : options.classes) {
        const std::string text = read_whole(path);
        const Decoder decoder = decoder_for(options.encoding, path, text, corpus->notes);
        SkipCount skipped;
        std::vector<std::string> lines;
        int64_t line_number = 0;
        size_t start = 0;
        if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) start = 3; // UTF-8 byte order mark
        while (start < text.size()) {
            size_t end = text.find('\n', start);
            if (end == std::string::npos) end = text.size();
            ++line_number;
            std::string decoded;
            const std::string raw = trim(std::string_view(text).substr(start, end - start));
            start = end + 1;
            if (raw.empty()) continue;
            if (!decoder.decode(raw, &decoded)) {
                skipped.add(line_number);
                continue;
            }
            if (options.lowercase) decoded = lowercase_utf8(decoded);
            lines.push_back(std::move(decoded));
        }
        skipped.report(path, corpus->notes);
        corpus->class_names.push_back(name);
        per_class.push_back(std::move(lines));
    }
    if (options.drop_duplicates) {
        const int64_t dropped = drop_repeated_texts(per_class);
        if (dropped)
            corpus->notes.push_back(std::to_string(dropped) +
                                    " examples dropped: their text is in more than one class");
    }
    for (size_t c = 0; c < per_class.size(); ++c) {
        auto& lines = per_class[c];
        if (lines.empty())
            throw Error("text-lines: class '" + options.classes[c].first + "' (" +
                        options.classes[c].second + ") has no examples");
        if (options.max_per_class && int64_t(lines.size()) > options.max_per_class) {
            // A seeded sample, kept in file order.
            std::vector<std::pair<uint64_t, size_t>> order;
            for (size_t i = 0; i < lines.size(); ++i)
                order.emplace_back(fnv1a(options.seed, lines[i]), i);
            // The max_per_class smallest (hash, line) pairs: selected, not sorted (all distinct,
            // so the same ones a full sort would keep).
            std::nth_element(order.begin(), order.begin() + options.max_per_class, order.end());
            order.resize(size_t(options.max_per_class));
            std::vector<size_t> chosen;
            for (const auto& o : order)
                chosen.push_back(o.second);
            std::sort(chosen.begin(), chosen.end());
            std::vector<std::string> sample;
            for (size_t i : chosen)
                sample.push_back(std::move(lines[i]));
            lines = std::move(sample);
        }
        for (auto& l : lines) {
            corpus->texts.push_back(std::move(l));
            corpus->labels.push_back(int64_t(c));
        }
    }
    return corpus;
}

std::shared_ptr<TextCorpus> read_csv_text(const std::string& path, const CsvTextOptions& options) {
    if (options.text_column.empty() || options.label_column.empty())
        throw Error("csv-text: options 'text_column' and 'label_column' are required");
    std::vector<CsvRecord> records = read_csv_records(path, options.delimiter);
    if (records.empty()) throw Error("cannot read '" + path + "': the file holds no records");
    auto column = [&](const std::string& name) -> size_t {
        if (options.header) {
            const auto& head = records.front().fields;
            for (size_t k = 0; k < head.size(); ++k)
                if (trim(head[k]) == name) return k;
            throw Error("cannot read '" + path + "': no column '" + name + "'");
        }
        size_t k = 0;
        const auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), k);
        if (ec != std::errc() || p != name.data() + name.size())
            throw Error("cannot read '" + path +
                        "': without a header, columns are numbers (0, 1, "
                        "...), got '" +
                        name + "'");
        return k;
    };
    const size_t text_col = column(options.text_column), label_col = column(options.label_column);
    auto corpus = std::make_shared<TextCorpus>();
    Decoder decoder{options.encoding};
    if (options.encoding == TextFileEncoding::Utf8ElseLatin1) {
        for (const auto& r : records)
            for (const auto& f : r.fields)
                if (!is_valid_utf8(f)) decoder.latin1 = true;
        if (decoder.latin1) corpus->notes.push_back(path + ": not UTF-8, read as ISO-8859-1");
    }
    SkipCount skipped;
    std::vector<std::string> raw_labels;
    for (size_t r = options.header ? 1 : 0; r < records.size(); ++r) {
        const CsvRecord& rec = records[r];
        if (std::max(text_col, label_col) >= rec.fields.size())
            throw Error("cannot read '" + path + "': row " + std::to_string(rec.line) + " has " +
                        std::to_string(rec.fields.size()) + " fields");
        std::string text, label;
        if (!decoder.decode(rec.fields[text_col], &text) ||
            !decoder.decode(trim(rec.fields[label_col]), &label)) {
            skipped.add(rec.line);
            continue;
        }
        if (label.empty())
            throw Error("cannot read '" + path + "': row " + std::to_string(rec.line) +
                        ": missing label");
        corpus->texts.push_back(options.lowercase ? lowercase_utf8(text) : text);
        raw_labels.push_back(std::move(label));
    }
    skipped.report(path, corpus->notes);
    if (corpus->texts.empty()) throw Error("cannot read '" + path + "': no examples");
    std::map<std::string, int64_t> index;
    for (const auto& l : raw_labels)
        index.emplace(l, 0);
    for (auto& [name, k] : index) {
        k = int64_t(corpus->class_names.size());
        corpus->class_names.push_back(name);
    }
    for (const auto& l : raw_labels)
        corpus->labels.push_back(index[l]);
    return corpus;
}

} // namespace myelin::data
