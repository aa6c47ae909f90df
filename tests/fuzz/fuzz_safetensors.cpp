// Fuzz target: the safetensors reader (io/safetensors.h) on arbitrary bytes. A myelin::Error is a
// correct rejection; a crash, a sanitizer report or any other exception is a bug.
#include <myelin/error.h>
#include <myelin/io/safetensors.h>

#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        myelin::io::load_safetensors_from_memory(data, size, "fuzz-input");
    } catch (const myelin::Error&) {
    }
    return 0;
}
