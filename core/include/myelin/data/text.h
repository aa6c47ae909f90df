#pragma once
// Text data: UTF-8 handling, tokenisation (Unicode code points or words), a vocabulary built from
// the training split, the encoder that turns text into padded int64 token ids, the dataset text
// sources load, and the readers (one text file per class, or a CSV text column).
//
// A text source reads raw text only: the vocabulary must come from the training split, which is
// cut after loading, so a TextDataset starts without an encoder and train::make_data fits one on
// the training examples (fit_text_encoding) and attaches it (with_encoder) before any get().
#include <myelin/data/dataset.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace myelin::data {

// ---- UTF-8 ----------------------------------------------------------------------------------

// Whether `text` is well-formed UTF-8 (no overlong forms, surrogates or code points > U+10FFFF).
bool is_valid_utf8(std::string_view text);
// The code points of valid UTF-8 text.
std::u32string decode_utf8(std::string_view text);
void append_utf8(std::string& out, char32_t code_point);
// ISO-8859-1 bytes as UTF-8 (every byte is a code point).
std::string latin1_to_utf8(std::string_view text);
// Lower case of valid UTF-8 text: ASCII, Latin-1, Latin Extended-A, Greek and Cyrillic capitals
// (every letter of the languages the studio's examples use); other code points stay.
std::string lowercase_utf8(std::string_view text);

// ---- Tokens and vocabulary ------------------------------------------------------------------

enum class TokenLevel {
    Char, // one token per Unicode code point (spaces included)
    Word, // runs of letters/digits; each punctuation mark its own token; whitespace separates
};
const char* to_string(TokenLevel level);                   // "char", "word"
TokenLevel token_level_from_string(std::string_view name); // throws Error on an unknown name

// Tokens of valid UTF-8 text.
std::vector<std::string> tokenize(std::string_view text, TokenLevel level);

inline constexpr int64_t kPadId = 0;
inline constexpr int64_t kUnkId = 1;
inline constexpr const char* kPadToken = "<pad>";
inline constexpr const char* kUnkToken = "<unk>";

struct VocabularyOptions {
    int64_t min_frequency = 1; // tokens seen fewer times become <unk>
    int64_t max_size = 0;      // at most this many entries, <pad> and <unk> included; 0: no limit
};
// Index -> token: <pad>, <unk>, then the tokens by count (highest first), ties in byte order, so
// the same examples give the same vocabulary whatever order they come in.
std::vector<std::string> build_vocabulary(const std::vector<std::vector<std::string>>& examples,
                                          const VocabularyOptions& options);

// Everything that turns text into ids, saved with a run (checkpoint metadata "text_encoding")
// so evaluation and export use the vocabulary training used.
struct TextEncoding {
    TokenLevel level = TokenLevel::Char;
    bool lowercase = false;
    int64_t max_length = 32; // ids per example: longer texts are cut, shorter ones padded with 0
    std::vector<std::string> vocabulary; // [0] "<pad>", [1] "<unk>"
    bool operator==(const TextEncoding& o) const = default;
};

class TextEncoder {
  public:
    // Throws Error when the vocabulary does not start with <pad>, <unk>, repeats a token, or
    // max_length < 1.
    explicit TextEncoder(TextEncoding encoding);
    const TextEncoding& encoding() const { return encoding_; }
    int64_t vocabulary_size() const { return int64_t(encoding_.vocabulary.size()); }
    int64_t max_length() const { return encoding_.max_length; }
    // The tokens of `text` (lower-cased first when the encoding says so). Invalid UTF-8 throws.
    std::vector<std::string> tokens(std::string_view text) const;
    int64_t id(std::string_view token) const; // kUnkId when not in the vocabulary
    const std::string& token(int64_t id) const;
    // max_length ids, padded with kPadId; `length` gets the ids before padding.
    std::vector<int64_t> encode(std::string_view text, int64_t* length = nullptr) const;

  private:
    TextEncoding encoding_;
    std::unordered_map<std::string, int64_t> index_;
};

// ---- Text datasets --------------------------------------------------------------------------

// What a text source read: texts with class labels, and notes for people (lines skipped,
// duplicates dropped, how a file was decoded).
struct TextCorpus {
    std::vector<std::string> texts; // valid UTF-8, lower-cased when the source asked for it
    std::vector<int64_t> labels;    // index into class_names
    std::vector<std::string> class_names;
    std::vector<std::string> notes;
};

// How a source wants its vocabulary fitted (on the training split).
struct TextEncodingOptions {
    TokenLevel level = TokenLevel::Char;
    bool lowercase = false;
    int64_t max_length = 32;
    VocabularyOptions vocabulary;
};

// The encoding fitted on the examples `indices` of `corpus` (the training split).
TextEncoding fit_text_encoding(const TextCorpus& corpus, const std::vector<int64_t>& indices,
                               const TextEncodingOptions& options);

// Examples of a TextCorpus: input int64 [max_length] token ids (pad 0), target int64 class index.
// get() needs an encoder (with_encoder); everything else works without one.
class TextDataset : public Dataset {
  public:
    TextDataset(std::shared_ptr<const TextCorpus> corpus, TextEncodingOptions options,
                std::shared_ptr<const TextEncoder> encoder = nullptr);
    int64_t size() const override { return int64_t(corpus_->texts.size()); }
    Example get(int64_t index) const override;
    std::vector<std::string> classes() const override { return corpus_->class_names; }
    int64_t label(int64_t index) const override;
    std::vector<int64_t> class_counts() const override;

    const std::string& text(int64_t index) const;
    // Tokens of the example after truncation to max_length (needs the encoder).
    int64_t length(int64_t index) const;
    const TextCorpus& corpus() const { return *corpus_; }
    const TextEncodingOptions& options() const { return options_; }
    const std::shared_ptr<const TextEncoder>& encoder() const { return encoder_; }
    // The same examples encoded by `encoder`.
    std::shared_ptr<TextDataset> with_encoder(std::shared_ptr<const TextEncoder> encoder) const;

  private:
    std::shared_ptr<const TextCorpus> corpus_;
    TextEncodingOptions options_;
    std::shared_ptr<const TextEncoder> encoder_;
};

// The TextDataset under `dataset` (through Subsets) and the index `index` has there; nullptr when
// the dataset holds no text.
const TextDataset* find_text_dataset(const Dataset& dataset, int64_t* index = nullptr);

// ---- Readers --------------------------------------------------------------------------------

enum class TextFileEncoding {
    Utf8,           // lines that are not valid UTF-8 are skipped and counted
    Latin1,         // ISO-8859-1: every byte is a character
    Utf8ElseLatin1, // per file: UTF-8 when every line is valid UTF-8, else ISO-8859-1
};
TextFileEncoding
text_file_encoding_from_string(std::string_view name); // "utf-8", "latin-1", "auto"

struct TextLinesOptions {
    // (class name, file) pairs; every non-empty line of a file is one example of its class.
    std::vector<std::pair<std::string, std::string>> classes;
    TextFileEncoding encoding = TextFileEncoding::Utf8;
    bool lowercase = false;
    // A text in more than one class's file is removed from all of them, and a text repeated
    // within one class is kept once; false: every line is kept as it is.
    bool drop_duplicates = true;
    int64_t max_per_class = 0; // 0: all; else a random sample of this many per class (seeded)
    uint64_t seed = 0;
};
// Lines are trimmed of surrounding whitespace (and a CR); empty lines are skipped. Throws Error
// naming the file when one cannot be read, and when no class or no example remains.
std::shared_ptr<TextCorpus> read_text_lines(const TextLinesOptions& options);
// "German=/usr/share/dict/ngerman, French=french" -> pairs (files as written). Throws Error
// naming the entry that has no '=' or an empty name or file, or a repeated class name.
std::vector<std::pair<std::string, std::string>> parse_class_files(std::string_view text);

struct CsvTextOptions {
    std::string text_column;  // name (with a header) or 0-based index (without)
    std::string label_column; // class names are the distinct labels in byte order
    bool header = true;
    char delimiter = ',';
    TextFileEncoding encoding = TextFileEncoding::Utf8;
    bool lowercase = false;
};
std::shared_ptr<TextCorpus> read_csv_text(const std::string& path, const CsvTextOptions& options);

} // namespace myelin::data
