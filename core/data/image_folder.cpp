// Image folders: PNG (libpng's simplified API) and JPEG (libjpeg) decoding, bilinear resizing and
// ImageFolderDataset. Decoding keeps all state on the stack, so get() is thread-safe.
#include <myelin/data/readers.h>
#include <myelin/error.h>

#include <jpeglib.h>
#include <png.h>

#include <algorithm>
#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace myelin::data {

namespace {
namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw Error("cannot read '" + path + "': " + what);
}

// Headers are checked against this before anything is allocated: a 100-byte file can declare
// 65500 x 65500 (JPEG) or 10^6 x 10^6 (PNG) pixels. 2^28 pixels still takes 108-megapixel photos.
constexpr uint64_t kMaxImagePixels = uint64_t(1) << 28;
// libjpeg's whole-image buffers (progressive JPEGs) beyond this are refused, not allocated.
constexpr long kMaxJpegMemory = 1L << 30;
// An image within the pixel limit stored without compression at 16 bits per RGBA channel; a
// larger file is refused before it is read into memory.
constexpr uintmax_t kMaxImageFileBytes = uintmax_t(kMaxImagePixels) * 8;
// How many empty files a refused folder's message names.
constexpr size_t kEmptyFilesNamed = 3;

struct Pixels {
    int64_t height = 0, width = 0, channels = 0;
    std::vector<uint8_t> data; // interleaved H x W x C
};

Pixels decode_png(const std::string& path, const std::vector<uint8_t>& bytes, int64_t channels) {
    png_image image;
    std::memset(&image, 0, sizeof image);
    image.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
        fail(path, std::string("corrupt PNG: ") + image.message);
    // Deflate expands at most 1032:1 and a pixel takes at least one bit, so a file this size
    // cannot hold more pixels than this.
    const uint64_t pixels = uint64_t(image.width) * image.height;
    if (pixels > kMaxImagePixels || pixels / 8 / 1032 > bytes.size()) {
        png_image_free(&image);
        fail(path, "corrupt PNG: the header declares " + std::to_string(image.width) + " x " +
                       std::to_string(image.height) + " pixels, more than " +
                       (pixels > kMaxImagePixels ? "the limit of " + std::to_string(kMaxImagePixels)
                                                 : "its compressed data can hold"));
    }
    image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
    Pixels px;
    px.height = image.height;
    px.width = image.width;
    px.channels = channels;
    px.data.resize(PNG_IMAGE_SIZE(image));
    // Transparent pixels are composited onto black (background = nullptr).
    if (!png_image_finish_read(&image, nullptr, px.data.data(), 0, nullptr)) {
        const std::string message = image.message;
        png_image_free(&image);
        fail(path, "corrupt PNG: " + message);
    }
    return px;
}

struct JpegError {
    jpeg_error_mgr mgr;
    std::jmp_buf jump;
    char message[JMSG_LENGTH_MAX];
};

void jpeg_error_exit(j_common_ptr cinfo) {
    auto* err = reinterpret_cast<JpegError*>(cinfo->err);
    err->mgr.format_message(cinfo, err->message);
    std::longjmp(err->jump, 1);
}
void jpeg_no_output(j_common_ptr) {} // warnings are not printed

// libjpeg reports errors by longjmp back here; no C++ object is created between setjmp and a
// possible longjmp (px lives in the caller), so nothing is skipped.
bool decode_jpeg_raw(const std::vector<uint8_t>& bytes, int64_t channels, Pixels& px,
                     JpegError& err) {
    jpeg_decompress_struct cinfo;
    cinfo.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = jpeg_error_exit;
    err.mgr.output_message = jpeg_no_output;
    if (setjmp(err.jump)) {
        jpeg_destroy_decompress(&cinfo);
        return false;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
    jpeg_read_header(&cinfo, TRUE);
    if (uint64_t(cinfo.image_width) * cinfo.image_height > kMaxImagePixels) {
        std::snprintf(err.message, sizeof err.message,
                      "the header declares %u x %u pixels, more than the limit of %llu (a corrupt "
                      "file?)",
                      cinfo.image_width, cinfo.image_height, (unsigned long long)kMaxImagePixels);
        jpeg_destroy_decompress(&cinfo);
        return false;
    }
    cinfo.mem->max_memory_to_use = kMaxJpegMemory;
    cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&cinfo);
    px.height = cinfo.output_height;
    px.width = cinfo.output_width;
    px.channels = cinfo.output_components;
    px.data.resize(static_cast<size_t>(px.height * px.width * px.channels));
    const auto stride = static_cast<size_t>(px.width * px.channels);
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = px.data.data() + cinfo.output_scanline * stride;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    // libjpeg only warns about corrupt or truncated scan data (and fills in grey); reject it.
    const bool clean = err.mgr.num_warnings == 0;
    if (!clean) err.mgr.format_message(reinterpret_cast<j_common_ptr>(&cinfo), err.message);
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return clean;
}

// The whole file when it is a PNG or JPEG within the size limit; the signature is read first, so
// a huge or empty file is refused without reading it.
std::vector<uint8_t> read_image_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "cannot open the file");
    uint8_t signature[8] = {};
    in.read(reinterpret_cast<char*>(signature), sizeof signature);
    const auto got = static_cast<size_t>(in.gcount());
    if (in.bad()) fail(path, "read error");
    if (got == 0) fail(path, "the file is empty (0 bytes), not an image");
    static const uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    const bool png = got == 8 && std::memcmp(signature, png_magic, 8) == 0;
    const bool jpeg =
        got >= 3 && signature[0] == 0xFF && signature[1] == 0xD8 && signature[2] == 0xFF;
    if (!png && !jpeg) fail(path, "unsupported image format (only PNG and JPEG are read)");
    std::error_code error;
    const uintmax_t size = fs::file_size(path, error);
    if (error) fail(path, "cannot read its size: " + error.message());
    if (size > kMaxImageFileBytes)
        fail(path, "the file holds " + std::to_string(size) + " bytes, more than an image of " +
                       std::to_string(kMaxImagePixels) + " pixels (the limit) can take");
    std::vector<uint8_t> bytes(static_cast<size_t>(size));
    std::memcpy(bytes.data(), signature, std::min<size_t>(got, bytes.size()));
    if (bytes.size() > got)
        in.read(reinterpret_cast<char*>(bytes.data() + got), std::streamsize(bytes.size() - got));
    if (in.bad() || static_cast<size_t>(in.gcount()) + got < bytes.size())
        fail(path, "read error (the file shrank while it was read?)");
    return bytes;
}

Pixels decode(const std::string& path, int64_t channels) {
    const std::vector<uint8_t> bytes = read_image_bytes(path);
    if (bytes[0] == 0x89) return decode_png(path, bytes, channels); // else a JPEG signature
    Pixels px;
    JpegError err;
    if (!decode_jpeg_raw(bytes, channels, px, err))
        fail(path, std::string("corrupt JPEG: ") + err.message);
    if (px.channels != channels)
        fail(path, "JPEG decoded to " + std::to_string(px.channels) + " channels instead of " +
                       std::to_string(channels));
    return px;
}

// Bilinear resize with half-pixel centres (PyTorch's interpolate, align_corners=False, no
// antialiasing), from interleaved HWC to planar [C, H, W] float values in [0, 255].
std::vector<float> resize_chw(const Pixels& px, int64_t out_h, int64_t out_w) {
    const int64_t c = px.channels;
    std::vector<float> out(static_cast<size_t>(c * out_h * out_w));
    auto axis = [](int64_t out_n, int64_t in_n, std::vector<int64_t>& i0, std::vector<int64_t>& i1,
                   std::vector<float>& frac) {
        const double scale = double(in_n) / double(out_n);
        for (int64_t o = 0; o < out_n; ++o) {
            const double src = std::max(0.0, (double(o) + 0.5) * scale - 0.5);
            const auto lo = std::min<int64_t>(static_cast<int64_t>(src), in_n - 1);
            i0.push_back(lo);
            i1.push_back(std::min<int64_t>(lo + 1, in_n - 1));
            frac.push_back(static_cast<float>(src - double(lo)));
        }
    };
    std::vector<int64_t> y0, y1, x0, x1;
    std::vector<float> fy, fx;
    axis(out_h, px.height, y0, y1, fy);
    axis(out_w, px.width, x0, x1, fx);
    const uint8_t* src = px.data.data();
    auto at = [&](int64_t y, int64_t x, int64_t ch) {
        return float(src[(y * px.width + x) * c + ch]);
    };
    for (int64_t ch = 0; ch < c; ++ch)
        for (int64_t y = 0; y < out_h; ++y)
            for (int64_t x = 0; x < out_w; ++x) {
                const float top = at(y0[y], x0[x], ch) * (1 - fx[x]) + at(y0[y], x1[x], ch) * fx[x];
                const float bot = at(y1[y], x0[x], ch) * (1 - fx[x]) + at(y1[y], x1[x], ch) * fx[x];
                out[static_cast<size_t>((ch * out_h + y) * out_w + x)] =
                    top * (1 - fy[y]) + bot * fy[y];
            }
    return out;
}

bool is_image_name(const fs::path& p) {
    std::string ext = p.extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    return ext == ".png" || ext == ".jpg" || ext == ".jpeg";
}

void check_channels(int64_t channels, const char* what) {
    if (channels != 1 && channels != 3)
        throw Error(std::string(what) + ": channels must be 1 or 3, got " +
                    std::to_string(channels));
}
} // namespace

Tensor read_image(const std::string& path, int64_t channels) {
    check_channels(channels, "read_image");
    const Pixels px = decode(path, channels);
    const std::vector<float> chw = resize_chw(px, px.height, px.width); // identity: HWC -> CHW
    Tensor out = empty({channels, px.height, px.width}, DType::UInt8);
    auto* dst = out.data<uint8_t>();
    for (size_t k = 0; k < chw.size(); ++k)
        dst[k] = static_cast<uint8_t>(chw[k]);
    return out;
}

ImageFolderDataset::ImageFolderDataset(const std::string& root, const ImageFolderOptions& options)
    : options_(options) {
    check_channels(options.channels, "ImageFolderDataset");
    if (options.height <= 0 || options.width <= 0)
        throw Error("ImageFolderDataset: height and width must be positive, got " +
                    std::to_string(options.height) + " x " + std::to_string(options.width));
    if (options.max_files < 1)
        throw Error("ImageFolderDataset: max_files must be at least 1, got " +
                    std::to_string(options.max_files));
    std::error_code ec;
    if (!fs::is_directory(root, ec)) fail(root, "not a directory");
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code entry_error;
        if (it->is_directory(entry_error)) class_names_.push_back(it->path().filename().string());
    }
    if (ec) fail(root, "cannot list the folder: " + ec.message());
    std::sort(class_names_.begin(), class_names_.end());
    if (class_names_.empty()) fail(root, "no class subfolders");
    // Empty files are found from the listing's own look at each file, so a folder of a million
    // of them is refused after one pass, not when a batch first reads one.
    int64_t empty_files = 0;
    std::set<std::string> first_empty; // the few that come first in path order
    for (size_t c = 0; c < class_names_.size(); ++c) {
        const fs::path folder = fs::path(root) / class_names_[c];
        std::vector<std::string> found;
        for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end;
             it.increment(ec)) {
            std::error_code entry_error;
            if (!it->is_regular_file(entry_error) || !is_image_name(it->path())) continue;
            if (int64_t(files_.size() + found.size()) >= options.max_files)
                fail(root, "holds more than " + std::to_string(options.max_files) +
                               " image files (the limit; listing stopped there): use a subset "
                               "of the images");
            found.push_back(it->path().string());
            if (it->file_size(entry_error) != 0 || entry_error) continue;
            ++empty_files;
            first_empty.insert(it->path().lexically_relative(root).string());
            if (first_empty.size() > kEmptyFilesNamed)
                first_empty.erase(std::prev(first_empty.end()));
        }
        if (ec) fail(folder.string(), "cannot list the folder: " + ec.message());
        if (found.empty())
            fail(root, "class folder '" + class_names_[c] + "' holds no .png, .jpg or .jpeg files");
        std::sort(found.begin(), found.end());
        for (auto& f : found) {
            files_.push_back(std::move(f));
            labels_.push_back(static_cast<int64_t>(c));
        }
    }
    if (empty_files > 0) {
        std::string named;
        for (const std::string& f : first_empty)
            named += (named.empty() ? "'" : ", '") + f + "'";
        if (empty_files > int64_t(first_empty.size())) named += ", ...";
        fail(root, std::to_string(empty_files) + " of its " + std::to_string(files_.size()) +
                       " image files " + (empty_files == 1 ? "is" : "are") +
                       " empty (0 bytes): " + named);
    }
}

Example ImageFolderDataset::get(int64_t index) const {
    check_index(index, "ImageFolderDataset::get");
    const auto& path = files_[static_cast<size_t>(index)];
    const Pixels px = decode(path, options_.channels);
    const std::vector<float> chw = resize_chw(px, options_.height, options_.width);
    const Dims shape{options_.channels, options_.height, options_.width};
    Tensor input;
    if (options_.as_float) {
        input = empty(shape, DType::Float32);
        auto* dst = input.data<float>();
        for (size_t k = 0; k < chw.size(); ++k)
            dst[k] = chw[k] / 255.0f;
    } else {
        input = empty(shape, DType::UInt8);
        auto* dst = input.data<uint8_t>();
        for (size_t k = 0; k < chw.size(); ++k)
            dst[k] = static_cast<uint8_t>(std::clamp(chw[k] + 0.5f, 0.0f, 255.0f));
    }
    return {input, scalar_tensor(double(labels_[static_cast<size_t>(index)]), DType::Int64)};
}

int64_t ImageFolderDataset::label(int64_t index) const {
    check_index(index, "ImageFolderDataset::label");
    return labels_[static_cast<size_t>(index)];
}

std::shared_ptr<ImageFolderDataset> read_image_folder(const std::string& root,
                                                      const ImageFolderOptions& options) {
    return std::make_shared<ImageFolderDataset>(root, options);
}

} // namespace myelin::data
