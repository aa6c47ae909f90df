// Fuzz target: the .npy reader (data/readers.h) on arbitrary bytes. A myelin::Error is a correct
// rejection; anything else is a bug.
#include <myelin/data/readers.h>
#include <myelin/error.h>

#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
    try {
        myelin::data::read_npy(in, "fuzz-input");
    } catch (const myelin::Error&) {
    }
    return 0;
}
