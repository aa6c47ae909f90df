#pragma once
// safetensors files (https://github.com/huggingface/safetensors), the checkpoint format:
//
//   8 bytes     little-endian uint64 N, the header length
//   N bytes     UTF-8 JSON: {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]},
//               ..., "__metadata__": {"<key>": "<string value>", ...}}
//   the rest    the byte buffer; tensor <name> is bytes [b, e) of it, little-endian, C order
//
// Readers validate every field, offset and size before allocating anything and throw a
// myelin::Error naming the file (or the given source name) and what is wrong. Names and
// metadata keep the order of the header, which is the order they were given when written here
// (PyTorch's state_dict order survives a round trip).
#include <myelin/dims.h>
#include <myelin/dtype.h>
#include <myelin/error.h>
#include <myelin/tensor.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace myelin::io {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using StringPairs = std::vector<std::pair<std::string, std::string>>;

// The safetensors dtype tag of a Myelin dtype ("F32", "F64", "F16", "BF16", "I64", "U8", "BOOL").
const char* safetensors_dtype_name(DType dtype);

// One tensor as the header describes it.
struct SafetensorsTensorInfo {
    std::string name;
    DType dtype = DType::Float32;
    Dims shape;
    uint64_t data_begin = 0; // byte offsets into the byte buffer (which starts at data_start)
    uint64_t data_end = 0;
    bool int8 = false; // an "I8" tensor, read as a UInt8 tensor of the same bytes (see below)
};

// The header alone: what the studio lists for a checkpoint without loading its weights.
struct SafetensorsHeader {
    std::vector<SafetensorsTensorInfo> tensors; // header order
    StringPairs metadata;                       // __metadata__, header order
    uint64_t data_start = 0;                    // file offset of the byte buffer: 8 + N
    uint64_t data_size = 0;                     // bytes in the byte buffer

    const SafetensorsTensorInfo* find(std::string_view name) const;
    std::optional<std::string> metadata_value(std::string_view key) const;
};

// Int8 tensors (quantized weights): Myelin has no int8 tensor type, so one travels as a UInt8
// tensor holding the same bytes. Writers list their names in `int8_names` to tag them "I8" (what
// PyTorch reads as torch.int8); readers get them as UInt8 tensors with their names listed.
struct SafetensorsFile {
    NamedTensors tensors; // header order, CPU tensors
    StringPairs metadata;
    std::vector<std::string> int8_names; // "I8" tensors (UInt8 here), header order

    // The tensor called `name`, or nullptr.
    const Tensor* find(std::string_view name) const;
    std::optional<std::string> metadata_value(std::string_view key) const;
};

// Writes `tensors` (in this order in the header) and `metadata` to `path` atomically: the bytes
// go to a temporary file in the same directory, which is fsynced and renamed over `path`, and the
// directory is fsynced. On any failure the temporary file is removed and an existing file at
// `path` is left as it was. Non-contiguous, non-CPU and requires-grad tensors are written as
// their plain contiguous values. Names must be unique, non-empty and not "__metadata__"; metadata
// keys must be unique. The byte buffer holds the tensors ordered by decreasing element size, so
// every tensor is aligned to its element size (the header keeps the given order).
void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const StringPairs& metadata = {},
                      const std::vector<std::string>& int8_names = {});

// A file that could not be written (the disk is full, the folder is read-only): the message names
// the file and the reason, and for a full disk how many bytes the file needed. Nothing was left
// at the target, and a file already there is as it was.
class WriteError : public Error {
  public:
    WriteError(const std::string& message, int error_number, uint64_t bytes_needed)
        : Error(message), error_number_(error_number), bytes_needed_(bytes_needed) {}
    int error_number() const { return error_number_; } // errno: ENOSPC for a full disk
    uint64_t bytes_needed() const { return bytes_needed_; }

  private:
    int error_number_;
    uint64_t bytes_needed_;
};

// The writers' fault seam, for tests that need a full disk without a small mount: before each
// file save_safetensors writes, `fault(target)` is asked for an errno to fail it with (0: write
// it). Empty (the default): none.
void set_write_fault_for_tests(std::function<int(const std::filesystem::path& target)> fault);

// Reads and validates the whole file; every tensor is a new CPU tensor.
SafetensorsFile load_safetensors(const std::filesystem::path& path);

// The same from bytes in memory; `source_name` names the input in error messages.
SafetensorsFile load_safetensors_from_memory(const uint8_t* data, size_t size,
                                             const std::string& source_name);

// Reads and validates the header only (offsets are checked against the file's size).
SafetensorsHeader read_safetensors_header(const std::filesystem::path& path);

} // namespace myelin::io
