#pragma once
// Everything a training run reports travels as one Event type to EventSinks: the studio's panels,
// the run store and the CLI progress bar. The trainer pushes into a bounded EventQueue that never
// makes it wait for a slow consumer: when the queue is full, the oldest event of a kind that a
// newer one supersedes (step metrics, summaries, feature maps, progress) is dropped; the events
// whose loss would lose information (run start, epoch metrics, checkpoints, logs, errors, finish)
// are always kept.
#include <myelin/tensor.h>
#include <myelin/train/capture.h>
#include <myelin/train/metrics.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace myelin::train {

// --- payloads (epochs count from 0; step is the global optimizer step) -------------------------

struct RunStarted {
    std::string run_name;
    int64_t epochs = 0; // epochs the run is set to train
    int64_t steps_per_epoch = 0;
    int64_t start_epoch = 0; // where a resumed run continues; 0 for a fresh run
    int64_t start_step = 0;
};

struct LayerStats {
    std::string layer;          // module name, dotted like the state_dict ("features.0")
    double grad_norm = 0.0;     // L2 over the layer's parameter gradients
    double weight_norm = 0.0;   // L2 over the layer's parameters
    double update_ratio = 0.0;  // ||step update|| / ||weights before the step||
    double grad_mean_abs = 0.0; // mean |g| over the layer's parameter gradients
    double grad_max_abs = 0.0;  // max |g|
};

struct StepMetrics {
    int64_t epoch = 0;
    int64_t step = 0;
    double loss = 0.0;
    double lr = 0.0;
    double samples_per_second = 0.0;
    std::vector<LayerStats> layers; // empty when per-layer capture is off
    // Loss scaling (training.precision "float16"): the scale after this step's update, and
    // whether the step was skipped because a gradient overflowed (inf/NaN). Unset without it.
    std::optional<double> grad_scale;
    bool step_skipped = false;
};

struct EpochMetrics {
    int64_t epoch = 0;
    int64_t step = 0;
    MetricMap train;           // "loss", "accuracy", ...
    MetricMap validation;      // empty when the epoch had no validation
    ConfusionMatrix confusion; // validation's; num_classes == 0 when not classification
};

enum class SummaryKind : uint8_t { Activation, Gradient, Weight };
const char* summary_kind_name(SummaryKind kind); // "activation", "gradient", "weight"

struct TensorSummaryEvent {
    std::string layer;
    SummaryKind kind = SummaryKind::Activation;
    int64_t epoch = 0;
    int64_t step = 0;
    TensorSummary summary;
};

// A layer's output on the run's probe examples (a fixed batch, the first 4 of validation), or
// with an empty `layer` the probe examples themselves (reported once, before the first
// capture's layers).
struct FeatureMapEvent {
    std::string layer;
    int64_t epoch = 0;
    int64_t step = 0;
    Tensor values; // a detached host copy (train::snapshot), never the live activation
};

// Gradient through time (nn/recurrent_gradients.h): for one recurrent layer (module name) on the
// probe examples at `step`, for layer `stack_layer` of its stack and `direction` (0 forward, 1
// reverse), the L2 norm over the probe batch of dL/dh_t for every time step t (0 at a step padded
// in every probe example).
struct TimeGradientEvent {
    std::string layer;
    int64_t epoch = 0;
    int64_t step = 0;
    int64_t stack_layer = 0;
    int direction = 0;
    std::vector<double> norms; // [T]
};

struct CheckpointSaved {
    std::string path;
    int64_t epoch = 0;
    int64_t step = 0;
    bool is_best = false;
};

struct Progress {
    int64_t epoch = 0;
    int64_t epochs = 0;
    int64_t step_in_epoch = 0;
    int64_t steps_per_epoch = 0;
    int64_t step = 0; // global steps done
    int64_t total_steps = 0;
    double samples_per_second = 0.0;
    double eta_seconds = -1.0; // < 0 while unknown
};

enum class LogLevel : uint8_t { Info, Warning };

struct LogMessage {
    LogLevel level = LogLevel::Info;
    std::string text;
};

struct RunError {
    std::string message;
    int64_t epoch = 0;
    int64_t step = 0;
    std::optional<std::string> module; // the module where a NaN/Inf first appeared, if known
    bool stopped = false; // the run ends stopped, not failed (a checkpoint the disk refused)
};

// A training breakpoint (train/breakpoints.h) fired at `step`, the optimizer step not yet
// applied (Trainer::step() + 1).
struct BreakpointFired {
    std::string condition;            // as written: "grad-spike=10"
    std::string message;              // "fc1's gradient norm 12.4 is 15.3 x its median 0.81"
    std::optional<std::string> layer; // the module it concerns, if one
    int64_t epoch = 0;
    int64_t step = 0;
    bool paused = false; // the run waits for resume(); otherwise it stops
};

// Settings changed while the run was paused (RunControl::request_edits), in force from optimizer
// step `step` + 1 on: "lr 0.001 -> 0.0003, clip_grad_norm off -> 1". The store records it as a
// run event of kind "change" (and one of kind "frozen" per layer in `frozen`); the studio marks
// it on the run's plots.
struct RunChanged {
    int64_t step = 0;
    std::string what;
    // Layers (module names) frozen (true) or unfrozen (false) by this change.
    std::vector<std::pair<std::string, bool>> frozen{};
};

enum class RunStatus : uint8_t { Finished, Stopped, Failed };
const char* run_status_name(RunStatus status); // "finished", "stopped", "failed" (the store's)

struct Finished {
    RunStatus status = RunStatus::Finished;
    int64_t epoch = 0;
    int64_t step = 0;
};

// --- the event ----------------------------------------------------------------------------------

// In the order of the payload alternatives below: kind() is the variant's index.
enum class EventKind : uint8_t {
    RunStarted,
    StepMetrics,
    EpochMetrics,
    TensorSummary,
    FeatureMap,
    CheckpointSaved,
    Progress,
    Log,
    Error,
    Breakpoint,
    Finished,
    TimeGradient,
    Changed,
};
const char* event_kind_name(EventKind kind); // "RunStarted", ...
// StepMetrics, TensorSummary, FeatureMap, TimeGradient and Progress: a later event of the kind
// supersedes it.
bool is_droppable(EventKind kind);

using EventPayload = std::variant<RunStarted, StepMetrics, EpochMetrics, TensorSummaryEvent,
                                  FeatureMapEvent, CheckpointSaved, Progress, LogMessage, RunError,
                                  BreakpointFired, Finished, TimeGradientEvent, RunChanged>;

// Seconds since the Unix epoch (the store's wall_time column).
double wall_clock_seconds();

struct Event {
    EventPayload payload;
    double wall_time = 0.0; // when the event was made (wall_clock_seconds)

    // Event(StepMetrics{...}) and friends; the time is taken now unless given.
    template <typename P>
    requires std::is_constructible_v<EventPayload, P&&> &&
        (!std::is_same_v<std::remove_cvref_t<P>, Event>)Event(P&& p,
                                                              double time = wall_clock_seconds())
        : payload(std::forward<P>(p)), wall_time(time) {}

    EventKind kind() const { return static_cast<EventKind>(payload.index()); }
    bool droppable() const { return is_droppable(kind()); }
    // The payload if it is a P, else nullptr: if (auto* m = e.get<StepMetrics>()) ...
    template <typename P> const P* get() const { return std::get_if<P>(&payload); }
    template <typename P> P* get() { return std::get_if<P>(&payload); }
};

// --- sinks --------------------------------------------------------------------------------------

class EventSink {
  public:
    virtual ~EventSink() = default;
    // Called on the producer's thread; must be quick (hand the work to another thread if not).
    virtual void on_event(const Event& event) = 0;
};

// A sink from a function (the CLI's progress line, tests).
class CallbackSink final : public EventSink {
  public:
    explicit CallbackSink(std::function<void(const Event&)> fn) : fn_(std::move(fn)) {}
    void on_event(const Event& event) override { fn_(event); }

  private:
    std::function<void(const Event&)> fn_;
};

// Passes each event to every sink, in the order they were added. A sink that throws does not keep
// the event from the others; the first exception is rethrown after all have been called. Add
// sinks before events flow: add() is not synchronised with on_event().
class FanOut final : public EventSink {
  public:
    void add(EventSink& sink);                 // not owned: must outlive its use here
    void add(std::shared_ptr<EventSink> sink); // kept alive by the FanOut
    void on_event(const Event& event) override;
    size_t size() const { return sinks_.size(); }

  private:
    std::vector<EventSink*> sinks_;
    std::vector<std::shared_ptr<EventSink>> owned_;
};

// Bounded multi-producer queue, thread-safe. push() holds a mutex for a moment and never waits for
// room: when the queue holds `capacity` events, the oldest droppable event goes (or the new one,
// if it is droppable and nothing queued is); events that are not droppable are always accepted,
// even past capacity. Order is kept: a consumer sees the surviving events in push order.
// Counters: pushed() == drained so far + dropped() + size().
class EventQueue final : public EventSink {
  public:
    explicit EventQueue(size_t capacity = 1024);
    ~EventQueue() override;
    EventQueue(const EventQueue&) = delete;
    EventQueue& operator=(const EventQueue&) = delete;

    void push(Event event);
    void on_event(const Event& event) override { push(event); }

    // Appends up to `max` events to `out`, oldest first, without waiting; returns how many.
    size_t drain(std::vector<Event>& out, size_t max = SIZE_MAX);
    // As drain(), after waiting up to `timeout` for an event; returns 0 on timeout, and at once
    // when the queue is closed and empty.
    size_t wait_and_drain(std::vector<Event>& out, std::chrono::milliseconds timeout,
                          size_t max = SIZE_MAX);
    // No more events: later pushes are discarded (and counted as dropped), waiting consumers
    // wake. Queued events can still be drained.
    void close();
    bool closed() const;
    bool exhausted() const; // closed and drained: a consumer thread can stop

    size_t size() const;
    size_t capacity() const { return capacity_; }
    uint64_t pushed() const;
    uint64_t dropped() const;

  private:
    struct State;
    const size_t capacity_;
    std::unique_ptr<State> state_;
};

// --- progress -----------------------------------------------------------------------------------

// Smoothed throughput and ETA, in tqdm's way: exponential moving averages of the time and the
// samples per step, their ratio being the rate, so a short last batch does not skew it. Not
// thread-safe (the training loop owns it and reports through Progress events).
class ProgressTracker {
  public:
    using Clock = std::function<double()>; // monotonic seconds
    static double steady_seconds();

    // smoothing: weight of the newest step in the averages, in [0, 1]; 1 = the last step only,
    // 0 = the plain average since start().
    explicit ProgressTracker(int64_t total_steps, double smoothing = 0.3, Clock clock = {});

    // Starts timing; steps_done > 0 when resuming (they count for the ETA, not for the rate).
    void start(int64_t steps_done = 0);
    // One step finished now, having processed `samples` samples.
    void step_done(int64_t samples);
    // The time since the last step was not training (pause, validation, checkpoint): the next
    // step is timed from now.
    void restart_step_timer();
    void set_total_steps(int64_t total_steps);

    int64_t steps_done() const { return steps_done_; }
    int64_t total_steps() const { return total_steps_; }
    double samples_per_second() const; // 0 before the first timed step
    double seconds_per_step() const;   // 0 before the first timed step
    double eta_seconds() const;        // -1 before the first timed step, 0 when done
    double elapsed_seconds() const;    // since start(), pauses included

  private:
    Clock clock_;
    double smoothing_;
    int64_t total_steps_;
    int64_t steps_done_ = 0;
    int64_t timed_steps_ = 0;
    double start_time_ = 0.0;
    double last_time_ = 0.0;
    double average_seconds_ = 0.0; // per step
    double average_samples_ = 0.0; // per step
    double total_seconds_ = 0.0;   // over timed steps (smoothing == 0)
    double total_samples_ = 0.0;
};

} // namespace myelin::train
