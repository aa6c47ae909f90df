#pragma once
// The run an inspection view shows: the run store it comes from (opened for reading once per
// path), its id, whether it is still training, and the timer that re-reads it while it is.
// Gradient Flow, Distributions, Feature Maps and Gradient through Time share it.
#include <QString>

#include <cstdint>
#include <functional>
#include <memory>

class QObject;
class QTimer;

namespace myelin::store {
class RunStore;
}

namespace myelin::ui {

class ShownRun {
  public:
    static constexpr int kDefaultPollMs = 2000;

    // `owner` parents the timer, which fires every `pollMs` while the shown run trains.
    explicit ShownRun(QObject* owner, int pollMs = kDefaultPollMs);
    ~ShownRun();
    ShownRun(const ShownRun&) = delete;
    ShownRun& operator=(const ShownRun&) = delete;

    // What runs on every tick of the timer while the shown run trains.
    void setPoll(std::function<void()> poll);
    // Opens the store at `path` for reading unless it is the open one. False when there is no
    // store: `error` says why, or stays empty when there is no file yet.
    bool open(const QString& path, QString* error);
    // Shows `run`, polling while it is `live`.
    void show(int64_t run, bool live);
    // The shown run stopped training: polling stops. False when it was not live.
    bool finish();
    // Reading the run failed: polling stops, though the run still trains (live until finish).
    void stopPolling();

    store::RunStore* store() const { return store_.get(); }
    const QString& path() const { return path_; }
    int64_t run() const { return run_; }
    bool live() const { return live_; }

  private:
    std::unique_ptr<store::RunStore> store_;
    QString path_;
    int64_t run_ = -1;
    bool live_ = false;
    QTimer* poll_ = nullptr;
};

} // namespace myelin::ui
