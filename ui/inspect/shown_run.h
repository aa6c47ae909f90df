#pragma once
// The run an inspection view shows: the run store it comes from (opened for reading once per
// path), its id, whether it is still training, and the timer that re-reads it while it is.
// Distributions, Feature Maps and Gradient through Time share it.
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
    // `owner` parents the timer.
    explicit ShownRun(QObject* owner);
    ~ShownRun();
    ShownRun(const ShownRun&) = delete;
    ShownRun& operator=(const ShownRun&) = delete;

    // What runs every two seconds while the shown run trains.
    void setPoll(std::function<void()> poll);
    // Opens the store at `path` for reading unless it is the open one. False when there is no
    // store: `error` says why, or stays empty when there is no file yet.
    bool open(const QString& path, QString* error);
    // Shows `run`, polling while it is `live`.
    void show(int64_t run, bool live);
    // The shown run stopped training: polling stops. False when it was not live.
    bool finish();

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
