// What every export starts from (a project with weights that fit it), the atomic file writer, the
// safetensors export and the format dispatch.
#include <myelin/error.h>
#include <myelin/export/export.h>

#include "analysis_check.h"
#include <myelin/generator.h>
#include <myelin/graph/build.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/safetensors.h>
#include <myelin/train/evaluation.h>
#include <myelin/train/trainer.h>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>

namespace myelin::exporters {

namespace {

std::string mismatch_text(const nn::LoadStateDictResult& r) {
    std::string what;
    auto list = [&](const std::vector<std::string>& keys, const std::string& label) {
        for (size_t i = 0; i < keys.size() && i < 12; ++i)
            what += "\n  " + label + ": " + keys[i];
        if (keys.size() > 12)
            what += "\n  ... and " + std::to_string(keys.size() - 12) + " more " + label;
    };
    list(r.missing_keys, "missing");
    list(r.unexpected_keys, "unexpected");
    list(r.shape_mismatches, "shape");
    return what;
}

} // namespace

void check_export_source(const ExportSource& source) {
    // Building initialises weights from the default generator: leave it as it was.
    const std::string generator = default_generator().get_state();
    struct Restore {
        const std::string& state;
        ~Restore() { default_generator().set_state(state); }
    } restore{generator};
    auto model = graph::build(source.project.model);
    const auto result = model->load_state_dict(source.weights, false);
    if (!result.ok())
        throw Error(
            (source.checkpoint.empty() ? std::string("the weights") : source.checkpoint.string()) +
            " do not fit the model of project '" + source.project.name +
            "':" + mismatch_text(result));
}

ExportSource load_export_source(const std::optional<io::Project>& project,
                                const std::filesystem::path& checkpoint) {
    // A plain safetensors file of weights (from PyTorch, say) exports with a project.
    if (project && !io::read_safetensors_header(checkpoint).metadata_value("format")) {
        ExportSource source;
        source.project = *project;
        for (auto& [name, tensor] : io::load_safetensors(checkpoint).tensors)
            if (name.rfind("optimizer.", 0) != 0) source.weights.emplace_back(name, tensor);
        source.checkpoint = checkpoint;
        check_export_source(source);
        return source;
    }
    io::Checkpoint c = io::load_checkpoint(checkpoint);
    ExportSource source;
    if (project) {
        source.project = *project;
    } else {
        if (c.project_json.empty())
            throw Error(checkpoint.string() +
                        " carries no project (an older checkpoint): name the project file too");
        source.project = io::parse_project(c.project_json, checkpoint.string() + " (its project)");
    }
    if (!c.quantization.empty()) {
        quant::QuantizationPlan plan =
            quant::QuantizationPlan::from_json(c.quantization, checkpoint.string());
        quant::read_parameters(plan, c.model, checkpoint.string());
        c.model = quant::dequantized_state(plan, c.model);
        // Written as the int8 model computes: folded BatchNorms gone, their biases in the
        // convolutions.
        source.project.model = quant::folded_spec(source.project.model, plan);
        source.quantization = std::move(plan);
    }
    source.weights = std::move(c.model);
    source.description = std::move(c.description);
    source.position = c.position;
    source.checkpoint = checkpoint;
    check_export_source(source);
    return source;
}

std::optional<Format> parse_format(std::string_view name) {
    if (name == "onnx") return Format::Onnx;
    if (name == "pytorch") return Format::PyTorch;
    if (name == "safetensors") return Format::Safetensors;
    return std::nullopt;
}

const char* format_name(Format format) {
    switch (format) {
    case Format::Onnx:
        return "onnx";
    case Format::PyTorch:
        return "pytorch";
    case Format::Safetensors:
        return "safetensors";
    }
    return "?";
}

const char* format_extension(Format format) {
    switch (format) {
    case Format::Onnx:
        return ".onnx";
    case Format::PyTorch:
        return ".py";
    case Format::Safetensors:
        return ".safetensors";
    }
    return "";
}

void write_file_atomically(const std::filesystem::path& out, std::string_view bytes) {
    const std::filesystem::path folder = out.parent_path().empty() ? "." : out.parent_path();
    if (!std::filesystem::is_directory(folder))
        throw Error("cannot write " + out.string() + ": the folder " + folder.string() +
                    " does not exist");
    if (std::filesystem::is_directory(out))
        throw Error("cannot write " + out.string() + ": it is a folder");
    std::random_device random;
    const std::filesystem::path temp =
        folder / ("." + out.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                  std::to_string(random()));
    std::FILE* f = std::fopen(temp.c_str(), "wb");
    if (!f)
        throw Error("cannot write " + out.string() + ": " + std::strerror(errno) + " (in " +
                    folder.string() + ")");
    bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    ok = std::fflush(f) == 0 && ok;
    ok = ::fsync(::fileno(f)) == 0 && ok;
    const int error = errno;
    ok = std::fclose(f) == 0 && ok;
    std::error_code ec;
    if (ok) std::filesystem::rename(temp, out, ec);
    if (!ok || ec) {
        std::filesystem::remove(temp, ec);
        throw Error("writing " + out.string() +
                    " failed: " + (ok ? ec.message() : std::string(std::strerror(error))));
    }
}

void export_safetensors(const ExportSource& source, const std::filesystem::path& out) {
    if (source.quantization)
        throw Error("an int8 checkpoint is already a self-describing safetensors file (int8 "
                    "weights with their scales and activation parameters): copy it, or export it "
                    "to ONNX");
    check_export_source(source);
    io::Checkpoint c;
    c.model = source.weights;
    c.position = source.position;
    c.project_json = io::serialize_project(source.project);
    c.description = source.description;
    // save_checkpoint writes through a temporary file and renames it (safetensors.h).
    const std::filesystem::path folder = out.parent_path().empty() ? "." : out.parent_path();
    if (!std::filesystem::is_directory(folder))
        throw Error("cannot write " + out.string() + ": the folder " + folder.string() +
                    " does not exist");
    // The card says how the model does on the project's test data, when the data is here.
    std::optional<train::Evaluation> evaluation;
    std::string not_evaluated;
    if (source.checkpoint.empty()) {
        not_evaluated = "the weights were not read from a checkpoint file";
    } else {
        try {
            std::filesystem::path dir = source.description.project_dir;
            if (dir.empty() || !std::filesystem::is_directory(dir)) dir = ".";
            auto trainer = train::trainer_for_checkpoint(source.project, dir, source.checkpoint);
            evaluation = train::evaluate_examples(*trainer, train::evaluation_dataset(*trainer));
        } catch (const Error& e) {
            not_evaluated = e.what();
        }
    }
    const std::filesystem::path card = model_card_path(out);
    write_file_atomically(card,
                          model_card(source, evaluation ? &*evaluation : nullptr, not_evaluated));
    try {
        io::save_checkpoint(out, c);
    } catch (const Error&) {
        std::error_code ec;
        std::filesystem::remove(card, ec); // nothing of a failed export stays
        throw;
    }
}

std::filesystem::path model_card_path(const std::filesystem::path& safetensors) {
    std::filesystem::path card = safetensors;
    return card.replace_extension(".md");
}

void export_model(const ExportSource& source, Format format, const std::filesystem::path& out) {
    switch (format) {
    case Format::Onnx:
        return export_onnx(source, out);
    case Format::PyTorch:
        return export_pytorch(source, out);
    case Format::Safetensors:
        return export_safetensors(source, out);
    }
}

graph::Analysis valid_analysis(const ExportSource& source) {
    const graph::ModelSpec& spec = source.project.model;
    graph::Analysis analysis = graph::analyze(spec, 1);
    if (!analysis.ok()) {
        std::string what;
        for (const auto& p : analysis.problems)
            if (p.severity == graph::Severity::Error) what += "\n  " + graph::describe(spec, p);
        throw Error("the model of project '" + source.project.name + "' is invalid:" + what);
    }
    return analysis;
}

} // namespace myelin::exporters
