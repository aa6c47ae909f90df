// The nesting check every JSON reader runs before it parses: a scan with a counter, no
// recursion, so its own depth does not depend on the input.
#include <myelin/io/json_limits.h>

namespace myelin::io {

int64_t json_nesting_depth(std::string_view text) {
    int64_t depth = 0, deepest = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i; // the escaped character cannot end the string
            else if (c == '"')
                in_string = false;
            continue;
        }
        switch (c) {
        case '"':
            in_string = true;
            break;
        case '[':
        case '{':
            if (++depth > deepest) deepest = depth;
            break;
        case ']':
        case '}':
            if (depth > 0) --depth; // unbalanced text is for the parser to report
            break;
        default:
            break;
        }
    }
    return deepest;
}

std::string json_nesting_problem(std::string_view text) {
    const int64_t depth = json_nesting_depth(text);
    if (depth <= kMaxJsonNesting) return {};
    return "nests arrays and objects " + std::to_string(depth) + " levels deep; the limit is " +
           std::to_string(kMaxJsonNesting) +
           " (no file Myelin writes comes close: it is damaged or crafted)";
}

} // namespace myelin::io
