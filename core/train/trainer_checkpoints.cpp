// Starting from saved state: initial weights (--init-weights), the checkpoint of a resume or a
// fork, and the optimizer options a fork changes against the checkpoint's (the loop is in
// trainer.cpp).
#include <myelin/error.h>
#include <myelin/generator.h>
#include <myelin/graph/build.h>
#include <myelin/io/checkpoint.h>
#include <myelin/io/project.h>
#include <myelin/io/safetensors.h>
#include <myelin/optim/optimizer.h>
#include <myelin/train/components.h>
#include <myelin/train/early_stopping.h>
#include <myelin/train/trainer.h>

#include "parameter_groups.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

namespace myelin::train {

using detail::format_number;

std::string checkpoint_model_mismatch(const io::Project& project,
                                      const io::Checkpoint& checkpoint) {
    // Building initialises weights from the default generator: leave it as it was.
    const std::string generator = default_generator().get_state();
    struct Restore {
        const std::string& state;
        ~Restore() { default_generator().set_state(state); }
    } restore{generator};
    auto model = graph::build(project.model);
    return model->load_state_dict(checkpoint.model, false).text();
}

void Trainer::load_initial_weights() {
    const std::string where = options_.init_weights.string();
    io::SafetensorsFile file = io::load_safetensors(options_.init_weights);
    if (!file.int8_names.empty())
        throw Error(where + ": holds int8 weights (a quantized model, tensor '" +
                    file.int8_names[0] + "'); start from the float checkpoint it was made from");
    nn::StateDict state;
    for (auto& [name, tensor] : file.tensors)
        if (name.rfind("optimizer.", 0) != 0) state.emplace_back(name, tensor);
    auto r = model_->load_state_dict(state, false);
    if (!r.shape_mismatches.empty()) {
        std::string what;
        for (const auto& m : r.shape_mismatches)
            what += "\n  " + m;
        throw Error(where + ": weights of the wrong shape for this model:" + what);
    }
    if (r.missing_keys.size() == model_->state_dict().size())
        throw Error(where +
                    ": none of its tensors matches a parameter or buffer of this model "
                    "(names like " +
                    (state.empty() ? std::string("-") : state[0].first) + ")");
    auto list = [](const std::vector<std::string>& keys) {
        std::string out;
        for (size_t i = 0; i < keys.size() && i < 8; ++i)
            out += (i ? ", " : "") + keys[i];
        return keys.size() > 8 ? out + ", ..." : out;
    };
    if (!r.missing_keys.empty())
        init_messages_.push_back(
            {LogLevel::Warning, "initial weights: " + std::to_string(r.missing_keys.size()) +
                                    " tensor(s) not in " + where +
                                    " keep their initialisation: " + list(r.missing_keys)});
    if (!r.unexpected_keys.empty())
        init_messages_.push_back(
            {LogLevel::Warning, "initial weights: " + std::to_string(r.unexpected_keys.size()) +
                                    " tensor(s) of " + where +
                                    " are not in the model: " + list(r.unexpected_keys)});
}

void Trainer::load_resume_checkpoint() {
    io::Checkpoint c = io::load_checkpoint(options_.resume_from);
    const std::string where = options_.resume_from.string();
    if (!c.quantization.empty())
        throw Error(where + ": an int8 (quantized) checkpoint cannot be trained on (its int8 "
                            "layers have no gradients); resume or fork from the float checkpoint "
                            "it was made from");
    auto r = model_->load_state_dict(c.model, false);
    if (!r.ok()) throw Error(where + ": the checkpoint does not fit this model:" + r.text());
    if (c.optimizer_kind == optimizer_->name()) {
        std::optional<io::Project> before;
        if (!c.project_json.empty()) {
            try {
                before = io::parse_project(c.project_json, where + " (its project)");
            } catch (const Error&) {
                if (options_.fork) throw; // a resume goes on whatever its project says
            }
        }
        const detail::ParameterLayout now = detail::parameter_layout(project_.model, *model_);
        const detail::ParameterLayout then =
            before ? detail::parameter_layout(before->model, *model_) : now;
        if (!options_.fork && then != now) {
            // The run froze, unfroze or re-weighted layers while it was paused (RunEdits): a
            // resume goes on with the layers as the checkpoint trained them.
            for (auto& node : project_.model.nodes)
                if (const graph::Node* theirs = before->model.find(node.id)) {
                    node.frozen = theirs->frozen;
                    node.lr_multiplier = theirs->lr_multiplier;
                    const std::string& name = model_->module_name(node.id);
                    if (!name.empty()) model_->child(name)->requires_grad_(!node.frozen);
                }
            relayout_optimizer(now);
            init_messages_.push_back(
                {LogLevel::Info, "the run changed which layers train (or their lr multipliers) "
                                 "while it ran: the resume goes on with them, as " +
                                     where + " records"});
        } else if (options_.fork && then.names != now.names) {
            // A fork may freeze or unfreeze layers (or change lr multipliers): the checkpoint's
            // optimizer state is then moved to the new layout by parameter name.
            size_t kept = 0;
            c.optimizer = detail::remap_optimizer_state(c.optimizer, then.names, now.names,
                                                        optimizer_->param_groups(), kept);
            size_t total = 0;
            for (const auto& g : now.names)
                total += g.size();
            init_messages_.push_back(
                {LogLevel::Info,
                 "the fork trains other parameters than its parent (frozen layers or lr "
                 "multipliers changed): optimizer state carried over for " +
                     std::to_string(kept) + " of " + std::to_string(total) + " parameters"});
        }
        try {
            optimizer_->load_state_dict(c.optimizer);
        } catch (const Error& e) {
            throw Error(where + ": optimizer state does not fit: " + e.what());
        }
        reconcile_optimizer_options(c, where);
    } else {
        // No sink yet: run() reports it.
        init_messages_.push_back(
            {LogLevel::Warning, c.optimizer_kind.empty()
                                    ? "the checkpoint holds weights only (an export): optimizer "
                                      "state starts fresh"
                                    : "the checkpoint's optimizer is " + c.optimizer_kind +
                                          ", the project's " + optimizer_->name() +
                                          ": optimizer state starts fresh"});
    }
    if (schedule_ && c.scheduler) schedule_->load_state_dict(*c.scheduler);
    restore_loss_scaling(c, where);
    // A weights-only file (an export) has no generator state: the seeded one goes on.
    if (!c.generator_state.empty()) default_generator().set_state(c.generator_state);
    epoch_ = c.position.epoch;
    first_batch_ = c.position.batch_in_epoch;
    step_ = c.position.step;
    if (c.position.world_size != world_size()) {
        // batch_in_epoch counts each rank's batches: the same number of the epoch's examples
        // (its order is the same for any world size) is this many of ours.
        const int64_t examples =
            c.position.batch_in_epoch * c.position.world_size * project_.data.batch_size;
        first_batch_ = examples / (int64_t(world_size()) * project_.data.batch_size);
        init_messages_.push_back(
            {LogLevel::Info, "the checkpoint was written by " +
                                 std::to_string(c.position.world_size) + " rank(s), this run has " +
                                 std::to_string(world_size()) + ": the epoch goes on at batch " +
                                 std::to_string(first_batch_) + " of each rank, " +
                                 std::to_string(examples) + " examples into the epoch's order" +
                                 (first_batch_ * world_size() * project_.data.batch_size == examples
                                      ? ""
                                      : " (rounded down: the examples between are seen again)")});
    }
    if (first_batch_ >= micro_batches_per_epoch_) {
        ++epoch_;
        first_batch_ = 0;
    }
    if (c.best_metric) {
        EarlyStoppingState s = early_stopping_->state();
        s.best = *c.best_metric;
        s.bad_epochs = int(c.bad_epochs);
        s.updates = c.early_stopping_updates;
        early_stopping_->restore(s);
    }
}

std::vector<std::map<std::string, double>>
Trainer::group_options(const spec::Choice& optimizer) const {
    // The constructor's group layout: lr = base lr x multiplier where the multiplier is not 1.
    const spec::OptimizerKind& kind =
        spec::kind_of(spec::optimizer_kinds(), optimizer, "optimizer");
    const double base = graph::with_defaults(kind.options, optimizer.options).get_float("lr");
    std::vector<optim::ParamGroup> groups(group_lr_multipliers_.size());
    for (size_t g = 0; g < groups.size(); ++g) {
        groups[g].params.push_back(zeros({1}).requires_grad_());
        if (group_lr_multipliers_[g] != 1.0)
            groups[g].options["lr"] = base * group_lr_multipliers_[g];
    }
    auto built = make_optimizer(optimizer, std::move(groups));
    std::vector<std::map<std::string, double>> out;
    for (const auto& g : built->param_groups())
        out.push_back(g.options);
    return out;
}

void Trainer::reconcile_optimizer_options(io::Checkpoint& c, const std::string& where) {
    if (c.project_json.empty()) {
        if (options_.fork)
            init_messages_.push_back(
                {LogLevel::Warning, where + " records no project: the optimizer goes on with "
                                            "the checkpoint's options"});
        return;
    }
    spec::Choice theirs;
    try {
        theirs = io::parse_project(c.project_json, where + " (its project)").train.optimizer;
    } catch (const Error&) {
        if (options_.fork) throw;
        return; // a resume goes on with the checkpoint's options whatever its project says
    }
    if (theirs.kind != spec_.optimizer.kind) return;
    const auto before = group_options(theirs);
    const auto after = group_options(spec_.optimizer);
    std::set<std::string> edited;
    for (size_t g = 0; g < after.size() && g < before.size(); ++g)
        for (const auto& [key, value] : after[g])
            if (auto it = before[g].find(key); it != before[g].end() && it->second != value)
                edited.insert(key);
    if (edited.empty()) return;
    std::string names;
    for (const auto& key : edited)
        names += (names.empty() ? "" : ", ") + key;
    if (!options_.fork) {
        // What runs is the checkpoint's; taking its options keeps later checkpoints truthful.
        spec_.optimizer = theirs;
        init_messages_.push_back(
            {LogLevel::Warning, "the project sets the optimizer's " + names + " differently from " +
                                    where +
                                    "; a resume goes on with the checkpoint's (fork the run "
                                    "to change them)"});
        return;
    }
    const spec::SchedulerKind* schedule =
        spec_.scheduler ? spec::find_component(spec::scheduler_kinds(), spec_.scheduler->kind)
                        : nullptr;
    if (edited.count("lr") && schedule && schedule->sets_lr_itself)
        throw Error(schedule->name +
                    " sets the learning rate from its own options, so a fork cannot "
                    "change the optimizer's lr (" +
                    format_number(before[0].at("lr")) + " -> " + format_number(after[0].at("lr")) +
                    ")");
    auto& groups = optimizer_->param_groups();
    std::vector<double> factor(groups.size(), 1.0);
    std::string what;
    for (size_t g = 0; g < groups.size(); ++g) {
        for (const auto& key : edited) {
            const double old_value = before[g].at(key), new_value = after[g].at(key);
            if (g == 0)
                what += (what.empty() ? "" : ", ") + key + " " + format_number(old_value) + " -> " +
                        format_number(new_value);
            if (key != "lr") {
                groups[g].options[key] = new_value;
                continue;
            }
            // The lr may have moved along a schedule since: scale it (and the schedule's
            // bookkeeping) rather than overwrite it.
            if (old_value == 0)
                throw Error("the checkpoint's lr is 0: a fork cannot scale it to " +
                            format_number(new_value));
            factor[g] = new_value / old_value;
            groups[g].options["lr"] *= factor[g];
            if (auto it = groups[g].options.find("initial_lr"); it != groups[g].options.end())
                it->second *= factor[g];
        }
    }
    if (c.scheduler) detail::scale_schedule_lrs(*c.scheduler, factor);
    init_messages_.push_back({LogLevel::Info, "fork from step " + std::to_string(c.position.step) +
                                                  ": optimizer " + what});
}

std::filesystem::path Trainer::save_checkpoint(const std::string& file_name, int64_t epoch,
                                               int64_t batch_in_epoch) {
    if (options_.checkpoint_dir.empty()) return {};
    std::filesystem::create_directories(options_.checkpoint_dir);
    io::Checkpoint c;
    c.model = model_->state_dict();
    c.optimizer_kind = optimizer_->name();
    c.optimizer = optimizer_->state_dict();
    // Written from host copies: the same files from every device (no copies on the CPU).
    for (auto& [name, t] : c.model)
        t = t.to(kCPU);
    for (auto& [index, state] : c.optimizer.state)
        for (auto& [key, t] : state)
            t = t.to(kCPU);
    if (schedule_) c.scheduler = schedule_->state_dict();
    if (scaler_) c.grad_scaler = scaler_->state_dict();
    c.position = {epoch, batch_in_epoch, step_, world_size()};
    c.generator_state = default_generator().get_state();
    if (early_stopping_->has_best()) c.best_metric = early_stopping_->best();
    c.bad_epochs = early_stopping_->bad_epochs();
    c.early_stopping_updates = early_stopping_->updates();
    // The project as trained (overrides in), so a fork from here compares against what ran.
    io::Project trained = project_;
    trained.train = spec_;
    c.project_json = io::serialize_project(trained);
    io::CheckpointDescription& d = c.description;
    d.project_dir = std::filesystem::absolute(options_.project_dir).lexically_normal().string();
    d.run_id = options_.run_id;
    d.class_names = data_.class_names;
    d.input_shape.assign(data_.input_shape.begin(), data_.input_shape.end());
    d.preprocessing = data_.preprocessing;
    if (data_.text_encoder) d.text_encoding = data_.text_encoder->encoding();
    for (const auto& [k, v] : result_.train)
        d.metrics.emplace_back("train_" + k, v);
    for (const auto& [k, v] : result_.validation)
        d.metrics.emplace_back("val_" + k, v);
    d.metrics_step = metrics_step_;
    auto path = options_.checkpoint_dir / file_name;
    io::save_checkpoint(path, c);
    last_written_checkpoint_ = path;
    last_written_step_ = step_;
    return path;
}

} // namespace myelin::train
