// Balanced class weights, the training split's class counts, and the weights a loss uses as
// text (class_weights.h).
#include <myelin/graph/analysis.h>
#include <myelin/train/class_weights.h>
#include <myelin/train/data_setup.h>

#include <sstream>

namespace myelin::train {

std::vector<double> balanced_class_weights(const std::vector<int64_t>& counts) {
    int64_t samples = 0, present = 0;
    for (int64_t c : counts) {
        samples += c;
        present += c > 0;
    }
    std::vector<double> weights(counts.size(), 1.0);
    for (size_t i = 0; i < counts.size(); ++i)
        if (counts[i] > 0) weights[i] = double(samples) / (double(present) * double(counts[i]));
    return weights;
}

ClassCounts training_class_counts(const spec::DataSpec& data,
                                  const std::filesystem::path& project_dir, uint64_t seed) {
    const DataSplits splits = make_data(data, project_dir, seed);
    ClassCounts out;
    if (!splits.classification()) return out;
    out.names = splits.class_names;
    out.counts = splits.train->class_counts();
    return out;
}

namespace {
std::string number_text(double v) {
    std::ostringstream out;
    out.precision(6);
    out << v;
    return out.str();
}
} // namespace

std::vector<std::string> describe_loss_weights(const spec::Choice& loss,
                                               const spec::LossContext& context) {
    const spec::LossKind& kind = spec::kind_of(spec::loss_kinds(), loss, "loss");
    const graph::Attrs options = spec::checked_options(kind, loss);
    std::vector<std::string> lines;
    for (const graph::AttrDesc& d : kind.options) {
        if (d.type != graph::AttrType::NumberTable) continue;
        const graph::NumberTable& table = options.get_table(d.name);
        if (table.empty()) continue;
        const std::vector<double> values =
            spec::table_in_order(table, context.class_names,
                                 d.table_by_position ? context.outputs : 0, 1.0, kind.name, d.name);
        std::string line = d.name + ":";
        for (size_t i = 0; i < values.size(); ++i) {
            const std::string label = table.by_name.empty() || i >= context.class_names.size()
                                          ? "[" + std::to_string(i) + "]"
                                          : context.class_names[i];
            line += (i ? ", " : " ") + label + " " + number_text(values[i]);
        }
        lines.push_back(line);
    }
    return lines;
}

int64_t model_outputs(const graph::ModelSpec& model) {
    auto analysis = graph::analyze(model, 2);
    for (size_t i = 0; i < model.nodes.size(); ++i)
        if (model.nodes[i].kind == "Output" && analysis.nodes[i].output) {
            const Dims& s = analysis.nodes[i].output->shape;
            return s.size() >= 2 ? s[s.size() - 1] : 1;
        }
    return 0;
}

spec::LossContext loss_context_for(const spec::TrainSpec& train, const spec::DataSpec& data,
                                   const graph::ModelSpec& model,
                                   const std::filesystem::path& project_dir) {
    spec::LossContext c;
    c.outputs = model_outputs(model);
    // Names are needed only when a table names them: reading the data costs time.
    const spec::LossKind* kind = spec::find_component(spec::loss_kinds(), train.loss.kind);
    bool named = false;
    if (kind)
        for (const auto& [name, value] : train.loss.options.items())
            if (const auto* t = std::get_if<graph::NumberTable>(&value))
                named |= !t->by_name.empty();
    if (named) c.class_names = make_data(data, project_dir, train.seed).class_names;
    return c;
}

} // namespace myelin::train
