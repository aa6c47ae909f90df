// Fuzz target: the CSV reader (data/readers.h). The first byte picks the options (so the fuzzer
// explores header/no header, delimiters, numeric and categorical targets, chosen feature
// columns); the rest is the CSV text. A myelin::Error is a correct rejection; anything else is a
// bug.
#include <myelin/data/readers.h>
#include <myelin/error.h>

#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint8_t flags = data[0];
    myelin::data::CsvOptions options;
    options.header = (flags & 1) != 0;
    options.delimiter = ",;\t|"[(flags >> 1) & 3];
    if (flags & 8) options.target_column = options.header ? "y" : "0";
    options.target_kind = (flags & 16) ? myelin::data::CsvTargetKind::Categorical
                                       : myelin::data::CsvTargetKind::Numeric;
    if (flags & 32) options.feature_columns = {options.header ? "a" : "1"};
    std::istringstream in(std::string(reinterpret_cast<const char*>(data + 1), size - 1));
    try {
        const auto csv = myelin::data::read_csv(in, "fuzz-input", options);
        if (csv->size() > 0) {
            csv->get(csv->size() - 1);
            if (options.target_kind == myelin::data::CsvTargetKind::Categorical &&
                !options.target_column.empty())
                csv->label(0);
        }
    } catch (const myelin::Error&) {
    }
    return 0;
}
