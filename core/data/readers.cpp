#include <myelin/data/readers.h>
#include <myelin/error.h>

#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

namespace myelin::data {

namespace {
[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw Error("cannot read '" + path + "': " + what);
}

// gzread passes plain files through unchanged, so one reader serves both forms.
class GzFile {
  public:
    explicit GzFile(const std::string& path) : path_(path), f_(gzopen(path.c_str(), "rb")) {
        if (!f_) fail(path, "cannot open the file");
        gzbuffer(f_, 1 << 18);
    }
    ~GzFile() { gzclose(f_); }
    GzFile(const GzFile&) = delete;
    GzFile& operator=(const GzFile&) = delete;

    // Reads exactly n bytes; `what` names the part for the truncation message.
    void read(void* dst, size_t n, const char* what) {
        auto* out = static_cast<char*>(dst);
        while (n > 0) {
            const auto chunk = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
            const int got = gzread(f_, out, chunk);
            if (got < 0) {
                int code = 0;
                fail(path_, std::string("corrupt data while reading the ") + what + " (" +
                                gzerror(f_, &code) + ")");
            }
            if (got == 0) fail(path_, std::string("file is truncated: it ends inside the ") + what);
            out += got;
            n -= static_cast<size_t>(got);
        }
    }
    bool at_end() {
        char c;
        const int got = gzread(f_, &c, 1);
        if (got < 0) {
            int code = 0;
            fail(path_, std::string("corrupt data at the end (") + gzerror(f_, &code) + ")");
        }
        return got == 0;
    }
    // True for a plain (not gzip-compressed) file.
    bool direct() { return gzdirect(f_) == 1; }

  private:
    std::string path_;
    gzFile f_;
};
} // namespace

Tensor read_idx(const std::string& path) {
    GzFile f(path);
    unsigned char magic[4];
    f.read(magic, 4, "header");
    if (magic[0] != 0 || magic[1] != 0)
        fail(path, "not an IDX file (the magic number must start with two zero bytes)");
    if (magic[2] != 0x08)
        fail(path, "unsupported IDX element type 0x" +
                       std::string(1, "0123456789abcdef"[magic[2] >> 4]) +
                       std::string(1, "0123456789abcdef"[magic[2] & 15]) +
                       " (only 0x08, unsigned byte, is supported)");
    const int ndim = magic[3];
    if (ndim < 1 || ndim > kMaxDims)
        fail(path, "IDX header declares " + std::to_string(ndim) + " dimensions (1 to " +
                       std::to_string(kMaxDims) + " supported)");
    Dims shape;
    uint64_t total = 1;
    // Sizes multiplied with zeros counted as 1, as tensor strides are: a 0 in front must not let
    // huge sizes behind it overflow them.
    uint64_t extent = 1;
    for (int d = 0; d < ndim; ++d) {
        unsigned char b[4];
        f.read(b, 4, "header");
        const uint32_t v = (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) |
                           uint32_t(b[3]);
        if (extent > (uint64_t(1) << 40) / std::max<uint32_t>(v, 1))
            fail(path, "IDX dimensions are implausibly large");
        extent *= std::max<uint32_t>(v, 1);
        total *= v;
        shape.push_back(static_cast<int64_t>(v));
    }
    // Checked before allocating, or a corrupt header could ask for up to 2^40 bytes: a plain file
    // must hold the data, and deflate expands at most 1032:1.
    std::error_code size_error;
    const uint64_t file_bytes = std::filesystem::file_size(path, size_error);
    const uint64_t header_bytes = 4 + 4 * uint64_t(ndim);
    const std::string declared =
        "the header declares " + shape.str() + ", " + std::to_string(total) + " bytes of data";
    if (!size_error && f.direct() && total > file_bytes - std::min(file_bytes, header_bytes))
        fail(path, "file is truncated: it ends inside the data (" + declared + ", but only " +
                       std::to_string(file_bytes - std::min(file_bytes, header_bytes)) +
                       " follow the header)");
    if (!size_error && !f.direct() && total / 1032 > file_bytes)
        fail(path, "file is truncated: it ends inside the data (" + declared +
                       ", more than a gzip file of " + std::to_string(file_bytes) +
                       " bytes can hold)");
    Tensor out = empty(shape, DType::UInt8);
    f.read(out.data_ptr(), static_cast<size_t>(total), "data");
    if (!f.at_end()) fail(path, "trailing bytes after the " + shape.str() + " data");
    return out;
}

std::shared_ptr<TensorDataset> load_idx_dataset(const std::string& images_path,
                                                const std::string& labels_path,
                                                std::vector<std::string> class_names,
                                                bool as_float) {
    Tensor images = read_idx(images_path);
    Tensor labels = read_idx(labels_path);
    if (images.dim() != 3)
        fail(images_path, "expected images [N, H, W], got shape " + images.shape().str());
    if (labels.dim() != 1)
        fail(labels_path, "expected labels [N], got shape " + labels.shape().str());
    if (labels.size(0) != images.size(0))
        fail(labels_path, std::to_string(labels.size(0)) + " labels for " +
                              std::to_string(images.size(0)) + " images in '" + images_path + "'");
    const auto* l = labels.data<uint8_t>();
    for (int64_t i = 0; i < labels.numel(); ++i)
        if (!class_names.empty() && l[i] >= class_names.size())
            fail(labels_path, "label " + std::to_string(int(l[i])) + " at index " +
                                  std::to_string(i) + " is not one of the " +
                                  std::to_string(class_names.size()) + " classes");
    images = images.unsqueeze(1);
    if (as_float) images = images.to(DType::Float32).div_(255.0);
    return std::make_shared<TensorDataset>(images, labels.to(DType::Int64), std::move(class_names));
}

const std::vector<std::string>& fashion_mnist_classes() {
    static const std::vector<std::string> names = {
        "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
        "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
    return names;
}

std::shared_ptr<TensorDataset> load_fashion_mnist(const std::string& dir, bool train,
                                                  bool as_float) {
    const std::string prefix = dir + "/" + (train ? "train" : "t10k");
    auto pick = [](const std::string& base) {
        return std::filesystem::exists(base) ? base : base + ".gz";
    };
    return load_idx_dataset(pick(prefix + "-images-idx3-ubyte"),
                            pick(prefix + "-labels-idx1-ubyte"), fashion_mnist_classes(), as_float);
}

namespace {
// Value of `key` in the .npy header dict (a Python literal): the text up to the next top-level
// comma or the closing brace.
std::string npy_field(const std::string& path, const std::string& header, const std::string& key) {
    const std::string quoted[2] = {"'" + key + "'", "\"" + key + "\""};
    size_t pos = std::string::npos;
    for (const auto& q : quoted)
        if ((pos = header.find(q)) != std::string::npos) {
            pos += q.size();
            break;
        }
    if (pos == std::string::npos) fail(path, "the .npy header has no '" + key + "' field");
    pos = header.find(':', pos);
    if (pos == std::string::npos) fail(path, "the .npy header is malformed near '" + key + "'");
    ++pos;
    int depth = 0;
    size_t end = pos;
    for (; end < header.size(); ++end) {
        const char c = header[end];
        if (c == '(' || c == '[') ++depth;
        if (c == ')' || c == ']') --depth;
        if (depth == 0 && (c == ',' || c == '}')) break;
    }
    std::string v = header.substr(pos, end - pos);
    const auto b = v.find_first_not_of(" \t"), e = v.find_last_not_of(" \t");
    return b == std::string::npos ? std::string() : v.substr(b, e - b + 1);
}
} // namespace

Tensor read_npy(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "cannot open the file");
    return read_npy(in, path);
}

Tensor read_npy(std::istream& in, const std::string& path) {
    // The stream's size, so the data size the header declares is checked before allocating.
    const std::streamoff start = in.tellg();
    in.seekg(0, std::ios::end);
    const std::streamoff end = in.tellg();
    in.seekg(start);
    if (start < 0 || end < start || !in) fail(path, "cannot determine the size of the input");
    char magic[8];
    if (!in.read(magic, 8)) fail(path, "file is truncated: it ends inside the .npy magic");
    if (std::memcmp(magic, "\x93NUMPY", 6) != 0) fail(path, "not a .npy file (wrong magic)");
    const int major = static_cast<unsigned char>(magic[6]);
    if (major < 1 || major > 3)
        fail(path, "unsupported .npy format version " + std::to_string(major));
    unsigned char len_bytes[4] = {0, 0, 0, 0};
    const int len_size = major == 1 ? 2 : 4;
    if (!in.read(reinterpret_cast<char*>(len_bytes), len_size))
        fail(path, "file is truncated: it ends inside the header length");
    const uint32_t header_len = uint32_t(len_bytes[0]) | (uint32_t(len_bytes[1]) << 8) |
                                (uint32_t(len_bytes[2]) << 16) | (uint32_t(len_bytes[3]) << 24);
    if (header_len > (1u << 24)) fail(path, "implausible .npy header length");
    std::string header(header_len, '\0');
    if (!in.read(header.data(), header_len))
        fail(path, "file is truncated: it ends inside the header");

    std::string descr = npy_field(path, header, "descr");
    if (descr.size() < 2 || (descr.front() != '\'' && descr.front() != '"'))
        fail(path, "the .npy 'descr' field is not a string: " + descr);
    descr = descr.substr(1, descr.size() - 2);
    DType dtype;
    size_t item = 0;
    if (descr == "<f4")
        dtype = DType::Float32, item = 4;
    else if (descr == "<f8")
        dtype = DType::Float64, item = 8;
    else if (descr == "<i8")
        dtype = DType::Int64, item = 8;
    else if (descr == "|u1" || descr == "<u1")
        dtype = DType::UInt8, item = 1;
    else
        fail(path, "unsupported .npy dtype '" + descr +
                       "' (float32 '<f4', float64 '<f8', int64 '<i8' and uint8 '|u1' are "
                       "supported, little-endian)");
    const std::string fortran = npy_field(path, header, "fortran_order");
    if (fortran == "True")
        fail(path, "the array is stored in Fortran order; save it in C order "
                   "(numpy.ascontiguousarray) first");
    if (fortran != "False")
        fail(path, "the .npy 'fortran_order' field is not True or False: " + fortran);
    const std::string shape_text = npy_field(path, header, "shape");
    if (shape_text.size() < 2 || shape_text.front() != '(' || shape_text.back() != ')')
        fail(path, "the .npy 'shape' field is not a tuple: " + shape_text);
    Dims shape;
    uint64_t total = 1;
    uint64_t extent = 1; // zeros counted as 1, as in read_idx
    size_t pos = 1;
    while (pos < shape_text.size() - 1) {
        while (pos < shape_text.size() - 1 && (shape_text[pos] == ' ' || shape_text[pos] == ','))
            ++pos;
        if (pos >= shape_text.size() - 1) break;
        size_t used = 0;
        int64_t v = -1;
        try {
            v = std::stoll(shape_text.substr(pos), &used);
        } catch (const std::exception&) {
        }
        if (v < 0 || used == 0) fail(path, "the .npy 'shape' field is malformed: " + shape_text);
        if (shape.size() == kMaxDims)
            fail(path, "the array has more than " + std::to_string(kMaxDims) + " dimensions");
        if (extent > (uint64_t(1) << 40) / static_cast<uint64_t>(std::max<int64_t>(v, 1)))
            fail(path, "the array is implausibly large: " + shape_text);
        extent *= static_cast<uint64_t>(std::max<int64_t>(v, 1));
        total *= static_cast<uint64_t>(v);
        shape.push_back(v);
        pos += used;
    }
    const auto bytes = static_cast<std::streamsize>(total * item);
    const std::streamoff remaining = end - in.tellg();
    if (bytes > remaining)
        fail(path, "file is truncated: the data needs " + std::to_string(bytes) +
                       " bytes for shape " + shape.str() + " but only " +
                       std::to_string(remaining) + " are present");
    Tensor out = empty(shape, dtype);
    if (bytes > 0 && !in.read(static_cast<char*>(out.data_ptr()), bytes))
        fail(path, "read error in the data");
    in.peek();
    if (!in.eof()) fail(path, "trailing bytes after the " + shape.str() + " data");
    return out;
}

} // namespace myelin::data
