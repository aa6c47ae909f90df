#pragma once
// Internal to io: the project reader's JSON walker (a value with its path, so every error names
// the field) and the section readers and writers project.cpp and project_training.cpp share.
// nlohmann never reaches a public header.
#include <myelin/io/project.h>
#include <myelin/spec/components.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <string>

namespace myelin::io::detail {

using json = nlohmann::ordered_json;

inline const char* json_type(const json& v) {
    switch (v.type()) {
    case json::value_t::null:
        return "null";
    case json::value_t::boolean:
        return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
        return "an integer";
    case json::value_t::number_float:
        return "a number";
    case json::value_t::string:
        return "a string";
    case json::value_t::array:
        return "an array";
    case json::value_t::object:
        return "an object";
    default:
        return "an unsupported value";
    }
}

// A JSON value with its path, for reading with located errors.
class Reader {
  public:
    Reader(const json& value, std::string path, const std::string& file)
        : v_(value), path_(std::move(path)), file_(file) {}

    [[noreturn]] void fail(const std::string& message) const {
        throw ProjectError(file_, path_.empty() ? "(top level)" : path_, message);
    }
    const json& value() const { return v_; }
    const std::string& path() const { return path_; }

    Reader at(const std::string& key) const {
        auto it = object().find(key);
        if (it == v_.end()) fail("missing field '" + key + "'");
        return {*it, child_path(key), file_};
    }
    bool has(const std::string& key) const { return object().contains(key); }
    Reader at(size_t index) const {
        return {v_[index], path_ + "[" + std::to_string(index) + "]", file_};
    }
    const json& object() const {
        if (!v_.is_object()) fail(std::string("expected an object, got ") + json_type(v_));
        return v_;
    }
    size_t array_size() const {
        if (!v_.is_array()) fail(std::string("expected an array, got ") + json_type(v_));
        return v_.size();
    }
    // Fails on keys other than `known` (a typo must not be silently ignored).
    void only(std::initializer_list<const char*> known) const {
        for (auto it = object().begin(); it != v_.end(); ++it) {
            bool ok = false;
            for (const char* k : known)
                ok = ok || it.key() == k;
            if (!ok) {
                std::string list;
                for (const char* k : known)
                    list += (list.empty() ? "" : ", ") + std::string(k);
                Reader(*it, child_path(it.key()), file_)
                    .fail("unknown field (expected one of " + list + ")");
            }
        }
    }

    std::string str() const {
        if (!v_.is_string()) fail(std::string("expected a string, got ") + json_type(v_));
        return v_.get<std::string>();
    }
    bool boolean() const {
        if (!v_.is_boolean()) fail(std::string("expected true or false, got ") + json_type(v_));
        return v_.get<bool>();
    }
    int64_t integer(int64_t min = INT64_MIN) const {
        if (!v_.is_number_integer()) fail(std::string("expected an integer, got ") + json_type(v_));
        if (v_.is_number_unsigned() && v_.get<uint64_t>() > uint64_t(INT64_MAX))
            fail("integer out of range");
        int64_t x = v_.get<int64_t>();
        if (x < min) fail("expected an integer >= " + std::to_string(min) + ", got " + v_.dump());
        return x;
    }
    double number() const {
        if (!v_.is_number()) fail(std::string("expected a number, got ") + json_type(v_));
        return v_.get<double>();
    }

    // Optional fields: the default when absent.
    std::string str_or(const std::string& key, std::string def) const {
        return has(key) ? at(key).str() : def;
    }
    bool bool_or(const std::string& key, bool def) const {
        return has(key) ? at(key).boolean() : def;
    }
    int64_t int_or(const std::string& key, int64_t def, int64_t min = INT64_MIN) const {
        return has(key) ? at(key).integer(min) : def;
    }
    double number_or(const std::string& key, double def) const {
        return has(key) ? at(key).number() : def;
    }

  private:
    std::string child_path(const std::string& key) const {
        return path_.empty() ? key : path_ + "." + key;
    }
    const json& v_;
    std::string path_;
    const std::string& file_;
};

spec::Choice read_choice(const Reader& r, spec::Family family);
json write_choice(const spec::Choice& c, spec::Family family);
// The setting `key` names by one of E's words (spec/training.h), `def` when absent; fails naming
// the words.
std::string read_word(const Reader& r, const std::string& key,
                      const std::vector<std::string>& words);
template <class E> E read_setting(const Reader& r, const std::string& key, E def) {
    if (!r.has(key)) return def;
    return *spec::setting_named<E>(read_word(r, key, spec::setting_words<E>()));
}
spec::TrainSpec read_train(const Reader& r); // project_training.cpp
json write_train(const spec::TrainSpec& t);

} // namespace myelin::io::detail
