// safetensors reading (header validation, then data) and atomic writing.
#include <myelin/error.h>
#include <myelin/io/json_limits.h>
#include <myelin/io/safetensors.h>

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <numeric>
#include <set>
#include <string>
#include <unordered_set>

namespace myelin::io {

// Tensor bytes go to and from disk as they are in memory.
static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swapping");

namespace {
namespace fs = std::filesystem;
// Headers are read into nlohmann::json (objects in a std::map): an ordered_json object inserts in
// linear time, so reading n tensors took O(n^2) (19 s for 100,000 names). The parse callback
// records the order of the names instead (state_dict order). Headers are written in order.
using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// The reference implementation's limit: a bigger header is not a safetensors file.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
constexpr const char* kMetadataKey = "__metadata__";
// Bounds on what a header may list, so that a hostile one is refused with bounded memory. The
// largest published models have a few thousand tensors (with optimizer state, three times
// that); each entry is dtype, shape (at most kMaxDims values) and two offsets.
constexpr uint64_t kMaxTensors = 100'000;
constexpr uint64_t kMaxHeaderValues = kMaxTensors * (kMaxDims + 8);

[[noreturn]] void fail_read(const std::string& source, const std::string& what) {
    throw Error("cannot read '" + source + "': " + what);
}

struct DTypeTag {
    const char* tag;
    DType dtype;
};
constexpr DTypeTag kDTypeTags[] = {{"F32", DType::Float32}, {"F64", DType::Float64},
                                   {"F16", DType::Float16}, {"BF16", DType::BFloat16},
                                   {"I64", DType::Int64},   {"U8", DType::UInt8},
                                   {"BOOL", DType::Bool}};
// Valid safetensors dtypes that Myelin has no tensor type for (named so the message can say so).
constexpr const char* kForeignDTypes[] = {"I16",     "I32",     "U16",     "U32",
                                          "U64",     "F8_E4M3", "F8_E5M2", "F8_E8M0", "F6_E2M3",
                                          "F6_E3M2", "F4",      "C64"};

std::string supported_dtypes() {
    std::string out;
    for (const auto& t : kDTypeTags)
        out += (out.empty() ? "" : ", ") + std::string(t.tag);
    return out + ", I8";
}

std::string range_text(uint64_t begin, uint64_t end) {
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on "[" + to_string.
    std::string out = "[";
    out += std::to_string(begin);
    out += ", ";
    out += std::to_string(end);
    out += ")";
    return out;
}

// Names and tags from the file as messages quote them: a hostile file may hold megabyte names.
std::string clip(std::string_view text, size_t max_size = 120) {
    return text.size() <= max_size ? std::string(text)
                                   : std::string(text.substr(0, max_size)) + "...";
}

// A JSON value's kind for messages: "a string", "an array", ...
std::string kind_of(const Json& v) {
    if (v.is_number_unsigned() || v.is_number_integer()) return "an integer";
    if (v.is_number_float()) return "a floating-point number";
    const std::string name = v.type_name();
    return (name == "object" || name == "array" ? "an " : "a ") + name;
}

// A JSON value that must be a non-negative integer; `what` names it for the message.
// (Values are never dump()ed whole: dump recurses, and a hostile header nests arrays deeply.)
uint64_t non_negative_integer(const std::string& source, const Json& v, const std::string& what) {
    if (v.is_number_unsigned()) return v.get<uint64_t>();
    if (v.is_number_integer())
        fail_read(source, what + " is negative (" + std::to_string(v.get<int64_t>()) + ")");
    if (v.is_number_float())
        fail_read(source, what + " is not an integer (" + v.dump() +
                              "; integers above 2^64 are read as floating point)");
    fail_read(source, what + " is " + kind_of(v) + ", not a non-negative integer");
}

SafetensorsTensorInfo parse_entry(const std::string& source, const std::string& name,
                                  const Json& entry, uint64_t data_size) {
    const std::string where = "tensor '" + clip(name) + "'";
    if (!entry.is_object())
        fail_read(source, where + " is " + kind_of(entry) +
                              " in the header, not an object with dtype, shape and data_offsets");
    auto field = [&](const char* key) -> const Json& {
        const auto it = entry.find(key);
        if (it == entry.end()) fail_read(source, where + " has no '" + key + "' field");
        return *it;
    };
    SafetensorsTensorInfo info;
    info.name = name;

    const Json& dtype = field("dtype");
    if (!dtype.is_string())
        fail_read(source, where + ": 'dtype' is " + kind_of(dtype) + ", not a string");
    const auto& tag = dtype.get_ref<const std::string&>();
    const auto known = std::find_if(std::begin(kDTypeTags), std::end(kDTypeTags),
                                    [&](const DTypeTag& t) { return tag == t.tag; });
    if (tag == "I8") {
        info.dtype = DType::UInt8; // the same bytes; the name goes to int8_names
        info.int8 = true;
    } else if (known == std::end(kDTypeTags)) {
        const bool foreign = std::find(std::begin(kForeignDTypes), std::end(kForeignDTypes), tag) !=
                             std::end(kForeignDTypes);
        fail_read(source, where + ": " + (foreign ? "dtype '" : "unknown dtype '") + clip(tag) +
                              "'" + (foreign ? " has no Myelin tensor type" : "") +
                              " (Myelin reads " + supported_dtypes() + ")");
    } else {
        info.dtype = known->dtype;
    }

    const Json& shape = field("shape");
    if (!shape.is_array())
        fail_read(source, where + ": 'shape' is " + kind_of(shape) + ", not an array");
    if (shape.size() > static_cast<size_t>(kMaxDims))
        fail_read(source, where + " has " + std::to_string(shape.size()) +
                              " dimensions; Myelin tensors have at most " +
                              std::to_string(kMaxDims));
    std::vector<uint64_t> sizes;
    for (size_t d = 0; d < shape.size(); ++d)
        sizes.push_back(non_negative_integer(source, shape[d],
                                             where + ": shape dimension " + std::to_string(d)));
    // numel * element size (at most 8) cannot wrap. Zeros count as 1 in `extent`, as they do in
    // tensor strides: after a 0 the element count stays 0, but the strides of huge sizes behind
    // it would still overflow.
    constexpr uint64_t kMaxElements = uint64_t(1) << 60;
    uint64_t numel = 1, extent = 1;
    for (const uint64_t size : sizes) {
        if (extent > kMaxElements / std::max<uint64_t>(size, 1)) {
            std::string text;
            for (const uint64_t s : sizes)
                text += (text.empty() ? "" : ", ") + std::to_string(s);
            fail_read(source, where + ": shape [" + text + "] has too many elements");
        }
        extent *= std::max<uint64_t>(size, 1);
        numel *= size;
        info.shape.push_back(static_cast<int64_t>(size));
    }

    const Json& offsets = field("data_offsets");
    if (!offsets.is_array() || offsets.size() != 2)
        fail_read(source, where + ": 'data_offsets' must be an array [begin, end], got " +
                              (offsets.is_array()
                                   ? "an array of " + std::to_string(offsets.size()) + " values"
                                   : kind_of(offsets)));
    info.data_begin = non_negative_integer(source, offsets[0], where + ": data_offsets begin");
    info.data_end = non_negative_integer(source, offsets[1], where + ": data_offsets end");
    if (info.data_begin > info.data_end)
        fail_read(source, where + ": data_offsets begin " + std::to_string(info.data_begin) +
                              " is after end " + std::to_string(info.data_end));
    if (info.data_end > data_size)
        fail_read(source, where + ": data_offsets " + range_text(info.data_begin, info.data_end) +
                              " reach beyond the byte buffer, which holds " +
                              std::to_string(data_size) + " bytes (file truncated?)");
    const uint64_t expected = numel * dtype_size(info.dtype);
    if (info.data_end - info.data_begin != expected)
        fail_read(source, where + ": data_offsets " + range_text(info.data_begin, info.data_end) +
                              " hold " + std::to_string(info.data_end - info.data_begin) +
                              " bytes but " + tag + " shape " + info.shape.str() + " needs " +
                              std::to_string(expected));
    return info;
}

// The spec requires the tensors to cover the byte buffer exactly: no overlaps, no holes.
void check_coverage(const std::string& source, const std::vector<SafetensorsTensorInfo>& tensors,
                    uint64_t data_size) {
    std::vector<size_t> order(tensors.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return std::pair(tensors[a].data_begin, tensors[a].data_end) <
               std::pair(tensors[b].data_begin, tensors[b].data_end);
    });
    uint64_t covered = 0; // bytes [0, covered) belong to the tensors seen so far
    const SafetensorsTensorInfo* last = nullptr; // the one that ends at `covered`
    for (size_t k : order) {
        const auto& t = tensors[k];
        if (t.data_begin < covered)
            fail_read(source, "tensor '" + clip(t.name) + "' (bytes " +
                                  range_text(t.data_begin, t.data_end) + ") overlaps tensor '" +
                                  clip(last->name) + "' (bytes " +
                                  range_text(last->data_begin, last->data_end) + ")");
        if (t.data_begin > covered)
            fail_read(source,
                      "bytes " + range_text(covered, t.data_begin) +
                          " of the byte buffer belong to no tensor (a hole " +
                          (last ? "between tensor '" + clip(last->name) + "' and" : "before") +
                          " tensor '" + clip(t.name) +
                          "'); safetensors requires the tensors to cover the buffer "
                          "exactly");
        if (t.data_end > covered || !last) {
            covered = t.data_end;
            last = &t;
        }
    }
    if (covered != data_size)
        fail_read(source, "bytes " + range_text(covered, data_size) +
                              " at the end of the byte buffer belong to no tensor; safetensors "
                              "requires the tensors to cover the buffer exactly");
}

// Builds the header's parse tree with nlohmann's plain DOM builder, checking events as they
// arrive. (Not nlohmann's callback parser: after each nested object it rescans the parent's
// members, O(n^2) for n tensors, 130 s for 100,000.) It records the first repeated key (nlohmann
// keeps the last of repeated keys silently; a repeated tensor name or field is corruption) and
// the order of the names (objects are std::maps), and refuses a header of millions of tiny
// entries before its parse tree costs gigabytes.
class HeaderReader {
  public:
    std::string duplicate;                         // the first repeated key, described
    std::vector<std::string> names, metadata_keys; // in file order

    HeaderReader(const std::string& source, Json& root) : source_(source), dom_(root) {}

    bool null() { return value() && dom_.null(); }
    bool boolean(bool v) { return value() && dom_.boolean(v); }
    bool number_integer(Json::number_integer_t v) { return value() && dom_.number_integer(v); }
    bool number_unsigned(Json::number_unsigned_t v) { return value() && dom_.number_unsigned(v); }
    bool number_float(Json::number_float_t v, const Json::string_t& text) {
        return value() && dom_.number_float(v, text);
    }
    bool string(Json::string_t& v) { return value() && dom_.string(v); }
    bool binary(Json::binary_t& v) { return value() && dom_.binary(v); }
    bool start_object(std::size_t n) {
        value();
        open_objects_.emplace_back();
        ++depth_;
        return dom_.start_object(n);
    }
    bool end_object() {
        open_objects_.pop_back();
        --depth_;
        return dom_.end_object();
    }
    bool start_array(std::size_t n) {
        value();
        ++depth_;
        return dom_.start_array(n);
    }
    bool end_array() {
        --depth_;
        return dom_.end_array();
    }
    bool key(Json::string_t& key) {
        if (depth_ == 1) {
            if (names.size() == kMaxTensors + 1) // one name may be __metadata__
                fail_read(source_, "the header lists more than " + std::to_string(kMaxTensors) +
                                       " tensors (the limit; no real model comes close)");
            top_level_key_ = key;
            names.push_back(key);
        } else if (depth_ == 2 && top_level_key_ == kMetadataKey) {
            metadata_keys.push_back(key);
        }
        if (!open_objects_.back().insert(key).second && duplicate.empty())
            duplicate = depth_ == 1 ? "the header names '" + clip(key) + "' twice"
                                    : "key '" + clip(key) + "' appears twice inside '" +
                                          clip(top_level_key_) + "'";
        return dom_.key(key);
    }
    template <typename Exception>
    bool parse_error(std::size_t position, const std::string& token, const Exception& e) {
        return dom_.parse_error(position, token, e); // throws it, as its own type
    }

  private:
    bool value() {
        if (++values_ > kMaxHeaderValues)
            fail_read(source_, "the header holds more than " + std::to_string(kMaxHeaderValues) +
                                   " JSON values; a safetensors file has at most " +
                                   std::to_string(kMaxTensors) + " tensors with a few values each");
        return true;
    }

    const std::string& source_;
    nlohmann::detail::json_sax_dom_parser<Json> dom_;
    std::vector<std::set<std::string>> open_objects_;
    std::string top_level_key_;
    int depth_ = 0;
    uint64_t values_ = 0;
};

// Parses and validates the JSON header (`text`, `size` bytes) for a byte buffer of `data_size`.
SafetensorsHeader parse_header(const std::string& source, const char* text, size_t size,
                               uint64_t data_size) {
    if (size == 0 || text[0] != '{')
        fail_read(source, "not a safetensors file: the JSON header must start with '{'");
    if (auto problem = json_nesting_problem({text, size}); !problem.empty())
        fail_read(source, "the header " + problem);

    // nlohmann's message without its "[json.exception.parse_error.101] " prefix, and short:
    // "last read: '...'" may quote a whole unterminated string.
    const auto reason = [](const Json::exception& e) {
        std::string why = e.what();
        if (const auto close = why.find("] "); why.starts_with("[json.") && close != why.npos)
            why = why.substr(close + 2);
        return clip(why, 300);
    };
    Json header;
    HeaderReader reader(source, header);
    try {
        Json::sax_parse(text, text + size, &reader);
    } catch (const Json::parse_error& e) {
        fail_read(source, "the header is not valid JSON (byte " + std::to_string(e.byte) +
                              " of the header, file offset " + std::to_string(e.byte + 8) +
                              "): " + reason(e));
    } catch (const Json::exception& e) { // out_of_range: a number too large for a double
        fail_read(source, "the header is not valid JSON: " + reason(e));
    }
    if (!reader.duplicate.empty()) fail_read(source, reader.duplicate);
    if (!header.is_object())
        fail_read(source, "the header is " + kind_of(header) + ", not a JSON object");

    SafetensorsHeader out;
    out.data_start = 8 + size;
    out.data_size = data_size;
    for (const std::string& key : reader.names) {
        const Json& value = header.at(key);
        if (key == kMetadataKey) {
            if (!value.is_object())
                fail_read(source,
                          "'__metadata__' is " + kind_of(value) + ", not an object of strings");
            for (const std::string& mkey : reader.metadata_keys) {
                const Json& mvalue = value.at(mkey);
                if (!mvalue.is_string())
                    fail_read(source, "'__metadata__' value of '" + clip(mkey) + "' is " +
                                          kind_of(mvalue) + ", not a string");
                out.metadata.emplace_back(mkey, mvalue.get<std::string>());
            }
            continue;
        }
        out.tensors.push_back(parse_entry(source, key, value, data_size));
    }
    check_coverage(source, out.tensors, data_size);
    return out;
}

uint64_t read_le64(const unsigned char* b) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
        v = (v << 8) | b[i];
    return v;
}

// Checks the 8-byte length prefix against the input's size; returns the header length.
uint64_t header_length(const std::string& source, const unsigned char* prefix,
                       uint64_t total_size) {
    const uint64_t n = read_le64(prefix);
    if (n > kMaxHeaderBytes)
        fail_read(source, "not a safetensors file: the header length field says " +
                              std::to_string(n) + " bytes (the limit is 100 MB)");
    if (n > total_size - 8)
        fail_read(source, "file is truncated: the header length field says " + std::to_string(n) +
                              " bytes but only " + std::to_string(total_size - 8) + " follow it");
    return n;
}

// A BOOL byte other than 0 or 1 is not a valid C++ bool; refuse it rather than load UB.
void check_bools(const std::string& source, const SafetensorsTensorInfo& info, const Tensor& t) {
    if (info.dtype != DType::Bool) return;
    const auto* bytes = static_cast<const unsigned char*>(t.data_ptr());
    for (int64_t i = 0; i < t.numel(); ++i)
        if (bytes[i] > 1)
            fail_read(source, "BOOL tensor '" + clip(info.name) + "' holds the byte " +
                                  std::to_string(bytes[i]) + " at element " + std::to_string(i) +
                                  " (only 0 and 1 are valid)");
}

template <typename T>
std::optional<std::string> find_value(const std::vector<std::pair<std::string, T>>& pairs,
                                      std::string_view key) {
    for (const auto& [k, v] : pairs)
        if (k == key) return v;
    return std::nullopt;
}

// ---- writing --------------------------------------------------------------------------------

std::string errno_text(int err) {
    return std::strerror(err);
}

std::mutex& write_fault_mutex() {
    static std::mutex m;
    return m;
}
std::function<int(const fs::path&)>& write_fault() {
    static std::function<int(const fs::path&)> fault;
    return fault;
}

std::string size_text(uint64_t bytes) {
    char text[32];
    if (bytes >= 1'000'000)
        std::snprintf(text, sizeof text, "%.1f MB", double(bytes) / 1e6);
    else
        std::snprintf(text, sizeof text, "%.1f kB", double(bytes) / 1e3);
    return text;
}

// A temporary file next to the target that is removed unless commit() renamed it into place.
// `bytes`: the file's size, said when the disk is full.
class AtomicWriter {
  public:
    AtomicWriter(const fs::path& target, uint64_t bytes) : target_(target), bytes_(bytes) {
        {
            std::lock_guard lock(write_fault_mutex());
            if (write_fault()) injected_ = write_fault()(target);
        }
        static std::atomic<uint64_t> counter{0};
        const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
        for (int attempt = 0;; ++attempt) {
            temp_ = dir / (target.filename().string() + "." + std::to_string(::getpid()) + "." +
                           std::to_string(counter++) + ".tmp");
            fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd_ >= 0) break;
            if (errno != EEXIST || attempt == 100)
                fail("cannot create the temporary file '" + temp_.string() +
                     "': " + errno_text(errno));
        }
    }
    AtomicWriter(const AtomicWriter&) = delete;
    AtomicWriter& operator=(const AtomicWriter&) = delete;
    ~AtomicWriter() {
        if (fd_ >= 0) ::close(fd_);
        if (!committed_) ::unlink(temp_.c_str());
    }

    void write(const void* data, size_t n) {
        const auto* p = static_cast<const char*>(data);
        if (injected_ != 0) fail_write(injected_);
        while (n > 0) {
            const ssize_t done = ::write(fd_, p, std::min<size_t>(n, size_t(1) << 30));
            if (done < 0 && errno == EINTR) continue;
            if (done <= 0) fail_write(done < 0 ? errno : EIO);
            p += done;
            n -= static_cast<size_t>(done);
        }
    }

    // fsync, close, rename over the target, fsync the directory (so the rename is durable).
    void commit() {
        if (::fsync(fd_) != 0)
            fail("fsync of '" + temp_.string() + "' failed: " + errno_text(errno));
        const int fd = std::exchange(fd_, -1);
        if (::close(fd) != 0) fail("closing '" + temp_.string() + "' failed: " + errno_text(errno));
        if (::rename(temp_.c_str(), target_.c_str()) != 0)
            fail("cannot rename the temporary file '" + temp_.string() +
                 "' over it: " + errno_text(errno));
        committed_ = true;
        const fs::path dir = target_.has_parent_path() ? target_.parent_path() : fs::path(".");
        const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir_fd < 0) return; // the file is in place; only durability of the rename is unsure
        const int synced = ::fsync(dir_fd);
        const int err = errno;
        ::close(dir_fd);
        // Some file systems cannot fsync directories (EINVAL); the file itself is synced.
        if (synced != 0 && err != EINVAL)
            fail("the file was written but fsync of its directory failed: " + errno_text(err));
    }

  private:
    [[noreturn]] void fail(const std::string& what) const {
        throw Error("cannot write '" + target_.string() + "': " + what);
    }
    // A failed write: a WriteError that says, for a full disk, what the file needed.
    [[noreturn]] void fail_write(int err) const {
        std::string what = "cannot write '" + target_.string() + "': writing the temporary file '" +
                           temp_.string() + "' failed: " + errno_text(err);
        if (err == ENOSPC || err == EDQUOT) what += " (the file needs " + size_text(bytes_) + ")";
        throw WriteError(what, err, bytes_);
    }

    fs::path target_, temp_;
    uint64_t bytes_ = 0;
    int injected_ = 0;
    int fd_ = -1;
    bool committed_ = false;
};

} // namespace

const char* safetensors_dtype_name(DType dtype) {
    for (const auto& t : kDTypeTags)
        if (t.dtype == dtype) return t.tag;
    throw DTypeError("safetensors: no tag for dtype " + std::to_string(int(dtype)));
}

const SafetensorsTensorInfo* SafetensorsHeader::find(std::string_view name) const {
    for (const auto& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}
std::optional<std::string> SafetensorsHeader::metadata_value(std::string_view key) const {
    return find_value(metadata, key);
}
const Tensor* SafetensorsFile::find(std::string_view name) const {
    for (const auto& [n, t] : tensors)
        if (n == name) return &t;
    return nullptr;
}
std::optional<std::string> SafetensorsFile::metadata_value(std::string_view key) const {
    return find_value(metadata, key);
}

void save_safetensors(const fs::path& path, const NamedTensors& tensors,
                      const StringPairs& metadata, const std::vector<std::string>& int8_names) {
    const auto fail = [&](const std::string& what) {
        throw Error("cannot write '" + path.string() + "': " + what);
    };
    // Everything that can be checked is checked before the temporary file exists.
    std::unordered_set<std::string_view> names;
    for (size_t i = 0; i < tensors.size(); ++i) {
        const auto& [name, t] = tensors[i];
        if (name.empty()) fail("tensor " + std::to_string(i) + " has an empty name");
        if (name == kMetadataKey) fail("a tensor cannot be named '__metadata__'");
        if (!names.insert(name).second) fail("two tensors are named '" + name + "'");
        if (!t.defined()) fail("tensor '" + name + "' is undefined");
    }
    const std::unordered_set<std::string_view> int8(int8_names.begin(), int8_names.end());
    for (const std::string& name : int8_names) {
        const auto it = std::find_if(tensors.begin(), tensors.end(),
                                     [&](const auto& entry) { return entry.first == name; });
        if (it == tensors.end()) fail("int8 tensor '" + name + "' is not among the tensors");
        if (it->second.dtype() != DType::UInt8)
            fail("int8 tensor '" + name + "' must be given as UInt8 bytes, not " +
                 dtype_name(it->second.dtype()));
    }
    std::unordered_set<std::string_view> keys;
    for (const auto& [key, value] : metadata)
        if (!keys.insert(key).second) fail("metadata key '" + key + "' is given twice");

    // Byte buffer order: larger elements first, so each tensor starts at a multiple of its
    // element size (the buffer starts at a multiple of 8) without padding, which the format
    // forbids. The header keeps the caller's order.
    std::vector<size_t> data_order(tensors.size());
    std::iota(data_order.begin(), data_order.end(), size_t(0));
    std::stable_sort(data_order.begin(), data_order.end(), [&](size_t a, size_t b) {
        return tensors[a].second.element_size() > tensors[b].second.element_size();
    });
    std::vector<uint64_t> begin(tensors.size());
    uint64_t offset = 0;
    for (size_t k : data_order) {
        begin[k] = offset;
        offset +=
            static_cast<uint64_t>(tensors[k].second.numel()) * tensors[k].second.element_size();
    }

    OrderedJson header = OrderedJson::object();
    if (!metadata.empty()) {
        OrderedJson meta = OrderedJson::object();
        for (const auto& [key, value] : metadata)
            meta.emplace(key, value);
        header.emplace(kMetadataKey, std::move(meta));
    }
    for (size_t k = 0; k < tensors.size(); ++k) {
        const Tensor& t = tensors[k].second;
        const uint64_t end = begin[k] + static_cast<uint64_t>(t.numel()) * t.element_size();
        const char* tag = int8.count(tensors[k].first) ? "I8" : safetensors_dtype_name(t.dtype());
        header.emplace(tensors[k].first, OrderedJson{{"dtype", tag},
                                                     {"shape", t.shape().vec()},
                                                     {"data_offsets", {begin[k], end}}});
    }
    std::string text;
    try {
        text = header.dump(-1, ' ', false, OrderedJson::error_handler_t::strict);
    } catch (const OrderedJson::type_error&) {
        fail("a tensor name or metadata string is not valid UTF-8");
    }
    text.append((8 - text.size() % 8) % 8, ' ');
    unsigned char prefix[8];
    for (int i = 0; i < 8; ++i)
        prefix[i] = static_cast<unsigned char>(uint64_t(text.size()) >> (8 * i));

    AtomicWriter out(path, 8 + text.size() + offset);
    out.write(prefix, 8);
    out.write(text.data(), text.size());
    for (size_t k : data_order) {
        Tensor t = tensors[k].second.detach();
        if (t.numel() == 0) continue;
        if (!t.device().is_cpu()) t = t.to(kCPU);
        t = t.contiguous();
        out.write(t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size());
    }
    out.commit();
}

SafetensorsFile load_safetensors_from_memory(const uint8_t* data, size_t size,
                                             const std::string& source_name) {
    if (size < 8)
        fail_read(source_name, "file is truncated: " + std::to_string(size) +
                                   " bytes, shorter than the 8-byte header length");
    const uint64_t n = header_length(source_name, data, size);
    SafetensorsHeader header = parse_header(source_name, reinterpret_cast<const char*>(data + 8),
                                            static_cast<size_t>(n), size - 8 - n);
    SafetensorsFile out;
    out.metadata = std::move(header.metadata);
    const uint8_t* buffer = data + header.data_start;
    for (const auto& info : header.tensors) {
        Tensor t = empty(info.shape, info.dtype);
        if (info.data_end > info.data_begin)
            std::memcpy(t.data_ptr(), buffer + info.data_begin, info.data_end - info.data_begin);
        check_bools(source_name, info, t);
        if (info.int8) out.int8_names.push_back(info.name);
        out.tensors.emplace_back(info.name, std::move(t));
    }
    return out;
}

namespace {
// Opens `path` and reads and validates its header; `in` is left open for the data.
SafetensorsHeader open_and_read_header(const fs::path& path, std::ifstream& in) {
    const std::string source = path.string();
    std::error_code ec;
    if (fs::is_directory(path, ec)) fail_read(source, "it is a directory");
    in.open(path, std::ios::binary);
    if (!in) fail_read(source, "cannot open the file: " + errno_text(errno));
    in.seekg(0, std::ios::end);
    const std::streamoff total = in.tellg();
    in.seekg(0, std::ios::beg);
    if (total < 0 || !in) fail_read(source, "cannot determine the file size");
    const auto file_size = static_cast<uint64_t>(total);
    if (file_size < 8)
        fail_read(source, "file is truncated: " + std::to_string(file_size) +
                              " bytes, shorter than the 8-byte header length");
    unsigned char prefix[8];
    if (!in.read(reinterpret_cast<char*>(prefix), 8)) fail_read(source, "read error");
    const uint64_t n = header_length(source, prefix, file_size);
    std::string text(static_cast<size_t>(n), '\0');
    if (!in.read(text.data(), static_cast<std::streamsize>(n)))
        fail_read(source, "read error inside the header");
    return parse_header(source, text.data(), text.size(), file_size - 8 - n);
}
} // namespace

SafetensorsHeader read_safetensors_header(const fs::path& path) {
    std::ifstream in;
    return open_and_read_header(path, in);
}

SafetensorsFile load_safetensors(const fs::path& path) {
    const std::string source = path.string();
    std::ifstream in;
    SafetensorsHeader header = open_and_read_header(path, in);
    SafetensorsFile out;
    out.metadata = std::move(header.metadata);
    for (const auto& info : header.tensors) {
        Tensor t = empty(info.shape, info.dtype);
        const uint64_t bytes = info.data_end - info.data_begin;
        if (bytes > 0) {
            in.seekg(static_cast<std::streamoff>(header.data_start + info.data_begin));
            if (!in.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(bytes)))
                fail_read(source, "read error in the data of tensor '" + info.name +
                                      "' (was the file changed while being read?)");
        }
        check_bools(source, info, t);
        if (info.int8) out.int8_names.push_back(info.name);
        out.tensors.emplace_back(info.name, std::move(t));
    }
    return out;
}

void set_write_fault_for_tests(std::function<int(const std::filesystem::path& target)> fault) {
    std::lock_guard lock(write_fault_mutex());
    write_fault() = std::move(fault);
}

} // namespace myelin::io
