#pragma once
// Limits that keep reading data bounded in memory and time on absurd inputs (a file with one
// 1 GB line, a folder of millions of files, a batch size of 10^9), each refused with a message
// naming the file or option and the limit. Real data sets are far inside every one of them.
#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>

namespace myelin::data {

// The longest line the line-based readers (CSV, text-lines, csv-text) accept, checked while
// reading so no more than this (and one read chunk) of a line is ever held. A line is one example:
// a CSV row of 100,000 numbers (the column limit) or an RGB 512x512 image flattened to text fits
// in a few MB; a whole book on one line is under 5 MB. A longer line is a file that is not
// line-based (a binary file, a JSON dump), and reading it whole would take many times its size.
inline constexpr size_t kMaxLineBytes = size_t(16) << 20;

// The most image files one image folder may list. Listing holds a path (about 100 bytes) and a
// label per file, so this keeps the list under about 0.5 GB; it is three times ImageNet-1k's
// 1.28 million training images. Listing stops as soon as the count passes it.
inline constexpr int64_t kMaxFolderFiles = 4'000'000;

// The largest batch size a project or the command line may ask for. Its activations are the
// batch times each layer's output, and at 2^30 examples even a tiny model needs far more memory
// than any machine has (the memory pre-flight says how much and which batch fits), while the
// products stay well inside 64 bits. The studio offers at most 2^20.
inline constexpr int64_t kMaxBatchSize = int64_t(1) << 30;

// The whole text of `in`, read in chunks of 1 MiB; throws Error "cannot read '<source_name>':
// line N is longer than 16 MiB (the limit)" as soon as a line (lines end in '\n') passes
// kMaxLineBytes, having read at most one chunk more of it.
std::string read_text_with_line_limit(std::istream& in, const std::string& source_name);

} // namespace myelin::data
