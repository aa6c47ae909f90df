#pragma once
// --json output (issue 43): one JSON document on stdout and nothing else there, so a script can
// parse it whole; every message goes to stderr. The keys are listed in the README ("JSON
// output"), in the order written (ordered_json).
#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>

namespace myelin::cli {

inline void print_json(const nlohmann::ordered_json& doc) {
    // Invalid UTF-8 (a name from a file) is replaced rather than failing the whole document.
    const std::string text =
        doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
}

} // namespace myelin::cli
