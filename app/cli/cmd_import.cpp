// myelin import: an ONNX model as a Myelin project and a checkpoint of its weights
// (export/include/myelin/export/import.h does the work).
#include <myelin/error.h>
#include <myelin/export/import.h>
#include <myelin/graph/analysis.h>

#include "cli_common.h"

#include <cstdio>

namespace myelin::cli {

int cmd_import(const Args& args) {
    const auto out = args.get("--output");
    const std::filesystem::path project = *out;
    const std::filesystem::path checkpoint = args.get("--checkpoint")
                                                 ? std::filesystem::path(*args.get("--checkpoint"))
                                                 : exporters::default_import_checkpoint(project);
    try {
        const exporters::ImportedModel model = exporters::import_onnx_file(args.positional()[0]);
        exporters::write_imported_model(model, project, checkpoint);
        const graph::Analysis analysis = graph::analyze(model.project.model, 1);
        std::printf("imported %s: %zu layers, %s parameters\n", args.positional()[0].c_str(),
                    model.project.model.nodes.size() - 2,
                    graph::format_count(analysis.total_params).c_str());
        for (const auto& note : model.notes)
            std::printf("note: %s\n", note.c_str());
        std::printf("wrote %s\nwrote %s (the project's initial weights: its runs start from "
                    "them)\nset the project's data before training it\n",
                    project.string().c_str(), checkpoint.string().c_str());
    } catch (const Error& e) {
        std::fprintf(stderr, "myelin: error: %s\n", e.what());
        return kExitError;
    }
    return kExitOk;
}

} // namespace myelin::cli
