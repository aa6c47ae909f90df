// Training breakpoints: the condition parser and the BreakpointMonitor callback.
#include <myelin/train/breakpoints.h>

#include "trainer_callbacks.h"

#include <myelin/autograd.h>
#include <myelin/error.h>
#include <myelin/graph/build.h>
#include <myelin/graph/registry.h>
#include <myelin/nn/module.h>
#include <myelin/train/capture.h>
#include <myelin/train/trainer.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <set>

namespace myelin::train {

namespace {

constexpr size_t kSpikeWindow = 50;     // norms the median is taken over
constexpr size_t kSpikeMinHistory = 10; // norms needed before a spike can be called

std::string trim(std::string_view s) {
    const auto first = s.find_first_not_of(" \t");
    if (first == std::string_view::npos) return {};
    const auto last = s.find_last_not_of(" \t");
    return std::string(s.substr(first, last - first + 1));
}

std::optional<double> to_number(const std::string& text) {
    double value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
        return std::nullopt;
    return value;
}

std::string number_text(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.4g", value);
    return buffer;
}

} // namespace

std::vector<BreakCondition> parse_break_conditions(std::string_view text) {
    using Kind = BreakCondition::Kind;
    std::vector<BreakCondition> out;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t comma = std::min(text.find(',', start), text.size());
        const std::string item = trim(text.substr(start, comma - start));
        start = comma + 1;
        if (item.empty()) {
            if (comma == text.size()) break;
            throw Error("breakpoints '" + std::string(text) + "': an empty item between commas");
        }
        const size_t equals = item.find('=');
        const std::string name = item.substr(0, equals);
        const std::string value = equals == std::string::npos ? "" : item.substr(equals + 1);
        const auto bad = [&](const std::string& expected) {
            return Error("breakpoint '" + item + "': " + expected);
        };
        BreakCondition c;
        if (name == "nonfinite") {
            if (equals != std::string::npos) throw bad("nonfinite takes no value");
            c.kind = Kind::NonFinite;
        } else if (name == "grad-spike") {
            const auto k = to_number(value);
            if (!k || *k <= 1) throw bad("grad-spike needs a factor above 1, as grad-spike=10");
            c = {Kind::GradSpike, *k, 0};
        } else if (name == "dead") {
            const auto f = to_number(value);
            if (!f || *f <= 0 || *f > 1)
                throw bad("dead needs a fraction in (0, 1], as dead=0.9 (90% zeros)");
            c = {Kind::Dead, *f, 0};
        } else if (name == "loss-above") {
            const size_t at = value.find('@');
            const auto v = to_number(value.substr(0, at));
            std::optional<double> from = at == std::string::npos ? std::optional<double>(0)
                                                                 : to_number(value.substr(at + 1));
            if (!v || !from || *from < 0 || *from != std::floor(*from))
                throw bad("loss-above needs a value and optionally a step, as loss-above=2.5 or "
                          "loss-above=2.5@100");
            c = {Kind::LossAbove, *v, int64_t(*from)};
        } else {
            throw bad("unknown condition '" + name +
                      "' (nonfinite, grad-spike=K, dead=F, loss-above=V[@STEP])");
        }
        if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    }
    if (out.empty()) throw Error("breakpoints: no condition given");
    return out;
}

void BreakpointSet::set(std::vector<BreakCondition> conditions) {
    std::lock_guard lock(mutex_);
    conditions_ = std::move(conditions);
}

std::vector<BreakCondition> BreakpointSet::conditions() const {
    std::lock_guard lock(mutex_);
    return conditions_;
}

std::string format_break_condition(const BreakCondition& c) {
    switch (c.kind) {
    case BreakCondition::Kind::NonFinite:
        return "nonfinite";
    case BreakCondition::Kind::GradSpike:
        return "grad-spike=" + number_text(c.threshold);
    case BreakCondition::Kind::Dead:
        return "dead=" + number_text(c.threshold);
    case BreakCondition::Kind::LossAbove:
        return "loss-above=" + number_text(c.threshold) +
               (c.from_step > 0 ? "@" + std::to_string(c.from_step) : std::string());
    }
    return {};
}

// --- the monitor ---

namespace {

class BreakpointMonitor final : public TrainerCallback {
  public:
    BreakpointMonitor(std::shared_ptr<const BreakpointSet> set, BreakAction action)
        : set_(std::move(set)), action_(action) {}

    void on_run_start(Trainer& trainer) override {
        const io::Project& project = trainer.project();
        for (const auto& [name, layer] : trainer.model().named_children()) {
            layers_.emplace_back(name, layer);
            const graph::NodeId node = trainer.model().node_of_module(name);
            const graph::Node* spec = node >= 0 ? project.model.find(node) : nullptr;
            const graph::LayerKind* kind = spec ? graph::find_layer_kind(spec->kind) : nullptr;
            // Exact zeros mean dead units after an activation (ReLU's family); after a pooling
            // or dropout layer they mean nothing of the kind.
            if (kind && kind->category == graph::Category::Activation) activations_.push_back(name);
        }
    }

    void before_step(Trainer& trainer) override {
        remove_hooks();
        zero_fraction_.clear();
        fired_this_step_ = false;
        conditions_ = set_->conditions(); // this step's, whatever changes meanwhile
        const BreakCondition* dead = find(BreakCondition::Kind::Dead);
        if (!dead) return;
        for (const auto& [name, layer] : layers_) {
            if (std::find(activations_.begin(), activations_.end(), name) == activations_.end())
                continue;
            double* worst = &zero_fraction_[name];
            hooks_.push_back(layer->register_forward_hook(
                [worst](nn::Module&, const TensorList&, const Tensor& out) {
                    if (out.defined() && is_floating(out.dtype()))
                        *worst = std::max(*worst, summarize(out.detach(), 1).zero_fraction());
                    return Tensor();
                }));
        }
        (void)trainer;
    }

    void after_loss(Trainer& trainer, const ForwardPass& pass) override {
        const int64_t step = trainer.step() + 1;
        const double loss = pass.loss_value();
        if (!std::isfinite(loss)) {
            remove_hooks(); // the localisation pass below runs the model again
            if (!find(BreakCondition::Kind::NonFinite)) return;
            const auto where = trainer.first_nonfinite_output(pass.batch);
            fire(trainer, *find(BreakCondition::Kind::NonFinite),
                 "the loss is " + number_text(loss) + nonfinite_output_text(trainer, where, ""),
                 where);
            return;
        }
        if (const BreakCondition* c = find(BreakCondition::Kind::LossAbove))
            if (step >= c->from_step && loss > c->threshold)
                fire(trainer, *c,
                     "the loss " + number_text(loss) + " is above " + number_text(c->threshold),
                     std::nullopt);
    }

    void after_backward(Trainer& trainer) override {
        remove_hooks();
        // Every condition is checked (the spike history needs every norm); the first hit fires.
        std::optional<Hit> hit;
        const auto note = [&](const BreakCondition& c, std::string message, std::string layer) {
            if (!hit) hit = Hit{&c, std::move(message), std::move(layer)};
        };
        const BreakCondition* nonfinite = find(BreakCondition::Kind::NonFinite);
        const BreakCondition* spike = find(BreakCondition::Kind::GradSpike);
        // With loss scaling an overflowed step is skipped, not a failure: its gradients are
        // not looked at.
        if ((nonfinite || spike) && !trainer.gradients_overflowed()) {
            for (const auto& [name, layer] : layers_) {
                double squares = 0;
                bool has_grad = false;
                for (const auto& p : layer->parameters())
                    if (p.grad().defined()) squares += sum_of_squares(p.grad()), has_grad = true;
                if (!has_grad) continue;
                const double norm = std::sqrt(squares);
                if (!std::isfinite(norm)) {
                    if (nonfinite) note(*nonfinite, name + "'s gradient is not finite", name);
                    continue;
                }
                if (!spike) continue;
                std::deque<double>& history = history_[name];
                if (history.size() >= kSpikeMinHistory) {
                    std::vector<double> sorted(history.begin(), history.end());
                    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2,
                                     sorted.end());
                    const double median = sorted[sorted.size() / 2];
                    if (median > 0 && norm > spike->threshold * median)
                        note(*spike,
                             name + "'s gradient norm " + number_text(norm) + " is " +
                                 number_text(norm / median) + " x the median " +
                                 number_text(median) + " of its last " +
                                 std::to_string(history.size()) + " steps",
                             name);
                }
                history.push_back(norm);
                if (history.size() > kSpikeWindow) history.pop_front();
            }
        }
        if (const BreakCondition* dead = find(BreakCondition::Kind::Dead))
            for (const auto& name : activations_) {
                const auto it = zero_fraction_.find(name);
                if (it != zero_fraction_.end() && it->second > dead->threshold)
                    note(*dead,
                         name + "'s output is " + number_text(it->second * 100) +
                             "% zeros (dead units)",
                         name);
            }
        if (hit) fire(trainer, *hit->condition, hit->message, hit->layer);
    }

    void on_run_end(Trainer&, TrainResult&) override { remove_hooks(); }

  private:
    struct Hit {
        const BreakCondition* condition;
        std::string message;
        std::string layer;
    };

    const BreakCondition* find(BreakCondition::Kind kind) const {
        for (const auto& c : conditions_)
            if (c.kind == kind) return &c;
        return nullptr;
    }

    void remove_hooks() {
        for (auto& h : hooks_)
            h.remove();
        hooks_.clear();
    }

    // Reports the breakpoint, then holds the step (Pause) or gives it up (Stop, or a stop asked
    // for while held).
    void fire(Trainer& trainer, const BreakCondition& condition, const std::string& message,
              const std::optional<std::string>& layer) {
        if (fired_this_step_) return; // one breakpoint per step
        // Each condition holds a run once per layer: a loss that stays above the line must not
        // stop every step after it.
        if (!fired_.insert({format_break_condition(condition), layer.value_or("")}).second) return;
        fired_this_step_ = true;
        const bool pause = action_ == BreakAction::Pause;
        trainer.report(BreakpointFired{format_break_condition(condition), message, layer,
                                       trainer.epoch(), trainer.step() + 1, pause});
        if (pause) {
            // BreakpointFired says where it is held; no "paused at step" line besides.
            trainer.control().pause();
            trainer.control().wait_while_paused();
            if (!trainer.control().stop_requested()) return; // resumed: finish the step
        }
        remove_hooks();
        throw StepAbandoned{};
    }

    std::shared_ptr<const BreakpointSet> set_;
    std::vector<BreakCondition> conditions_;
    BreakAction action_;
    std::vector<std::pair<std::string, nn::ModulePtr>> layers_;
    std::vector<std::string> activations_;
    std::map<std::string, std::deque<double>> history_;
    std::map<std::string, double> zero_fraction_; // this step's, per activation layer
    std::vector<HookHandle> hooks_;
    bool fired_this_step_ = false;
    std::set<std::pair<std::string, std::string>> fired_; // (condition, layer)
};

} // namespace

std::shared_ptr<TrainerCallback> make_breakpoint_monitor(std::shared_ptr<const BreakpointSet> set,
                                                         BreakAction action) {
    return std::make_shared<BreakpointMonitor>(std::move(set), action);
}

} // namespace myelin::train
