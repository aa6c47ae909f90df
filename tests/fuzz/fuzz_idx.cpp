// Fuzz target: the IDX reader (plain and gzip; data/readers.h) on arbitrary bytes. read_idx
// takes a path because gzip detection lives in zlib's file layer, so the input becomes a memory
// file. A myelin::Error is a correct rejection; anything else is a bug.
#include <myelin/data/readers.h>
#include <myelin/error.h>

#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const MemoryFile file(data, size);
    try {
        myelin::data::read_idx(file.path());
    } catch (const myelin::Error&) {
    }
    return 0;
}
