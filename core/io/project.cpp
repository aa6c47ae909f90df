// Project files: JSON (nlohmann::ordered_json, used only here) <-> io::Project. Reading walks the
// document with a path so every error names the field ("training.optimizer.lr"); writing emits
// every field in a fixed order with two-space indentation, so saving is byte-stable.
#include <myelin/data/limits.h>
#include <myelin/graph/registry.h>
#include <myelin/io/json_limits.h>
#include <myelin/io/project.h>
#include <myelin/spec/components.h>

#include "project_json.h"
#include "table_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <system_error>
#include <unistd.h>

namespace myelin::io {

using namespace detail;
using spec::Choice;
using spec::DataSpec;
using spec::TrainSpec;

ProjectError::ProjectError(std::string file, std::string location, std::string message)
    : Error(file + (location.empty() ? "" : ":" + location) + ": " + message),
      file_(std::move(file)), location_(std::move(location)), reason_(std::move(message)) {}

namespace {

// --- attribute values --------------------------------------------------------------------------

graph::AttrValue read_value(const Reader& r, const graph::AttrDesc* desc) {
    const json& v = r.value();
    if (v.is_null()) return std::monostate{};
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_number_integer()) {
        int64_t x = r.integer();
        if (desc && desc->type == graph::AttrType::IntList) return std::vector<int64_t>{x};
        if (desc && desc->type == graph::AttrType::Float) return double(x);
        return x;
    }
    if (v.is_number_float()) return v.get<double>();
    if (v.is_string()) return v.get<std::string>();
    const bool table = desc && desc->type == graph::AttrType::NumberTable;
    if (v.is_object()) {
        // A number per name: class weights. Only tables are objects.
        if (desc && !table)
            r.fail(std::string("expected a number, boolean, string, null or list of integers, "
                               "got an object"));
        graph::NumberTable out;
        for (auto it = v.begin(); it != v.end(); ++it)
            out.by_name.emplace_back(it.key(), r.at(it.key()).number());
        return out;
    }
    // Numbers by position; an unknown kind's list with fractions is kept as one too.
    const bool fractions = v.is_array() && std::any_of(v.begin(), v.end(), [](const json& x) {
                               return x.is_number_float();
                           });
    if (v.is_array() && (table || (!desc && fractions))) {
        graph::NumberTable out;
        for (size_t i = 0; i < v.size(); ++i)
            out.by_position.push_back(r.at(i).number());
        return out;
    }
    if (v.is_array()) {
        std::vector<int64_t> list;
        for (size_t i = 0; i < v.size(); ++i) {
            if (!v[i].is_number_integer())
                r.at(i).fail(std::string("expected an integer, got ") + json_type(v[i]));
            list.push_back(r.at(i).integer());
        }
        return list;
    }
    r.fail(std::string("expected a number, boolean, string, null or list of integers, got ") +
           json_type(v));
}

// A one-element list is written as a plain int only for "int or pair" attributes
// (kernel_size: 3), as PyTorch users write them; shapes and milestones stay lists.
json write_value(const graph::AttrValue& value, const graph::AttrDesc* desc) {
    if (auto* list = std::get_if<std::vector<int64_t>>(&value))
        if (list->size() == 1 && desc && desc->list_max_size == 2) return (*list)[0];
    struct Visitor {
        json operator()(std::monostate) const { return nullptr; }
        json operator()(bool b) const { return b; }
        json operator()(int64_t x) const { return x; }
        json operator()(double x) const { return x; }
        json operator()(const std::string& s) const { return s; }
        json operator()(const std::vector<int64_t>& list) const { return json(list); }
        json operator()(const graph::NumberTable& t) const { return table_json<json>(t); }
    };
    return std::visit(Visitor{}, value);
}

// Reads `r`'s keys except `skip` as options described by `descs` (unknown names and wrong types
// fail with their path); missing options take their defaults.
graph::Attrs read_options(const Reader& r, const std::vector<graph::AttrDesc>& descs,
                          std::initializer_list<const char*> skip, const std::string& owner) {
    graph::Attrs given;
    for (auto it = r.object().begin(); it != r.object().end(); ++it) {
        bool skipped = false;
        for (const char* s : skip)
            skipped = skipped || it.key() == s;
        if (skipped) continue;
        Reader field = r.at(it.key());
        const graph::AttrDesc* desc = nullptr;
        for (const auto& d : descs)
            if (d.name == it.key()) desc = &d;
        if (!desc) {
            std::string known;
            for (const auto& d : descs)
                known += (known.empty() ? "" : ", ") + d.name;
            field.fail("unknown option of " + owner +
                       (known.empty() ? " (it has none)" : " (known: " + known + ")"));
        }
        graph::AttrValue value = read_value(field, desc);
        // Types must match here; ranges are reported by validation so the studio can still
        // open the file and show the problem on the node.
        std::string why = desc->check(value);
        bool type_error = !why.empty() && desc->check(desc->default_value).empty() && [&] {
            graph::AttrDesc loose = *desc;
            loose.min.reset();
            loose.max.reset();
            loose.choices.clear();
            if (loose.type == graph::AttrType::Enum) loose.type = graph::AttrType::String;
            loose.list_min_size = 0;
            loose.list_max_size = 1 << 20;
            return !loose.check(value).empty();
        }();
        if (type_error) field.fail(table_problem(*desc, owner, why));
        given.set(it.key(), std::move(value));
    }
    return graph::with_defaults(descs, given);
}

// Options of a kind this build does not know, read as they are written.
graph::Attrs read_unknown_options(const Reader& r) {
    graph::Attrs attrs;
    for (auto it = r.object().begin(); it != r.object().end(); ++it)
        attrs.set(it.key(), read_value(r.at(it.key()), nullptr));
    return attrs;
}

} // namespace

Choice detail::read_choice(const Reader& r, spec::Family family) {
    std::string kind = r.at("kind").str();
    const spec::ComponentKind* k = spec::find_component(family, kind);
    if (!k) {
        std::string known;
        for (const spec::ComponentKind* c : spec::kinds_of(family))
            known += (known.empty() ? "" : ", ") + c->name;
        r.at("kind").fail(std::string("unknown ") + spec::to_string(family) + " '" + kind +
                          "' (known: " + known + ")");
    }
    Choice c{kind, read_options(r, k->options, {"kind"}, kind)};
    // Options must also be in range here: there is no node to show them on.
    for (const auto& d : k->options)
        if (std::string why = d.check(c.options.at(d.name)); !why.empty())
            (r.has(d.name) ? r.at(d.name) : r).fail(table_problem(d, kind, why));
    return c;
}

namespace {

const graph::AttrDesc* find_desc(const std::vector<graph::AttrDesc>* descs,
                                 const std::string& name) {
    if (descs)
        for (const auto& d : *descs)
            if (d.name == name) return &d;
    return nullptr;
}

} // namespace

json detail::write_choice(const Choice& c, spec::Family family) {
    json out = json::object();
    out["kind"] = c.kind;
    const spec::ComponentKind* kind = spec::find_component(family, c.kind);
    for (const auto& [name, value] : c.options.items()) {
        // An empty table (no class weights: the default) is left out, so files written before
        // tables existed stay byte-stable.
        if (auto* table = std::get_if<graph::NumberTable>(&value); table && table->empty())
            continue;
        out[name] = write_value(value, find_desc(kind ? &kind->options : nullptr, name));
    }
    return out;
}

namespace {

// --- sections ----------------------------------------------------------------------------------

graph::ModelSpec read_model(const Reader& r) {
    r.only({"nodes", "edges"});
    graph::ModelSpec spec;
    Reader nodes = r.at("nodes");
    for (size_t i = 0; i < nodes.array_size(); ++i) {
        Reader n = nodes.at(i);
        n.only({"id", "kind", "name", "attrs", "position", "frozen", "lr_multiplier"});
        graph::Node node;
        node.id = n.at("id").integer(1);
        if (spec.find(node.id)) n.at("id").fail("duplicate node id " + std::to_string(node.id));
        node.kind = n.at("kind").str();
        node.name = n.str_or("name", "");
        if (const graph::LayerKind* kind = graph::find_layer_kind(node.kind))
            node.attrs = n.has("attrs") ? read_options(n.at("attrs"), kind->attrs, {}, node.kind)
                                        : graph::with_defaults(kind->attrs, {});
        else if (n.has("attrs"))
            // A kind this build does not know (a plugin that is not installed): the node keeps
            // its attributes as written, analysis reports the kind on the node, and saving writes
            // it back unchanged.
            node.attrs = read_unknown_options(n.at("attrs"));
        if (n.has("position")) {
            Reader p = n.at("position");
            if (p.array_size() != 2) p.fail("expected [x, y]");
            node.x = p.at(0).number();
            node.y = p.at(1).number();
        }
        node.frozen = n.bool_or("frozen", false);
        node.lr_multiplier = n.number_or("lr_multiplier", 1.0);
        spec.nodes.push_back(std::move(node));
    }
    Reader edges = r.at("edges");
    for (size_t i = 0; i < edges.array_size(); ++i) {
        Reader e = edges.at(i);
        e.only({"from", "to", "port", "from_port"});
        graph::Edge edge{e.at("from").integer(), e.at("to").integer(), int(e.int_or("port", 0, 0))};
        const graph::Node* from = spec.find(edge.from);
        if (!from) e.at("from").fail("no node has id " + std::to_string(edge.from));
        if (!spec.find(edge.to)) e.at("to").fail("no node has id " + std::to_string(edge.to));
        if (e.has("from_port")) { // unknown kinds: the analysis reports them
            const int64_t port = e.at("from_port").integer(0);
            const size_t count = graph::output_port_names(*from).size();
            if (graph::find_layer_kind(from->kind) && port >= int64_t(count))
                e.at("from_port")
                    .fail(from->kind + " has " + std::to_string(count) +
                          " output port(s); there is no port " + std::to_string(port));
            edge.from_port = int(std::min<int64_t>(port, 1 << 20));
        }
        spec.edges.push_back(edge);
    }
    return spec;
}

json write_model(const graph::ModelSpec& spec) {
    json nodes = json::array();
    for (const auto& n : spec.nodes) {
        json o = json::object();
        o["id"] = n.id;
        o["kind"] = n.kind;
        if (!n.name.empty()) o["name"] = n.name;
        json attrs = json::object();
        const graph::LayerKind* kind = graph::find_layer_kind(n.kind);
        for (const auto& [name, value] : n.attrs.items())
            attrs[name] = write_value(value, find_desc(kind ? &kind->attrs : nullptr, name));
        if (!attrs.empty()) o["attrs"] = std::move(attrs);
        o["position"] = json::array({n.x, n.y});
        if (n.frozen) o["frozen"] = true;
        if (n.lr_multiplier != 1.0) o["lr_multiplier"] = n.lr_multiplier;
        nodes.push_back(std::move(o));
    }
    json edges = json::array();
    for (const auto& e : spec.edges) {
        json o = json::object();
        o["from"] = e.from;
        o["to"] = e.to;
        if (e.to_port != 0) o["port"] = e.to_port;
        if (e.from_port != 0) o["from_port"] = e.from_port;
        edges.push_back(std::move(o));
    }
    json out = json::object();
    out["nodes"] = std::move(nodes);
    out["edges"] = std::move(edges);
    return out;
}

DataSpec read_data(const Reader& r) {
    r.only({"source", "validation_fraction", "transforms", "batch_size", "num_workers", "shuffle",
            "drop_last"});
    DataSpec d;
    d.source = read_choice(r.at("source"), spec::Family::DataSource);
    d.validation_fraction = r.number_or("validation_fraction", d.validation_fraction);
    if (d.validation_fraction < 0 || d.validation_fraction >= 1)
        r.at("validation_fraction").fail("expected a fraction in [0, 1)");
    if (r.has("transforms")) {
        Reader t = r.at("transforms");
        for (size_t i = 0; i < t.array_size(); ++i)
            d.transforms.push_back(read_choice(t.at(i), spec::Family::Transform));
    }
    d.batch_size = r.int_or("batch_size", d.batch_size, 1);
    if (d.batch_size > data::kMaxBatchSize)
        r.at("batch_size")
            .fail("expected at most " + std::to_string(data::kMaxBatchSize) +
                  " (no machine holds the activations of a larger batch)");
    d.num_workers = int(r.int_or("num_workers", d.num_workers, 0));
    if (d.num_workers > 64) r.at("num_workers").fail("expected at most 64 workers");
    d.shuffle = r.bool_or("shuffle", d.shuffle);
    d.drop_last = r.bool_or("drop_last", d.drop_last);
    return d;
}

json write_data(const DataSpec& d) {
    json o = json::object();
    o["source"] = write_choice(d.source, spec::Family::DataSource);
    o["validation_fraction"] = d.validation_fraction;
    json t = json::array();
    for (const auto& c : d.transforms)
        t.push_back(write_choice(c, spec::Family::Transform));
    o["transforms"] = std::move(t);
    o["batch_size"] = d.batch_size;
    o["num_workers"] = d.num_workers;
    o["shuffle"] = d.shuffle;
    o["drop_last"] = d.drop_last;
    return o;
}

std::string line_column(std::string_view text, size_t byte) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < byte && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
    return std::to_string(line) + ":" + std::to_string(column);
}

// Two-space indented JSON with arrays of scalars on one line ("shape": [1, 28, 28]): compact and
// friendly to diffs of hand-edited files.
void pretty_print(const json& v, int indent, std::string& out) {
    auto newline = [&](int level) {
        out += '\n';
        out.append(size_t(level) * 2, ' ');
    };
    if (v.is_object()) {
        if (v.empty()) {
            out += "{}";
            return;
        }
        out += '{';
        bool first = true;
        for (auto it = v.begin(); it != v.end(); ++it) {
            if (!first) out += ',';
            first = false;
            newline(indent + 1);
            out += json(it.key()).dump();
            out += ": ";
            pretty_print(*it, indent + 1, out);
        }
        newline(indent);
        out += '}';
        return;
    }
    if (v.is_array()) {
        bool scalars =
            std::none_of(v.begin(), v.end(), [](const json& e) { return e.is_structured(); });
        if (scalars) {
            out += '[';
            for (size_t i = 0; i < v.size(); ++i) {
                if (i) out += ", ";
                out += v[i].dump();
            }
            out += ']';
            return;
        }
        out += '[';
        for (size_t i = 0; i < v.size(); ++i) {
            if (i) out += ',';
            newline(indent + 1);
            pretty_print(v[i], indent + 1, out);
        }
        newline(indent);
        out += ']';
        return;
    }
    out += v.dump();
}

} // namespace

Project parse_project(std::string_view text, const std::string& source_name) {
    if (auto problem = json_nesting_problem(text); !problem.empty())
        throw ProjectError(source_name, "", "the JSON " + problem);
    json doc;
    try {
        doc = json::parse(text.begin(), text.end());
    } catch (const json::parse_error& e) {
        // nlohmann's message reads "[json.exception.parse_error.101] parse error at line 3,
        // column 5: syntax error while parsing ..."; keep what follows "error while ".
        std::string what = e.what();
        size_t cut = what.find(": ", what.find("parse error"));
        std::string reason = cut == std::string::npos ? what : what.substr(cut + 2);
        size_t byte = e.byte > 0 ? e.byte - 1 : 0;
        throw ProjectError(source_name, line_column(text, byte), "invalid JSON: " + reason);
    } catch (const json::exception& e) {
        // out_of_range: a number too large for a double ("number overflow parsing '1e999'"),
        // found by fuzz_project; nlohmann gives no position for it.
        std::string what = e.what();
        if (const auto close = what.find("] "); what.starts_with("[json.") && close != what.npos)
            what = what.substr(close + 2);
        throw ProjectError(source_name, "", "invalid JSON: " + what);
    }
    Reader root(doc, "", source_name);
    root.object();
    int64_t version = root.at("format_version").integer(1);
    if (version > kProjectFormatVersion)
        root.at("format_version")
            .fail("this project needs format version " + std::to_string(version) +
                  "; this build of Myelin reads up to version " +
                  std::to_string(kProjectFormatVersion) + " (update Myelin to open it)");
    root.only({"format_version", "name", "description", "model", "data", "training", "ui"});
    Project p;
    p.format_version = int(version);
    p.name = root.str_or("name", "");
    p.description = root.str_or("description", "");
    p.model = read_model(root.at("model"));
    p.data = read_data(root.at("data"));
    p.train = read_train(root.at("training"));
    if (root.has("ui")) {
        root.at("ui").object();
        p.ui_json = doc["ui"].dump();
    }
    return p;
}

std::string serialize_project(const Project& p) {
    json doc = json::object();
    doc["format_version"] = required_format_version(p);
    doc["name"] = p.name;
    if (!p.description.empty()) doc["description"] = p.description;
    doc["model"] = write_model(p.model);
    doc["data"] = write_data(p.data);
    doc["training"] = write_train(p.train);
    json ui = json::object();
    if (auto problem = json_nesting_problem(p.ui_json); !problem.empty())
        throw Error("project ui data " + problem);
    try {
        ui = json::parse(p.ui_json.empty() ? std::string("{}") : p.ui_json);
    } catch (const json::exception& e) {
        throw Error(std::string("project ui data is not valid JSON: ") + e.what());
    }
    doc["ui"] = std::move(ui);
    std::string out;
    pretty_print(doc, 0, out);
    return out + "\n";
}

Project load_project(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ProjectError(path.string(), "", "cannot open the file");
    std::ostringstream buffer;
    buffer << in.rdbuf();
    if (in.bad()) throw ProjectError(path.string(), "", "read failed");
    return parse_project(buffer.str(), path.string());
}

void save_project(const Project& project, const std::filesystem::path& path) {
    std::string text = serialize_project(project);
    std::filesystem::path tmp = path;
    tmp += ".tmp-" + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw Error("cannot write " + tmp.string());
        out.write(text.data(), std::streamsize(text.size()));
        out.flush();
        if (!out) {
            std::error_code ignored;
            std::filesystem::remove(tmp, ignored);
            throw Error("writing " + path.string() + " failed (disk full?)");
        }
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) {
        std::error_code ignored;
        std::filesystem::remove(tmp, ignored);
        throw Error("cannot replace " + path.string() + ": " + ec.message());
    }
}

} // namespace myelin::io
