// Event names, the fan-out sink, the bounded event queue and the progress tracker.
#include <myelin/error.h>
#include <myelin/train/events.h>

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <string>

namespace myelin::train {

static_assert(std::is_same_v<std::variant_alternative_t<static_cast<size_t>(EventKind::Finished),
                                                        EventPayload>,
                             Finished>,
              "EventKind must list the payload alternatives in order");
static_assert(
    std::is_same_v<
        std::variant_alternative_t<static_cast<size_t>(EventKind::TimeGradient), EventPayload>,
        TimeGradientEvent>,
    "EventKind must list the payload alternatives in order");
static_assert(
    std::is_same_v<std::variant_alternative_t<static_cast<size_t>(EventKind::Error), EventPayload>,
                   RunError>,
    "EventKind must list the payload alternatives in order");
static_assert(std::is_same_v<std::variant_alternative_t<static_cast<size_t>(EventKind::Progress),
                                                        EventPayload>,
                             Progress>,
              "EventKind must list the payload alternatives in order");

const char* summary_kind_name(SummaryKind kind) {
    switch (kind) {
    case SummaryKind::Activation:
        return "activation";
    case SummaryKind::Gradient:
        return "gradient";
    case SummaryKind::Weight:
        return "weight";
    }
    return "unknown";
}

const char* run_status_name(RunStatus status) {
    switch (status) {
    case RunStatus::Finished:
        return "finished";
    case RunStatus::Stopped:
        return "stopped";
    case RunStatus::Failed:
        return "failed";
    }
    return "unknown";
}

const char* event_kind_name(EventKind kind) {
    switch (kind) {
    case EventKind::RunStarted:
        return "RunStarted";
    case EventKind::StepMetrics:
        return "StepMetrics";
    case EventKind::EpochMetrics:
        return "EpochMetrics";
    case EventKind::TensorSummary:
        return "TensorSummary";
    case EventKind::FeatureMap:
        return "FeatureMap";
    case EventKind::CheckpointSaved:
        return "CheckpointSaved";
    case EventKind::Progress:
        return "Progress";
    case EventKind::Log:
        return "Log";
    case EventKind::Error:
        return "Error";
    case EventKind::Breakpoint:
        return "Breakpoint";
    case EventKind::Finished:
        return "Finished";
    case EventKind::TimeGradient:
        return "TimeGradient";
    case EventKind::Changed:
        return "Changed";
    }
    return "unknown";
}

bool is_droppable(EventKind kind) {
    switch (kind) {
    case EventKind::StepMetrics:
    case EventKind::TensorSummary:
    case EventKind::FeatureMap:
    case EventKind::TimeGradient:
    case EventKind::Progress:
        return true;
    default:
        return false;
    }
}

double wall_clock_seconds() {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
}

// --- FanOut -------------------------------------------------------------------------------------

void FanOut::add(EventSink& sink) {
    sinks_.push_back(&sink);
}

void FanOut::add(std::shared_ptr<EventSink> sink) {
    if (!sink) throw Error("FanOut::add: the sink is null");
    sinks_.push_back(sink.get());
    owned_.push_back(std::move(sink));
}

void FanOut::on_event(const Event& event) {
    std::exception_ptr first_error;
    for (EventSink* sink : sinks_) {
        try {
            sink->on_event(event);
        } catch (...) {
            if (!first_error) first_error = std::current_exception();
        }
    }
    if (first_error) std::rethrow_exception(first_error);
}

// --- EventQueue ---------------------------------------------------------------------------------

// Droppable and kept events wait in separate deques, each in push order, tagged with a sequence
// number: dropping the oldest droppable event is a pop_front, and draining merges the two by
// sequence number to restore push order.
struct EventQueue::State {
    struct Entry {
        uint64_t seq;
        Event event;
    };
    std::mutex mutex;
    std::condition_variable ready;
    std::deque<Entry> kept;
    std::deque<Entry> droppable;
    uint64_t next_seq = 0;
    uint64_t pushed = 0;
    uint64_t dropped = 0;
    bool closed = false;

    bool empty() const { return kept.empty() && droppable.empty(); }
    size_t size() const { return kept.size() + droppable.size(); }

    size_t drain_locked(std::vector<Event>& out, size_t max) {
        size_t n = 0;
        for (; n < max && !empty(); ++n) {
            const bool from_kept =
                droppable.empty() || (!kept.empty() && kept.front().seq < droppable.front().seq);
            std::deque<Entry>& source = from_kept ? kept : droppable;
            out.push_back(std::move(source.front().event));
            source.pop_front();
        }
        return n;
    }
};

EventQueue::EventQueue(size_t capacity) : capacity_(capacity), state_(std::make_unique<State>()) {
    if (capacity == 0) throw Error("EventQueue: the capacity must be at least 1");
}

EventQueue::~EventQueue() = default;

void EventQueue::push(Event event) {
    State& s = *state_;
    {
        std::lock_guard lock(s.mutex);
        ++s.pushed;
        if (s.closed) {
            ++s.dropped;
            return;
        }
        const bool droppable = event.droppable();
        if (s.size() >= capacity_) {
            if (!s.droppable.empty()) {
                s.droppable.pop_front();
                ++s.dropped;
            } else if (droppable) {
                ++s.dropped; // nothing older to give way: the newcomer goes
                return;
            }
        }
        (droppable ? s.droppable : s.kept).push_back({s.next_seq++, std::move(event)});
    }
    s.ready.notify_one();
}

size_t EventQueue::drain(std::vector<Event>& out, size_t max) {
    std::lock_guard lock(state_->mutex);
    return state_->drain_locked(out, max);
}

size_t EventQueue::wait_and_drain(std::vector<Event>& out, std::chrono::milliseconds timeout,
                                  size_t max) {
    State& s = *state_;
    std::unique_lock lock(s.mutex);
    s.ready.wait_for(lock, timeout, [&] { return s.closed || !s.empty(); });
    return s.drain_locked(out, max);
}

void EventQueue::close() {
    {
        std::lock_guard lock(state_->mutex);
        state_->closed = true;
    }
    state_->ready.notify_all();
}

bool EventQueue::closed() const {
    std::lock_guard lock(state_->mutex);
    return state_->closed;
}

bool EventQueue::exhausted() const {
    std::lock_guard lock(state_->mutex);
    return state_->closed && state_->empty();
}

size_t EventQueue::size() const {
    std::lock_guard lock(state_->mutex);
    return state_->size();
}

uint64_t EventQueue::pushed() const {
    std::lock_guard lock(state_->mutex);
    return state_->pushed;
}

uint64_t EventQueue::dropped() const {
    std::lock_guard lock(state_->mutex);
    return state_->dropped;
}

// --- ProgressTracker ----------------------------------------------------------------------------

double ProgressTracker::steady_seconds() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

ProgressTracker::ProgressTracker(int64_t total_steps, double smoothing, Clock clock)
    : clock_(clock ? std::move(clock) : Clock(&ProgressTracker::steady_seconds)),
      smoothing_(smoothing), total_steps_(total_steps) {
    if (!(smoothing >= 0.0 && smoothing <= 1.0))
        throw Error("ProgressTracker: smoothing must be in [0, 1], got " +
                    std::to_string(smoothing));
    if (total_steps < 0)
        throw Error("ProgressTracker: the total number of steps must not be negative, got " +
                    std::to_string(total_steps));
    start();
}

void ProgressTracker::start(int64_t steps_done) {
    steps_done_ = steps_done;
    timed_steps_ = 0;
    average_seconds_ = average_samples_ = total_seconds_ = total_samples_ = 0.0;
    start_time_ = last_time_ = clock_();
}

void ProgressTracker::step_done(int64_t samples) {
    const double now = clock_();
    const double seconds = now - last_time_;
    last_time_ = now;
    ++steps_done_;
    ++timed_steps_;
    total_seconds_ += seconds;
    total_samples_ += static_cast<double>(samples);
    if (timed_steps_ == 1) { // the first step seeds the averages (no bias towards 0)
        average_seconds_ = seconds;
        average_samples_ = static_cast<double>(samples);
    } else {
        average_seconds_ += smoothing_ * (seconds - average_seconds_);
        average_samples_ += smoothing_ * (static_cast<double>(samples) - average_samples_);
    }
}

void ProgressTracker::restart_step_timer() {
    last_time_ = clock_();
}

void ProgressTracker::set_total_steps(int64_t total_steps) {
    if (total_steps < 0)
        throw Error("ProgressTracker: the total number of steps must not be negative, got " +
                    std::to_string(total_steps));
    total_steps_ = total_steps;
}

double ProgressTracker::samples_per_second() const {
    if (timed_steps_ == 0) return 0.0;
    const double seconds = smoothing_ > 0.0 ? average_seconds_ : total_seconds_;
    const double samples = smoothing_ > 0.0 ? average_samples_ : total_samples_;
    return seconds > 0.0 ? samples / seconds : 0.0;
}

double ProgressTracker::seconds_per_step() const {
    if (timed_steps_ == 0) return 0.0;
    return smoothing_ > 0.0 ? average_seconds_ : total_seconds_ / static_cast<double>(timed_steps_);
}

double ProgressTracker::eta_seconds() const {
    if (steps_done_ >= total_steps_) return 0.0;
    if (timed_steps_ == 0) return -1.0;
    return static_cast<double>(total_steps_ - steps_done_) * seconds_per_step();
}

double ProgressTracker::elapsed_seconds() const {
    return clock_() - start_time_;
}

} // namespace myelin::train
