// Reading a line-based file with the line-length limit (data/limits.h).
#include <myelin/data/limits.h>
#include <myelin/error.h>

#include <cstring>
#include <vector>

namespace myelin::data {

std::string read_text_with_line_limit(std::istream& in, const std::string& source_name) {
    std::string text;
    std::vector<char> chunk(size_t(1) << 20);
    size_t line_start = 0; // offset in `text` of the line being read
    int64_t line = 1;
    while (in) {
        in.read(chunk.data(), std::streamsize(chunk.size()));
        const auto got = static_cast<size_t>(in.gcount());
        // Every line ending in this chunk, and the one still open at its end, against the limit.
        for (size_t pos = 0;;) {
            const auto* found =
                static_cast<const char*>(std::memchr(chunk.data() + pos, '\n', got - pos));
            const size_t end = found ? size_t(found - chunk.data()) : got;
            if (text.size() + end - line_start > kMaxLineBytes)
                throw Error("cannot read '" + source_name + "': line " + std::to_string(line) +
                            " is longer than " + std::to_string(kMaxLineBytes >> 20) +
                            " MiB (the limit)");
            if (!found) break;
            ++line;
            line_start = text.size() + end + 1;
            pos = end + 1;
        }
        text.append(chunk.data(), got);
    }
    if (in.bad()) throw Error("cannot read '" + source_name + "': read error");
    return text;
}

} // namespace myelin::data
