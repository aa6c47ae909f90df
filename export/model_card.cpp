// The model card: a Markdown page beside an exported safetensors file saying what the model is
// (architecture table, parameters, FLOPs), what it expects (input, preprocessing, classes), how
// it was trained (data, settings, run and step) and how well (metrics at that step).
#include <myelin/error.h>
#include <myelin/export/export.h>
#include <myelin/graph/analysis.h>
#include <myelin/train/evaluation.h>
#include <myelin/train/metrics.h>
#include <myelin/version.h>

#include <sstream>

namespace myelin::exporters {

namespace {

std::string options_text(const graph::Attrs& options) {
    std::string text;
    for (const auto& [name, value] : options.items()) {
        // No class weights (an empty table) is not worth a line item.
        if (auto* table = std::get_if<graph::NumberTable>(&value); table && table->empty())
            continue;
        text += (text.empty() ? "" : ", ") + name + "=" + graph::format_value(value);
    }
    return text;
}

std::string choice_text(const spec::Choice& choice) {
    const std::string options = options_text(choice.options);
    return "`" + choice.kind + "`" + (options.empty() ? "" : " (" + options + ")");
}

// Markdown table cells must not break the table.
std::string cell(std::string text) {
    for (size_t i = 0; (i = text.find('|', i)) != std::string::npos; i += 2)
        text.replace(i, 1, "\\|");
    return text;
}

} // namespace

std::string model_card(const ExportSource& source, const train::Evaluation* evaluation,
                       const std::string& not_evaluated) {
    const io::Project& p = source.project;
    const auto& d = source.description;
    const graph::Analysis analysis = graph::analyze(p.model, 1);
    std::ostringstream md;
    md << "# " << (p.name.empty() ? "Model" : p.name) << "\n\n";
    if (!p.description.empty()) md << p.description << "\n\n";
    md << "Exported by Myelin Studio " << version() << " from "
       << (source.checkpoint.empty() ? std::string("weights in memory")
                                     : "`" + source.checkpoint.filename().string() + "`")
       << (d.run_id > 0 ? ", run " + std::to_string(d.run_id) : std::string()) << ", step "
       << source.position.step << ".\n\n";

    md << "## Architecture\n\n| # | layer | kind | output shape (batch 1) | parameters | FLOPs |\n"
          "|---:|---|---|---|---:|---:|\n";
    int row = 0;
    for (size_t index : analysis.order) {
        const graph::Node& node = p.model.nodes[index];
        const graph::NodeInfo& info = analysis.nodes[index];
        if (!info.reachable) continue;
        const std::string name = !info.module_name.empty() ? info.module_name
                                 : !node.name.empty()      ? node.name
                                                           : node.kind;
        md << "| " << row++ << " | " << cell(name) << " | " << node.kind << " | "
           << (info.output ? graph::to_string(*info.output) : std::string("-")) << " | "
           << graph::format_count(info.params) << " | " << graph::format_si(info.flops) << " |\n";
    }
    md << "\n"
       << graph::format_count(analysis.total_params) << " parameters ("
       << graph::format_count(analysis.trainable_params) << " trainable), "
       << graph::format_si(analysis.total_flops, "FLOPs") << " per example.\n\n";

    md << "## Input\n\n";
    if (!d.input_shape.empty()) {
        md << "One example is `[";
        for (size_t i = 0; i < d.input_shape.size(); ++i)
            md << (i ? ", " : "") << d.input_shape[i];
        md << "]` (without the batch dimension).";
    }
    md << " Preprocessing, in order:";
    if (d.preprocessing.empty()) md << " none.";
    md << "\n\n";
    for (const auto& t : d.preprocessing)
        md << "- " << choice_text(t) << "\n";
    if (const auto& t = d.text_encoding)
        md << "\nText: " << data::to_string(t->level) << " tokens"
           << (t->lowercase ? " of the lower-cased text" : "") << ", a vocabulary of "
           << t->vocabulary.size() << " (`<pad>` 0, `<unk>` 1; in the weights file's "
           << "`text_encoding` metadata), " << t->max_length
           << " token ids per example, padded with 0.\n";
    if (!d.class_names.empty()) {
        md << "\nClasses (output index: name):\n\n";
        for (size_t i = 0; i < d.class_names.size(); ++i)
            md << i << ". " << cell(d.class_names[i]) << "\n";
    }

    md << "\n## Data and training\n\n"
       << "- data: " << choice_text(p.data.source) << ", validation fraction "
       << p.data.validation_fraction << ", batch size " << p.data.batch_size << "\n";
    for (const auto& t : p.data.transforms)
        md << "- transform: " << choice_text(t) << "\n";
    md << "- loss: " << choice_text(p.train.loss) << "\n"
       << "- optimizer: " << choice_text(p.train.optimizer) << "\n";
    if (p.train.scheduler)
        md << "- schedule: " << choice_text(*p.train.scheduler) << " per "
           << spec::name_of(p.train.scheduler_interval) << "\n";
    md << "- epochs: " << p.train.epochs << ", seed " << p.train.seed << ", precision "
       << spec::name_of(p.train.precision) << "\n"
       << "- this checkpoint: epoch " << source.position.epoch << ", step " << source.position.step
       << "\n";

    md << "\n## Metrics\n\n";
    if (d.metrics.empty()) {
        md << "None recorded with this checkpoint.\n";
    } else {
        md << "At step " << d.metrics_step << ":\n\n| metric | value |\n|---|---:|\n";
        for (const auto& [name, value] : d.metrics) {
            char text[32];
            std::snprintf(text, sizeof text, "%.4f", value);
            md << "| " << name << " | " << text << " |\n";
        }
    }
    md << "\n## Evaluation\n\n";
    if (!evaluation) {
        md << "Not evaluated"
           << (not_evaluated.empty() ? std::string(".") : ": " + cell(not_evaluated) + ".") << "\n";
    } else {
        const train::Evaluation& e = *evaluation;
        md << "On the " << e.split << " data (" << e.size << " examples) when exported:\n\n"
           << "| metric | value |\n|---|---:|\n";
        for (const auto& [name, value] : e.metrics) {
            char text[32];
            std::snprintf(text, sizeof text, "%.4f", value);
            md << "| " << name << " | " << text << " |\n";
        }
        const train::ConfusionMatrix& m = e.confusion;
        if (m.num_classes > 0) {
            const auto name = [&](int64_t c) {
                return c < int64_t(m.class_names.size()) ? cell(m.class_names[size_t(c)])
                                                         : std::to_string(c);
            };
            md << "\nConfusion matrix (rows: true class, columns: predicted):\n\n| |";
            for (int64_t c = 0; c < m.num_classes; ++c)
                md << " " << name(c) << " |";
            md << "\n|---|";
            for (int64_t c = 0; c < m.num_classes; ++c)
                md << "---:|";
            md << "\n";
            for (int64_t r = 0; r < m.num_classes; ++r) {
                md << "| **" << name(r) << "** |";
                for (int64_t c = 0; c < m.num_classes; ++c)
                    md << " " << m.at(r, c) << " |";
                md << "\n";
            }
            md << "\n| class | precision | recall | F1 | support |\n|---|---:|---:|---:|---:|\n";
            for (int64_t c = 0; c < m.num_classes; ++c) {
                const train::ClassScores sc = train::class_scores(m, c);
                char text[96];
                std::snprintf(text, sizeof text, "%.4f | %.4f | %.4f | %lld", sc.precision,
                              sc.recall, sc.f1, (long long)sc.support);
                md << "| " << name(c) << " | " << text << " |\n";
            }
        }
    }
    md << "\n## Loading\n\nThe safetensors file holds the model's `state_dict` under PyTorch's "
          "names; `myelin export --format pytorch` writes the matching `nn.Module`, and "
          "`myelin eval --checkpoint FILE` evaluates it without the project file.\n";
    return md.str();
}

} // namespace myelin::exporters
