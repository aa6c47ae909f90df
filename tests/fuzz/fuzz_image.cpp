// Fuzz target: the PNG/JPEG decoder behind read_image (data/readers.h), decoding to RGB and, when
// that works, to grey. read_image takes a path, so the input becomes a memory file. A
// myelin::Error is a correct rejection; anything else is a bug.
#include <myelin/data/readers.h>
#include <myelin/error.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const MemoryFile file(data, size);
    try {
        myelin::data::read_image(file.path(), 3);
        myelin::data::read_image(file.path(), 1);
    } catch (const myelin::Error&) {
    }
    return 0;
}
