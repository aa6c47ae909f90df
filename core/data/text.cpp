// Text data: UTF-8, tokenisation, vocabulary, the encoder and TextDataset (readers:
// text_readers.cpp).
#include <myelin/data/text.h>
#include <myelin/error.h>

#include <algorithm>
#include <map>

namespace myelin::data {

// ---- UTF-8 ----------------------------------------------------------------------------------

namespace {

// Decodes one code point at text[i]; returns its byte count, 0 when the bytes are not UTF-8.
size_t next_code_point(std::string_view text, size_t i, char32_t* out) {
    const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char b0 = byte(i);
    if (b0 < 0x80) {
        *out = b0;
        return 1;
    }
    size_t n = 0;
    char32_t cp = 0, min = 0;
    if ((b0 & 0xE0) == 0xC0) {
        n = 2, cp = b0 & 0x1F, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
        n = 3, cp = b0 & 0x0F, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
        n = 4, cp = b0 & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (i + n > text.size()) return 0;
    for (size_t k = 1; k < n; ++k) {
        if ((byte(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    *out = cp;
    return n;
}

char32_t lower(char32_t c) {
    if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32; // Latin-1 capitals
    if (c >= 0x100 && c <= 0x17F) {                           // Latin Extended-A
        if (c == 0x130) return 'i';                           // İ
        if (c == 0x178) return 0xFF;                          // Ÿ
        const bool odd_pairs = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
        if (odd_pairs) return (c % 2 == 1) ? c + 1 : c;
        if (c == 0x138 || c == 0x149 || c == 0x17F) return c; // ĸ, ŉ, ſ have no capital pair
        return (c % 2 == 0) ? c + 1 : c;
    }
    if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32; // Greek
    if (c >= 0x410 && c <= 0x42F) return c + 32;               // Cyrillic
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    return c;
}

bool is_space(char32_t c) {
    return c == ' ' || (c >= 0x09 && c <= 0x0D) || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

// ASCII punctuation and symbols, Latin-1's, general punctuation and CJK punctuation.
bool is_punctuation(char32_t c) {
    if (c < 0x80)
        return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
               (c >= 0x7B && c <= 0x7E);
    return (c >= 0xA1 && c <= 0xBF && c != 0xAA && c != 0xB2 && c != 0xB3 && c != 0xB5 &&
            c != 0xB9 && c != 0xBA && !(c >= 0xBC && c <= 0xBE)) ||
           c == 0xD7 || c == 0xF7 || (c >= 0x2010 && c <= 0x205E) || (c >= 0x3001 && c <= 0x3003);
}

} // namespace

bool is_valid_utf8(std::string_view text) {
    char32_t cp = 0;
    for (size_t i = 0; i < text.size();) {
        const size_t n = next_code_point(text, i, &cp);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

std::u32string decode_utf8(std::string_view text) {
    std::u32string out;
    char32_t cp = 0;
    for (size_t i = 0; i < text.size();) {
        const size_t n = next_code_point(text, i, &cp);
        if (n == 0) throw Error("decode_utf8: the text is not valid UTF-8");
        out.push_back(cp);
        i += n;
    }
    return out;
}

void append_utf8(std::string& out, char32_t c) {
    if (c < 0x80) {
        out += char(c);
    } else if (c < 0x800) {
        out += char(0xC0 | (c >> 6));
        out += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += char(0xE0 | (c >> 12));
        out += char(0x80 | ((c >> 6) & 0x3F));
        out += char(0x80 | (c & 0x3F));
    } else {
        out += char(0xF0 | (c >> 18));
        out += char(0x80 | ((c >> 12) & 0x3F));
        out += char(0x80 | ((c >> 6) & 0x3F));
        out += char(0x80 | (c & 0x3F));
    }
}

std::string latin1_to_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size() + text.size() / 8);
    for (char c : text)
        append_utf8(out, static_cast<unsigned char>(c));
    return out;
}

std::string lowercase_utf8(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (char32_t c : decode_utf8(text))
        append_utf8(out, lower(c));
    return out;
}

// ---- Tokens and vocabulary ------------------------------------------------------------------

const char* to_string(TokenLevel level) {
    return level == TokenLevel::Char ? "char" : "word";
}

TokenLevel token_level_from_string(std::string_view name) {
    if (name == "char") return TokenLevel::Char;
    if (name == "word") return TokenLevel::Word;
    throw Error("unknown token level '" + std::string(name) + "' (known: char, word)");
}

std::vector<std::string> tokenize(std::string_view text, TokenLevel level) {
    std::vector<std::string> tokens;
    std::string word;
    for (char32_t c : decode_utf8(text)) {
        if (level == TokenLevel::Char) {
            tokens.emplace_back();
            append_utf8(tokens.back(), c);
            continue;
        }
        if (is_space(c) || is_punctuation(c)) {
            if (!word.empty()) tokens.push_back(std::move(word));
            word.clear();
            if (!is_space(c)) {
                tokens.emplace_back();
                append_utf8(tokens.back(), c);
            }
        } else {
            append_utf8(word, c);
        }
    }
    if (!word.empty()) tokens.push_back(std::move(word));
    return tokens;
}

std::vector<std::string> build_vocabulary(const std::vector<std::vector<std::string>>& examples,
                                          const VocabularyOptions& options) {
    if (options.min_frequency < 1) throw Error("vocabulary: min_frequency must be at least 1");
    if (options.max_size != 0 && options.max_size < 2)
        throw Error("vocabulary: max_size must be 0 (no limit) or at least 2 (<pad> and <unk>)");
    std::map<std::string, int64_t> counts; // byte order: the tie-break
    for (const auto& tokens : examples)
        for (const auto& t : tokens)
            ++counts[t];
    std::vector<std::pair<std::string, int64_t>> kept;
    for (auto& [token, count] : counts)
        if (count >= options.min_frequency && token != kPadToken && token != kUnkToken)
            kept.emplace_back(token, count);
    std::stable_sort(kept.begin(), kept.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::vector<std::string> vocabulary{kPadToken, kUnkToken};
    for (auto& [token, count] : kept) {
        if (options.max_size && int64_t(vocabulary.size()) >= options.max_size) break;
        vocabulary.push_back(token);
    }
    return vocabulary;
}

TextEncoder::TextEncoder(TextEncoding encoding) : encoding_(std::move(encoding)) {
    const auto& v = encoding_.vocabulary;
    if (v.size() < 2 || v[0] != kPadToken || v[1] != kUnkToken)
        throw Error("text encoding: the vocabulary must start with <pad>, <unk>");
    if (encoding_.max_length < 1) throw Error("text encoding: max_length must be at least 1");
    for (size_t i = 0; i < v.size(); ++i)
        if (!index_.emplace(v[i], int64_t(i)).second)
            throw Error("text encoding: the vocabulary holds '" + v[i] + "' twice");
}

std::vector<std::string> TextEncoder::tokens(std::string_view text) const {
    if (!is_valid_utf8(text)) throw Error("text encoding: the text is not valid UTF-8");
    return encoding_.lowercase ? tokenize(lowercase_utf8(text), encoding_.level)
                               : tokenize(text, encoding_.level);
}

int64_t TextEncoder::id(std::string_view token) const {
    const auto it = index_.find(std::string(token));
    return it == index_.end() ? kUnkId : it->second;
}

const std::string& TextEncoder::token(int64_t id) const {
    if (id < 0 || id >= vocabulary_size())
        throw IndexError("text encoding: token id " + std::to_string(id) +
                         " is outside the vocabulary of " + std::to_string(vocabulary_size()));
    return encoding_.vocabulary[size_t(id)];
}

std::vector<int64_t> TextEncoder::encode(std::string_view text, int64_t* length) const {
    const std::vector<std::string> t = tokens(text);
    const size_t n = std::min(t.size(), size_t(encoding_.max_length));
    std::vector<int64_t> ids(size_t(encoding_.max_length), kPadId);
    for (size_t i = 0; i < n; ++i)
        ids[i] = id(t[i]);
    if (length) *length = int64_t(n);
    return ids;
}

TextEncoding fit_text_encoding(const TextCorpus& corpus, const std::vector<int64_t>& indices,
                               const TextEncodingOptions& options) {
    std::vector<std::vector<std::string>> examples;
    examples.reserve(indices.size());
    for (int64_t i : indices) {
        const std::string& text = corpus.texts.at(size_t(i));
        examples.push_back(
            tokenize(options.lowercase ? lowercase_utf8(text) : text, options.level));
    }
    TextEncoding e;
    e.level = options.level;
    e.lowercase = options.lowercase;
    e.max_length = options.max_length;
    e.vocabulary = build_vocabulary(examples, options.vocabulary);
    return e;
}

// ---- TextDataset ----------------------------------------------------------------------------

TextDataset::TextDataset(std::shared_ptr<const TextCorpus> corpus, TextEncodingOptions options,
                         std::shared_ptr<const TextEncoder> encoder)
    : corpus_(std::move(corpus)), options_(options), encoder_(std::move(encoder)) {
    if (!corpus_) throw Error("TextDataset: no corpus");
    if (corpus_->labels.size() != corpus_->texts.size())
        throw Error("TextDataset: every text needs a label");
}

Example TextDataset::get(int64_t index) const {
    check_index(index, "TextDataset::get");
    if (!encoder_)
        throw Error("TextDataset::get: no vocabulary yet (it is built from the training split)");
    std::vector<int64_t> ids = encoder_->encode(corpus_->texts[size_t(index)]);
    const int64_t n = int64_t(ids.size());
    return {from_vector(ids, {n}, DType::Int64),
            scalar_tensor(double(corpus_->labels[size_t(index)]), DType::Int64)};
}

int64_t TextDataset::label(int64_t index) const {
    check_index(index, "TextDataset::label");
    return corpus_->labels[size_t(index)];
}

std::vector<int64_t> TextDataset::class_counts() const {
    std::vector<int64_t> counts(corpus_->class_names.size(), 0);
    for (int64_t l : corpus_->labels)
        ++counts[size_t(l)];
    return counts;
}

const std::string& TextDataset::text(int64_t index) const {
    check_index(index, "TextDataset::text");
    return corpus_->texts[size_t(index)];
}

int64_t TextDataset::length(int64_t index) const {
    check_index(index, "TextDataset::length");
    if (!encoder_) throw Error("TextDataset::length: no vocabulary yet");
    const auto n = int64_t(encoder_->tokens(corpus_->texts[size_t(index)]).size());
    return std::min(n, encoder_->max_length());
}

std::shared_ptr<TextDataset>
TextDataset::with_encoder(std::shared_ptr<const TextEncoder> encoder) const {
    return std::make_shared<TextDataset>(corpus_, options_, std::move(encoder));
}

const TextDataset* find_text_dataset(const Dataset& dataset, int64_t* index) {
    if (const auto* text = dynamic_cast<const TextDataset*>(&dataset)) return text;
    if (const auto* subset = dynamic_cast<const Subset*>(&dataset)) {
        if (index) *index = subset->indices().at(size_t(*index));
        return find_text_dataset(*subset->dataset(), index);
    }
    return nullptr;
}

} // namespace myelin::data
