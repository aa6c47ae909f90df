// myelin export: a checkpoint as ONNX, PyTorch code or self-describing safetensors
// (export/include/myelin/export/export.h does the work).
#include <myelin/error.h>
#include <myelin/export/export.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/project.h>

#include "cli_common.h"

#include <cstdio>

namespace myelin::cli {

std::pair<io::Project, std::filesystem::path>
checkpoint_project(const std::filesystem::path& checkpoint) {
    const io::Checkpoint c = io::load_checkpoint(checkpoint);
    if (c.project_json.empty())
        throw Error(checkpoint.string() +
                    " carries no project (an older checkpoint): name the project file too");
    std::filesystem::path folder = c.description.project_dir;
    if (folder.empty() || !std::filesystem::is_directory(folder))
        folder = checkpoint.parent_path().empty() ? "." : checkpoint.parent_path();
    return {io::parse_project(c.project_json, checkpoint.string() + " (its project)"), folder};
}

int cmd_export(const Args& args) {
    const auto checkpoint = args.get("--checkpoint");
    const auto format_text = args.get("--format");
    const auto out = args.get("--output");
    const auto format = exporters::parse_format(*format_text);
    if (!format)
        throw UsageError{"export: unknown format '" + *format_text +
                         "' (onnx, pytorch or safetensors)"};
    try {
        std::optional<io::Project> project;
        if (!args.positional().empty()) project = io::load_project(args.positional()[0]);
        const exporters::ExportSource source = exporters::load_export_source(project, *checkpoint);
        exporters::export_model(source, *format, *out);
        std::printf("wrote %s (%s, step %lld of %s)\n", out->c_str(),
                    exporters::format_name(*format), (long long)source.position.step,
                    source.project.name.empty() ? "the model" : source.project.name.c_str());
        if (*format == exporters::Format::Safetensors)
            std::printf("wrote its model card %s\n",
                        exporters::model_card_path(*out).string().c_str());
        if (*format == exporters::Format::Onnx)
            for (const auto& note : exporters::onnx_runtime_notes(source))
                std::printf("note: %s\n", note.c_str());
    } catch (const Error& e) {
        std::fprintf(stderr, "myelin: error: %s\n", e.what());
        return kExitError;
    }
    return kExitOk;
}

} // namespace myelin::cli
