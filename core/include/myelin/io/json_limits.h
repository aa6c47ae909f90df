#pragma once
// Limits every JSON reader in Myelin applies before parsing untrusted text (project files,
// safetensors headers, checkpoint metadata). A JSON library's parse, copy or compare recurses as
// deep as the input nests, so a crafted file a few megabytes long could overflow the stack; no
// file Myelin writes nests deeper than about 10 levels.
#include <cstdint>
#include <string>
#include <string_view>

namespace myelin::io {

inline constexpr int64_t kMaxJsonNesting = 64;

// The deepest nesting of arrays and objects in `text` (0 for a scalar, 1 for "[]"), counted by
// a linear scan that skips string contents. It follows the brackets only; whether the text is
// valid JSON is the parser's business, which runs after this check.
int64_t json_nesting_depth(std::string_view text);

// Empty when `text` nests no deeper than kMaxJsonNesting; otherwise what is wrong, to follow
// the name of the text: "nests arrays and objects 1000000 levels deep; the limit is 64 (...)".
std::string json_nesting_problem(std::string_view text);

} // namespace myelin::io
