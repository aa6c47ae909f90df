// Fuzz target: the project-file parser (io/project.h) on arbitrary text. A myelin::Error is a
// correct rejection. A project that parses must also analyse without crashing and round-trip:
// serialize -> parse gives the same project, and serializing again gives the same bytes.
#include <myelin/error.h>
#include <myelin/graph/analysis.h>
#include <myelin/io/project.h>

#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    myelin::io::Project project;
    try {
        project = myelin::io::parse_project(text, "fuzz-input");
    } catch (const myelin::Error&) {
        return 0;
    }
    myelin::graph::analyze(project.model, 2);
    std::string once = myelin::io::serialize_project(project);
    myelin::io::Project again = myelin::io::parse_project(once, "round-trip");
    if (!(again == project) || myelin::io::serialize_project(again) != once) std::abort();
    return 0;
}
