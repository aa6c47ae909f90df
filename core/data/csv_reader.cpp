// CSV reader: an RFC 4180 record parser and CsvDataset (features / numeric or categorical target).
#include <myelin/data/limits.h>
#include <myelin/data/readers.h>
#include <myelin/error.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace myelin::data {

namespace {
[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw Error("cannot read '" + path + "': " + what);
}

// A bound that refuses a hostile file quickly and with bounded memory (lines are bounded by
// kMaxLineBytes, data/limits.h). Real tables are far inside it (a 28x28 image per row is 784
// columns).
constexpr size_t kMaxColumns = 100'000;

using Record = CsvRecord;

// Splits the whole text into records. A quote opens a quoted field only at the start of a field;
// inside it "" is a quote and delimiters and line breaks are data. Blank lines are skipped.
std::vector<Record> parse_records(const std::string& path, const std::string& text, char delim) {
    std::vector<Record> records;
    size_t i = 0;
    if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) i = 3; // UTF-8 byte order mark
    const size_t n = text.size();
    // Length of the line break (LF, CRLF, or a CR ending the file) at position j; 0 if none.
    auto line_break = [&](size_t j) -> size_t {
        if (j >= n) return 0;
        if (text[j] == '\n') return 1;
        if (text[j] == '\r' && j + 1 == n) return 1;
        if (text[j] == '\r' && text[j + 1] == '\n') return 2;
        return 0;
    };
    int64_t line = 1;
    while (i < n) {
        if (const size_t lb = line_break(i)) { // a blank line is not a record
            i += lb;
            ++line;
            continue;
        }
        Record rec;
        rec.line = line;
        std::string field;
        bool end_of_record = false;
        while (!end_of_record) {
            field.clear();
            if (i < n && text[i] == '"') {
                const int64_t open_line = line;
                ++i;
                for (;;) {
                    if (i >= n)
                        fail(path, "row " + std::to_string(open_line) +
                                       ": a quoted field is not closed before the end of the file");
                    const char c = text[i];
                    if (c == '"') {
                        if (i + 1 < n && text[i + 1] == '"') {
                            field += '"';
                            i += 2;
                            continue;
                        }
                        ++i;
                        break;
                    }
                    if (c == '\n') ++line;
                    field += c;
                    ++i;
                }
                if (i < n && text[i] != delim && !line_break(i))
                    fail(path, "row " + std::to_string(line) + ", field " +
                                   std::to_string(rec.fields.size() + 1) +
                                   ": unexpected character after the closing quote (a quote "
                                   "inside a quoted field must be doubled)");
            } else {
                while (i < n && text[i] != delim && !line_break(i)) {
                    if (text[i] == '"')
                        fail(path, "row " + std::to_string(line) + ", field " +
                                       std::to_string(rec.fields.size() + 1) +
                                       ": a quote inside an unquoted field (quote the whole "
                                       "field and double the quote)");
                    field += text[i++];
                }
            }
            rec.fields.push_back(field);
            if (rec.fields.size() > kMaxColumns)
                fail(path, "row " + std::to_string(rec.line) + " has more than " +
                               std::to_string(kMaxColumns) + " fields (the limit)");
            if (i < n && text[i] == delim) {
                ++i;
            } else {
                i += line_break(i);
                ++line;
                end_of_record = true;
            }
        }
        records.push_back(std::move(rec));
    }
    return records;
}

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::string quoted_list(const std::vector<std::string>& names) {
    std::string out;
    for (size_t k = 0; k < names.size(); ++k)
        out += (k ? ", '" : "'") + names[k] + "'";
    return out;
}

// The finite number in `field` (spaces around it allowed); errors name row and column.
float parse_number(const std::string& path, const Record& rec, const std::string& column,
                   const std::string& field) {
    const std::string where = "row " + std::to_string(rec.line) + ", column '" + column + "': ";
    const std::string t = trim(field);
    if (t.empty()) fail(path, where + "missing value");
    const char* first = t.data();
    if (*first == '+') ++first; // from_chars does not take a leading plus sign
    double v = 0;
    const auto [ptr, ec] = std::from_chars(first, t.data() + t.size(), v);
    if (ec == std::errc::result_out_of_range)
        fail(path, where + "value '" + t + "' is out of range");
    if (ec != std::errc() || ptr != t.data() + t.size() || !std::isfinite(v))
        fail(path, where + "value '" + t + "' is not a finite number");
    if (std::fabs(v) > 3.4028234663852886e38)
        fail(path, where + "value '" + t + "' overflows float32");
    return static_cast<float>(v);
}
} // namespace

namespace {
void check_delimiter(char delim) {
    if (delim == '"' || delim == '\n' || delim == '\r')
        throw Error("read_csv: the delimiter cannot be a quote or a line break");
}
} // namespace

CsvDataset::CsvDataset(const std::string& path, const CsvOptions& options) {
    check_delimiter(options.delimiter);
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "cannot open the file");
    parse(path, read_text_with_line_limit(in, path), options);
}

CsvDataset::CsvDataset(std::istream& in, const std::string& source_name,
                       const CsvOptions& options) {
    check_delimiter(options.delimiter);
    parse(source_name, read_text_with_line_limit(in, source_name), options);
}

void CsvDataset::parse(const std::string& path, const std::string& text,
                       const CsvOptions& options) {
    const char delim = options.delimiter;
    std::vector<Record> records = parse_records(path, text, delim);
    if (records.empty()) fail(path, "the file holds no records");

    // Column names and the number of fields every row must have.
    std::vector<std::string> columns;
    size_t first_row = 0;
    if (options.header) {
        for (const auto& f : records[0].fields)
            columns.push_back(trim(f));
        first_row = 1;
        std::unordered_map<std::string_view, size_t> seen; // linear: headers may be wide
        for (size_t b = 0; b < columns.size(); ++b)
            if (const auto [it, fresh] = seen.emplace(columns[b], b); !fresh)
                fail(path, "the header names column '" + columns[b] + "' twice (columns " +
                               std::to_string(it->second + 1) + " and " + std::to_string(b + 1) +
                               ")");
    } else {
        for (size_t k = 0; k < records[0].fields.size(); ++k)
            columns.push_back(std::to_string(k));
    }
    for (size_t r = first_row; r < records.size(); ++r)
        if (records[r].fields.size() != columns.size())
            fail(path, "row " + std::to_string(records[r].line) + " has " +
                           std::to_string(records[r].fields.size()) + " fields but " +
                           (options.header ? "the header has " : "the first row has ") +
                           std::to_string(columns.size()));

    auto column_index = [&](const std::string& name, const char* role) {
        const auto it = std::find(columns.begin(), columns.end(), name);
        if (it == columns.end())
            fail(path, std::string("unknown ") + role + " column '" + name + "'; the columns are " +
                           quoted_list(columns));
        return static_cast<size_t>(it - columns.begin());
    };
    const bool has_target = !options.target_column.empty();
    const size_t target = has_target ? column_index(options.target_column, "target") : 0;
    std::vector<size_t> feature_cols;
    if (options.feature_columns.empty()) {
        for (size_t k = 0; k < columns.size(); ++k)
            if (!has_target || k != target) feature_cols.push_back(k);
    } else {
        for (const auto& name : options.feature_columns) {
            const size_t k = column_index(name, "feature");
            if (has_target && k == target)
                fail(path, "column '" + name + "' cannot be both a feature and the target");
            if (std::find(feature_cols.begin(), feature_cols.end(), k) != feature_cols.end())
                fail(path, "feature column '" + name + "' is listed twice");
            feature_cols.push_back(k);
        }
    }
    for (size_t k : feature_cols)
        feature_names_.push_back(columns[k]);
    if (has_target) target_name_ = columns[target];

    size_ = static_cast<int64_t>(records.size() - first_row);
    const auto nf = static_cast<int64_t>(feature_cols.size());
    std::vector<float> features;
    features.reserve(static_cast<size_t>(size_ * nf));
    std::vector<float> numeric_targets;
    std::vector<std::string> raw_targets;
    for (size_t r = first_row; r < records.size(); ++r) {
        const Record& rec = records[r];
        for (size_t k : feature_cols)
            features.push_back(parse_number(path, rec, columns[k], rec.fields[k]));
        if (!has_target) continue;
        if (options.target_kind == CsvTargetKind::Numeric) {
            numeric_targets.push_back(parse_number(path, rec, columns[target], rec.fields[target]));
        } else {
            std::string value = trim(rec.fields[target]);
            if (value.empty())
                fail(path, "row " + std::to_string(rec.line) + ", column '" + columns[target] +
                               "': missing value");
            raw_targets.push_back(std::move(value));
        }
    }
    features_ = from_vector(features, {size_, nf});
    if (has_target && options.target_kind == CsvTargetKind::Numeric) {
        targets_ = from_vector(numeric_targets, {size_});
    } else if (has_target) {
        class_names_ = raw_targets;
        std::sort(class_names_.begin(), class_names_.end());
        class_names_.erase(std::unique(class_names_.begin(), class_names_.end()),
                           class_names_.end());
        std::map<std::string, int64_t> index;
        for (size_t c = 0; c < class_names_.size(); ++c)
            index[class_names_[c]] = static_cast<int64_t>(c);
        class_counts_.assign(class_names_.size(), 0);
        labels_.reserve(raw_targets.size());
        for (const auto& v : raw_targets) {
            labels_.push_back(index[v]);
            ++class_counts_[static_cast<size_t>(labels_.back())];
        }
        targets_ = from_vector(labels_, {size_}, DType::Int64);
    }
}

Example CsvDataset::get(int64_t index) const {
    check_index(index, "CsvDataset::get");
    return {features_.select(0, index), targets_.defined() ? targets_.select(0, index) : Tensor()};
}

int64_t CsvDataset::label(int64_t index) const {
    check_index(index, "CsvDataset::label");
    if (labels_.empty()) throw Error("CsvDataset::label: the dataset has no categorical target");
    return labels_[static_cast<size_t>(index)];
}

std::vector<CsvRecord> read_csv_records(const std::string& path, char delimiter) {
    check_delimiter(delimiter);
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "cannot open the file");
    return parse_records(path, read_text_with_line_limit(in, path), delimiter);
}

std::shared_ptr<CsvDataset> read_csv(const std::string& path, const CsvOptions& options) {
    return std::make_shared<CsvDataset>(path, options);
}

std::shared_ptr<CsvDataset> read_csv(std::istream& in, const std::string& source_name,
                                     const CsvOptions& options) {
    return std::make_shared<CsvDataset>(in, source_name, options);
}

} // namespace myelin::data
